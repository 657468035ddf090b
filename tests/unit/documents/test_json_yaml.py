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


# gettext catalogs in JSON (#49): JupyterLab's language packs had every human translation replaced,
# the header's plural_forms, domain and version turned into sentences, and %1/%2 lost.
JUPYTERLAB = (
    '{\n    "": {\n        "domain": "jupyterlab",\n        "language": "de-DE",\n'
    '        "plural_forms": "nplurals=2; plural=(n != 1);",\n        "version": "jupyterlab"\n    },\n'
    '    "Open %1 in %2": [\n        "%1 in %2 \\u00f6ffnen"\n    ],\n'
    '    "%1 Item": [\n        "%1 Element",\n        "%1 Elemente"\n    ],\n'
    '    "menu\\u0004Save": [\n        ""\n    ],\n'
    '    "%1 file": [\n        "",\n        ""\n    ]\n}\n'
)
JED = {
    "locale_data": {
        "messages": {
            "": {"domain": "messages", "lang": "de", "plural_forms": "nplurals=2; plural=(n != 1);"},
            "Hello": ["Hallo"],
            "Open": [""],
            "Done": "",
        }
    }
}


def test_a_gettext_catalog_in_json_fills_only_its_empty_entries_as_po_does():
    document = read_document("jupyterlab.json", JUPYTERLAB.encode(), "de")
    # The msgids of the entries nobody translated, their context left out; header and people's
    # translations are no units at all.
    assert [unit.text for unit in document.units] == ["Save", "%1 file"]
    out = document.write(["Speichern", "%1 Datei"])
    tree = json.loads(out)
    assert tree[""] == json.loads(JUPYTERLAB)[""]
    assert tree["Open %1 in %2"] == ["%1 in %2 öffnen"] and tree["%1 Item"] == ["%1 Element", "%1 Elemente"]
    assert tree["menu\u0004Save"] == ["Speichern"] and tree["%1 file"] == ["%1 Datei", "%1 Datei"]
    # Every other byte as it was, \u escapes where the file writes them.
    assert out.decode() == JUPYTERLAB.replace('[\n        ""\n    ]', '[\n        "Speichern"\n    ]', 1).replace(
        '"",\n        ""', '"%1 Datei",\n        "%1 Datei"'
    )


def test_a_catalog_translated_whole_has_nothing_to_translate():
    translated = JUPYTERLAB.replace('"menu\\u0004Save": [\n        ""', '"menu\\u0004Save": [\n        "Speichern"')
    translated = translated.replace('"",\n        ""', '"%1 Datei",\n        "%1 Dateien"')
    document = read_document("jupyterlab.json", translated.encode(), "de")
    assert document.units == [] and document.write([]) == translated.encode()


def test_jeds_catalog_under_locale_data_is_read_as_one():
    document = read_document("messages.json", json.dumps(JED).encode(), "de")
    assert [unit.text for unit in document.units] == ["Open", "Done"]
    catalog = json.loads(document.write(["Öffnen", "Fertig"]))["locale_data"]["messages"]
    assert catalog["Hello"] == ["Hallo"] and catalog["Open"] == ["Öffnen"] and catalog["Done"] == "Fertig"


# i18next's JSON v4 plurals (i18next.com, "Plurals"): a key per CLDR category of the language.
I18NEXT = """{
  "inbox": {
    "title": "Inbox",
    "message_one": "{{count}} message",
    "message_other": "{{count}} messages"
  },
  "total_other": "no group: a category alone"
}
"""


@pytest.mark.parametrize(
    ("target", "added"),
    [("cs", ["few", "many"]), ("ar", ["zero", "two", "few", "many"]), ("ja", []), ("en", [])],
)
def test_an_i18next_plural_gets_the_target_languages_categories_from_its_other_form(target, added):
    document = read_document("en.json", I18NEXT.encode(), target)
    out = document.write([unit.text.upper() for unit in document.units]).decode()
    inbox = json.loads(out)["inbox"]
    assert list(inbox) == ["title", "message_one", "message_other", *[f"message_{c}" for c in added]]
    assert all(inbox[f"message_{c}"] == "{{COUNT}} MESSAGES" for c in added)
    assert json.loads(out)["total_other"] == "NO GROUP: A CATEGORY ALONE"
    if added:  # each new key on its own line, indented as its siblings
        assert f'    "message_other": "{{{{COUNT}}}} MESSAGES",\n    "message_{added[0]}": ' in out


def test_a_rails_locale_file_is_answered_under_the_target_locale():
    source = "# Rails\nen:\n  greeting: Hello world\n  nested:\n    bye: 'Goodbye'\n"
    document = read_document("en.yml", source.encode(), "fr")
    out = document.write([unit.text.upper() for unit in document.units]).decode()
    assert out == "# Rails\nfr:\n  greeting: HELLO WORLD\n  nested:\n    bye: 'GOODBYE'\n"
    # A regional code, quoted as it was; a single top-level key that is no locale code stays.
    quoted = read_document("pt.yml", b'"pt-BR":\n  a: Hello\n', "de")
    assert quoted.write(["HALLO"]) == b'"de":\n  a: HALLO\n'
    for kept in (b"app:\n  a: Hello\n", b"en:\n  - Hello\n", b"en: Hello\n"):
        plain = read_document("x.yml", kept, "de")
        assert plain.write(["HALLO"]) == kept.replace(b"Hello", b"HALLO")
