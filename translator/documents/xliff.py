"""XLIFF 1.0, 1.1, 1.2 and 2.0, edited where they stand, each in its own version.

Every <source> of plain text without a translation gets its <target> (created after it, or filled
where it is empty or its state says it needs one), and the file's target language is set; a 1.2
target made here reads `state="needs-review-translation"` with `state-qualifier="mt-suggestion"`
(1.0 and 1.1, translate-toolkit's `po2xliff` output among them, have the state but not 1.2's
qualifier values: their targets get the state alone), and a 2.0 segment filled here
`state="translated"` (2.0 has no state for "needs review") with `subState="m2m:mt-suggestion"`
(the subState is where 2.0 puts a tool's own qualifier): left `initial`, a CAT tool would show it
untranslated and the next pass would translate it again.
A translated <target> is left as it is. A source with inline elements (<g>, <x/>, <ph>, <pc>, ...)
is translated on the HTML path, its elements as HTML's inline tags, and its target holds each
element as the source wrote it (xliff_inline.py); one whose elements do not all come back is left
without a target, and reported. A source wrapped over lines (as
pretty-printers and po2xliff write long strings) goes to the model as HTML does (its text escaped):
a line break inside it is white space, not a sentence end, and comes back where the translation
allows (translator/text/units.py).

Only those targets and the target-language attribute change: every other byte comes back as it
was (references such as `&apos;` and `&#232;`, attribute quotes and order, comments, line
endings), so that a reviewer's diff shows the machine's work and nothing else; lxml's
serialization of the whole tree rewrote them. A new <target> gets its own line, indented as its
<source> is, its attributes quoted as its unit's are.
"""

from __future__ import annotations

import html
from typing import Any

from translator.documents import xliff_inline, xmltext
from translator.documents.model import ICU_KEPT, NO_OPTIONS, BadDocument, Document, ReadOptions, Unit
from translator.documents.ooxml import parse_xml
from translator.text import icu

# The versions read, by their root's namespace. 1.0 was a DTD's vocabulary, in no namespace (some
# tools give it a 1.0 URN), and 1.1 files written against its DTD have none either.
_VERSIONS = {
    "urn:oasis:names:tc:xliff:document:1.0": "1.0",
    "urn:oasis:names:tc:xliff:document:1.1": "1.1",
    "urn:oasis:names:tc:xliff:document:1.2": "1.2",
    "urn:oasis:names:tc:xliff:document:2.0": "2.0",
}
_WITHOUT_NAMESPACE = ("1.0", "1.1")
_ACCEPTED = (
    '<xliff> in urn:oasis:names:tc:xliff:document:1.2, :2.0, :1.1 or :1.0, or in no namespace with version="1.0" '
    'or "1.1" (XLIFF 1.0, 1.1, 1.2 and 2.0)'
)
INLINE_KEPT = (
    "a source whose inline elements (<g>, <x/>, <ph>, <pc>, <mrk>) did not all come back in the translation, "
    "left without a target"
)
_MACHINE_STATE = {"state": "needs-review-translation", "state-qualifier": "mt-suggestion"}
# XLIFF 1.0 and 1.1: the state alone (state-qualifier's values, mt-suggestion among them, are 1.2's).
_MACHINE_STATE_1_1 = {"state": "needs-review-translation"}
_MACHINE_SEGMENT_STATE = {"state": "translated", "subState": "m2m:mt-suggestion"}
# States saying a target is still to be translated (XLIFF 1.x's target, 2.0's segment).
_UNTRANSLATED = frozenset({"new", "needs-translation", "initial"})


def _version(root: Any) -> str:
    """The XLIFF version of a document, from its root; anything else refused, naming what it is."""
    namespace, _, name = root.tag[1:].partition("}") if root.tag.startswith("{") else ("", "", root.tag)
    stated = root.get("version")
    if name == "xliff" and namespace in _VERSIONS:
        return _VERSIONS[namespace]
    if name == "xliff" and not namespace and stated in _WITHOUT_NAMESPACE:
        return stated
    found = f"<{name}> in " + (f"namespace {namespace}" if namespace else "no namespace")
    found += f" with version={stated!r}" if stated is not None else " without a version attribute"
    raise BadDocument(f"not an XLIFF document this service reads: its root is {found}; accepted: {_ACCEPTED}")


