"""A memory's files: TMX, PO, XLIFF and CSV/TSV read into the segments people translated, what was
left out counted and said; TMX written and read back to the same segments; hostile or wrong files
a 400 or 413 that names the problem, never a parser's exception."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translator.contract.errors import InvalidRequest, PayloadTooLarge
from translator.memory import model
from translator.memory.files import base_language, read_memory_file, write_tmx
from translator.memory.model import Segment

pytestmark = pytest.mark.pure


def pairs(imported) -> list[tuple[str, str, str]]:
    return [(s.source, s.target_lang, s.target) for s in imported.segments]


def refusal(filename: str, data: bytes, source: str | None = "en", target: str | None = None) -> str:
    with pytest.raises(InvalidRequest) as raised:
        read_memory_file(filename, data, source, target)
    return raised.value.message


# --- languages ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "base"),
    [("en-US", "en"), ("EN", "en"), ("de-DE", "de"), ("zh-Hans-CN", "zh"), ("pt_BR", "pt"), ("sr@latin", "sr")],
)
def test_base_language_is_the_language_without_script_region_or_variant(code, base):
    assert base_language(code) == base


# --- TMX ----------------------------------------------------------------------------------------


def tmx(body: str, header: str = 'srclang="en-US"', prolog: str = "") -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n{prolog}<tmx version="1.4">\n'
        f'<header creationtool="t" creationtoolversion="1" datatype="plaintext" segtype="sentence" '
        f'adminlang="en" o-tmf="t" {header}/>\n<body>\n{body}\n</body>\n</tmx>\n'
    ).encode()


def test_a_tmx_unit_gives_a_segment_per_other_language_codes_as_written():
    data = tmx(
        '<tu><tuv xml:lang="en-US"><seg>Save the file.</seg></tuv>'
        '<tuv xml:lang="de-DE"><seg>Datei speichern.</seg></tuv>'
        '<tuv lang="FR"><seg>Enregistrer le fichier.</seg></tuv></tu>'
    )
    imported = read_memory_file("memory.tmx", data, None, None)
    assert imported.source_lang == "en-US"
    assert pairs(imported) == [
        ("Save the file.", "de-DE", "Datei speichern."),
        ("Save the file.", "FR", "Enregistrer le fichier."),
    ]
    assert pairs(read_memory_file("memory.TMX", data, "en", "fr")) == [
        ("Save the file.", "FR", "Enregistrer le fichier.")
    ]


def test_tmx_inline_codes_come_back_as_the_original_markup():
    data = tmx(
        '<tu><tuv xml:lang="en"><seg>Press <bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">&lt;/b&gt;</ept> '
        '<ph x="2">&lt;img alt="<sub>Logo</sub>"/&gt;</ph><it pos="begin">&lt;i&gt;</it><hi>now</hi>'
        "<ut>{\\b}</ut></seg></tuv>"
        '<tuv xml:lang="de"><seg><bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">&lt;/b&gt;</ept> drücken</seg></tuv></tu>',
        header='srclang="en"',
    )
    assert pairs(read_memory_file("m.tmx", data, None, None)) == [
        ('Press <b>OK</b> <img alt="Logo"/><i>now{\\b}', "de", "<b>OK</b> drücken")
    ]


def test_tmx_units_left_out_are_counted_and_said():
    data = tmx(
        '<tu><tuv xml:lang="de"><seg>Nur Deutsch</seg></tuv><tuv xml:lang="fr"><seg>Français</seg></tuv></tu>\n'
        '<tu><tuv xml:lang="en"><seg>Empty</seg></tuv><tuv xml:lang="de"><seg> </seg></tuv></tu>\n'
        '<tu><tuv xml:lang="en"><seg>Kept</seg></tuv><tuv xml:lang="de"><seg>Behalten</seg></tuv></tu>',
        header='srclang="en"',
    )
    imported = read_memory_file("m.tmx", data, None, None)
    assert pairs(imported) == [("Kept", "de", "Behalten")]
    assert imported.skipped == 2
    assert imported.notes == ["line 5: a <tu> without a <tuv> in en", "line 6: an empty translation"]


def test_a_tmx_whose_header_says_all_needs_the_clients_source_language():
    data = tmx(
        '<tu><tuv xml:lang="de"><seg>Hallo</seg></tuv><tuv xml:lang="en"><seg>Hello</seg></tuv></tu>', 'srclang="*all*"'
    )
    message = refusal("m.tmx", data, None)
    assert message.startswith("sourceLang: required") and 'srclang="*all*"' in message
    assert pairs(read_memory_file("m.tmx", data, "de", None)) == [("Hallo", "en", "Hello")]


def test_a_tmx_streams_a_large_file_and_stops_at_the_import_bound(monkeypatch):
    unit = '<tu><tuv xml:lang="en"><seg>Line {0}</seg></tuv><tuv xml:lang="de"><seg>Zeile {0}</seg></tuv></tu>\n'
    data = tmx("".join(unit.format(n) for n in range(20_001)), 'srclang="en"')
    assert len(read_memory_file("m.tmx", data, None, None).segments) == 20_001
    monkeypatch.setattr(model, "MAX_SEGMENTS_PER_IMPORT", 20_000)
    monkeypatch.setattr("translator.memory.reading.MAX_SEGMENTS_PER_IMPORT", 20_000)
    with pytest.raises(PayloadTooLarge) as raised:
        read_memory_file("m.tmx", data, None, None)
    assert raised.value.message == "file: the segments of this TMX file exceeds the limit of 20000"


BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE tmx [\n<!ENTITY lol "lol">\n'
    + "".join(
        f'<!ENTITY lol{n} "{("&lol" + str(n - 1) + ";") * 10 if n > 1 else "&lol;" * 10}">\n' for n in range(1, 10)
    )
    + ']>\n<tmx version="1.4"><header srclang="en"/><body><tu><tuv xml:lang="en"><seg>&lol9;</seg></tuv>'
    '<tuv xml:lang="de"><seg>x</seg></tuv></tu></body></tmx>'
).encode()


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("billion laughs", BILLION_LAUGHS, "file: this TMX file's document type declares entities"),
        (
            "an external entity",
            b'<!DOCTYPE tmx [<!ENTITY e SYSTEM "file:///etc/passwd">]><tmx><body>&e;</body></tmx>',
            "file: this TMX file's document type declares entities",
        ),
        ("not XML", b"Hello, this is a text file.\n", "file: this TMX file is not well-formed XML at line 1: "),
        (
            "cut short",
            tmx('<tu><tuv xml:lang="en"><seg>a</seg></tuv>')[:-30],
            "file: this TMX file is not well-formed XML",
        ),
        (
            "another XML",
            b"<html><body/></html>",
            "file: this file's root element is <html>, not a TMX document's <tmx>",
        ),
        (
            "an entity an external DTD might define",
            tmx(
                '<tu><tuv xml:lang="en"><seg>a&nbsp;b</seg></tuv></tu>',
                'srclang="en"',
                '<!DOCTYPE tmx SYSTEM "tmx14.dtd">\n',
            ),
            "file: line 6 of this TMX file refers to an entity, &nbsp;, no DTD defines",
        ),
        (
            "an undefined entity",
            tmx("<tu>&nbsp;</tu>", 'srclang="en"'),
            "file: this TMX file is not well-formed XML at line 5: Entity 'nbsp' not defined",
        ),
    ],
)
def test_a_hostile_or_wrong_tmx_is_a_400_naming_the_problem(name, data, expected):
    assert refusal("m.tmx", data).startswith(expected), name


def test_a_2_mb_segment_is_a_413_naming_where_it_is():
    data = tmx(
        f'<tu><tuv xml:lang="en"><seg>{"a" * 2_000_000}</seg></tuv><tuv xml:lang="de"><seg>b</seg></tuv></tu>',
        'srclang="en"',
    )
    with pytest.raises(PayloadTooLarge) as raised:
        read_memory_file("m.tmx", data, None, None)
    assert raised.value.message == (
        f"file: the source at line 5 of this TMX file exceeds the limit of {model.MAX_SEGMENT_CHARS} (got 2000000)"
    )


# --- TMX written and read back ------------------------------------------------------------------


def test_write_tmx_is_tmx_1_4b_one_unit_per_source():
    data = write_tmx(
        "Support", "en", [Segment("Hi", "de", "Hallo"), Segment("Hi", "fr", "Salut"), Segment("Bye", "de", "Tschüss")]
    )
    text = data.decode("utf-8")
    assert text.count("<tu>") == 2 and '<tmx version="1.4">' in text
    for attribute in ('creationtool="', 'creationtoolversion="', 'datatype="plaintext"', 'segtype="sentence"'):
        assert attribute in text
    assert 'adminlang="en"' in text and 'srclang="en"' in text and 'o-tmf="' in text
    assert '<prop type="x-name">Support</prop>' in text


def test_a_later_segment_of_a_source_and_language_replaces_an_earlier_one():
    data = write_tmx("m", "en", [Segment("Hi", "de", "Hallo"), Segment("Hi", "de", "Servus")])
    assert pairs(read_memory_file("m.tmx", data, None, None)) == [("Hi", "de", "Servus")]


TEXTS = [
    "Press <b>OK</b> &amp; go",
    "a ]]> b",
    "line one\nline two\r\nthree\rfour",
    "  spaces at the edges\t",
    "emoji 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "\"quotes\" and 'apostrophes' & <![CDATA[x]]>",
    "<!-- not a comment --> <?pi not one?>",
    "&nbsp; &#233; &lol;",
]


@pytest.mark.parametrize("text", TEXTS)
def test_write_tmx_then_read_gives_the_same_segments(text):
    segments = [Segment(text, "de", text[::-1]), Segment(text, "fr-CA", "x" + text)]
    assert read_memory_file("m.tmx", write_tmx(text, "en", segments), None, None).segments == segments


# Text XML can hold: every character but the C0 controls other than tab and line ends, the
# surrogates and U+FFFE/U+FFFF.
XML_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffe\uffff").filter(
        lambda c: c in "\t\n\r" or ord(c) >= 0x20
    ),
    min_size=1,
).filter(str.strip)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(XML_TEXT, st.sampled_from(["de", "fr", "pt-BR"]), XML_TEXT), max_size=8))
def test_any_segments_xml_can_hold_come_back_from_their_tmx(written):
    last: dict[tuple[str, str], str] = {}
    for source, lang, target in written:
        last[source, lang] = target
    data = write_tmx("m", "en", [Segment(*segment) for segment in written])
    assert sorted(pairs(read_memory_file("m.tmx", data, None, None))) == sorted(
        (s, lang, t) for (s, lang), t in last.items()
    )


def test_control_characters_xml_cannot_hold_are_left_out_of_an_import_and_of_an_export():
    po = b'msgid ""\nmsgstr "Language: de\\n"\n\nmsgid "Bell\\a"\nmsgstr "Klingel\\a"\n\nmsgid "Ok"\nmsgstr "Gut"\n'
    imported = read_memory_file("m.po", po, "en", None)
    assert pairs(imported) == [("Ok", "de", "Gut")]
    assert imported.notes == ["line 4: control characters a TMX file cannot hold (U+0007)"]
    # A segment that came otherwise is written without them: an export never fails on one.
    data = write_tmx("m\x00", "en", [Segment("Bell\x07", "de", "Klingel\x0b\ufffe")])
    assert pairs(read_memory_file("m.tmx", data, None, None)) == [("Bell", "de", "Klingel")]


# --- PO ------------------------------------------------------------------------------------------

PO = """# German catalog
msgid ""
msgstr ""
"Language: de\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

