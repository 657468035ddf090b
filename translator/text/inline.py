"""What a catalog's string holds besides words: whether it is HTML to send down the HTML path.

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
