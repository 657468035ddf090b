"""Paragraphs of runs (OOXML's w:p/w:r, DrawingML's a:p/a:r) as units, and back.

A paragraph's consecutive text runs become one unit. Runs formatted as most of the paragraph's text
is are its plain text; every other formatting (bold, italic, a colour) wraps its words in
`<span data-r="k">`, so the HTML path places each run around the words it covered in the
translation (translator/text/placement.py). Written back, each stretch of the translation becomes
a run with a copy of its run's properties; everything else in the paragraph is left in place.
"""

from __future__ import annotations

import copy
import html
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from translator.documents.model import Unit


@dataclass(frozen=True)
class Names:
    """The qualified tag names of one vocabulary, `{namespace}local`."""

    paragraph: str
    run: str
    props: str
    text: str
    # Elements between runs that carry nothing once the text is translated (spell-check marks).
    dropped: frozenset[str] = frozenset()
    # An element around runs (Word's hyperlink): its runs are a formatting of their own, and the
    # element is rebuilt around the words they hold in the translation.
    link: str = ""
    # Elements inside a run that only cache a rendering (Word's lastRenderedPageBreak: where the
    # last pagination broke the page): dropped from a run with text, whose words move anyway; a
    # split there would cut a sentence in two.
    hints: frozenset[str] = frozenset()


def _props_key(run: Any, names: Names) -> bytes:
    from lxml import etree

    props = run.find(names.props)
    return etree.tostring(props) if props is not None else b""


def _text_run(element: Any, names: Names) -> bool:
    if names.link and element.tag == names.link:
        return len(element) > 0 and all(child.tag == names.run and _text_run(child, names) for child in element)
    if element.tag != names.run:
        return False
    children = [child.tag for child in element]
    return names.text in children and all(tag in (names.props, names.text) for tag in children)


class Stretch:
    """Consecutive text runs of one paragraph (and the spell-check marks between them)."""

    def __init__(self, elements: list[Any], names: Names) -> None:
        self.elements = elements
        self.names = names
        self.paragraph = elements[0].getparent()  # (the elements leave it when written)
        self.runs = [
            r for e in elements for r in ([e] if e.tag == names.run else list(e) if e.tag == names.link else [])
        ]
        weight: dict[bytes, int] = {}
        self.keys: list[bytes] = []
        for run in self.runs:
            key = _props_key(run, names)
            if run.getparent() is not None and run.getparent().tag == names.link:
                key += b"|link %d" % elements.index(run.getparent())
            self.keys.append(key)
            weight[key] = weight.get(key, 0) + sum(len(t.text or "") for t in run.iter(names.text))
        self.base = max(weight, key=lambda k: weight[k])
        self.styles = list(dict.fromkeys(self.keys))  # index = data-r

    def text(self, run: Any) -> str:
        return "".join(t.text or "" for t in run.iter(self.names.text))

    def unit(self) -> Unit:
        if len(self.styles) == 1:
            return Unit("".join(self.text(run) for run in self.runs))
        parts: list[str] = []
        previous: bytes | None = None
        for run, key in zip(self.runs, self.keys, strict=True):
            if key != previous and previous is not None and previous != self.base:
                parts.append("</span>")
            if key != previous and key != self.base:
                parts.append(f'<span data-r="{self.styles.index(key)}">')
            parts.append(html.escape(self.text(run), quote=False))
            previous = key
        if previous != self.base:
            parts.append("</span>")
        return Unit("".join(parts), "html")

    def write(self, translation: str, fmt: str) -> None:
        from lxml import etree

        pieces = _Pieces.of(translation) if fmt == "html" else [(None, translation)]
        templates = {key: run for key, run in zip(reversed(self.keys), reversed(self.runs), strict=True)}
        first = self.elements[0]
        parent = first.getparent()
        position = parent.index(first)
        links = {
            id(run): run.getparent()
            for run in self.runs
            if run.getparent() is not None and run.getparent().tag == self.names.link
        }
        for element in self.elements:
            parent.remove(element)
        shell: Any = None  # the rebuilt link the last run went into
        shell_of: Any = None
        offset = 0
        for style, text in pieces:
            key = self.styles[style] if style is not None and style < len(self.styles) else self.base
            template = templates[key]
            run = etree.Element(template.tag, dict(template.attrib), nsmap=template.nsmap)
            props = template.find(self.names.props)
            if props is not None:
                run.append(copy.deepcopy(props))
            node = etree.SubElement(run, self.names.text)
            node.text = text
            if text != text.strip():
                node.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
            link = links.get(id(template))
            if link is None:
                shell = shell_of = None
                parent.insert(position + offset, run)
                offset += 1
            elif shell is not None and shell_of is link:
                shell.append(run)
            else:
                shell, shell_of = etree.Element(link.tag, dict(link.attrib), nsmap=link.nsmap), link
                shell.append(run)
                parent.insert(position + offset, shell)
                offset += 1