msgid "Save"
msgstr "Speichern"

#, fuzzy
msgid "Open"
msgstr "Öffnen?"

msgid "Close"
msgstr ""

msgctxt "menu"
msgid "File"
msgstr "Datei"

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

#~ msgid "Old"
#~ msgstr "Alt"
"""


def test_a_po_file_gives_its_translated_entries_not_fuzzy_ones():
    imported = read_memory_file("de.po", PO.encode(), "en", None)
    assert imported.source_lang == "en"
    assert pairs(imported) == [
        ("Save", "de", "Speichern"),
        ("File", "de", "Datei"),
        ("%d file", "de", "%d Datei"),
        ("%d files", "de", "%d Dateien"),
    ]
    assert imported.skipped == 3
    assert imported.notes == ["line 11: a fuzzy entry", "line 14: untranslated", "an obsolete entry (#~)"]


def test_a_po_plural_takes_the_last_form_for_msgid_plural():
    ru = (
        'msgid ""\nmsgstr "Language: ru\\n"\n\nmsgid "%d file"\nmsgid_plural "%d files"\n'
        'msgstr[0] "%d файл"\nmsgstr[1] "%d файла"\nmsgstr[2] "%d файлов"\n'
    )
    assert pairs(read_memory_file("ru.po", ru.encode(), "en", None)) == [
        ("%d file", "ru", "%d файл"),
        ("%d files", "ru", "%d файлов"),
    ]
    ja = 'msgid ""\nmsgstr "Language: ja\\n"\n\nmsgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "%d ファイル"\n'
    assert pairs(read_memory_file("ja.po", ja.encode(), "en", None)) == [
        ("%d file", "ja", "%d ファイル"),
        ("%d files", "ja", "%d ファイル"),
    ]


def test_a_po_file_needs_its_source_language_and_a_target_language():
    assert refusal("de.po", PO.encode(), None) == "sourceLang: required for a PO file (the language of its msgids)"
    template = b'msgid ""\nmsgstr "Language: \\n"\n\nmsgid "Save"\nmsgstr "Speichern"\n'
    assert refusal("x.pot", template, "en") == "targetLang: required: this PO file's header names no Language"
    assert pairs(read_memory_file("x.pot", template, "en", "de-AT")) == [("Save", "de-AT", "Speichern")]


def test_a_po_file_in_its_declared_charset_and_a_malformed_one():
    latin1 = (
        'msgid ""\nmsgstr "Language: fr\\nContent-Type: text/plain; charset=ISO-8859-1\\n"\n\n'
        'msgid "Yes"\nmsgstr "Oui, très"\n'
    )
    assert pairs(read_memory_file("fr.po", latin1.encode("latin-1"), "en", None)) == [("Yes", "fr", "Oui, très")]
    message = refusal("fr.po", b'msgid ""\nmsgstr "Language: fr\\n"\n\nmsgid "Yes\nmsgstr "Oui"\n')
    assert message == "file: line 4 of this PO file is not a properly quoted string"


# --- XLIFF ---------------------------------------------------------------------------------------

XLIFF_12 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="a" source-language="en-US" target-language="de-DE" datatype="plaintext">
    <body>
      <trans-unit id="1"><source>Done</source><target>Fertig</target></trans-unit>
      <trans-unit id="2"><source>Final</source><target state="final">Endgültig</target></trans-unit>
      <trans-unit id="3"><source>New</source><target state="new">Neu</target></trans-unit>
      <trans-unit id="4" approved="yes"><source>Approved</source><target state="new">Gebilligt</target></trans-unit>
      <trans-unit id="5"><source>Review</source><target state="needs-review-translation">Prüfen</target></trans-unit>
      <trans-unit id="6"><source>Machine</source><target state-qualifier="mt-suggestion">Maschine</target></trans-unit>
      <trans-unit id="7"><source>Bold <g id="1">text</g></source><target><g id="1">Fett</g></target></trans-unit>
      <trans-unit id="8"><source>Empty</source><target/></trans-unit>
      <group translate="no"><trans-unit id="9"><source>Brand</source><target>Brand</target></trans-unit></group>
      <trans-unit id="10"><source>Signed</source><target state="signed-off">Unterzeichnet</target>
        <alt-trans><source>Signed</source><target>Anders</target></alt-trans></trans-unit>
    </body>
  </file>
</xliff>
"""


