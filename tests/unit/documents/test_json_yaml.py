"""JSON and YAML values that name a locale are codes for the software, not words: kept as they are
(i18n-iso-countries' langs/en.json has `"locale": "en"`, which was translated)."""

from __future__ import annotations

import json

import pytest

from translator.documents.formats import read_document
from translator.documents.i18n import is_locale

pytestmark = pytest.mark.pure

COUNTRIES = """{
  "locale": "en",
  "countries": {
    "IT": "Italy",
    "NO": ["Norway", "no"],
    "US": ["United States of America", "USA"]
  }
}
"""


def texts(name: str, data: str) -> list[str]:
    return [unit.text for unit in read_document(name, data.encode()).units]


def test_the_locale_of_a_countries_file_is_kept_and_the_rest_translated():
    assert texts("en.json", COUNTRIES) == ["Italy", "Norway", "no", "United States of America", "USA"]
    document = read_document("en.json", COUNTRIES.encode())
    written = document.write(["Italie", "Norvège", "non", "États-Unis d'Amérique", "É.-U."]).decode()
    assert written == (
        COUNTRIES.replace('"Italy"', '"Italie"')
        .replace('["Norway", "no"]', '["Norvège", "non"]')
        .replace('["United States of America", "USA"]', '["États-Unis d\'Amérique", "É.-U."]')
    )


@pytest.mark.parametrize(
    ("value", "key", "parent", "kept"),
    [
        ("en", "locale", None, True),
        ("pt_BR", "defaultLocale", None, True),
        ("fr", "fallbackLng", None, True),
        ("de", "LANGUAGE_CODE", None, True),
        ("x-default", "hreflang", None, True),
        ("sr-Latn", "code", "languages", True),
        ("en", "code", "languages", True),
        ("zh_Hant", "label", None, True),  # a tag with a script or a region, anywhere
        ("pt-BR", None, None, True),
        ("es-419", "title", None, True),
        ("English", "language", None, False),  # a language's name: translated
        ("no", "answer", None, False),  # bare codes elsewhere are words
        ("it", "pronoun", None, False),
        ("is", "verb", None, False),
        ("en", "code", "countries", False),
        ("en", "slang", None, False),  # a word ending in "lang" is not a key naming one
        ("co-OP", None, None, False),
        ("Hello there", "locale", None, False),
    ],
)
def test_which_values_name_a_locale(value, key, parent, kept):
    assert is_locale(value, key, parent) is kept


def test_yaml_locale_values_are_kept_in_mappings_and_sequences():
    source = (
        "locale: en\n"
        "i18n:\n  fallback_lng: [fr, de]\n  languages:\n    - code: sr-Latn\n      name: Serbian\n"
        "greeting: Hello\n"
        "regional: pt-BR\n"
    )
    assert texts("a.yaml", source) == ["Serbian", "Hello"]
    document = read_document("a.yaml", source.encode())
    assert document.write(["Serbe", "Bonjour"]).decode() == source.replace("Serbian", "Serbe").replace(
        "Hello", "Bonjour"
    )


def test_json_keys_of_nested_objects_and_arrays_are_followed():
    source = '{"lang": "fr", "items": [{"language": "English", "lng": "en"}], "tags": ["de-AT", "alpha"]}'
    assert texts("a.json", source) == ["English", "alpha"]


# Docusaurus' plural messages (#49): "One post|{count} posts" under a `...plurals` key, each form a
# unit of its own and the `|` kept; translated whole, two or three forms became one.
PLURALS = (
    '{\n  "theme.blog.post.plurals": "One post|{count} posts",\n'
    '  "theme.common.skipToMainContent": "Skip | to main"\n}\n'
)


def test_each_plural_form_of_a_docusaurus_message_is_a_unit_and_the_separator_stays():
    document = read_document("theme-common.json", PLURALS.encode(), "de")
    assert [unit.text for unit in document.units] == ["One post", "{count} posts", "Skip | to main"]
    out = json.loads(document.write(["Ein Beitrag", "{count} Beiträge", "Zum Inhalt"]))
    assert out == {
        "theme.blog.post.plurals": "Ein Beitrag|{count} Beiträge",
        "theme.common.skipToMainContent": "Zum Inhalt",
    }


def test_a_separator_in_a_forms_translation_does_not_make_another_form():
    document = read_document("theme-common.json", PLURALS.encode(), "de")
    out = json.loads(document.write(["Ein | Beitrag", "{count} Beiträge", "x"]))
    assert out["theme.blog.post.plurals"].count("|") == 1