class _Pieces(HTMLParser):
    """(style index or None, text) of a translated unit, adjacent pieces of a style merged."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[int | None] = []
        self.pieces: list[tuple[int | None, str]] = []

    @classmethod
    def of(cls, source: str) -> list[tuple[int | None, str]]:
        parser = cls()
        parser.feed(source)
        parser.close()
        return parser.pieces or [(None, "")]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        value = dict(attrs).get("data-r")
        self.stack.append(int(value) if value is not None and value.isdigit() else None)

    def handle_endtag(self, tag: str) -> None:
        if self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        style = next((s for s in reversed(self.stack) if s is not None), None)
        if self.pieces and self.pieces[-1][0] == style:
            self.pieces[-1] = (style, self.pieces[-1][1] + data)
        else:
            self.pieces.append((style, data))


def split_mixed_runs(root: Any, names: Names) -> None:
    """Each run that holds text beside something else (a line break, a tab, a no-break hyphen, a
    drawing, a field character, a footnote reference: `<w:t>AAA</w:t><w:br/><w:t>BBB</w:t>`)
    split into runs of one kind each, with the same properties, in the same order: the text runs
    are then translated as any other, and the rest stays where it stood, between them. Left whole,
    such a run was no text run, and its paragraph's text was never translated (#49: 3 of 9
    paragraphs of PyDocX's shift_enter.docx, and whole files said "nothing to translate")."""
    for run in list(root.iter(names.run)):
        if names.hints and any(child.tag == names.text for child in run):
            for hint in [child for child in run if child.tag in names.hints]:
                run.remove(hint)
        children = [child for child in run if child.tag != names.props]
        if not any(child.tag == names.text for child in children) or all(c.tag == names.text for c in children):
            continue
        props = run.find(names.props)
        groups: list[list[Any]] = []
        for child in children:
            if groups and child.tag == names.text and groups[-1][0].tag == names.text:
                groups[-1].append(child)
            else:
                groups.append([child])
        parent, position = run.getparent(), run.getparent().index(run)
        parent.remove(run)
        for offset, group in enumerate(groups):
            piece = copy.copy(run)  # the run's attributes (revision ids) and tail, no children
            for child in list(piece):
                piece.remove(child)
            piece.tail = run.tail if offset == len(groups) - 1 else None
            if props is not None:
                piece.append(copy.deepcopy(props))
            piece.extend(group)
            parent.insert(position + offset, piece)


def stretches(root: Any, names: Names) -> list[Stretch]:
    """Every stretch of text runs with some text under `root`, in document order."""
    split_mixed_runs(root, names)
    out: list[Stretch] = []
    for paragraph in root.iter(names.paragraph):
        current: list[Any] = []
        for child in list(paragraph) + [None]:
            if child is not None and (_text_run(child, names) or (current and child.tag in names.dropped)):
                current.append(child)
                continue
            while current and current[-1].tag in names.dropped:
                current.pop()
            if current:
                stretch = Stretch(current, names)
                if any(stretch.text(run).strip() for run in stretch.runs):
                    out.append(stretch)
            current = []
    return out