def test_xliff_1_2_takes_translated_or_approved_targets():
    imported = read_memory_file("de.xlf", XLIFF_12.encode(), None, None)
    assert imported.source_lang == "en-US"
    assert pairs(imported) == [
        ("Done", "de-DE", "Fertig"),
        ("Final", "de-DE", "Endgültig"),
        ("Approved", "de-DE", "Gebilligt"),
        ("Signed", "de-DE", "Unterzeichnet"),
    ]
    assert imported.notes == [
        'line 7: state="new"',
        'line 9: state="needs-review-translation"',
        "line 10: a machine translation's suggestion (state-qualifier)",
        "line 11: inline elements (their codes are in the file's skeleton, not in its text)",
        "line 12: an empty translation",
        'line 13: translate="no"',
    ]


XLIFF_20 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en" trgLang="fr">
  <file id="f1">
    <unit id="1">
      <segment state="translated"><source>One.</source><target>Un.</target></segment>
      <ignorable><source> </source></ignorable>
      <segment state="final"><source>Two.</source><target>Deux.</target></segment>
    </unit>
    <unit id="2"><segment state="reviewed"><source>Seen</source><target>Vu</target></segment></unit>
    <unit id="3"><segment><source>No state</source><target>Sans état</target></segment></unit>
    <unit id="4"><segment state="initial"><source>Start</source><target>Début</target></segment></unit>
    <unit id="5"><segment state="translated" subState="m2m:mt-suggestion"><source>Ours</source><target>Nôtre</target>
    </segment></unit>
    <unit id="6"><segment><source>Go <pc id="1">here</pc></source><target><pc id="1">Ici</pc></target></segment></unit>
    <unit id="7"><segment><source>Hello <ph id="1"/></source><target>Bonjour</target></segment></unit>
  </file>
