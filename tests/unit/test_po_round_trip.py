"""PO round trips as a translator's diff sees them (#39): a file shaped as Weblate and gettext
write them (a header without a comment, multi-line and wrapped strings, plural forms, comments of
every kind, fuzzy, translated and obsolete entries) comes back with only the msgstr lines of the
entries filled and their flags changed, each msgstr wrapped as its msgid is."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.unit.helpers.round_trip import hunks, translate
from translator.documents.formats import read_document
from translator.documents.model import BadDocument

pytestmark = pytest.mark.pure

HEADER = r"""msgid ""
msgstr ""
"Project-Id-Version: shop 1.0\n"
"Report-Msgid-Bugs-To: \n"
"POT-Creation-Date: 2024-05-01 12:00+0200\n"
"PO-Revision-Date: 2024-05-02 09:30+0200\n"
"Last-Translator: Anne Person <anne@example.org>\n"
"Language-Team: French <fr@example.org>\n"
"Language: fr\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\n"
"X-Generator: Weblate 5.4\n"
"""
# As `msgcat` writes it (it leaves this file as it is), in corpus sentences.
SOURCE = (
    HEADER
    + r"""
# A translator's note.
#. An extracted comment for translators.
#: shop/views.py:12 shop/views.py:40
#, python-format
msgid "Life is like a box of chocolates."
msgstr ""

#: shop/views.py:20
msgid ""
"You never know what you're going to get.\n"
"Where is the library?"
msgstr ""

#: shop/cart.py:7
msgid "It is next to the town hall."
msgid_plural "I would like a coffee, please."
msgstr[0] ""
msgstr[1] ""

#: shop/cart.py:9
#, fuzzy
#| msgid "How much does it costs?"
msgid "How much does it cost?"
msgstr "Combien ça coûtait?"

msgctxt "weather"
msgid "The weather is beautiful today!"
msgstr "Il fait très beau aujourd'hui !"

#: shop/long.py:3
msgid ""
"My sister lives in Paris with her two cats. She works in a small bookshop "
"near the river. Every Sunday, she calls our parents."
msgstr ""

#: shop/views.py:50
#| msgid "Let's go for a walk."
msgid "Let's go for a walk in the park."
msgstr ""

