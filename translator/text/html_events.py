"""An HTML source as events, each with where it starts and ends: Python's own `html.parser`
(translator/text/markup.py says why it), whose events, end to end, cover the source exactly.
markup.py builds its tokens on them; a writer that maps an HTML rendering back to its own syntax
(translator/documents/markdown.py) reads them as they are.
"""

from __future__ import annotations

from html.parser import HTMLParser


class _Events(HTMLParser):
    """(kind, tag name, attributes, start, end) for each token of the source, in order; the end of
    one is the start of the next, so together they cover the source exactly."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.line_starts = [0]
        self.line_starts += [i + 1 for i, char in enumerate(source) if char == "\n"]
        self.found: list[tuple[str, str, list, int]] = []

    def _add(self, kind: str, name: str = "", attrs: list | None = None) -> None:
        line, column = self.getpos()
        self.found.append((kind, name, attrs or [], self.line_starts[line - 1] + column))

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._add("start", tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self._add("startend", tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._add("end", tag)

    def handle_data(self, data: str) -> None:
        self._add("data")

    def handle_comment(self, data: str) -> None:
        self._add("other")

    def handle_decl(self, decl: str) -> None:
        self._add("other")

    def handle_pi(self, data: str) -> None:
        self._add("other")

    def unknown_decl(self, data: str) -> None:
        self._add("other")


def html_events(source: str) -> list[tuple[str, str, list, int, int]]:
    """(kind, tag name, attributes, start, end) of each piece of the source, covering it exactly:
    kind "start", "startend", "end", "data" (one text node, references undecoded) or "other"
    (comments, declarations). For a writer that maps an HTML rendering back to its own syntax."""
    if not source:
        return []
    parser = _Events(source)
    parser.feed(source)
    parser.close()
    found = parser.found
    events = []
    for position, (kind, name, attrs, start) in enumerate(found):
        end = found[position + 1][3] if position + 1 < len(found) else len(source)
        if end > start:
            events.append((kind, name, attrs, start, end))
    if not events or events[0][3] != 0:
        # Nothing reported before some prefix (never seen; kept as it is if it happens).
        events.insert(0, ("other", "", [], 0, events[0][3] if events else len(source)))
    # Consecutive data events (the parser may report one text run in pieces) are one text node.
    merged: list[tuple[str, str, list, int, int]] = []
    for event in events:
        if merged and event[0] == "data" and merged[-1][0] == "data":
            kind, name, attrs, start, _ = merged[-1]
            merged[-1] = (kind, name, attrs, start, event[4])
        else:
            merged.append(event)
    # Markup cut off at the end (`<b`, `<!-- ...`) comes back as data at close(): a browser shows
    # none of it, so it is kept as markup, not translated as text.
    if merged and merged[-1][0] == "data":
        kind, name, attrs, start, end = merged[-1]
        raw = source[start:end]
        cut = next(
            (i for i in range(len(raw) - 1) if raw[i] == "<" and (raw[i + 1].isalpha() or raw[i + 1] in "!/?")), None
        )
        if cut is not None:
            merged[-1:] = [
                e for e in ((kind, name, attrs, start, start + cut), ("other", "", [], start + cut, end)) if e[4] > e[3]
            ]
    return merged
