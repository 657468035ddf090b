"""What every reader of a memory file shares: language codes, the bounds of an import, the text a
segment may hold, and XML parsed without what makes a hostile file costly.

A refusal names the upload's part (`file: `) and where in the file the problem is; parser
exceptions never leave a reader as they are.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

from lxml import etree

from translator.contract.errors import InvalidRequest, PayloadTooLarge
from translator.memory.model import MAX_SEGMENT_CHARS, MAX_SEGMENTS_PER_IMPORT, Imported, Segment

# What XML 1.0 cannot hold, even as a character reference: C0 controls but tab and line ends, lone
# surrogates, U+FFFE and U+FFFF. A segment with one could never be exported as TMX.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SUBTAG = re.compile(r"[-_@.]")


def base_language(code: str) -> str:
    """The language of a code without its script, region or variant, in lower case: `en-US`, `EN`
    and `en_GB` are `en`, `zh-Hans-CN` is `zh`, gettext's `sr@latin` is `sr`."""
    return _SUBTAG.split(code.strip(), maxsplit=1)[0].lower()


def same_language(one: str, other: str) -> bool:
    return base_language(one) == base_language(other)


def refused(message: str) -> InvalidRequest:
    return InvalidRequest(f"file: {message}")


def not_xml_characters(text: str) -> list[str]:
    """The characters of `text` that XML 1.0 cannot hold, as U+ codes (none: an empty list)."""
    return sorted({f"U+{ord(char):04X}" for char in _NOT_XML.findall(text)})


def without_non_xml(text: str) -> str:
    return _NOT_XML.sub("", text)


class Collector:
    """An import's segments as a reader finds them, held to the bounds of one import."""

    def __init__(self, source_lang: str, kind: str) -> None:
        self.imported = Imported(source_lang)
        self.kind = kind  # "TMX", "PO", ...: how messages name the file

    def add(self, where: str, source: str, target_lang: str, target: str) -> None:
        """One segment, found at `where` (`line 12`); an empty side or a character a TMX export
        could not write leaves it out with a note, a side past a record's length refuses the file."""
        for side, text in (("source", source), ("target", target)):
            if len(text) > MAX_SEGMENT_CHARS:
                raise PayloadTooLarge(
                    f"file: the {side} at {where} of this {self.kind} file", MAX_SEGMENT_CHARS, len(text)
                )
        if not source.strip() or not target.strip():
            self.imported.skip(f"{where}: {'no source text' if not source.strip() else 'an empty translation'}")
            return
        odd = not_xml_characters(source + target)
        if odd:
            self.imported.skip(f"{where}: control characters a TMX file cannot hold ({', '.join(odd)})")
            return
        if len(self.imported.segments) >= MAX_SEGMENTS_PER_IMPORT:
            raise PayloadTooLarge(f"file: the segments of this {self.kind} file", MAX_SEGMENTS_PER_IMPORT)
        self.imported.segments.append(Segment(source, target_lang, target))

    def skip(self, why: str) -> None:
        self.imported.skip(why)


def local_name(element: Any) -> str:
    tag = element.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def xml_events(data: bytes, kind: str) -> Iterator[tuple[str, Any]]:
    """`start` and `end` events of the document, streamed: no entity expanded, nothing fetched, no
    text node past libxml2's default bounds; a document type that declares entities (billion
    laughs, external files) is refused before the first element is read, and a malformed document
    names its line."""
    events = etree.iterparse(
        io.BytesIO(data),
        events=("start", "end"),
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        load_dtd=False,
        remove_comments=True,
        remove_pis=True,
    )
    checked = False
    etree.clear_error_log()  # the thread's log, where iterparse's errors are told
    try:
        for event, element in events:
            if not checked:
                checked = True
                dtd = element.getroottree().docinfo.internalDTD
                if dtd is not None and list(dtd.entities()):
                    raise refused(
                        f"this {kind} file's document type declares entities, which this service does not read "
                        "(an entity can expand to gigabytes or read another file); remove its <!DOCTYPE [...]>"
                    )
            yield event, element
    except etree.XMLSyntaxError as exc:
        # iterparse's own exception may say only "no element found": its log has libxml2's first word
        first = next(iter(exc.error_log), None)
        number, message = (first.line, first.message) if first is not None else (exc.lineno, exc.msg)
        line = f"line {number}" if number else "its start"
        raise refused(f"this {kind} file is not well-formed XML at {line}: {message}") from None