#~ msgid "Can you help me?"
#~ msgstr "Pouvez-vous m'aider ?"
"""
)
# What changes, as `diff` shows it: (lines removed, lines added) of each hunk, in order.
EXPECTED_HUNKS = [
    (["#, python-format"], ["#, fuzzy, python-format"]),
    (['msgstr ""'], ['msgstr "La vie, c\'est comme une boîte de chocolats."']),
    ([], ["#, fuzzy"]),
    ([], ['"On ne sait jamais sur quoi on va tomber.\\n"', '"Où est la bibliothèque?"']),
    ([], ["#, fuzzy"]),
    (
        ['msgstr[0] ""', 'msgstr[1] ""'],
        ['msgstr[0] "Elle est à côté de la mairie."', 'msgstr[1] "Je voudrais un café, s\'il vous plaît."'],
    ),
    # A fuzzy entry is filled again (a person has not confirmed it): its flag is there already.
    (['msgstr "Combien ça coûtait?"'], ['msgstr "Combien ça coûte?"']),
    ([], ["#, fuzzy"]),
    (
        [],
        [
            '"Ma sœur habite à Paris avec ses deux chats. Elle travaille dans une petite "',
            '"librairie près du fleuve. Chaque dimanche, elle appelle nos parents."',
        ],
    ),
    ([], ["#, fuzzy"]),  # before the previous msgid (`#|`), where gettext writes flags
    (['msgstr ""'], ['msgstr "Allons nous promener dans le parc."']),
]


def test_only_the_filled_msgstrs_and_their_flags_change():
    out = translate("fr.po", SOURCE.encode()).decode()
    assert hunks(SOURCE, out) == EXPECTED_HUNKS
    # The header, the translated entry, the obsolete one and every comment: byte for byte.
    assert out.startswith(HEADER + "\n# A translator's note.\n")
    assert out.endswith('#~ msgid "Can you help me?"\n#~ msgstr "Pouvez-vous m\'aider ?"\n')
    assert 'msgctxt "weather"\nmsgid "The weather is beautiful today!"\nmsgstr "Il fait très beau' in out


def test_the_result_reads_back_as_the_translations():
    import polib

    catalog = polib.pofile(translate("fr.po", SOURCE.encode()).decode())
    by_id = {entry.msgid: entry for entry in catalog if not entry.obsolete}
    assert by_id["Life is like a box of chocolates."].msgstr == "La vie, c'est comme une boîte de chocolats."
    assert by_id["You never know what you're going to get.\nWhere is the library?"].msgstr == (
        "On ne sait jamais sur quoi on va tomber.\nOù est la bibliothèque?"
    )
    plural = by_id["It is next to the town hall."]
    assert plural.msgstr_plural == {0: "Elle est à côté de la mairie.", 1: "Je voudrais un café, s'il vous plaît."}
    assert all(entry.fuzzy for entry in catalog if entry.msgid and entry.msgctxt != "weather" and not entry.obsolete)
    assert not by_id["The weather is beautiful today!"].fuzzy
    assert catalog.metadata["X-Generator"] == "Weblate 5.4"


@pytest.mark.skipif(shutil.which("msgcat") is None, reason="needs gettext's msgcat and msgfmt")
@pytest.mark.processes
def test_the_result_is_as_gettext_writes_it(tmp_path):
    path = tmp_path / "fr.po"
    path.write_bytes(translate("fr.po", SOURCE.encode()))
    assert subprocess.run(["msgcat", str(path)], capture_output=True, check=True).stdout == path.read_bytes()
    subprocess.run(["msgfmt", "--check", "-o", str(tmp_path / "fr.mo"), str(path)], check=True)


def test_windows_line_endings_and_a_bom_are_kept():
    source = "\ufeff" + SOURCE.replace("\n", "\r\n")
    out = translate("fr.po", source.encode())
    assert out == ("\ufeff" + translate("fr.po", SOURCE.encode()).decode().replace("\n", "\r\n")).encode()


def test_a_persons_plural_form_stays_and_a_templates_single_form_gets_its_pair():
    source = (
        'msgid "It is next to the town hall."\nmsgid_plural "I would like a coffee, please."\n'
        'msgstr[0] "Elle est là."\nmsgstr[1] ""\n\n'
        'msgid "Where is the library?"\nmsgid_plural "How much does it cost?"\nmsgstr[0] ""'
    )
    out = translate("a.pot", source.encode()).decode()
    assert hunks(source, out) == [
        ([], ["#, fuzzy"]),
        (['msgstr[1] ""'], ['msgstr[1] "Je voudrais un café, s\'il vous plaît."']),
        ([], ["#, fuzzy"]),
        (['msgstr[0] ""'], ['msgstr[0] "Où est la bibliothèque?"', 'msgstr[1] "Combien ça coûte?"']),
    ]


def test_a_file_that_does_not_wrap_gets_msgstrs_it_does_not_wrap():
    long = "My sister lives in Paris with her two cats. She works in a small bookshop near the river."
    source = f'msgid "{long}"\nmsgstr ""\n\nmsgid "Where is the library?"\nmsgstr ""\n'
    out = translate("a.po", source.encode()).decode()
    translation = "Ma sœur habite à Paris avec ses deux chats. Elle travaille dans une petite librairie près du fleuve."
    assert f'msgstr "{translation}"\n' in out


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ('msgid "a"\nmsgstr ""\nnonsense\n', "line 3 of this PO file is not a comment, a keyword or a string"),
        ('msgid "a\nmsgstr ""\n', "line 1 of this PO file is not a properly quoted string"),
        ('msgid "a"\n\nmsgid "b"\nmsgstr ""\n', "the entry at line 1 of this PO file has no msgstr"),
        ('msgid "a"\nmsgstr ""\nmsgstr "b"\n', "line 3 of this PO file repeats its entry's msgstr"),
    ],
)
def test_a_broken_po_file_is_a_400_naming_the_line(source, problem):
    with pytest.raises(BadDocument, match=problem):
        read_document("a.po", source.encode())
