"""DeepL's codes and glossary entry formats without a server (#33); the API itself is driven by
DeepL's client in tests/e2e/test_deepl.py."""

from __future__ import annotations

import pytest

from translator.api.deepl import error_body, parse_entries, tag_names
from translator.api.deepl_codes import target_codes, to_deepl, to_iso
from translator.contract.errors import InvalidRequest

SUPPORTED = {"en", "de", "pt", "zh", "no", "ja"}


@pytest.mark.parametrize(
    ("code", "iso"),
    [("EN-US", "en"), ("en-gb", "en"), ("PT-BR", "pt"), ("ZH-HANS", "zh"), ("ZH", "zh"), ("NB", "no"), ("XX", None)],
)
def test_deepl_codes_map_to_the_models(code, iso):
    assert to_iso(code, SUPPORTED) == iso


def test_codes_back_and_the_target_list():
    assert to_deepl("no") == "NB" and to_deepl("ja") == "JA"
    assert {"EN-US", "EN-GB", "PT-BR", "PT-PT", "ZH-HANS", "ZH-HANT", "NB", "DE"} <= set(target_codes(SUPPORTED))
    assert "EN-US" not in target_codes({"de", "fr"})


def test_entries_in_tsv_and_csv():
    assert parse_entries("Paris\tLutèce\n\nBentoML\tBentoML\r\n", "tsv") == {"Paris": "Lutèce", "BentoML": "BentoML"}
    assert parse_entries('"a, b",c,en,fr\nx,y\n', "csv") == {"a, b": "c", "x": "y"}
    assert parse_entries(" a \t b ", "tsv") == {"a": "b"}  # cells are trimmed, as spreadsheets leave them


@pytest.mark.parametrize(
    ("text", "fmt", "problem"),
    [
        ("one column", "tsv", "line 1"),
        ("a\tb\tc", "tsv", "line 1"),
        ("", "tsv", "none"),
        ("a\tb\na\tc", "tsv", "given twice"),
        ("a\tb", "json", "entries_format"),
        ('"' + "x" * 200_000 + '",y', "csv", "line 1 is too long"),  # past the csv module's field limit
        ('x,y\n"a,b', "csv", "line 2"),
    ],
)
def test_bad_entries_are_400(text, fmt, problem):
    with pytest.raises(InvalidRequest, match=problem):
        parse_entries(text, fmt)


def test_ignore_tags_comma_separated_or_a_list():
    assert tag_names({"ignore_tags": "x, ph,"}, "ignore_tags") == ["x", "ph"]
    assert tag_names({"ignore_tags": ["x", "a,b"]}, "ignore_tags") == ["x", "a", "b"]
    assert tag_names({}, "ignore_tags") == []
    with pytest.raises(InvalidRequest, match="ignore_tags"):
        tag_names({"ignore_tags": [1]}, "ignore_tags")


def test_errors_name_deepls_parameters_not_the_native_fields():
    message = "text.3: length in characters exceeds the limit of 20000 (got 20001)"
    native = {"error": "payload.records.3.text: length in characters exceeds the limit of 20000 (got 20001)"}
    assert error_body(native) == {"message": message, "error": message}
    assert error_body({"error": "payload.glossaryId: no glossary 'g'", "field": "payload.glossaryId"}) == {
        "message": "glossary_id: no glossary 'g'",
        "error": "glossary_id: no glossary 'g'",
    }
