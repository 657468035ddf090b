"""ICU MessageFormat in catalogs (translator/text/icu.py, #49): argument names, keywords, selectors
and `#` kept; the message around a plural or select and each case's text translated; a
translation that lost an argument leaves the message as it was."""

from __future__ import annotations

import json
import re

import pytest

from translator.documents.formats import read_document
from translator.documents.model import ICU_KEPT
from translator.text.icu import NotICU, parse, split

pytestmark = pytest.mark.pure


def words_upper(text: str) -> str:
    """A stand-in model that changes words and keeps every placeholder, as the pipeline does."""
    return re.sub(r"\{[^{}]*\}|([^{}]+)", lambda m: m.group(1).upper() if m.group(1) else m.group(), text)


MESSAGES = [
    (
        "You have {count, plural, =0 {no messages} one {# message} other {# messages}}.",
        ["You have {count}.", "no messages", "{_} message", "{_} messages"],
        "YOU HAVE {count, plural, =0 {NO MESSAGES} one {# MESSAGE} other {# MESSAGES}}.",
    ),
    (
        "{gender, select, male {He} female {She} other {They}} liked it",
        ["{gender} liked it", "He", "She", "They"],
        "{gender, select, male {HE} female {SHE} other {THEY}} LIKED IT",
    ),
    (
        "{n, selectordinal, offset:1 one {#st {thing}} other {#th {thing}}}",
        ["{n}", "{_}st {thing}", "{_}th {thing}"],
        "{n, selectordinal, offset:1 one {#ST {thing}} other {#TH {thing}}}",
    ),
    (
        "{VAR_PLURAL, plural, =0 {just now} other {{{minutes}} minutes ago}}",
        ["{VAR_PLURAL}", "just now", "{{minutes}} minutes ago"],
        "{VAR_PLURAL, plural, =0 {JUST NOW} other {{{minutes}} MINUTES AGO}}",
    ),
]


@pytest.mark.parametrize(("message", "texts", "translated"), MESSAGES, ids=["plural", "select", "ordinal", "angular"])
def test_a_message_is_its_texts_and_comes_back_in_its_own_structure(message, texts, translated):
    found, join = split(message)
    assert found == texts
    assert join(found) == message
    assert join([words_upper(text) for text in found]) == translated


def test_a_translation_that_lost_an_argument_is_not_placed():
    texts, join = split(MESSAGES[0][0])
    assert join(["Vous avez.", "aucun", "{_} message", "{_} messages"]) is None


@pytest.mark.parametrize("text", ["Hello {name}", "50% off", "No braces at all"])
def test_a_string_without_plural_or_select_is_not_split(text):
    assert split(text) is None


@pytest.mark.parametrize("text", ["{n, plural, one {x}", "{n, plural, one x}}", "a } b {n, plural, other {y}}"])
def test_a_message_that_is_not_well_formed_is_not_split(text):
    assert split(text) is None
    with pytest.raises(NotICU):
        parse(text)


def test_quoted_literals_are_kept_as_written():
    texts, join = split("It''s '{literal}' {n, plural, other {# it''s}}")
    assert texts == ["It''s '{literal}' {n}", "{_} it''s"]
    assert join(texts) == "It''s '{literal}' {n, plural, other {# it''s}}"


def test_json_and_yaml_catalogs_translate_each_text_of_an_icu_message():
    message = MESSAGES[0][0]
    for name, data in (
        ("en.json", json.dumps({"inbox": message}).encode()),
        ("en.yml", f'inbox: "{message}"\n'.encode()),
    ):
        document = read_document(name, data, "fr")
        assert [unit.text for unit in document.units] == MESSAGES[0][1]
        out = document.write([words_upper(unit.text) for unit in document.units]).decode()
        assert MESSAGES[0][2] in out


