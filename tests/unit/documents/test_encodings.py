"""Text and subtitle files in the encoding they came in: byte-order marks (UTF-16, UTF-32), legacy
encodings detected or named by the upload's `encoding` field, read and written back in it (UTF-8
where it cannot hold the translation); bytes nothing explains, or an `encoding` that does not fit,
a 400 naming the problem."""

from __future__ import annotations

import codecs
import random

import pytest

from harness import documents
from translator.documents import encoding as encodings
from translator.documents.encoding import decode_legacy_text, decode_text, named_encoding
from translator.documents.formats import read_document
from translator.documents.model import BadDocument, Part

pytestmark = pytest.mark.pure


# Text and subtitle files in the encoding they came in (#42): UTF-16 and UTF-32 with their
# byte-order mark, and legacy encodings (pysrt's windows-1252 sample) that charset-normalizer tells
# with confidence, read and written back in that encoding, which the content type declares; UTF-8
# where that encoding cannot hold the translation. Bytes nothing explains stay a 400 naming the
# problem, as tests/e2e/test_hostile_files.py expects of its short Latin-1 files.
FRENCH = [
    "Il était une fois une jeune fille très belle qui habitait près de la forêt.",
    "Elle s'appelait Cendrillon, et sa belle-mère ne l'aimait guère.",
    "Chaque soir, elle s'asseyait près de la cheminée, dans les cendres.",
]
NOT_UTF8 = "not UTF-8 or UTF-16 text"


def srt(lines: list[str]) -> str:
    return "".join(f"{n}\r\n00:00:0{n},000 --> 00:00:0{n},900\r\n{text}\r\n\r\n" for n, text in enumerate(lines, 1))


