"""`python -m bench.detect`: its data preparation and its table, on small catalogs made here (the
benchmark fetches Django, Sphinx and country names from the registries; the tests never do)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

from bench import detect, detect_data
from bench.detect_data import Package, Sample

pytestmark = pytest.mark.pure

M2M100 = frozenset(FAIRSEQ_LANGUAGE_CODES["m2m100"])

PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Save"
msgstr "Speichern"

msgid "Email"
msgstr "Email"

msgid "Enter a valid value for %(field)s."
msgstr "Geben Sie einen gültigen Wert für %(field)s ein."

#, fuzzy
msgid "Delete"
msgstr "Löschen"

msgid "<b>Bold</b> {name}"
msgstr "<b>Fett</b> {name}"

msgid "%(count)d item"
msgid_plural "%(count)d items"
msgstr[0] "%(count)d Eintrag"
msgstr[1] "%(count)d Einträge"

msgid "42"
msgstr "42"
"""


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Enter a valid value for %(field)s.", "Enter a valid value for ."),
        ("%s of %d selected", "of selected"),
        ("<a href='x'>Log in</a> &amp; {0} {{ user }}", "Log in"),
        ("100%% sure", "100 sure"),
    ],
)
def test_placeholders_and_markup_are_removed(raw: str, clean: str) -> None:
    assert detect_data.clean(raw) == clean


def wheel(tmp_path: Path, catalogs: dict[str, str]) -> Path:
    path = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for locale, text in catalogs.items():
            archive.writestr(f"pkg/locale/{locale}/LC_MESSAGES/django.po", text)
        archive.writestr("pkg/locale/eo/LC_MESSAGES/django.po", PO)  # Esperanto: not an M2M100 language
    return path


def test_a_catalog_gives_its_translated_strings_in_the_checkpoints_code(tmp_path: Path) -> None:
    path = wheel(tmp_path, {"de": PO, "nb": PO.replace("Speichern", "Lagre")})
    samples = detect_data._from_wheel(path, detect_data._po_locale, M2M100, per_locale=60)
    german = sorted(sample.text for sample in samples if sample.locale == "de")
    # fuzzy, untranslated-looking (equal to English) and letterless entries are left out
    assert german == ["Eintrag", "Fett", "Geben Sie einen gültigen Wert für ein.", "Speichern"]
    assert {sample.language for sample in samples} == {"de", "no"}  # nb is M2M100's `no`
    assert all(sample.locale != "eo" for sample in samples)
    two = detect_data._from_wheel(path, detect_data._po_locale, M2M100, per_locale=2)
    assert len([sample for sample in two if sample.locale == "de"]) == 2


def test_country_names_are_read_from_the_npm_tarball(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def langs(locale: str, names: dict[str, object]) -> tuple[str, bytes]:
        return f"package/langs/{locale}.json", json.dumps({"locale": locale, "countries": names}).encode()

    path = tmp_path / detect_data.COUNTRIES.filename
    with tarfile.open(path, "w:gz") as archive:
        for name, data in (
            langs("en", {"DE": "Germany", "ML": "Mali", "US": ["United States of America", "USA"]}),
            langs("de", {"DE": "Deutschland", "ML": "Mali", "US": ["Vereinigte Staaten", "USA"]}),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    package = Package("npm", "i18n-iso-countries", "0", path.name, digest)
    monkeypatch.setattr(detect_data, "COUNTRIES", package)
    samples = detect_data.countries(M2M100, cache=tmp_path)
    assert sorted(sample.text for sample in samples) == ["Deutschland", "Vereinigte Staaten"]


def test_a_cached_file_with_its_pinned_digest_is_used_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "x-1.whl"
    path.write_bytes(b"wheel")
    package = Package("pip", "x", "1", path.name, hashlib.sha256(b"wheel").hexdigest())
    assert detect_data.fetch(package, tmp_path) == path


def test_the_table_counts_right_answers_per_bucket_and_answers_across_scripts() -> None:
    samples = [
        Sample("de", "de", "Speichern"),
        Sample("en", "en", "Save your changes"),
        Sample("ru", "ru", "Сохранить изменения и продолжить редактирование"),
        Sample("fr", "fr", "Enregistrer"),
    ]
    answers = {"Speichern": "de", "Save your changes": "en", "Enregistrer": "ar"}  # Arabic: across scripts
    score = detect.measure(lambda text: answers.get(text, "ru"), samples, M2M100)
    row = score.row()
    assert row["strings"] == {"1": 2, "2-3": 1, "4-7": 1, "8+": 0}
    assert row["right"] == {"1": 0.5, "2-3": 1.0, "4-7": 1.0, "8+": 0.0}
    assert row["cross_script_answers"] == 1 and row["most_common_mistakes"] == [["fr->ar", 1]]
    shipped = detect.measure(detect.make_answer("shipped", M2M100), samples, M2M100)
    assert shipped.across == 0 and shipped.share() == 1.0


def test_the_report_has_a_row_per_detector_and_says_whether_the_targets_are_met() -> None:
    row = detect.Score()
    row.strings.update({"1": 10, "2-3": 10, "4-7": 10, "8+": 10})
    row.right.update({"1": 7, "2-3": 9, "4-7": 10, "8+": 10})
    before = detect.Score()
    before.strings.update(row.strings)
    before.right.update({"1": 5, "2-3": 8, "4-7": 9, "8+": 10})
    results = {
        "checkpoint": "m2m100",
        "languages": 91,
        "sources": {"django": {"py3langid": before.row(), "shipped": row.row()}},
        "source_meta": {"django": {"strings": 40, "languages": 2, "package": "pip django==5.2.19"}},
        "memory_mib": {"shipped": {"before": 25.0, "after": 146.0}},
        "targets": detect.targets_line(row.row(), before.row()),
    }
    page = detect.report(results)
    assert "| shipped | 0.700 | 0.900 | 1.000 | 1.000 | 0.900 | 0 |" in page
    assert "146 (+121)" in page and "| py3langid |" in page
    assert "all targets met; no bucket worse than before #43" in page
