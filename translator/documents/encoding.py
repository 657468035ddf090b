"""A text file's encoding, one policy for every reader (#49: five decoders and five byte-order-mark
tables): declared by the file (a byte-order mark) or by the client (naming it with the file), else
UTF-8, else the legacy encoding detection finds with confidence (escape-sequence ISO-2022-*,
ISO-8859-2 told from windows-1250); written back in the same encoding, or in UTF-8 where that
cannot hold the translation (the content type then says so).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import NamedTuple

from translator.documents.model import BadDocument, Part


class TextEncoding(NamedTuple):
    """How a text file's bytes were encoded, to write its translation the same way."""

    codec: str  # a Python codec that writes no byte-order mark
    # As a Content-Type names it: the WHATWG Encoding Standard's label where Python's codecs know it
    # (clients decode with them), Python's name where they do not (windows-874, windows-949,
    # x-mac-cyrillic).
    charset: str
    bom: bytes = b""

    def encode(self, text: str) -> tuple[bytes, str]:
        """The text's bytes and their charset: in this encoding, or in UTF-8 where it cannot hold
        the text (a legacy encoding, a translation into a language of another script)."""
        try:
            return self.bom + text.encode(self.codec), self.charset
        except UnicodeEncodeError:
            return text.encode("utf-8"), "utf-8"


