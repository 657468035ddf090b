"""XML paragraphs of mixed content (ODF's text:p, a span inside it holding text) as units, and back.

The paragraph's content becomes HTML for the HTML path: its text escaped, each element with text
(a styled span, a link) a `<span data-k="i">` around it, and each other element (a tab, a
bookmark, a frame) an `<img data-k="i">`, a point the placement keeps where it stood among the
words. Written back, the elements are rebuilt from their originals, around the translated text.
"""

from __future__ import annotations

import copy
import html
from html.parser import HTMLParser
from typing import Any

from translator.documents.model import Unit


class MixedParagraph:
    def __init__(self, element: Any, wraps: frozenset[str]) -> None:
        self.element = element
        self.wraps = wraps  # tags of elements whose text is translated in place (spans, links)
        self.originals: list[Any] = []

    def has_text(self) -> bool:
        return bool("".join(self.element.itertext()).strip())

    def unit(self) -> Unit:
        return Unit(self._html(self.element), "html")

    def _html(self, element: Any) -> str:
        parts = [html.escape(element.text or "", quote=False)]
        for child in element:
            index = len(self.originals)
            self.originals.append(child)
            if child.tag in self.wraps:
                parts.append(f'<span data-k="{index}">{self._html(child)}</span>')
            else:
                parts.append(f'<img data-k="{index}">')
            parts.append(html.escape(child.tail or "", quote=False))
        return "".join(parts)

    def write(self, translation: str) -> None:
        builder = _Builder(self.element, self.originals)
        builder.feed(translation)
        builder.close()


class _Builder(HTMLParser):
    def __init__(self, root: Any, originals: list[Any]) -> None:
        super().__init__(convert_charrefs=True)
        self.originals = originals
        tail = root.tail
        for child in list(root):
            root.remove(child)
        root.text, root.tail = None, tail
        self.stack = [root]

    def _original(self, attrs: list[tuple[str, str | None]]) -> Any:
        value = dict(attrs).get("data-k") or ""
        return self.originals[int(value)] if value.isdigit() and int(value) < len(self.originals) else None

    def _append(self, element: Any) -> None:
        element.tail = None
        self.stack[-1].append(element)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        original = self._original(attrs)
        if tag == "img":
            if original is not None:
                self._append(copy.deepcopy(original))
            return
        if original is None:
            self.stack.append(self.stack[-1])  # a tag the model made up: its text goes to the parent
            return
        shell = copy.copy(original)
        for child in list(shell):
            shell.remove(child)
        shell.text = None
        self._append(shell)
        self.stack.append(shell)

    def handle_endtag(self, tag: str) -> None:
        if tag != "img" and len(self.stack) > 1:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        current = self.stack[-1]
        if len(current):
            current[-1].tail = (current[-1].tail or "") + data
        else:
            current.text = (current.text or "") + data