</xliff>
"""


def test_xliff_2_0_takes_translated_reviewed_and_final_segments():
    imported = read_memory_file("fr.xliff", XLIFF_20.encode(), "en", "fr")
    assert pairs(imported) == [
        ("One.", "fr", "Un."),
        ("Two.", "fr", "Deux."),
        ("Seen", "fr", "Vu"),
        ("No state", "fr", "Sans état"),
    ]
    assert [note.split(": ", 1)[1] for note in imported.notes] == [
        'state="initial"',
        'a machine translation (subState="m2m:mt-suggestion")',
        "inline elements (their codes are in the file's skeleton, not in its text)",
        "inline elements (their codes are in the file's skeleton, not in its text)",
    ]


# As translate-toolkit 3.20's po2xliff writes a PO file (a header, a fuzzy entry, a translated one,
# an untranslated one): XLIFF 1.1.
PO2XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:1.1" version="1.1">
  <file original="f.po" source-language="en-US" datatype="plaintext" target-language="de">
    <body>
      <trans-unit xml:space="preserve" id="2" approved="no" restype="x-gettext-domain-header">
        <source>Language: de
</source>
        <target state="translated">Language: de
</target>
      </trans-unit>
      <trans-unit xml:space="preserve" id="3" approved="no">
        <source>Open</source>
        <target state="needs-translation">Oeffnen</target>
      </trans-unit>
      <trans-unit xml:space="preserve" id="4" approved="yes">
        <source>Save</source>
        <target state="translated">Speichern</target>
      </trans-unit>
      <trans-unit xml:space="preserve" id="5">
        <source>Close</source>
        <target></target>
      </trans-unit>
    </body>
  </file>
</xliff>
"""


