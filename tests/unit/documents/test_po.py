"""PO catalogs, as gettext reads and writes them: a round trip changes only the msgstr lines of the
entries filled and their flags (a translator's diff sees nothing else, each msgstr wrapped as its
msgid is); plural entries get exactly the forms the header's Plural-Forms says; a person's
translation is never touched; a declared charset is read and written back."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from tests.unit.helpers.round_trip import PAIRS, hunks, translate
from translator.config import Documents
from translator.contract.options import RequestOptions
from translator.contract.schemas import Payload, TranslatedRecord, TranslationResult
from translator.documents import jobs
from translator.documents.formats import read_document, read_document_safely
from translator.documents.model import BadDocument
from translator.documents.po_plurals import plural_of

pytestmark = pytest.mark.pure


# PO round trips as a translator's diff sees them (#39): a file shaped as Weblate and gettext
# write them (a header without a comment, multi-line and wrapped strings, plural forms, comments of
# every kind, fuzzy, translated and obsolete entries) comes back with only the msgstr lines of the
# entries filled and their flags changed, each msgstr wrapped as its msgid is.
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


# PO files as other projects publish them (#42): plural entries get exactly the forms the file's
# Plural-Forms header says (Django 5.2's ja/LC_MESSAGES/django.po has one form, and its people's
# plural translations came back with a second one and flagged fuzzy), a template gets its target
# language's forms and the header line that says so, and a file in a declared legacy charset
# (ISO-8859-1, Big5) is read and written in it. Every output that gettext should compile is checked
# with `msgfmt -c` where gettext is installed.


TABLE = dict(PAIRS)
ONE, MANY = "It is next to the town hall.", "I would like a coffee, please."
# Plural-Forms as gettext's msginit writes them (its plural-table), by nplurals 1, 2, 3 and 6.
RULES = {
    "ja": (1, "0"),
    "de": (2, "(n != 1)"),
    "ru": (3, "(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2)"),
    "pl": (3, "(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2)"),
    "ar": (6, "n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 : n%100>=11 ? 4 : 5"),
}


def header(language: str, plural_forms: str | None, charset: str = "UTF-8") -> str:
    lines = [
        'msgid ""',
        'msgstr ""',
        r'"Project-Id-Version: shop 1.0\n"',
        r'"PO-Revision-Date: 2024-05-02 09:30+0200\n"',
        r'"Last-Translator: Anne Person <anne@example.org>\n"',
        r'"Language-Team: Team <team@example.org>\n"',
        rf'"Language: {language}\n"',
        r'"MIME-Version: 1.0\n"',
        rf'"Content-Type: text/plain; charset={charset}\n"',
        r'"Content-Transfer-Encoding: 8bit\n"',
    ]
    if plural_forms is not None:
        lines.append(rf'"Plural-Forms: {plural_forms}\n"')
    return "\n".join(lines) + "\n"


def plural(msgid: str, msgid_plural: str, forms: list[str], comment: str = "#: shop/cart.py:7") -> str:
    strings = "".join(f'msgstr[{index}] "{text}"\n' for index, text in enumerate(forms))
    return f'{comment}\nmsgid "{msgid}"\nmsgid_plural "{msgid_plural}"\n{strings}'


def compiles(tmp_path, data: bytes) -> None:
    """`msgfmt -c` takes the file: the check gettext makes before a catalog ships."""
    if shutil.which("msgfmt") is None:
        pytest.skip("needs gettext's msgfmt")
    path = tmp_path / "out.po"
    path.write_bytes(data)
    checked = subprocess.run(
        ["msgfmt", "-c", "-o", str(tmp_path / "out.mo"), str(path)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize(("language", "singular"), [("ja", None), ("de", 0), ("ru", 0), ("pl", 0), ("ar", 1)])
@pytest.mark.processes
def test_plural_entries_get_exactly_the_headers_forms(tmp_path, language, singular):
    nplurals, rule = RULES[language]
    person = [f"une personne {index}" for index in range(nplurals)]
    source = (
        header(language, f"nplurals={nplurals}; plural={rule};")
        + "\n"
        + plural(ONE, MANY, ["", ""])  # a template's two forms, whatever the language
        + "\n"
        + plural("Where is the library?", "How much does it cost?", person, "#: shop/cart.py:9")
        + "\n"
        + plural("Thank you for dinner.", "It was delicious!", ["ancien", "ancien"], "#, fuzzy")
    )
    out = translate(f"{language}.po", source.encode(), language).decode()

    def forms(msgid: str, msgid_plural: str) -> list[str]:
        # The form gettext picks for n = 1 from msgid; one form alone stands for every n.
        return [TABLE[msgid if index == singular else msgid_plural] for index in range(nplurals)]

    expected = (
        header(language, f"nplurals={nplurals}; plural={rule};")
        + "\n"
        + plural(ONE, MANY, forms(ONE, MANY), "#: shop/cart.py:7\n#, fuzzy")
        + "\n"
        + plural("Where is the library?", "How much does it cost?", person, "#: shop/cart.py:9")
        + "\n"
        + plural(
            "Thank you for dinner.",
            "It was delicious!",
            forms("Thank you for dinner.", "It was delicious!"),
            "#, fuzzy",
        )
    )
    assert out == expected
    compiles(tmp_path, out.encode())


def test_a_persons_plural_translations_are_never_changed(tmp_path):
    # Django 5.2's ja catalog: one form (nplurals=1), each plural entry translated by a person.
    translated = plural(ONE, MANY, ["市役所の隣にあります。"]) + "\n"
    # More forms than the header's, all filled: a person's, left as it is (and not flagged).
    extra = plural("Where is the library?", "How much does it cost?", ["図書館", "図書館"], "#: shop/cart.py:9")
    # Its one form filled, an empty second past nplurals: translated as far as the file counts.
    filled = "\n" + plural("Thank you for dinner.", "It was delicious!", ["ごちそうさま", ""], "#: x.py:1")
    source = header("ja", "nplurals=1; plural=0;") + "\n" + translated + extra + filled
    document = read_document("django.po", source.encode(), "ja")
    assert document.units == []
    assert document.write([]) == source.encode()
    todo = source + "\n" + plural("Can you help me?", "It was delicious!", [""], "#: x.py:2")
    out = translate("django.po", todo.encode(), "ja").decode()
    assert hunks(todo, out) == [([], ["#, fuzzy"]), (['msgstr[0] ""'], ['msgstr[0] "C\'était délicieux!"'])]


@pytest.mark.processes
def test_a_template_gets_its_target_languages_forms_and_the_header_line_saying_so(tmp_path):
    # As xgettext writes a template: the header's Plural-Forms a placeholder, its charset too.
    pot = header("", "nplurals=INTEGER; plural=EXPRESSION;", "CHARSET") + "\n" + plural(ONE, MANY, ["", ""])
    out = translate("messages.pot", pot.encode(), "ja").decode()
    assert hunks(pot, out) == [
        # What it is written in, once a translation is not ASCII (msgcat refuses it otherwise).
        ([r'"Content-Type: text/plain; charset=CHARSET\n"'], [r'"Content-Type: text/plain; charset=UTF-8\n"']),
        (
            [r'"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\n"'],
            [r'"Plural-Forms: nplurals=1; plural=0;\n"'],
        ),
        ([], ["#, fuzzy"]),
        (['msgstr[0] ""', 'msgstr[1] ""'], [f'msgstr[0] "{TABLE[MANY]}"']),
    ]
    compiles(tmp_path, out.encode())
    # CLDR's Arabic rule (Babel's), wrapped at gettext's width as msgcat would.
    out = translate("messages.pot", pot.encode(), "ar").decode()
    assert hunks(pot, out)[1] == (
        [r'"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\n"'],
        [
            '"Plural-Forms: nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 "',
            r'"&& n%100<=10 ? 3 : n%100>=0 && n%100<=2 ? 4 : 5);\n"',
        ],
    )
    assert [line for line in out.splitlines() if line.startswith("msgstr[")] == [
        f'msgstr[{index}] "{TABLE[ONE if index == 1 else MANY]}"' for index in range(6)
    ]
    compiles(tmp_path, out.encode())
    if shutil.which("msgcat") is not None:
        path = tmp_path / "ar.po"
        path.write_text(out)
        assert subprocess.run(["msgcat", str(path)], capture_output=True, check=True).stdout.decode() == out


@pytest.mark.processes
def test_a_header_without_plural_forms_gets_the_line_after_its_last(tmp_path):
    source = header("ru", None) + "\n" + plural(ONE, MANY, [""])
    out = translate("ru.po", source.encode(), "ru").decode()
    assert hunks(source, out)[0] == (
        [],
        [
            '"Plural-Forms: nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && "',
            r'"n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);\n"',
        ],
    )
    compiles(tmp_path, out.encode())
    # A file without any header: the forms are the target language's, and no header is made up.
    bare = plural(ONE, MANY, [""])
    assert translate("ru.po", bare.encode(), "ru").decode() == plural(
        ONE, MANY, [TABLE[ONE], TABLE[MANY], TABLE[MANY]], "#: shop/cart.py:7\n#, fuzzy"
    )
    # A language CLDR does not know: gettext's own default, two forms.
    assert translate("xx.po", bare.encode(), "zz").decode().count("msgstr[") == 2


@pytest.mark.parametrize("nplurals", [0, 11, 1000000])
def test_a_header_with_an_impossible_number_of_forms_is_refused(nplurals):
    source = header("ja", f"nplurals={nplurals}; plural=0;") + "\n" + plural(ONE, MANY, [""])
    with pytest.raises(BadDocument, match=f"header says nplurals={nplurals} .*1 to 10 plural forms"):
        read_document("a.po", source.encode(), "ja")


@pytest.mark.parametrize(
    ("expression", "values"),
    [
        # (n = 0, 1, 2, 5, 11, 21, 101, 112)
        (RULES["ru"][1], [2, 0, 1, 2, 2, 0, 0, 2]),
        (RULES["ar"][1], [0, 1, 2, 3, 4, 4, 5, 4]),
        ("(n > 1)", [0, 0, 1, 1, 1, 1, 1, 1]),
        ("n==1 ? 1 : n==2 ? 2 : n==3 ? 3 : n==6 ? 4 : 0", [0, 1, 2, 0, 0, 0, 0, 0]),
        ("!(n != 1) + (n - 3) / 2 * 0 + n % 10 % 3 - n % 10 % 3", [0, 1, 0, 0, 0, 0, 0, 0]),
    ],
)
def test_plural_expressions_are_read_as_gettext_reads_them(expression, values):
    assert [plural_of(expression, n) for n in (0, 1, 2, 5, 11, 21, 101, 112)] == values


@pytest.mark.parametrize("expression", ["", "n ==", "(n", "n ? 1", "n / 0", "plural", "n; 1", "(" * 400 + "n"])
def test_an_expression_gettext_would_not_read_is_none(expression):
    assert plural_of(expression, 1) is None


LATIN1 = (
    header("fr", "nplurals=2; plural=(n > 1);", "ISO-8859-1")
    + '\n# Relu par Anne-Hélène.\n#: a.py:1\nmsgid "Where is the library?"\nmsgstr ""\n'
    + '\nmsgid "Déjà vu"\nmsgstr "Déjà vu, à côté"\n'
)


@pytest.mark.processes
def test_a_latin1_file_is_read_and_written_in_latin1(tmp_path):
    data = LATIN1.encode("latin-1")
    document = read_document("fr.po", data, "fr")
    assert document.content_type == "text/x-gettext-translation; charset=ISO-8859-1"
    assert [unit.text for unit in document.units] == ["Where is the library?"]
    out = translate("fr.po", data)
    expected = LATIN1.replace(
        '#: a.py:1\nmsgid "Where is the library?"\nmsgstr ""',
        ('#: a.py:1\n#, fuzzy\nmsgid "Where is the library?"\nmsgstr "Où est la bibliothèque?"'),
    )
    assert out == expected.encode("latin-1")
    compiles(tmp_path, out)


@pytest.mark.processes
def test_a_translation_the_charset_cannot_hold_turns_the_file_to_utf8(tmp_path):
    document = read_document("fr.po", LATIN1.encode("latin-1"), "fr")
    out = document.write(["Œuvre « très » chère — 5 €"])
    expected = LATIN1.replace("charset=ISO-8859-1", "charset=UTF-8").replace(
        '#: a.py:1\nmsgid "Where is the library?"\nmsgstr ""',
        '#: a.py:1\n#, fuzzy\nmsgid "Where is the library?"\nmsgstr "Œuvre « très » chère — 5 €"',
    )
    assert out == expected.encode("utf-8")
    assert document.content_type == "text/x-gettext-translation; charset=utf-8"
    compiles(tmp_path, out)


@pytest.mark.processes
def test_big5_trail_bytes_that_are_backslashes_stay_what_they_were(tmp_path):
    # 功 and 許 end in 0x5C, a backslash in ASCII: read as bytes, they would escape the quote.
    source = (
        header("zh_TW", "nplurals=1; plural=0;", "Big5")
        + '\n# 譯者：許功蓋先生。\nmsgid "Can you help me?"\nmsgstr "功\\\\"\n'
        + '\nmsgid "Where is the library?"\nmsgstr ""\n'
    )
    data = source.encode("big5")
    assert b"\xa5\x5c\x5c\x5c\x22" in data  # 功, an escaped backslash, the closing quote
    document = read_document("zh_TW.po", data, "zh")
    assert [unit.text for unit in document.units] == ["Where is the library?"]
    assert document.content_type == "text/x-gettext-translation; charset=Big5"
    out = document.write(["圖書館在哪裡？"])
    assert out == source.replace(
        'msgid "Where is the library?"\nmsgstr ""', '#, fuzzy\nmsgid "Where is the library?"\nmsgstr "圖書館在哪裡？"'
    ).encode("big5")
    compiles(tmp_path, out)


@pytest.mark.parametrize(
    ("charset", "body", "problem"),
    [
        ("Shift_JIS", b"\x81", "not Shift_JIS text as its header declares .* at byte"),
        ("x-no-such", b"\xff", "charset 'x-no-such' .* is not one this service reads; convert it to UTF-8"),
        ("ISO-2022-JP", b"x", "charset 'ISO-2022-JP' .* switches state"),
    ],
)
def test_a_file_its_charset_cannot_be_read_in_is_a_400_naming_it(charset, body, problem):
    data = header("ja", "nplurals=1; plural=0;", charset).encode() + b'\nmsgid "a"\nmsgstr "' + body + b'"\n'
    with pytest.raises(BadDocument, match=problem):
        read_document("a.po", data, "ja")


@pytest.mark.parametrize("charset", ["CHARSET", "x-no-such"])
def test_a_templates_charset_placeholder_and_an_unknown_name_read_as_utf8(charset):
    source = header("fr", "nplurals=2; plural=(n > 1);", charset) + '\nmsgid "Where is the library?"\nmsgstr ""\n'
    document = read_document("a.pot", source.encode(), "fr")
    assert document.content_type == "text/x-gettext-translation; charset=utf-8"
    # ASCII still: the header is left as it is; else it says what the file is written in.
    entry = '\nmsgid "Where is the library?"\nmsgstr ""\n'
    filled = '\n#, fuzzy\nmsgid "Where is the library?"\nmsgstr "{}"\n'
    ascii_only = source.replace(entry, filled.format("Ou est la bibliotheque?"))
    assert document.write(["Ou est la bibliotheque?"]).decode() == ascii_only
    relabelled = source.replace(entry, filled.format("Où est la bibliothèque?"))
    assert document.write(["Où est la bibliothèque?"]).decode() == relabelled.replace(charset, "UTF-8")


def test_the_job_answers_with_the_charset_the_file_was_written_in(tmp_path):
    store = jobs.JobStore(Documents(folder=str(tmp_path)))
    data = LATIN1.encode("latin-1")
    document = read_document_safely("fr.po", data, "fr")
    state = store.create("fr.po", "en", "fr", len(document.units))
    state.content_type = document.content_type

    async def engine(payload: Payload, options: RequestOptions) -> TranslationResult:
        return TranslationResult(result=[TranslatedRecord(id=r.id, text="Où est l’œuvre ?") for r in payload.records])

    asyncio.run(jobs.run(store, state, document, engine))
    final = store.load(state.id)
    assert final is not None and final.status == "done"
    assert final.content_type == "text/x-gettext-translation; charset=utf-8"
    assert store.result_path(state.id).read_bytes().decode("utf-8").count("charset=UTF-8") == 1


@pytest.mark.processes
def test_a_header_without_plural_forms_keeps_the_two_forms_its_people_wrote(tmp_path):
    # WTForms' Persian catalog (#49): no Plural-Forms, so gettext reads two forms, as its people
    # wrote them; Babel gives Persian one, and a header saying one made msgfmt -c refuse the file.
    done = plural("Field must be at least %(min)d character long.", "Field must be %(min)d long.", ["x", "y"])
    source = header("fa", None) + "\n" + done + "\n" + plural(ONE, MANY, ["", ""])
    out = translate("wtforms.po", source.encode(), "fa").decode()
    assert hunks(source, out)[0] == ([], [r'"Plural-Forms: nplurals=2; plural=(n != 1);\n"'])
    assert out.count("msgstr[") == 4 and 'msgstr[0] "x"\nmsgstr[1] "y"' in out
    compiles(tmp_path, out.encode())
    # Without a person's plural translation, the target language's forms, as before.
    bare = header("fa", None) + "\n" + plural(ONE, MANY, ["", ""])
    assert "nplurals=1; plural=0;" in translate("wtforms.po", bare.encode(), "fa").decode()
