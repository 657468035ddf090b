"""TMX 1.4b (and 1.1's `lang`), read into segments and written from them.

Reading: the source language is the client's, else the header's `srclang` (`*all*` says any
language may be the source: then the client must name it); a `<tu>` gives one segment per `<tuv>`
in another language, and none where it has no `<tuv>` in the source language. A `<seg>`'s inline
elements that hold native code (`bpt`, `ept`, `ph`, `it`, `ut`) give back that code, so that a
segment reads as the original file's text, markup and all (`Press <bpt i="1">&lt;b&gt;</bpt>OK`
is `Press <b>OK`); `<hi>` is text, and a `<sub>`'s text stays in the code it stands in (an
`alt="..."` is the original's). The document is streamed, each `<tu>` dropped once read.

Writing: one `<tu>` per source, a `<tuv>` per target language (the last segment of a language
wins, as it does in matching), text escaped, never inline elements, a carriage return as a
character reference (XML would read it as a line feed); characters XML 1.0 cannot hold are left
out (an import never stores them: translator/memory/reading.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from typing import Any

from lxml import etree

from translator.contract.errors import InvalidRequest
from translator.memory.model import Imported, Segment
from translator.memory.reading import Collector, local_name, refused, same_language, without_non_xml, xml_events

_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
# Inline elements: those whose content is the original's code, `hi` (text) and `sub` (text in code).
_INLINE = frozenset({"bpt", "ept", "ph", "it", "ut", "hi", "sub"})
_ALL = "*all*"
_TOOL = "m2m-translation-service"


def read_tmx(data: bytes, source_lang: str | None, target_lang: str | None) -> Imported:
    collected: Collector | None = None
    header_lang: str | None = None
    root_seen = False
    for event, element in xml_events(data, "TMX"):
        name = local_name(element)
        if not root_seen:
            root_seen = True
            if name != "tmx":
                raise refused(f"this file's root element is <{name}>, not a TMX document's <tmx>")
        if event != "end":
            continue
        if name == "header":
            header_lang = element.get("srclang")
        elif name == "tu":
            if collected is None:
                collected = Collector(_source_language(source_lang, header_lang, element.sourceline), "TMX")
            _read_unit(element, collected, target_lang)
            element.clear(keep_tail=True)
            while element.getprevious() is not None:
                del element.getparent()[0]
    if collected is None:  # a file without units: its languages still say what it was
        return Imported(_source_language(source_lang, header_lang, 1))
    return collected.imported


def _source_language(client: str | None, header: str | None, line: int) -> str:
    if client:
        return client
    if header and header.strip() and header.strip().lower() != _ALL:
        return header.strip()
    said = f'its header\'s srclang="{header}"' if header else "its header names no srclang"
    raise InvalidRequest(
        f"sourceLang: required: this TMX file does not say which language its units are from ({said}, "
        f"line {line}); name the source language"
    )


def _language(tuv: Any) -> str:
    return (tuv.get(_XML_LANG) or tuv.get("lang") or "").strip()


def _read_unit(tu: Any, collected: Collector, target_lang: str | None) -> None:
    source_lang = collected.imported.source_lang
    variants = []
    for tuv in tu:
        if local_name(tuv) != "tuv":
            continue
        seg = next((child for child in tuv if local_name(child) == "seg"), None)
        variants.append((_language(tuv), "" if seg is None else _text(seg), tuv.sourceline))
    # The source: a variant in the source language as written, else the first of its base language.
    source = next((v for v in variants if v[0].lower() == source_lang.lower()), None) or next(
        (v for v in variants if same_language(v[0], source_lang)), None
    )
    if source is None:
        collected.skip(f"line {tu.sourceline}: a <tu> without a <tuv> in {source_lang}")
        return
    for variant in variants:
        lang, text, line = variant
        if variant is source or (target_lang and not same_language(lang, target_lang)):
            continue
        if not lang:
            collected.skip(f"line {line}: a <tuv> without xml:lang")
            continue
        collected.add(f"line {line}", source[1], lang, text)


def _text(element: Any) -> str:
    """The text of a `<seg>` (or of an inline element in it), inline codes as the original had them."""
    parts = [element.text or ""]
    for child in element:
        if child.tag is etree.Entity:
            raise refused(f"line {child.sourceline} of this TMX file refers to an entity, {child.text}, no DTD defines")
        name = local_name(child)
        if name in _INLINE:
            parts.append(_text(child))
        elif name:  # an element TMX does not define there: its text, as text
            parts.append("".join(child.itertext()))
        parts.append(child.tail or "")
    return "".join(parts)


def _version() -> str:
    try:
        return metadata.version(_TOOL)
    except metadata.PackageNotFoundError:
        return "0"


def _escape(text: str) -> str:
    text = without_non_xml(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def _attribute(text: str) -> str:
    escaped = _escape(text).replace('"', "&quot;")
    return escaped.replace("\n", "&#10;").replace("\t", "&#9;")


def write_tmx(info_name: str, source_lang: str, segments: Iterable[Segment]) -> bytes:
    """The segments as a TMX 1.4b document (UTF-8), named `info_name` in its header."""
    units: dict[str, dict[str, str]] = {}
    for segment in segments:
        units.setdefault(segment.source, {})[segment.target_lang] = segment.target
    lang = _attribute(source_lang)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE tmx SYSTEM "tmx14.dtd">\n<tmx version="1.4">\n',
        f'  <header creationtool="{_TOOL}" creationtoolversion="{_attribute(_version())}" datatype="plaintext" '
        f'segtype="sentence" adminlang="en" srclang="{lang}" o-tmf="{_TOOL}">\n',
        f'    <prop type="x-name">{_escape(info_name)}</prop>\n  </header>\n  <body>\n',
    ]
    for source, targets in units.items():
        out.append(f'    <tu>\n      <tuv xml:lang="{lang}"><seg>{_escape(source)}</seg></tuv>\n')
        out.extend(
            f'      <tuv xml:lang="{_attribute(target_lang)}"><seg>{_escape(target)}</seg></tuv>\n'
            for target_lang, target in targets.items()
        )
        out.append("    </tu>\n")
    out.append("  </body>\n</tmx>\n")
    return "".join(out).encode("utf-8")