def test_xliff_1_1_as_po2xliff_writes_it_gives_the_translated_entries_alone():
    imported = read_memory_file("de.xlf", PO2XLIFF.encode(), "en", None)
    assert pairs(imported) == [("Save", "de", "Speichern")]
    assert imported.notes == [
        "line 5: a PO header",
        'line 11: state="needs-translation"',
        "line 19: an empty translation",
    ]


def test_xliff_languages_the_file_and_the_client_must_agree_on():
    assert refusal("fr.xliff", XLIFF_20.encode(), "de").startswith("sourceLang: 'de', but the <xliff> at line 2")
    assert refusal("fr.xliff", XLIFF_20.encode(), "en", "es").startswith("targetLang: 'es', but the <xliff>")
    without = XLIFF_12.replace(' target-language="de-DE"', "").encode()
    assert refusal("de.xlf", without, "en").startswith("targetLang: required: the <file> at line 3")
    assert pairs(read_memory_file("de.xlf", without, "en", "de"))[0] == ("Done", "de", "Fertig")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"<xliff version='3.0'/>", "file: this XLIFF file's version ('3.0') is not 1.x or 2.0"),
        (b"<tmx version='1.4'/>", "file: this file's root element is <tmx>, not an XLIFF document's <xliff>"),
        (BILLION_LAUGHS.replace(b"tmx", b"xliff"), "file: this XLIFF file's document type declares entities"),
    ],
)
def test_a_wrong_xliff_is_a_400_naming_the_problem(data, expected):
    assert refusal("m.xlf", data).startswith(expected)


