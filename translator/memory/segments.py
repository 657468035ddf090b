"""How a text is compared with a memory's sources: its key, and its skeleton.

- The **key** of an exact match: the text with white space aside (runs of white space are one
  space, none at the edges) in Unicode's composed form. `Save  the file.\n` finds `Save the file.`.
- The **skeleton** of a text whose numbers, placeholders or inline tags differ from a stored
  source's and nothing else: each such variable stood in by one mark, with the variables in order.
  `Delete 3 files from <b>%s</b>?` and `Delete 12 files from <b>%s</b>?` share a skeleton; CAT tools
  reuse the stored translation with the request's variables put where the stored ones stood
  (auto-substitution). Placeholders are the families translator/text/placeholders.py keeps verbatim
  (printf, `{name}`, `%{name}`, URLs, e-mail addresses...).

A stored translation is substitutable only where each of its source's variables appears in it as
written, once per occurrence in the source (a translation that spelled a number out, or wrote
`1.000` for `1,000`, is not): then every variable's place in the translation is known.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from translator.text.placeholders import placeholder_spans

_SPACE = re.compile(r"\s+")
# An inline tag as HTML and XML write it (start, end, self-closing), and a number: digits with their
# group and decimal separators, not part of a word (`v2`, `H2O`, `3rd` are words).
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])")
# What stands for a variable in a skeleton: a private-use character no text is compared by.
MARK = "\ue000"


def key(text: str) -> str:
    """The text as an exact match compares it."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


@dataclass(frozen=True, slots=True)
class Variables:
    """A text (as `key` makes it) with its variables stood in by MARK, and the variables in order."""

    skeleton: str
    values: tuple[str, ...]


def variables(text: str) -> Variables | None:
    """The text's skeleton and variables, or None where it has none (nothing to substitute)."""
    spans = _spans(text)
    if not spans:
        return None
    parts, values, at = [], [], 0
    for start, end in spans:
        parts.append(text[at:start])
        parts.append(MARK)
        values.append(text[start:end])
        at = end
    parts.append(text[at:])
    return Variables("".join(parts), tuple(values))


def _spans(text: str) -> list[tuple[int, int]]:
    found = sorted(
        [match.span() for match in _TAG.finditer(text)]
        + placeholder_spans(text)
        + [match.span() for match in _NUMBER.finditer(text)],
        key=lambda span: (span[0], -span[1]),
    )
    spans: list[tuple[int, int]] = []
    for start, end in found:  # the longest of overlapping ones (a URL's digits are the URL's)
        if spans and start < spans[-1][1]:
            continue
        spans.append((start, end))
    return spans


@dataclass(frozen=True, slots=True)
class Template:
    """A stored translation with its source's variables as slots: `parts[0] slot parts[1] ...`,
    `slots[i]` being the index of the source variable that stands there."""

    parts: tuple[str, ...]
    slots: tuple[int, ...]

    def fill(self, values: tuple[str, ...]) -> str:
        out = [self.parts[0]]
        for slot, part in zip(self.slots, self.parts[1:], strict=True):
            out.append(values[slot])
            out.append(part)
        return "".join(out)


def template(source: Variables, target: str) -> Template | None:
    """The translation `target` of the source `source` as a template, or None where a variable of
    the source is not in the translation as written (the substitution would be a guess)."""
    spans = _spans(target)
    written = [target[start:end] for start, end in spans]
    # Each source variable (by its value) must come back as many times as the source has it; then
    # the k-th occurrence in the translation takes the k-th occurrence's slot in the source.
    slots_of: dict[str, list[int]] = {}
    for index, value in enumerate(source.values):
        slots_of.setdefault(value, []).append(index)
    if any(written.count(value) != len(slots) for value, slots in slots_of.items()):
        return None
    parts, slots, at, seen = [], [], 0, dict.fromkeys(slots_of, 0)
    for (start, end), value in zip(spans, written, strict=True):
        if value not in slots_of:
            continue  # a variable of the translation's own (a tag it added): kept as written
        parts.append(target[at:start])
        slots.append(slots_of[value][seen[value]])
        seen[value] += 1
        at = end
    parts.append(target[at:])
    return Template(tuple(parts), tuple(slots))


def same_kinds(stored: tuple[str, ...], asked: tuple[str, ...]) -> bool:
    """Whether each variable of a request is of the kind of the stored one in its place (a number for
    a number, a tag for a tag, a placeholder for a placeholder), and repeats where it repeated: a
    stored `%s ... %s` is not a template for `%s ... %d`."""
    if len(stored) != len(asked):
        return False
    for mine, theirs in zip(stored, asked, strict=True):
        if _kind(mine) != _kind(theirs):
            return False
    pairs: dict[str, str] = {}
    for mine, theirs in zip(stored, asked, strict=True):
        if pairs.setdefault(mine, theirs) != theirs:
            return False
    return True


def _kind(value: str) -> str:
    if _NUMBER.fullmatch(value):
        return "number"
    if _TAG.fullmatch(value):
        return "tag:" + _tag_name(value)
    return "placeholder"


def _tag_name(tag: str) -> str:
    # `<b>` and `</b>` are kinds apart, as are `<b>` and `<i>`: a tag's place is its structure.
    match = re.match(r"</?([\w:.-]+)", tag)
    closing = tag.startswith("</")
    return ("/" if closing else "") + (match.group(1).lower() if match else "")
