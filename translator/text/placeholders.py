"""Spans of text that must come back byte-identical: placeholders, URLs and e-mail addresses.

Localization tools send strings with placeholders their software fills in later (Weblate's own
`[X7X]` tokens, printf's `%s` and `%(name)s`, Qt's `%1`, Rails' `%{name}`, i18next's `$t(key)`,
`{name}`, `{{ name }}`, `${name}`); a translation that
changes one breaks the program that uses it. URLs and e-mail addresses are not words either.
`translator/text/placement.py` keeps each span found here verbatim: around the model's translation of
the whole sentence when the model copied it, or by translating the text between them otherwise.

Every pattern is linear (no nested quantifiers over the same characters).
"""

from __future__ import annotations

import re

_PATTERNS = (
    # Weblate replaces the placeholders and markup it knows with [X<number>X] before machine translation.
    r"\[X\d+X\]",
    # printf: %s, %d, %1$s, %-5.2f, %(name)s, %@ (Objective-C); no space flag, so "50 % of" is text.
    r"%(?:\(\w+\)|\d+\$)?[-+0#]*(?:\d+|\*)?(?:\.\d+)?[hlLqjzt]{0,2}[diouxXeEfFgGcrsaAp@]",
    # Qt's and JupyterLab's positional %1 ... %99 (#49: lost in 92 of 92 strings of a language
    # pack); not a percentage ("50%", "50 % of"), which a digit or a space comes before.
    r"(?<![\w%])%\d{1,2}(?![\w$])",
    # Rails' and Polyglot's %{name}, whole (its `%` is the placeholder's, not a percent sign).
    r"%\{\w+\}",
    # i18next's nesting: $t(key), $t(key, {"count": 2}).
    r"\$t\([^()\n]*\)",
    # {name}, {0}, {}, {{ name }}, ${name}, {user.name}, {count:02d}
    r"\$?\{\{?\s*[\w.:$-]*\s*\}\}?",
    # URLs stop at whitespace, quotes, brackets, and at CJK characters and punctuation (Chinese and
    # Japanese write a URL with no space before the next word or the full-width comma).
    r"(?<![A-Za-z0-9])(?:(?:https?|ftp)://|www\.)[^\s<>\"'`\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]+",
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+",
)
_PLACEHOLDER = re.compile("|".join(f"(?:{pattern})" for pattern in _PATTERNS))
# A URL's or address's last characters are more often the sentence's than its own.
_TRAILING_PUNCTUATION = ".,;:!?)]}'\"»”’"


def placeholder_spans(text: str) -> list[tuple[int, int]]:
    """The non-overlapping `(start, end)` spans of `text` to keep verbatim, in order."""
    spans = []
    for match in _PLACEHOLDER.finditer(text):
        start, end = match.span()
        token = match.group()
        if "://" in token or token.startswith("www.") or "@" in token[1:]:
            while end > start and text[end - 1] in _TRAILING_PUNCTUATION and not _closes_inside(text[start:end]):
                end -= 1
        if end > start:
            spans.append((start, end))
    return spans


def _closes_inside(token: str) -> bool:
    # "https://en.wikipedia.org/wiki/Python_(language)" keeps its ")": it opened inside the URL.
    last = token[-1]
    pairs = {")": "(", "]": "[", "}": "{"}
    return last in pairs and token.count(pairs[last]) >= token.count(last)
