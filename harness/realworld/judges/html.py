"""HTML and XHTML (and an EPUB's pages), read by lxml: the sequence of block elements with their
attributes exact; each block's inline elements the same multiset; comments, scripts, styles, and
what HTML says is not to be translated byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import (
    decoded,
    decoded_original,
    first_difference,
    local_name,
    multiset_difference,
)

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile

_INLINE = frozenset(
    "a abbr b bdi bdo big br cite code data del dfn em font i img ins kbd mark q s samp small span strike strong sub "
    "sup time tt u var wbr".split()
)
_VERBATIM = frozenset("script style pre code textarea".split())
_KEPT = frozenset({"code", "kbd", "samp", "var", "pre"})


def _shape(root: Any) -> tuple[list[tuple[Any, ...]], list[list[str]]]:
    from lxml import etree

    blocks: list[tuple[Any, ...]] = []
    inlines: dict[Any, list[str]] = {}
    for element in root.iter():
        if not isinstance(element.tag, str):
            blocks.append(("#" + type(element).__name__, etree.tostring(element, with_tail=False)))
            continue
        name = local_name(element.tag).lower()
        attributes = sorted((local_name(k), v) for k, v in element.attrib.items())
        verbatim = None
        if name in _VERBATIM:
            verbatim = (element.text or "") + "".join(etree.tostring(c, encoding="unicode") for c in element)
        if name in _INLINE:
            block = next(
                (e for e in element.iterancestors() if local_name(e.tag).lower() not in _INLINE),
                root,
            )
            inlines.setdefault(block, []).append(repr((name, attributes, verbatim)))
        else:
            blocks.append((name, attributes, verbatim))
            inlines.setdefault(element, [])
    return blocks, [sorted(found) for found in inlines.values()]


def html_root(text: str) -> Any:
    import lxml.html

    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=False)
    return lxml.html.document_fromstring(text.encode("utf-8"), parser=parser)


def _kept_texts(root: Any) -> list[str]:
    """The text of every element HTML says is not to be translated: code, sample output, keyboard
    input, variables, preformatted text, `translate="no"` and class `notranslate` (#49: a `<br>`
    inside `<code>` once let the rest of it be translated)."""
    out = []
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        kept = local_name(element.tag).lower() in _KEPT or element.get("translate", "").lower() == "no"
        if kept or "notranslate" in (element.get("class") or "").split():
            out.append("".join(element.itertext()))
    return out


def judge_trees(a: Any, b: Any, where: str = "") -> list[str]:
    """Two parsed pages alike but for their text (an EPUB's XHTML pages are judged so too)."""
    (blocks_a, inline_a), (blocks_b, inline_b) = _shape(a), _shape(b)
    return (
        first_difference(blocks_a, blocks_b, f"lxml: {where}elements (inline ones aside)")
        + multiset_difference(inline_a, inline_b, f"lxml: {where}inline elements")
        + first_difference(_kept_texts(a), _kept_texts(b), f"lxml: {where}the text of elements not to be translated")
    )


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    return problems + judge_trees(html_root(text), html_root(answer_text))


def markup(text: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """The elements of an HTML fragment as lxml reads it, each (tag, its attributes), sorted: what
    a translation of a catalog string must keep (#49: `<a href="mailto:%(email)s">` cut apart)."""
    if "<" not in text:
        return []
    import lxml.html

    try:
        fragments = lxml.html.fragments_fromstring(f"<div>{text}</div>")
    except Exception:  # noqa: BLE001 - no markup lxml can read is no markup to keep
        return []
    # HTML's own elements only: a usage line's `<filename>` or `<name>` reads as an element to lxml,
    # but is words the software prints (roundup's catalogs), which a translation may word anew.
    from lxml.html.defs import tags

    found = [
        (element.tag, tuple(sorted(element.attrib.items())))
        for fragment in fragments
        if not isinstance(fragment, str)
        for element in fragment.iter()
        if isinstance(element.tag, str) and element is not fragment and element.tag in tags
    ]
    return sorted(found)


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    """The page's text, scripts and styles aside."""
    root = html_root(decoded_original(f, original))
    for element in root.iter("script", "style"):
        element.getparent().remove(element)
    yield root.text_content()
