"""Short texts people wrote, with the language they wrote them in: the data of `python -m bench.detect`.

Three sources, each a released package fetched at run time with its registry's own client (`pip
download`, `npm pack`), pinned by version and by the sha256 of the file, and cached under
build/bench-detect/ (never committed):

- `django`: the translated messages (`msgstr`) of Django's .po catalogs: UI strings of an admin
  site, forms and validators, written by its translators (Transifex), one directory per locale.
- `sphinx`: the same from Sphinx's catalogs (a documentation tool's messages and labels).
- `countries`: the names of the world's countries in 79 languages (the npm package
  i18n-iso-countries): one to four words each, as a country picker shows them.

From each catalog: placeholders (`%(name)s`, `%s`, `{0}`), markup and entities removed, whitespace
collapsed; a text equal to its English source (`OK`, `Email`, `Mali`) or without letters dropped;
each locale's distinct texts ordered by a hash and the first `per_locale` kept (a sample that does
not depend on the catalog's order). A locale counts as the checkpoint's language it resolves to
(`es_AR` is `es`, `nb` is `no` on M2M100, `sr_Latn` is `sr`); locales of languages the checkpoint
lacks (Esperanto, Telugu on M2M100) are left out.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from translator.contract.language_codes import resolve

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "bench-detect"


@dataclass(frozen=True)
class Package:
    """One released file: `pip` (a wheel on PyPI) or `npm` (a tarball on the npm registry)."""

    client: str
    name: str
    version: str
    filename: str
    sha256: str


DJANGO = Package(
    "pip",
    "django",
    "5.2.19",
    "django-5.2.19-py3-none-any.whl",
    "5965d974a5218a2b68a11dd1276434707f23886525c23f0598eccedaf4f4ca00",
)
SPHINX = Package(
    "pip",
    "sphinx",
    "8.2.3",
    "sphinx-8.2.3-py3-none-any.whl",
    "4405915165f13521d875a8c29c8970800a0141c14cc5416a38feca4ea5d9b9c3",
)
COUNTRIES = Package(
    "npm",
    "i18n-iso-countries",
    "7.14.0",
    "i18n-iso-countries-7.14.0.tgz",
    "bb418ebfb965789fcfbcce7dee59888d901ef64b03601da78b2e224cd6f5825c",
)


class FetchError(RuntimeError):
    pass


def fetch(package: Package, cache: Path = CACHE) -> Path:
    """The package's file under `cache`, downloaded once and checked against its pinned sha256."""
    path = cache / package.filename
    if not path.exists() or _sha256(path) != package.sha256:
        cache.mkdir(parents=True, exist_ok=True)
        if package.client == "pip":
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
            command += ["--disable-pip-version-check", "-q", "-d", str(cache), f"{package.name}=={package.version}"]
        else:
            command = ["npm", "pack", "--silent", f"{package.name}@{package.version}", "--pack-destination", str(cache)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not path.exists():
            raise FetchError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    digest = _sha256(path)
    if digest != package.sha256:
        path.unlink()
        raise FetchError(f"{package.filename}: sha256 {digest}, expected {package.sha256}; removed")
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Sample:
    language: str  # the checkpoint's code
    locale: str  # as the source names it (`es_AR`)
    text: str


# printf-style (`%(name)s`, `%s`, `%.2f`, `%%`), brace-style (`{0}`, `{name}`, `{{ x }}`), markup
# and entities: replaced by a space (a placeholder between two words leaves them two words).
_PLACEHOLDER = re.compile(
    r"%\([^)]*\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]|%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]|\{\{[^}]*\}\}|\{[^{}\s]*\}"
    r"|<[^>]*>|&[#a-zA-Z0-9]+;"
)


def clean(text: str) -> str:
    return " ".join(_PLACEHOLDER.sub(" ", text).split())


def _has_letters(text: str) -> bool:
    return any(char.isalpha() for char in text)


def _locale_language(locale: str, languages: Collection[str]) -> str | None:
    """The checkpoint's code for a catalog's locale directory name, or None where it has none."""
    if "." in locale:  # `zh_TW.Big5`: another encoding of a locale that is there already
        return None
    tag = locale.replace("@latin", "-Latn").replace("@valencia", "").replace("_", "-")
    return resolve(tag, frozenset(languages))


def _pick(locale: str, texts: dict[str, None], per_locale: int) -> list[str]:
    def key(text: str) -> str:
        return hashlib.sha256(f"{locale}\0{text}".encode()).hexdigest()

    return sorted(texts, key=key)[:per_locale]


def _po_pairs(data: bytes) -> Iterator[tuple[str, str]]:
    """(English source, translation) of each translated, non-fuzzy entry of a .po file; a plural
    entry gives its first form."""
    import polib

    catalog = polib.pofile(data.decode("utf-8"))
    for entry in catalog.translated_entries():
        if entry.msgstr:
            yield entry.msgid, entry.msgstr
        elif entry.msgstr_plural:
            yield entry.msgid, entry.msgstr_plural[min(entry.msgstr_plural)]


def _from_wheel(
    path: Path, locale_of: Callable[[str], str | None], languages: Collection[str], per_locale: int
) -> list[Sample]:
    by_locale: dict[str, dict[str, None]] = {}
    with zipfile.ZipFile(path) as wheel:
        for name in sorted(wheel.namelist()):
            locale = locale_of(name)
            if locale is None or _locale_language(locale, languages) is None:
                continue
            texts = by_locale.setdefault(locale, {})
            for source, translation in _po_pairs(wheel.read(name)):
                text = clean(translation)
                if text and text != clean(source) and _has_letters(text):
                    texts[text] = None
    return [
        Sample(str(_locale_language(locale, languages)), locale, text)
        for locale, texts in sorted(by_locale.items())
        for text in _pick(locale, texts, per_locale)
    ]


_PO_PATH = re.compile(r"/locale/([^/]+)/LC_MESSAGES/[^/]+\.po$")


def _po_locale(name: str) -> str | None:
    match = _PO_PATH.search(name)
    return match.group(1) if match else None


def django(languages: Collection[str], per_locale: int = 60, cache: Path = CACHE) -> list[Sample]:
    return _from_wheel(fetch(DJANGO, cache), _po_locale, languages, per_locale)


def sphinx(languages: Collection[str], per_locale: int = 60, cache: Path = CACHE) -> list[Sample]:
    return _from_wheel(fetch(SPHINX, cache), _po_locale, languages, per_locale)


def countries(languages: Collection[str], per_locale: int = 60, cache: Path = CACHE) -> list[Sample]:
    """Country names; a country with several names (`["Vereinigte Staaten", "USA"]`) gives its first."""

    def names(data: bytes) -> dict[str, str]:
        return {
            code: name[0] if isinstance(name, list) else name for code, name in json.loads(data)["countries"].items()
        }

    out: list[Sample] = []
    with tarfile.open(fetch(COUNTRIES, cache)) as archive:
        files = {
            Path(member.name).stem: archive.extractfile(member).read()  # type: ignore[union-attr]
            for member in archive.getmembers()
            if re.fullmatch(r"package/langs/[a-z]+\.json", member.name)
        }
    english = names(files["en"])
    for locale, data in sorted(files.items()):
        language = _locale_language(locale, languages)
        if language is None or locale == "en":
            continue
        texts: dict[str, None] = {}
        for code, name in names(data).items():
            text = clean(name)
            if text and text != clean(english.get(code, "")) and _has_letters(text):
                texts[text] = None
        out += [Sample(language, locale, text) for text in _pick(locale, texts, per_locale)]
    return out


SOURCES: dict[str, Callable[..., list[Sample]]] = {"django": django, "sphinx": sphinx, "countries": countries}
PACKAGES: dict[str, Package] = {"django": DJANGO, "sphinx": SPHINX, "countries": COUNTRIES}
