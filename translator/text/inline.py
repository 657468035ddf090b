"""What a catalog's string holds besides words, analysed once for every reader (`analyse`): its
ICU MessageFormat's texts (translator/text/icu.py, the parser) and whether each is HTML to send
down the HTML path; placeholders are then kept in either path (translator/text/placeholders.py).

Catalogs (PO, JSON, YAML) hold strings that software renders as HTML: Django's `blocktrans`
with `<a href="mailto:%(email)s">%(email)s</a>`, Wagtail's `<b>'{title}' was locked</b>`. Sent as
plain text, their tags were cut apart by the sentence splitter and lost, or an attribute's
placeholder left dangling (#49: django-allauth's English catalog, 64 of Wagtail's entries, a Hexo
theme's YAML). The HTML path keeps every tag as it was and places it around the words it held in
the translation (translator/text/placement.py), and placeholders inside text and attributes are
kept in both paths (translator/text/placeholders.py).

A string is sent as HTML only where reading it as HTML changes nothing but the tags' role: every
`<` opens a tag the HTML tokenizer reads as one, every `&` starts a character reference. A string
with a bare `&` or a `<` of comparison is text: the HTML path would write its translation escaped
(`&amp;`), which the software would then show as such.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from translator.text import icu

# A start, end or self-closing tag with a name HTML knows the shape of (letters first).
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s+[^<>]*?)?\s*/?>")
_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)")
_REFERENCE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")


def _html_tags() -> frozenset[str]:
    from lxml.html.defs import tags  # HTML's element names, as lxml knows them

    return frozenset(tags)


def unit_format(text: str) -> str:
    """ "html" for a string that holds markup and reads the same as HTML, else "text". Only HTML's
    own elements count: a usage line's `<filename>` is words the software prints."""
    tags = [(match, _NAME.match(match.group())) for match in _TAG.finditer(text)]
    names = _html_tags()
    if not any(name is not None and name.group(1).lower() in names for _, name in tags):
        return "text"
    tags_found = [match for match, _ in tags]
    starts = {match.start() for match in tags_found}
    if any(index not in starts for index in (m.start() for m in re.finditer("<", text))):
        return "text"
    inside = [(match.start(), match.end()) for match in tags_found]
    for match in re.finditer("&", text):
        in_tag = any(start < match.start() < end for start, end in inside)
        if not in_tag and not _REFERENCE.match(text, match.start()):
            return "text"
    if ">" in _TAG.sub("", text):
        return "text"
    return "html"


class Piece(NamedTuple):
    """A text to translate and its format ("text" or "html", as the native API's `format`)."""

    text: str
    fmt: str


@dataclass(frozen=True)
class Analysed:
    """A reader's values as the pieces to translate, and the fold of their translations back into
    one per value: None for a value whose kept pieces did not come back (an ICU message's
    arguments), which the reader keeps as it was, and reports."""

    pieces: list[Piece]
    fold: Callable[[list[str]], list[str | None]]


def analyse(values: list[str], messages: bool = True) -> Analysed:
    """`values`' pieces to translate: an ICU message's texts where `messages` (a format whose
    strings may be ICU MessageFormat), any other value itself; each in the format it reads as."""
    if messages:
        texts, fold = icu.expand(values)
    else:
        texts, fold = list(values), _unchanged
    return Analysed([Piece(text, unit_format(text)) for text in texts], fold)


def _unchanged(translations: list[str]) -> list[str | None]:
    return list(translations)