def read_xliff(data: bytes, options: ReadOptions = NO_OPTIONS) -> Document:
    root = parse_xml(data, "XLIFF")
    version = _version(root)
    ns = root.tag.partition("}")[0] + "}" if root.tag.startswith("{") else ""
    text, codec = xmltext.decode(data, root)
    # A unit's own source only: XLIFF 1.x's <alt-trans> holds a translation memory's suggestions,
    # whose <source>/<target> pairs are kept as the translator left them.
    unit = f"{ns}segment" if version == "2.0" else f"{ns}trans-unit"
    untranslated = [
        s
        for s in root.iter(f"{ns}source")
        if s.getparent() is not None
        and s.getparent().tag == unit
        and "".join(s.itertext()).strip()
        and not _translated(s, ns)
        and _to_translate(s)
    ]
    sources = [s for s in untranslated if len(s) == 0]
    marked_up = [s for s in untranslated if len(s)]
    edited = [
        e
        for source in untranslated
        for e in (source, source.getparent(), *_target(source, ns), *xliff_inline.elements(source))
        if e is not None
    ]
    languages = [root] if version == "2.0" else list(root.iter(f"{ns}file"))
    where = xmltext.spans(text, root, [*edited, *languages])
    read_inline = [(source, xliff_inline.read(source, text, where)) for source in marked_up]
    # A source that holds what is not an inline element (a processing instruction) is left without
    # a target, and said so in the job's report (#49: never `done` over text left silently).
    unread = [source for source, inline in read_inline if inline is None]
    inline = [(source, inline) for source, inline in read_inline if inline is not None]

    def write(translations: list[str]) -> bytes:
        eol = xmltext.line_end(text)
        edits: list[tuple[int, int, str]] = []

        def start_tag(element: Any) -> str:
            return text[where[element].start : where[element].open_end]

        def set_attributes(element: Any, values: dict[str, str], quote: str = '"') -> None:
            tag = start_tag(element)
            written = xmltext.set_attributes(tag, values, xmltext.quote_of(tag, quote))
            if written != tag:
                edits.append((where[element].start, where[element].open_end, written))

        language = {"trgLang" if version == "2.0" else "target-language": options.target}
        for element in languages:
            set_attributes(element, language)
        states = {"1.2": _MACHINE_STATE, "2.0": {}}.get(version, _MACHINE_STATE_1_1)
        plain = [html.unescape(t) if unit.fmt == "html" else t for unit, t in zip(units, translations, strict=True)]
        document.kept.clear()
        for source in unread:
            document.keep(f"line {source.sourceline}", INLINE_KEPT)
        bodies: list[tuple[Any, str | None, str]] = [
            (source, None if translation is None else xmltext.escape_text(translation, eol), ICU_KEPT)
            for source, translation in zip(sources, fold(plain[: len(texts)]), strict=True)
        ]
        bodies += [
            (source, xliff_inline.write(held, translation, eol), INLINE_KEPT)
            for (source, held), translation in zip(inline, translations[len(texts) :], strict=True)
        ]
        for source, body, why in sorted(bodies, key=lambda placed: where[placed[0]].start):
            if body is None:
                document.keep(f"line {source.sourceline}", why)
                continue
            target, anchor = _target(source, ns)
            quote = xmltext.quote_of(start_tag(source.getparent()))  # where the target has none
            if version == "2.0":
                set_attributes(source.getparent(), _MACHINE_SEGMENT_STATE, quote)
            if target is None:
                span, after = where[source], where[anchor]
                name = span.name[: -len("source")] + "target"  # with the file's prefix, if any
                tag = xmltext.set_attributes(f"<{name}>", states, quote)
                edits.append((after.end, after.end, f"{xmltext.indent(text, span)}{tag}{body}</{name}>"))
                continue
            span = where[target]
            if span.empty:  # `<target state="new"/>`: opened and closed around the translation
                tag = start_tag(target)
                tag = xmltext.set_attributes(tag[:-2].rstrip() + ">", states, xmltext.quote_of(tag, quote))
                edits.append((span.start, span.end, f"{tag}{body}</{span.name}>"))
            else:
                set_attributes(target, states, quote)
                edits.append((span.open_end, span.close, body))
        return xmltext.encode(xmltext.splice(text, edits), codec)

    # An ICU message (Angular's `{VAR_PLURAL, plural, =0 {...} other {...}}`) is its texts, each
    # translated alone, and put back into its structure (#49: translated as prose, no ICU was left).
    texts, fold = icu.expand([s.text or "" for s in sources])
    units = [_unit(text) for text in texts] + [Unit(held.html, "html") for _, held in inline]
    document = Document(units, write, "application/xliff+xml")
    return document


def _unit(text: str) -> Unit:
    """A source's unit: plain text, or escaped for the HTML path where a line break is inside it."""
    wrapped = any(line_break in text.strip() for line_break in "\n\r")
    return Unit(html.escape(text, quote=False), "html") if wrapped else Unit(text)


def _target(source: Any, ns: str) -> tuple[Any, Any]:
    """The <target> of `source`'s unit (None where it has none), and the element a new one goes
    after: the source, or 1.2's <seg-source> after it (comments between are passed over)."""
    anchor = source
    for sibling in source.itersiblings():
        if not isinstance(sibling.tag, str):
            continue
        if sibling.tag == f"{ns}seg-source" and anchor is source:
            anchor = sibling
            continue
        return (sibling if sibling.tag == f"{ns}target" else None), anchor
    return None, anchor


def _translated(source: Any, ns: str) -> bool:
    """Whether `source` already has a translation: a target with text or inline markup whose state
    (1.2's on the target, 2.0's on the segment; none given: translated) does not ask for one."""
    target, _ = _target(source, ns)
    if target is None or not ((target.text or "").strip() or len(target)):
        return False
    return (target.get("state") or source.getparent().get("state")) not in _UNTRANSLATED


def _to_translate(source: Any) -> bool:
    """XLIFF's `translate` (1.2 on trans-unit and group, 2.0 on unit, group and file): the nearest
    element that says decides, and units nobody marked are translated."""
    for element in source.iterancestors():
        if element.get("translate") is not None:
            return bool(element.get("translate") != "no")
    return True
