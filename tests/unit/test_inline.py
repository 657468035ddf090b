"""Which catalog strings go down the HTML path (translator/text/inline.py, #49): those holding
markup that read the same as HTML; a bare `&` or a `<` of comparison keeps a string text."""

from __future__ import annotations

import pytest

from translator.documents.formats import read_document
from translator.text.inline import unit_format

pytestmark = pytest.mark.pure


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('Please confirm that <a href="mailto:%(email)s">%(email)s</a> is yours.', "html"),
        ("<b>'{title}' was locked</b>", "html"),
        ("First line<br/>second line", "html"),
        ("Caf&eacute; <i>ouvert</i>", "html"),
        ('<a href="?a=1&b=2">a link</a>', "html"),
        ("Tom & Jerry <b>now</b>", "text"),
        ("when a < b and <b>bold</b>", "text"),
        ("1 > 0 <br>", "text"),
        ("No markup at all.", "text"),
        ("An email <me@example.org>", "text"),
        ("Usage: %(program)s <filename> [-v]", "text"),
    ],
)
def test_a_string_is_html_only_where_reading_it_as_html_changes_nothing_but_the_tags(text, fmt):
    assert unit_format(text) == fmt


PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

#, python-format
msgid "Please confirm that <a href=\\"mailto:%(email)s\\">%(email)s</a> is yours."
msgstr ""

msgid "Tom & Jerry"
msgstr ""
"""


@pytest.mark.parametrize(("name", "data"), [("django.po", PO.encode())])
def test_catalog_strings_with_markup_are_html_units(name, data):
    document = read_document(name, data, "fr")
    assert [(unit.text, unit.fmt) for unit in document.units] == [
        ('Please confirm that <a href="mailto:%(email)s">%(email)s</a> is yours.', "html"),
        ("Tom & Jerry", "text"),
    ]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("en.json", b'{"locked": "<b>\'{title}\' was locked</b>", "plain": "Saved"}'),
        ("en.yml", b"en:\n  locked: \"<b>'{title}' was locked</b>\"\n  plain: Saved\n"),
    ],
)
def test_json_and_yaml_values_with_markup_are_html_units(name, data):
    assert [unit.fmt for unit in read_document(name, data, "fr").units] == ["html", "text"]