@pytest.mark.parametrize(
    ("bom", "codec", "charset"),
    [
        (b"", "utf-8", "utf-8"),
        (codecs.BOM_UTF8, "utf-8", "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
        (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
    ],
)
@pytest.mark.parametrize(("name", "mime"), [("a.srt", "application/x-subrip"), ("a.txt", "text/plain")])
def test_unicode_files_come_back_in_their_own_encoding_and_byte_order(bom, codec, charset, name, mime):
    def text(lines: list[str]) -> str:
        return srt(lines) if name.endswith(".srt") else "\n".join(lines) + "\n"

    source = bom + text(FRENCH).encode(codec)
    document = read_document(name, source, "de")
    assert document.content_type == f"{mime}; charset={charset}"
    assert document.write([unit.text for unit in document.units]) == source
    translations = [line.upper() for line in FRENCH]
    assert document.write(translations) == bom + text(translations).encode(codec)
    assert document.content_type == f"{mime}; charset={charset}"


def test_windows_1252_subtitles_are_read_and_written_in_windows_1252():
    # pysrt's windows-1252.srt in small: French, no declaration, not UTF-8.
    source = srt(FRENCH).encode("cp1252")
    document = read_document("film.srt", source, "de")
    assert [unit.text for unit in document.units] == FRENCH  # "très", not windows-1250's "trčs"
    assert document.content_type == "application/x-subrip; charset=windows-1252"
    assert document.write([unit.text for unit in document.units]) == source
    translations = ["Es war einmal ein schönes Mädchen.", "Sie hieß Aschenputtel.", "Jeden Abend saß sie dort."]
    assert document.write(translations) == srt(translations).encode("cp1252")
    assert document.content_type == "application/x-subrip; charset=windows-1252"


def test_a_translation_the_legacy_encoding_cannot_hold_is_written_in_utf8_and_declared_so():
    document = read_document("notes.txt", ("\n".join(FRENCH) + "\n").encode("cp1252"), "ru")
    assert document.content_type == "text/plain; charset=windows-1252"
    translations = ["Жила-была девушка.", "Её звали Золушка.", "Каждый вечер она сидела у камина."]
    assert document.write(translations) == ("\n".join(translations) + "\n").encode("utf-8")
    assert document.content_type == "text/plain; charset=utf-8"
    # The next write settles its charset again.
    document.write([unit.text for unit in document.units])
    assert document.content_type == "text/plain; charset=windows-1252"


OTHER_SCRIPTS = [
    ("cp1251", "windows-1251", ["Жили-были старик со старухой.", "У них не было детей, и они очень горевали."]),
    ("koi8_r", "koi8-r", ["Жили-были старик со старухой.", "У них не было детей, и они очень горевали."]),
    ("cp1253", "windows-1253", ["Μια φορά κι έναν καιρό ζούσε ένας βασιλιάς.", "Είχε τρεις κόρες."]),
    ("shift_jis", "shift_jis", ["昔々、ある所におじいさんとおばあさんが住んでいました。", "山へ芝刈りに。"]),
    ("gb18030", "gb18030", ["从前有座山，山里有座庙，庙里有个老和尚。", "老和尚在给小和尚讲故事。"]),
    ("euc_kr", "euc-kr", ["안녕하세요, 오늘 어떻게 지내세요?", "모든 것이 잘 되기를 바랍니다."]),
]


def assert_read_and_written_back_in(codec: str, charset: str, lines: list[str]) -> None:
    """Subtitles of `lines` in `codec`: read as those lines, labelled `charset`, written back byte for byte."""
    source = srt(lines).encode(codec)
    document = read_document("film.srt", source, "en")
    assert [unit.text for unit in document.units] == lines
    assert document.content_type == f"application/x-subrip; charset={charset}"
    assert document.write([unit.text for unit in document.units]) == source


@pytest.mark.parametrize(("codec", "charset", "lines"), OTHER_SCRIPTS)
def test_legacy_encodings_of_other_scripts_are_told(codec, charset, lines):
    assert_read_and_written_back_in(codec, charset, lines)


@pytest.mark.parametrize(
    ("codec", "charset", "lines"),
    [
        # windows-1252 reads these with ý, þ, ð for ı, ş, ğ as cleanly, and as coherently within
        # charset-normalizer's noise: the language's usual encoding decides.
        (
            "cp1254",
            "windows-1254",
            [
                "Bir zamanlar çok güzel bir kız varmış.",
                "Ormanın yakınında küçük bir evde yaşarmış.",
                "Her sabah işe gidermiş.",
            ],
        ),
        (
            "cp1250",
            "windows-1250",
            ["Egyszer volt, hol nem volt, élt egyszer egy szegény ember.", "Három fia volt, mind erős legények."],
        ),
        (
            "cp1250",
            "windows-1250",
            ["A fost odată o fată frumoasă care locuia lângă pădure.", "Tatăl ei era un om bun şi harnic."],
        ),
        # windows-1250 reads ą and ś as ± and ¶ here: ISO-8859-2, Polish's other usual encoding.
        (
            "iso8859_2",
            "iso-8859-2",
            ["Dawno temu żyła sobie królowa, która miała piękną córkę.", "Każdego dnia chodziła po świeże owoce."],
        ),
    ],
)
def test_where_readings_tie_the_languages_usual_encoding_wins(codec, charset, lines):
    assert_read_and_written_back_in(codec, charset, lines)


POLISH_LINES = [
    "Zażółć gęślą jaźń. Świat się śmieje, a ślimak śpi w słońcu.",
    "Ściana, śnieg, źródło i ślub: wszystko to było dawno temu.",
    "Każdego dnia chodziła po świeże owoce do sąsiedniej wsi.",
    "Dawno temu żyła sobie królowa, która miała piękną córkę.",
]


# Only ź of ISO-8859-2's own letters (ą and ś would read as symbols in windows-1250, which
# charset-normalizer already weighs): windows-1250 reads it as Ľ, as cleanly, and won as Polish's
# usual encoding.
POLISH_WITH_Z_ACUTE = [
    "Woda w źródle jest zimna i czysta, a obok rosła trawa.",
    "Kupiłem źrebię od starego rolnika z pobliskiej wioski.",
    "Jego źrenice były duże i ciemne, jak u kota w nocy.",
    "Po źródłach rzeki chodził tylko stary rybak.",
]


@pytest.mark.parametrize(
    ("codec", "charset", "lines"),
    [
        ("iso8859_2", "iso-8859-2", POLISH_LINES),
        ("iso8859_2", "iso-8859-2", POLISH_WITH_Z_ACUTE),
        ("cp1250", "windows-1250", POLISH_LINES),
    ],
    ids=["ISO-8859-2", "ISO-8859-2 that reads as cleanly in windows-1250", "windows-1250"],
)
def test_iso_8859_2_is_told_from_windows_1250_by_the_bytes_windows_uses_for_letters(codec, charset, lines):
    # #49: Polish in ISO-8859-2 was read as windows-1250 where both read as cleanly ('ś' became
    # '¶'). Windows-1250 writes Ś ś Ź ź Š š in 0x80-0x9F, ISO-8859-2 never: a file with none
    # there but ISO-8859-2's own letters is ISO-8859-2; one with them stays windows-1250.
    assert_read_and_written_back_in(codec, charset, lines)


@pytest.mark.parametrize(
    ("codec", "charset", "lines"),
    [
        (
            "iso2022_jp",
            "iso-2022-jp",
            ["昔々、ある村に親切なおじいさんが住んでいました。", "毎日山へ芝刈りに行きました。"],
        ),
        ("iso2022_kr", "iso-2022-kr", ["옛날 옛적에 착한 나무꾼이 살았습니다.", "그는 매일 산에 갔습니다."]),
    ],
)
def test_seven_bit_iso_2022_files_are_told_by_their_escapes(codec, charset, lines):
    # #49: all bytes below 0x80, so they read as UTF-8 too, and the escape sequences were
    # translated as text.
    assert_read_and_written_back_in(codec, charset, lines)


def test_an_escape_byte_in_text_that_is_no_iso_2022_designation_is_not_taken_for_one():
    # ESC [ (a terminal's colour code) is no ISO-2022 designation: the file stays what it was.
    document = read_document("log.txt", b"\x1b[31mred\x1b[0m and plain\n", "en")
    assert document.content_type == "text/plain; charset=utf-8"


def test_utf16_without_a_byte_order_mark_is_told_by_its_nul_bytes():
    text = "\n".join(FRENCH) + "\n"
    for codec, charset in (("utf-16-le", "utf-16le"), ("utf-16-be", "utf-16be")):
        document = read_document("notes.txt", text.encode(codec), "de")
        assert [unit.text for unit in document.units] == FRENCH
        assert document.content_type == f"text/plain; charset={charset}"
        assert document.write([unit.text for unit in document.units]) == text.encode(codec)


def test_utf8_is_taken_as_utf8_before_any_detection(monkeypatch):
    monkeypatch.setattr(encodings, "_detect", lambda *_: pytest.fail("detection ran on UTF-8"))
    text, encoding = decode_legacy_text("café crème\n".encode(), "text")
    assert (text, encoding.charset) == ("café crème\n", "utf-8")


# tests/e2e/test_hostile_files.py's files: too little text in no known language to tell its encoding.
LATIN = "qz39hostilemark caf\xe9 cr\xe8me"


@pytest.mark.parametrize(
    ("name", "data", "problem"),
    [
        ("notes.txt", f"{LATIN}\n".encode("latin-1"), "invalid continuation byte at byte 19"),
        ("film.srt", f"1\n00:00:01,000 --> 00:00:02,000\n{LATIN}\n".encode("latin-1"), "at byte 51"),
        ("notes.txt", random.Random(1).randbytes(4096), "at byte"),
        ("notes.txt", b"\x89PNG\r\n\x1a\n" + random.Random(2).randbytes(300), "invalid start byte at byte 0"),
        ("notes.txt", b"PK\x03\x04" + bytes(40), "a NUL byte at byte 4"),
        ("notes.txt", "Hello\x00 there, a line of text with a NUL byte.\n".encode("utf-16-le")[1:], "a NUL byte"),
    ],
)
def test_bytes_nothing_explains_with_confidence_are_refused_naming_the_problem(name, data, problem):
    with pytest.raises(BadDocument, match=NOT_UTF8) as refused:
        read_document(name, data, "de")
    assert problem in refused.value.message and refused.value.part is Part.CONTENT


def test_control_characters_are_no_text_in_any_encoding():
    # French in windows-1252 but for one byte it does not define, which ISO-8859-15 (the best
    # reading showing a language) reads as a C1 control.
    source = ("\n".join(FRENCH) + "\n").encode("cp1252").replace(b"belle", b"be\x81lle")
    with pytest.raises(BadDocument, match=f"{NOT_UTF8}.*read as iso-8859-15 it has a control character .U.0081"):
        read_document("notes.txt", source, "de")


def test_a_byte_order_mark_over_other_bytes_is_refused_naming_it():
    with pytest.raises(BadDocument, match="starts with a utf-8 byte-order mark but is not utf-8 text"):
        read_document("a.srt", codecs.BOM_UTF8 + srt(FRENCH).encode("cp1252"), "de")


def test_detection_reads_a_bounded_sample_around_the_first_byte_utf8_does_not_explain(monkeypatch):
    import charset_normalizer

    seen: list[bytes] = []
    detect = charset_normalizer.from_bytes

    def recording(sample: bytes, **options):
        seen.append(sample)
        return detect(sample, **options)

    monkeypatch.setattr(charset_normalizer, "from_bytes", recording)
    ascii_part = "An ASCII line of an English text, repeated to fill the file.\n" * 60_000  # 3.6 MB
    source = (ascii_part + "\n".join(FRENCH) * 4 + "\n").encode("cp1252")
    text, encoding = decode_legacy_text(source, "text")
    assert encoding.charset == "windows-1252" and text.endswith(FRENCH[2] + "\n")
    [sample] = set(seen)  # one sample, each candidate encoding measured on it
    assert len(sample) <= encodings.DETECTION_SAMPLE and "très".encode("cp1252") in sample


def test_other_formats_keep_reading_unicode_only():
    # JSON and YAML are Unicode by their specifications: decode_text does not guess for them.
    with pytest.raises(BadDocument, match=NOT_UTF8):
        decode_text(("\n".join(FRENCH)).encode("cp1252"), "JSON")


PO_HEADER = 'msgid ""\nmsgstr ""\n'


@pytest.mark.parametrize(
    ("bom", "codec"),
    [(codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF32_BE, "utf-32-be")],
    ids=["utf-16be", "utf-16le", "utf-32be"],
)
@pytest.mark.parametrize(
    ("name", "text", "charset"),
    [
        ("fr.po", f'{PO_HEADER}"Content-Type: text/plain; charset=UTF-16\\n"\n\nmsgid "Hello"\nmsgstr ""\n', "utf"),
        ("en.json", '{"greeting": "Hello"}\n', None),
        ("en.yaml", "greeting: Hello\n", None),
    ],
    ids=["po", "json", "yaml"],
)
def test_unicode_formats_come_back_with_their_byte_order_mark_and_byte_order(bom, codec, name, text, charset):
    # A big-endian file was written little-endian (Python's "utf-16" encodes in the machine's order).
    document = read_document(name, bom + text.encode(codec), "fr")
    assert document.write([unit.text for unit in document.units]).startswith(bom)
    out = document.write(["Bonjour"])
    assert out.startswith(bom) and "Bonjour" in out[len(bom) :].decode(codec)
    if charset:
        assert document.content_type == f"text/x-gettext-translation; charset={codec[:6]}"


# The `encoding` field of a document upload (#42): a text file read in the encoding the client
# names, where detection cannot tell (a line or two; text that reads as cleanly in two encodings),
# and written back in it; a name that is no text encoding, bytes it does not read, or the field on
# a format that declares its own encoding, a 400 on `encoding` naming the problem.


# Too short for detection to tell (tests/e2e/test_hostile_files.py's refusal): a name and two words.
SHORT = "Caf\xe9 cr\xe8me, s'il vous pla\xeet.\n"
POLISH = "Zażółć gęślą jaźń.\n"


def test_a_short_file_detection_refuses_is_read_in_the_encoding_named():
    data = SHORT.encode("cp1252")
    with pytest.raises(BadDocument, match="no other encoding explains it with confidence"):
        read_document("notes.txt", data, "de")
    document = read_document("notes.txt", data, "de", encoding="Windows-1252")
    assert [unit.text for unit in document.units] == [SHORT.strip()]
    assert document.write(["Caf\xe9 cr\xe8me, bitte."]) == "Caf\xe9 cr\xe8me, bitte.\n".encode("cp1252")
    assert document.content_type == "text/plain; charset=windows-1252"


@pytest.mark.parametrize(
    ("label", "codec", "charset"),
    [
        ("ISO-8859-2", "iso8859_2", "iso-8859-2"),
        ("latin2", "iso8859_2", "iso-8859-2"),
        ("cp1250", "cp1250", "windows-1250"),
        ("latin-1", "iso8859_1", "iso-8859-1"),
        ("sjis", "shift_jis", "shift_jis"),
        ("euc-jp", "euc_jp", "euc-jp"),
        ("mac-roman", "mac_roman", "mac-roman"),
        ("Shift_JIS", "shift_jis", "shift_jis"),
        ("utf-16", "utf_16_le", "utf-16le"),
        ("UTF-16BE", "utf_16_be", "utf-16be"),
        ("utf-8-sig", "utf_8", "utf-8"),
    ],
)
def test_any_label_of_a_text_encoding_is_taken(label, codec, charset):
    assert named_encoding(label)[:2] == (codec, charset)


@pytest.mark.parametrize(
    ("label", "problem"),
    [("klingon-8", "'klingon-8' is not a text encoding"), ("rot13", "'rot13' is not a text encoding"), ("zlib", "")],
)
def test_a_name_that_is_no_text_encoding_is_refused_on_the_named_encoding(label, problem):
    with pytest.raises(BadDocument, match=f"^{problem}") as refused:
        read_document("notes.txt", b"Hello.\n", "de", encoding=label)
    assert refused.value.part is Part.ENCODING


def test_polish_in_iso_8859_2_is_read_as_named_and_written_back_in_it():
    data = POLISH.encode("iso8859_2")
    document = read_document("a.srt", b"1\n00:00:01,000 --> 00:00:02,000\n" + data, "de", encoding="iso-8859-2")
    assert [unit.text for unit in document.units] == [POLISH.strip()]
    assert document.write([POLISH.strip()]).endswith(data)
    assert document.content_type == "application/x-subrip; charset=iso-8859-2"


def test_bytes_the_named_encoding_does_not_read_are_a_400_naming_the_byte():
    with pytest.raises(BadDocument, match=r"^the text file is not utf-8 text \(invalid .* at byte 3\)") as refused:
        read_document("notes.txt", SHORT.encode("cp1252"), "de", encoding="utf-8")
    assert refused.value.part is Part.ENCODING
    with pytest.raises(BadDocument, match=r"^read as koi8-r, the Markdown file has a control character") as refused:
        read_document("a.md", b"Hello\x01 there.\n", "de", encoding="koi8-r")
    assert refused.value.part is Part.ENCODING


def test_utf16_named_without_a_byte_order_mark_is_little_endian_and_stays_so():
    data = "Hello there.\n".encode("utf-16-le")
    document = read_document("notes.txt", data, "de", encoding="utf-16")
    assert [unit.text for unit in document.units] == ["Hello there."]
    assert document.write(["Hallo."]) == "Hallo.\n".encode("utf-16-le")


def test_a_byte_order_mark_is_taken_before_the_field_as_browsers_take_it():
    data = codecs.BOM_UTF8 + "Caf\xe9.\n".encode()
    document = read_document("notes.txt", data, "de", encoding="windows-1252")
    assert [unit.text for unit in document.units] == ["Caf\xe9."]
    assert document.write(["Kaff\xe9e."]) == codecs.BOM_UTF8 + "Kaff\xe9e.\n".encode()


def test_the_field_is_taken_before_an_html_meta_charset():
    data = '<meta charset="iso-8859-1"><p>Za\u017c\xf3\u0142\u0107.</p>'.encode("iso8859_2")
    document = read_document("a.html", data, "de", encoding="iso-8859-2")
    assert document.units[0].text.endswith("Za\u017c\xf3\u0142\u0107.</p>")


@pytest.mark.parametrize(
    ("name", "data"),
    [("a.docx", documents.docx([[("Hello.", False)]])), ("a.po", b'msgid ""\nmsgstr ""\n'), ("a.json", b"{}")],
)
def test_the_field_on_a_format_that_declares_its_own_encoding_is_refused(name, data):
    with pytest.raises(BadDocument, match=r"^a \.\w+ file is read in the encoding it declares") as refused:
        read_document(name, data, "de", encoding="windows-1252")
    assert ".txt, .srt, .vtt, .html, .htm, .md" in refused.value.message
    assert refused.value.part is Part.ENCODING
