"""ICU MessageFormat in a catalog's string: what is translated and what is kept.

`You have {count, plural, =0 {no messages} one {# message} other {# messages}}.` is one message
whose argument names, keywords (`plural`, `select`, `selectordinal`), selectors (`=0`, `one`,
`other`, `offset:1`) and `#` are code, and whose texts (the message around the argument, and
each case's) are words. Sent whole as prose, the argument names were translated and the cases
lost (#49: a formatjs catalog, an Angular XLIFF plural).

`parse` reads a message with ICU's own rules (apostrophe quoting: `''` is one apostrophe, and `'{`
starts a quoted literal that runs to the next lone apostrophe), as a tree. `split` turns it into
the texts to translate, each a message of its own: the outer one with every plural or select
argument stood in by the simple argument `{name}` (which the placeholder rules keep verbatim, and
which gives the model the sentence around it), and each case's text with `#` stood in by `{_}`;
and a join that puts the translations back into the same structure. A translation that lost an
argument it had to keep is not placed wrong: the join gives None, and the caller keeps the
original.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

CHOICE_KINDS = ("plural", "select", "selectordinal")
_CHOICE = re.compile(r"\{\s*[\w.-]+\s*,\s*(?:plural|selectordinal|select)\s*,")
_POUND = "{_}"


@dataclass
class Choice:
    """`{name, kind, [offset:n] selector {message} ...}`: `head` is its source up to the first
    selector (`{name, plural, offset:1 `), each case (its selector's source with the white space
    around it, its message)."""

    name: str
    kind: str  # plural, select or selectordinal
    head: str
    cases: list[tuple[str, Message]] = field(default_factory=list)
    tail: str = "}"


@dataclass
class Message:
    """Literal text (as written, quoting and all), simple arguments kept as written, choices."""

    parts: list[str | Choice] = field(default_factory=list)
    # Literal parts, by index: the ones that are source text, not a simple argument's.
    literal: set[int] = field(default_factory=set)


class NotICU(ValueError):
    """The string is not a well-formed ICU message (a brace without its match)."""


def is_icu(text: str) -> bool:
    """Whether the string holds a plural or select argument (a simple `{name}` alone is a
    placeholder, which the placeholder rules keep)."""
    return _CHOICE.search(text) is not None


def parse(text: str) -> Message:
    message, end = _message(text, 0, in_plural=False, top=True)
    if end != len(text):
        raise NotICU(f"an unmatched '}}' at {end}")
    return message


def _message(text: str, at: int, in_plural: bool, top: bool = False) -> tuple[Message, int]:
    message = Message()
    literal: list[str] = []

    def flush() -> None:
        if literal:
            message.literal.add(len(message.parts))
            message.parts.append("".join(literal))
            literal.clear()

    while at < len(text):
        char = text[at]
        if char == "'":
            # '' is an apostrophe; '{ ... ' (or '} '#' '|') a quoted literal; a lone ' is itself.
            if text.startswith("''", at):
                literal.append("''")
                at += 2
                continue
            if at + 1 < len(text) and text[at + 1] in "{}#|":
                close = text.find("'", at + 1)
                close = len(text) - 1 if close == -1 else close
                literal.append(text[at : close + 1])
                at = close + 1
                continue
            literal.append(char)
            at += 1
        elif char == "{":
            flush()
            part, at = _argument(text, at, in_plural)
            message.parts.append(part)
        elif char == "}":
            if top:
                raise NotICU(f"an unmatched '}}' at {at}")
            break
        else:
            literal.append(char)
            at += 1
    flush()
    return message, at


_HEAD = re.compile(r"\{\s*([\w.-]+)\s*,\s*(plural|selectordinal|select)\s*,(\s*offset:\s*\d+)?\s*")
_SELECTOR = re.compile(r"\s*(=\d+|[\w-]+)\s*")


def _argument(text: str, at: int, in_plural: bool) -> tuple[str | Choice, int]:
    head = _HEAD.match(text, at)
    if head is None:
        # A simple argument ({name}, {n, number}, {d, date, short}): kept as written.
        depth, end = 0, at
        while end < len(text):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    return text[at : end + 1], end + 1
            end += 1
        raise NotICU(f"the argument at {at} is not closed")
    choice = Choice(head.group(1), head.group(2), text[at : head.end()])
    at = head.end()
    plural = choice.kind != "select"
    while at < len(text) and text[at] != "}":
        selector = _SELECTOR.match(text, at)
        if selector is None or selector.end() >= len(text) or text[selector.end()] != "{":
            raise NotICU(f"a case at {at} has no message")
        case, end = _message(text, selector.end() + 1, in_plural=plural)
        if end >= len(text) or text[end] != "}":
            raise NotICU(f"the case at {at} is not closed")
        choice.cases.append((text[at : selector.end()], case))
        at = end + 1
        spaces = re.match(r"\s*", text[at:])
        if spaces and spaces.end() and at + spaces.end() < len(text) and text[at + spaces.end()] == "}":
            choice.tail = spaces.group() + "}"
            return choice, at + spaces.end() + 1
    if at >= len(text):
        raise NotICU(f"the {head.group(2)} argument {choice.name!r} is not closed")
    return choice, at + 1


def _source(message: Message, pound: bool) -> str:
    """A message as text to translate: choices as `{name}`, `#` (in a plural's case) as `{_}`."""
    out = []
    for index, part in enumerate(message.parts):
        if isinstance(part, Choice):
            out.append("{" + part.name + "}")
        elif index in message.literal and pound:
            out.append(_pound_out(part))
        else:
            out.append(part)
    return "".join(out)


def _pound_out(literal: str) -> str:
    # A # outside quotes, in a plural's case, is the number.
    return re.sub(r"'[^']*'|#", lambda m: _POUND if m.group() == "#" else m.group(), literal)


def split(text: str) -> tuple[list[str], Callable[[list[str]], str | None]] | None:
    """The texts to translate in an ICU message, and the join of their translations; None where
    the string is no ICU plural or select, or not well-formed."""
    if not is_icu(text):
        return None
    try:
        root = parse(text)
    except NotICU:
        return None
    texts: list[str] = []
    layout: list[tuple[Message, bool]] = []

    def walk(message: Message, pound: bool) -> None:
        layout.append((message, pound))
        texts.append(_source(message, pound))
        for part in message.parts:
            if isinstance(part, Choice):
                for _, case in part.cases:
                    walk(case, part.kind != "select")

    walk(root, False)

    def join(translations: list[str]) -> str | None:
        done = iter(translations)

        def build(message: Message, pound: bool) -> str | None:
            translated = next(done)
            inner: dict[str, str] = {}
            for part in message.parts:
                if isinstance(part, Choice):
                    cases = []
                    for selector, case in part.cases:
                        built = build(case, part.kind != "select")
                        if built is None:
                            return None
                        cases.append(f"{selector}{{{built}}}")
                    inner[part.name] = part.head + "".join(cases) + part.tail
            for name, rebuilt in inner.items():
                placeholder = "{" + name + "}"
                if translated.count(placeholder) != 1:
                    return None
                translated = translated.replace(placeholder, rebuilt)
            if pound:
                translated = translated.replace(_POUND, "#")
            return translated

        return build(*layout[0])

    return texts, join


def pieces(text: str) -> tuple[list[str], Callable[[list[str]], str | None]]:
    """The texts of a string to translate, and the join of their translations: an ICU plural or
    select message's texts, else the string itself."""
    found = split(text)
    if found is not None:
        return found
    return [text], lambda translations: translations[0]


def expand(values: list[str]) -> tuple[list[str], Callable[[list[str]], list[str | None]]]:
    """Every value's texts to translate in one list (an ICU message's several, any other string
    itself), and the fold of their translations back into one per value: None for an ICU message
    whose arguments did not come back, which its caller keeps as it was, and reports."""
    held = [pieces(value) for value in values]
    texts = [text for parts, _ in held for text in parts]

    def fold(translations: list[str]) -> list[str | None]:
        if len(translations) != len(texts):
            raise ValueError(f"{len(translations)} translations for {len(texts)} texts")
        done = iter(translations)
        return [join([next(done) for _ in parts]) for parts, join in held]

    return texts, fold