# --- CSV and TSV ---------------------------------------------------------------------------------


def test_a_two_column_csv_takes_the_clients_languages():
    data = '\ufeffHello,Hallo\n"Quoted, with comma","Zitiert, mit Komma"\n\n"Two\nlines",Zwei Zeilen\nyes,\n'.encode()
    imported = read_memory_file("m.csv", data, "en", "de")
    assert pairs(imported) == [
        ("Hello", "de", "Hallo"),
        ("Quoted, with comma", "de", "Zitiert, mit Komma"),
        ("Two\nlines", "de", "Zwei Zeilen"),
    ]
    assert imported.notes == ["line 6: an empty translation"]
    assert refusal("m.csv", data, "en", None).startswith("sourceLang, targetLang: required")


def test_a_csv_with_a_header_of_language_codes_and_a_tsv():
    data = b"en;de-DE;fr\nSave;Speichern;Enregistrer\nOpen;\xc3\x96ffnen;\n"
    imported = read_memory_file("m.csv", data, None, None)
    assert imported.source_lang == "en"
    assert pairs(imported) == [
        ("Save", "de-DE", "Speichern"),
        ("Save", "fr", "Enregistrer"),
        ("Open", "de-DE", "Öffnen"),
    ]
    assert pairs(read_memory_file("m.tsv", b"en\tfr\nSave\tEnregistrer\n", None, "fr")) == [
        ("Save", "fr", "Enregistrer")
    ]
    # A first row that reads as codes is text where the client's languages say so.
    assert pairs(read_memory_file("m.csv", b"yes,ja\n", "en", "de")) == [("yes", "de", "ja")]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            "Grüße,Saludos\n".encode("latin-1"),
            "file: this CSV file is not UTF-8 text (invalid start byte at byte 2, line 1); save it as UTF-8",
        ),
        (
            b"a,b,c\n",
            "file: line 1 of this CSV file has 3 columns, 2 expected (the source, then a translation a column)",
        ),
        (b"\n\n", "file: this CSV file has no rows"),
        (b'"open quote,x\n', "file: line 1 of this CSV file cannot be read: unexpected end of data"),
        (b'"ab"c,d\n', "file: line 1 of this CSV file cannot be read: ',' expected after '\"'"),
    ],
)
def test_a_wrong_csv_is_a_400_naming_the_problem(data, expected):
    assert refusal("m.csv", data, "en", "de").startswith(expected)


def test_a_csv_cell_past_the_parsers_limit_is_a_413():
    with pytest.raises(PayloadTooLarge) as raised:
        read_memory_file("m.csv", b"a," + b"b" * 2_000_000 + b"\n", "en", "de")
    assert raised.value.message.startswith("file: a cell at line 1 of this CSV file exceeds the limit")


def test_another_extension_is_a_400_naming_the_accepted_ones():
    assert refusal("memory.docx", b"PK") == (
        "file: 'memory.docx' is not a memory file this service reads; "
        "accepted: .tmx, .po, .pot, .xlf, .xliff, .csv, .tsv"
    )
