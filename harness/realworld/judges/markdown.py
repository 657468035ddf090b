"""Markdown: markdown-it-py's tokens, all of them but the text's content; inline tokens compared per
block as a multiset (a translation may move a link within its sentence); reference definitions
whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.realworld.judges.common import decoded, decoded_original, first_difference, multiset_difference

if TYPE_CHECKING:
    from harness.realworld import Answer, RealFile


def _shape(text: str) -> tuple[list[tuple[Any, ...]], list[list[tuple[Any, ...]]], dict[str, Any]]:
    from markdown_it import MarkdownIt

    env: dict[str, Any] = {}
    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text, env)
    blocks: list[tuple[Any, ...]] = []
    inlines: list[list[tuple[Any, ...]]] = []
    for token in tokens:
        if token.type != "inline":
            verbatim = token.content if token.type in ("fence", "code_block", "html_block") else None
            blocks.append((token.type, token.tag, token.markup, token.info, verbatim))
            continue
        found = []
        children = token.children or []
        for i, child in enumerate(children):
            if child.type in ("text", "softbreak"):
                after_autolink = i and children[i - 1].type == "link_open" and children[i - 1].markup == "autolink"
                if not after_autolink:
                    continue
            content = child.content if child.type in ("code_inline", "html_inline", "text") else None
            attributes = {k: v for k, v in (child.attrs or {}).items() if k != "alt"}
            found.append((child.type, child.markup, attributes, content))
        blocks.append(("inline",))
        inlines.append(sorted(found, key=repr))
    return blocks, inlines, env.get("references", {})


def judge(f: RealFile, original: bytes, answer: Answer) -> list[str]:
    problems, text, answer_text = decoded(f, original, answer)
    if answer_text is None:
        return problems
    a, b = _shape(text), _shape(answer_text)
    problems += first_difference(a[0], b[0], "markdown-it: block tokens")
    problems += multiset_difference(a[1], b[1], "markdown-it: links, images, code spans, autolinks, inline HTML")
    if a[2] != b[2]:
        problems.append(f"markdown-it: reference definitions {a[2]} came back as {b[2]}")
    return problems


def texts(f: RealFile, original: bytes) -> Iterator[str]:
    """The text markdown-it reads in the file's inline content: not its markup, nor code, HTML,
    URLs or an image's alt text. (The whole file once stood for it, and a file of images and
    inline HTML alone, html2text's images_as_html.md, was said to hold text no job found.)"""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(decoded_original(f, original))
    for token in tokens:
        yield from (child.content for child in token.children or [] if child.type == "text")