UTF8 = TextEncoding("utf-8", "utf-8")
# UTF-32's byte-order marks first: little-endian UTF-32's starts with UTF-16's.
_BOMS = tuple(
    (bom, TextEncoding(codec, charset, bom))
    for bom, codec, charset in (
        (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
        (codecs.BOM_UTF8, "utf-8", "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
    )
)


def marked(data: bytes) -> TextEncoding | None:
    """The encoding a byte-order mark opening `data` says, if one does (the one table of them)."""
    return next((encoding for bom, encoding in _BOMS if data.startswith(bom)), None)


def decode_text(data: bytes, what: str) -> tuple[str, TextEncoding]:
    """The text of a file whose format is Unicode (JSON, YAML, a PO file that names no legacy
    charset) and its encoding: UTF-8 with or without a byte-order mark, UTF-16 or UTF-32 with one,
    to be written back with the same mark and byte order (UTF-16BE stays big-endian)."""
    encoding = marked(data) or UTF8
    try:
        return data[len(encoding.bom) :].decode(encoding.codec), encoding
    except UnicodeDecodeError as exc:
        raise BadDocument(
            f"the {what} file is not UTF-8 or UTF-16 text ({exc.reason} at byte {exc.start + len(encoding.bom)})"
        ) from exc


# The legacy encodings a text file that is not UTF-8 is read in, when detection tells which, as
# Python codecs with their labels: the WHATWG Encoding Standard's (those the web still reads), but
# for the rare ones that only take letters from the common ones' languages (Mac Roman,
# ISO-8859-3/4/10/13/14/16: charset-normalizer reads Turkish in windows-1254 as ISO-8859-10 a little
# more cleanly). Listed in the order in which they win a tie that no language decides (`_detect`).
LEGACY_ENCODINGS = {
    "cp1252": "windows-1252",
    **{f"cp{n}": f"windows-{n}" for n in (1250, 1251, 1253, 1254, 1255, 1256, 1257, 1258)},
    "cp874": "cp874",
    **{f"iso8859_{n}": f"iso-8859-{n}" for n in (15, 2, 5, 6, 7, 8)},
    "koi8_r": "koi8-r",
    "koi8_u": "koi8-u",
    "cp866": "ibm866",
    "cp932": "ms932",
    "euc_jp": "euc-jp",
    "gb18030": "gb18030",
    "big5": "big5",
    "cp949": "cp949",
    "mac_cyrillic": "mac-cyrillic",
}
# Shift_JIS and EUC-KR proper, where a file detected in Microsoft's supersets of them is in them:
# the supersets read a few characters otherwise (0x8160 is ～ in cp932, 〜 in Shift_JIS) and write
# some back as other bytes (cp932's NEC and IBM extensions are one character twice).
_STANDARD = {"cp932": TextEncoding("shift_jis", "shift_jis"), "cp949": TextEncoding("euc_kr", "euc-kr")}
# NUL bytes in text: UTF-16 written without its byte-order mark, or no text at all.
_UTF16_WITHOUT_BOM = {"utf_16_le": "utf-16le", "utf_16_be": "utf-16be"}
# Encodings whose byte sequences are evidence on their own; a single-byte encoding's is only in the
# letters it reads (charset-normalizer's coherence: how well their frequencies match a language's).
_MULTI_BYTE = frozenset({"cp932", "euc_jp", "gb18030", "big5", "cp949", *_UTF16_WITHOUT_BOM})
# The encodings a language's text is usually in where it is not Unicode, first the Windows code
# page of its locale (where most legacy subtitle and text files were written), then the others its
# text is found in (the HTML standard's suggested defaults for a locale: ISO-8859-2 for Polish), by
# the names charset-normalizer gives languages; windows-1252 for every other language.
_USUAL_ENCODINGS = {
    **dict.fromkeys(("Arabic", "Farsi"), ("cp1256", "iso8859_6")),
    **dict.fromkeys(("Bulgarian", "Kazakh", "Russian", "Serbian", "Ukrainian"), ("cp1251", "koi8_r", "koi8_u")),
    **dict.fromkeys(
        ("Croatian", "Czech", "Hungarian", "Polish", "Romanian", "Slovak", "Slovene"), ("cp1250", "iso8859_2")
    ),
    **dict.fromkeys(("Estonian", "Lithuanian"), ("cp1257",)),
    "Greek": ("cp1253", "iso8859_7"),
    "Hebrew": ("cp1255", "iso8859_8"),
    "Japanese": ("cp932", "euc_jp"),
    "Korean": ("cp949",),
    "Thai": ("cp874",),
    "Turkish": ("cp1254",),
    "Vietnamese": ("cp1258",),
}
# Detection reads this much of a file around the first byte UTF-8 does not explain (a few ms; the
# whole file is then decoded in the encoding found, which must hold all of it).
DETECTION_SAMPLE = 64 * 1024
# Fewer bytes than this tell no encoding: random ones read as Farsi or Japanese as often as not.
MIN_DETECTION_BYTES = 32
# Control characters no text has (line breaks, tab, form feed and DOS's end-of-file mark aside):
# bytes that decode to them were not text in that encoding.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x19\x1b-\x1f\x7f-\x9f]")


def text_codec(label: str) -> str | None:
    """The name of the Python codec a charset label names (a client's field, a PO header's charset,
    an HTML <meta>), or None where none does or it is no text encoding (rot13, zlib: bytes-to-bytes
    or str-to-str codecs that a lookup alone finds)."""
    try:
        codec = codecs.lookup(label).name
        "".encode(codec)  # LookupError for a codec that is no text encoding
    except LookupError:
        return None
    return codec


def named_encoding(label: str) -> TextEncoding:
    """The encoding a client named for a text file (with its upload), by
    any label Python's codecs know ("latin-1", "Windows-1251", "Shift_JIS", "utf-16"): for a file
    whose encoding detection cannot tell (a few lines, or text that reads as two languages)."""
    name = label.strip()
    found = text_codec(name)
    if found is None:
        raise BadDocument(
            f"{name[:40]!r} is not a text encoding (examples: windows-1252, iso-8859-2, koi8-r, shift_jis, utf-16le)",
            Part.ENCODING,
        )
    codec = found.replace("-", "_")
    # A byte-order mark decides UTF-16's and UTF-32's byte order (`decode_legacy_text`); without
    # one, little-endian, as Windows writes them. The codec written with writes no mark of its own.
    codec = {"utf_16": "utf_16_le", "utf_32": "utf_32_le", "utf_8_sig": "utf_8"}.get(codec, codec)
    labels = {**LEGACY_ENCODINGS, **_UTF16_WITHOUT_BOM, **{known.codec: known.charset for known in _STANDARD.values()}}
    charset = labels.get(codec) or codec.replace("iso8859_", "iso-8859-").replace("_", "-")
    return TextEncoding(codec, charset)


def decode_legacy_text(data: bytes, what: str, declared: TextEncoding | None = None) -> tuple[str, TextEncoding]:
    """The text of a text file and its encoding: UTF-8, UTF-16 or UTF-32 with a byte-order mark,
    else the encoding the client `declared`, else UTF-8, or else the encoding charset-normalizer
    finds with confidence (a legacy one, or UTF-16 without a byte-order mark). Bytes nothing
    explains (binary data) are a BadDocument; bytes the declared encoding does not read, a BadDocument
    on the named encoding."""
    mark = marked(data)
    if mark is not None:
        # As browsers read a page whose byte-order mark and Content-Type disagree: the mark wins.
        try:
            return data[len(mark.bom) :].decode(mark.codec), mark
        except UnicodeDecodeError as exc:
            raise BadDocument(
                f"the {what} file starts with a {mark.charset} byte-order mark but is not "
                f"{mark.charset} text ({exc.reason} at byte {exc.start + len(mark.bom)})"
            ) from exc
    if declared is not None:
        return _decode_declared(data, what, declared), declared
    nul = data.find(b"\x00")
    if nul == -1:
        escaped = _iso2022(data)
        if escaped is not None:
            return escaped
        try:
            return data.decode("utf-8"), UTF8
        except UnicodeDecodeError as exc:
            problem, candidates = f"{exc.reason} at byte {exc.start}", LEGACY_ENCODINGS
            sample = _sample(data, exc.start)
    else:
        problem, candidates = f"a NUL byte at byte {nul}", _UTF16_WITHOUT_BOM
        sample = data[:DETECTION_SAMPLE]  # an even length: no UTF-16 code unit is cut
    refusal = f"the {what} file is not UTF-8 or UTF-16 text ({problem})"
    encoding = _detect(sample, candidates)
    if encoding is None:
        raise BadDocument(f"{refusal}, and no other encoding explains it with confidence: save it as UTF-8")
    text = None
    for attempt in (_STANDARD.get(encoding.codec), encoding):
        if attempt is not None and text is None:
            try:
                text, encoding = data.decode(attempt.codec), attempt
            except UnicodeDecodeError as exc:
                failure = exc
    if text is None:
        raise BadDocument(
            f"{refusal}, and not {encoding.charset} either, as its first part reads "
            f"({failure.reason} at byte {failure.start})"
        ) from failure
    control = _CONTROL.search(text)
    if control is not None:
        raise BadDocument(
            f"{refusal}, and read as {encoding.charset} it has a control character "
            f"(U+{ord(control.group()):04X} at character {control.start()}): is it text?"
        )
    return text, encoding


@dataclass(frozen=True)
class Declaration:
    """Where a file declares its own encoding (an XML declaration, a PO header's charset, an HTML
    <meta>), in the words of its refusals; `{label}` is the label as the file wrote it."""

    unsupported: str  # the label names no text encoding
    mismatch: str  # the bytes are not text in it (the decoder's reason and the byte follow)


def decode_declared(data: bytes, label: str, declaration: Declaration) -> tuple[str, TextEncoding]:
    """The text of a file in the encoding it declares, strictly, and that encoding (its charset the
    label as declared, to be written back under it): the one decoder of every format that names
    its own encoding, each format finding the label in its own syntax."""
    codec = text_codec(label)
    if codec is None:
        raise BadDocument(declaration.unsupported.format(label=label))
    encoding = TextEncoding(codec, label)
    return _strict(data, encoding, declaration.mismatch.format(label=label), Part.CONTENT), encoding


def _strict(data: bytes, encoding: TextEncoding, mismatch: str, part: Part) -> str:
    try:
        return data.decode(encoding.codec)
    except UnicodeDecodeError as exc:
        raise BadDocument(f"{mismatch} ({exc.reason} at byte {exc.start})", part) from exc


# ISO-2022's designations (ESC $ B: JIS X 0208; ESC $ ) C: KS X 1001; ESC $ A: GB 2312; ...):
# 7-bit encodings, so their bytes read as UTF-8 too, escapes and all (#49: an ISO-2022-JP file
# was read as UTF-8 and its escape sequences translated as text). A text file has no ESC, so one
# of these is evidence on its own.
_ISO2022_ESCAPE = re.compile(rb"\x1b(?:\$[@AB]|\$\([CDQ]|\$\)[ACG]|\(I|\(J)")
_ISO2022 = (
    TextEncoding("iso2022_jp", "iso-2022-jp"),
    TextEncoding("iso2022_jp_2", "iso-2022-jp-2"),
    TextEncoding("iso2022_kr", "iso-2022-kr"),
)


def _iso2022(data: bytes) -> tuple[str, TextEncoding] | None:
    """A 7-bit ISO-2022 file's text and encoding (the narrowest of the family that reads it whole),
    None where the bytes carry no ISO-2022 escape or none of the family reads them."""
    if not _ISO2022_ESCAPE.search(data[:DETECTION_SAMPLE]) or any(byte > 0x7F for byte in data):
        return None
    for encoding in _ISO2022:
        try:
            text = data.decode(encoding.codec)
        except UnicodeDecodeError:
            continue
        if "\x1b" not in text and not _CONTROL.search(text):
            return text, encoding
    return None


def _decode_declared(data: bytes, what: str, declared: TextEncoding) -> str:
    text = _strict(data, declared, f"the {what} file is not {declared.charset} text", Part.ENCODING)
    control = _CONTROL.search(text)
    if control is not None:
        raise BadDocument(
            f"read as {declared.charset}, the {what} file has a control character "
            f"(U+{ord(control.group()):04X} at character {control.start()}): is it {declared.charset}?",
            Part.ENCODING,
        )
    return text


def _sample(data: bytes, at: int) -> bytes:
    """Up to DETECTION_SAMPLE bytes around `at`, cut after a line break or a space where it can be
    (a byte no multi-byte character of these encodings has inside it), so that no character is cut."""
    start = max(0, at - DETECTION_SAMPLE // 4)
    if start:
        start = max(data.rfind(b"\n", start, at), data.rfind(b" ", start, at)) + 1 or start
    end = start + DETECTION_SAMPLE
    if end < len(data):
        end = max(data.rfind(b"\n", at, end), data.rfind(b" ", at, end)) + 1 or end
    return data[start:end]


def _detect(sample: bytes, candidates: dict[str, str]) -> TextEncoding | None:
    if len(sample) < MIN_DETECTION_BYTES:
        return None
    from charset_normalizer import from_bytes

    # Each candidate on its own: in one call charset-normalizer skips the encodings like one that
    # failed (windows-1250's failure on Polish in ISO-8859-2 hid ISO-8859-2). A single-byte
    # encoding whose letters show no language (coherence 0) explains nothing.
    readings = []
    for name in candidates:
        match = from_bytes(sample, cp_isolation=[name]).best()
        if match is not None and (match.coherence or name in _MULTI_BYTE):
            readings.append((name, match))
    if not readings:
        return None
    # Among the readings as clean as the cleanest (charset-normalizer's "same chaos"), whose letters
    # differ in a few places it does not weigh (Turkish's ı, ş, ğ are ý, þ, ð in windows-1252), the
    # usual encoding of the language the most coherent one is in wins; else the most coherent,
    # coherences within charset-normalizer's noise (0.02) tying to the encoding listed first.
    cleanest = min(match.chaos for _, match in readings)
    close = {name: match for name, match in readings if match.chaos - cleanest < 0.005}
    top = max(match.coherence for match in close.values())
    coherent = [name for name, match in close.items() if top - match.coherence <= 0.02]
    language = max(close.values(), key=lambda match: match.coherence).language
    usual = [name for name in _USUAL_ENCODINGS.get(language, ("cp1252",)) if name in close]
    name = usual[0] if usual else coherent[0]
    if name == "cp1250" and "iso8859_2" in close and _latin2_not_windows(sample):
        name = "iso8859_2"
    return TextEncoding(name, candidates[name])


# Where ISO-8859-2 and windows-1250 read a byte differently above 0x9F (ISO-8859-2's Ą ą Ś ś Ť ť
# Ź ź Ľ ľ are windows-1250's ¥ ą... or symbols: 0xB6 is ś or ¶).
_LATIN2_ONLY = frozenset(b"\xa1\xa5\xa6\xa9\xab\xac\xae\xb1\xb5\xb6\xb9\xbb\xbc\xbe")


def _latin2_not_windows(sample: bytes) -> bool:
    """Whether Central European bytes are ISO-8859-2's rather than windows-1250's: windows-1250
    writes Š š Ś ś Ť ť Ž ž Ź ź in 0x80-0x9F, which ISO-8859-2 leaves to control codes; a file with
    none there but bytes the two read differently is ISO-8859-2 (#49: 'ś' read as '¶')."""
    return not any(0x80 <= byte <= 0x9F for byte in sample) and any(byte in _LATIN2_ONLY for byte in sample)
