"""What every judge shares: how the answer is encoded, and how two lists of findings differ."""

from __future__ import annotations

import codecs
import collections
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_UNICODE = {"utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"}
# A value under a locale key (`"locale": "en"`, `lang: de`) is a code, never text to translate.
LOCALE_KEY = re.compile(r"(?i)^(locale|lang|language|hreflang|lang_code|locale_code)$")
LOCALE_VALUE = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$")


def codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:  # a template's "charset=CHARSET"
        return name.lower()


def original_encoding(f: RealFile, data: bytes) -> str:
    """The encoding the file is in: its publisher's word for a legacy one, else its BOM's, else UTF-8."""
    if f.encoding:
        return f.encoding
    return next((name for bom, name in BOMS if data.startswith(bom)), "utf-8")


def charset_of(content_type: str) -> str:
    match = re.search(r"charset=\"?([^\";]+)", content_type, re.I)
    return match.group(1).strip() if match else ""


def decoded(f: RealFile, original: bytes, answer: Answer) -> tuple[list[str], str, str | None]:
    """The original's and the answer's text, and what is wrong with how the answer is encoded: it
    must be in the charset its Content-Type declares, which must read the original as the file's
    publisher does (the service read it right), a legacy or UTF-16 file must have one declared,
    a byte-order mark must come back, and UTF-8 stands for a legacy encoding only where the
    translation does not fit in it."""
    problems: list[str] = []
    known = original_encoding(f, original)
    text = original.decode(known).removeprefix("\ufeff")
    unicode = codec(known) in _UNICODE and not (f.encoding and codec(known).startswith("utf-16"))
    charset = charset_of(answer.content_type)
    if not charset:
        if not unicode or codec(known).startswith("utf-16"):
            problems.append(f"no charset in the answer's Content-Type {answer.content_type!r}; the file is {known}")
        charset = known
    try:
        answer_text = answer.data.decode(charset).removeprefix("\ufeff")
    except (LookupError, UnicodeDecodeError) as exc:
        return [*problems, f"the answer is not {charset} text as its Content-Type says ({exc})"], text, None
    try:
        reads_alike = original.decode(charset).removeprefix("\ufeff") == text
    except (LookupError, UnicodeDecodeError):
        reads_alike = False
    if not reads_alike:
        if codec(charset) == "utf-8" and not unicode:
            try:
                answer_text.encode(known)
                problems.append(f"answered in UTF-8 though the translation fits the file's {known}")
            except UnicodeEncodeError:
                pass  # the documented fallback: a translation that the legacy encoding cannot hold
        else:
            problems.append(f"declares charset={charset}, which reads the original ({known}) differently")
    for bom, _ in BOMS:
        if original.startswith(bom) and not answer.data.startswith(bom):
            problems.append(f"the original's byte-order mark {bom!r} is not at the start of the answer")
    return problems, text, answer_text


def decoded_original(f: RealFile, original: bytes) -> str:
    """The original's text, for finding what in it is to translate (a wrong byte is no matter there)."""
    return original.decode(original_encoding(f, original), "replace")


def letters(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def blocks(text: str) -> list[str]:
    """The text's blocks, as blank lines separate them (PO entries, subtitle cues)."""
    return [block for block in re.split(r"\r?\n(?:[ \t]*\r?\n)+", text) if block.strip()]


def first_difference(a: list[Any], b: list[Any], what: str) -> list[str]:
    if a == b:
        return []
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return [f"{what} differ at #{i}: {str(x)[:200]} -> {str(y)[:200]}"]
    return [f"{what}: {len(a)} in the original, {len(b)} in the answer"]


def multiset_difference(a: list[list[Any]], b: list[list[Any]], what: str) -> list[str]:
    """Block by block, what a block lost and gained (its items in any order)."""
    if len(a) != len(b):
        return [f"{what}: {len(a)} blocks in the original, {len(b)} in the answer"]
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        lost, gained = (
            collections.Counter(map(repr, x)) - collections.Counter(map(repr, y)),
            collections.Counter(map(repr, y)) - collections.Counter(map(repr, x)),
        )
        if lost or gained:
            return [f"{what} in block #{i}: lost {list(lost.elements())[:4]}, gained {list(gained.elements())[:4]}"]
    return []


def in_order(needles: list[str], haystack: list[str]) -> list[str]:
    """The needles not found in `haystack` in their order (each after the one before)."""
    missing, position = [], 0
    for needle in needles:
        try:
            position = haystack.index(needle, position) + 1
        except ValueError:
            missing.append(needle)
    return missing


def xml_root(data: bytes) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, remove_blank_text=False)
    return etree.fromstring(data, parser)


def local_name(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""