def test_a_formatjs_compiled_catalog_translates_only_its_literal_nodes():
    compiled = {
        "greeting": [{"type": 0, "value": "Hello "}, {"type": 1, "value": "name"}],
        "items": [
            {
                "type": 6,
                "value": "count",
                "options": {"one": {"value": [{"type": 0, "value": "one item"}]}, "other": {"value": [{"type": 7}]}},
                "offset": 0,
                "pluralType": "cardinal",
            }
        ],
    }
    document = read_document("en.json", json.dumps(compiled).encode(), "fr")
    assert [unit.text for unit in document.units] == ["Hello ", "one item"]
    out = json.loads(document.write(["Bonjour ", "un article"]))
    assert out["greeting"] == [{"type": 0, "value": "Bonjour "}, {"type": 1, "value": "name"}]
    assert out["items"][0]["value"] == "count" and out["items"][0]["pluralType"] == "cardinal"
    assert out["items"][0]["options"]["one"]["value"] == [{"type": 0, "value": "un article"}]


# Angular's i18n extraction writes a plural as its own XLIFF unit (angular.dev's i18n guide, the
# example a user of `ng extract-i18n` meets first); translated as prose, its target held no ICU (#49).
ANGULAR_XLIFF = """<?xml version="1.0" encoding="UTF-8" ?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" datatype="plaintext" original="ng2.template">
    <body>
      <trans-unit id="5a134dee893586d02bffc9611056b9cadf9abfad" datatype="html">
        <source>{VAR_PLURAL, plural, =0 {just now} =1 {one minute ago} other {many minutes ago} }</source>
      </trans-unit>
      <trans-unit id="title" datatype="html">
        <source>Hello i18n!</source>
      </trans-unit>
    </body>
  </file>
</xliff>
"""


def test_an_xliff_unit_holding_an_icu_message_gets_a_target_in_the_same_structure():
    document = read_document("messages.xlf", ANGULAR_XLIFF.encode(), "fr")
    assert [unit.text for unit in document.units] == [
        "{VAR_PLURAL}",
        "just now",
        "one minute ago",
        "many minutes ago",
        "Hello i18n!",
    ]
    out = document.write([words_upper(unit.text) for unit in document.units]).decode()
    assert "{VAR_PLURAL, plural, =0 {JUST NOW} =1 {ONE MINUTE AGO} other {MANY MINUTES AGO} }</target>" in out
    assert "HELLO I18N!</target>" in out and document.kept == []


def test_an_icu_message_whose_argument_is_lost_is_kept_untranslated_and_reported():
    document = read_document("messages.xlf", ANGULAR_XLIFF.encode(), "fr")
    lost = ["VAR_PLURAL"] + [words_upper(unit.text) for unit in document.units[1:]]
    out = document.write(lost).decode()
    assert out.count("<target") == 1 and "HELLO I18N!</target>" in out  # the plural left without one
    assert document.kept == ["line 6: " + ICU_KEPT]
    document.write([words_upper(unit.text) for unit in document.units])
    assert document.kept == []  # each write reports its own


# Lingui's PO catalogs hold ICU messages as their msgids.
LINGUI_PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=utf-8\\n"
"Language: fr\\n"

#: src/Inbox.js:12
msgid "{count, plural, one {# message} other {# messages}}"
msgstr ""

msgid "Inbox"
msgstr ""
"""


def test_a_po_entry_holding_an_icu_message_is_translated_text_by_text():
    document = read_document("fr.po", LINGUI_PO.encode(), "fr")
    assert [unit.text for unit in document.units] == ["{count}", "{_} message", "{_} messages", "Inbox"]
    out = document.write([words_upper(unit.text) for unit in document.units]).decode()
    assert 'msgstr "{count, plural, one {# MESSAGE} other {# MESSAGES}}"' in out and 'msgstr "INBOX"' in out
    out = document.write(["count", "{_} MESSAGE", "{_} MESSAGES", "INBOX"]).decode()
    assert out.count("#, fuzzy") == 1 and 'msgstr "INBOX"' in out  # the plural left empty, not fuzzy
    assert document.kept == ["line 7: " + ICU_KEPT]
