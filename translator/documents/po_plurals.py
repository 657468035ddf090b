"""A PO file's plural forms: its header's Plural-Forms (nplurals, and the form its C plural
expression picks for n = 1, evaluated here as gettext does), or, where it has none (a template),
the target language's CLDR rule (Babel's), as `msginit` writes it.

Apart from translator/documents/po.py because it is a small language of its own (C's ternaries,
logic and arithmetic on n) and a table (CLDR's), neither about the file's lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from translator.documents.model import BadDocument
from translator.documents.po_syntax import Entry, header_field

# Far past any language's (CLDR's have at most 6); a header asking for more is refused, not obeyed.
_MOST_PLURAL_FORMS = 10
# gettext's own rule where a catalog says nothing (and CLDR does not know the language).
_GETTEXT_PLURALS = (2, "(n != 1)")
# A Plural-Forms expression longer is not evaluated (gettext's longest, Arabic's, has 80 characters).
_LONGEST_EXPRESSION = 300


@dataclass(frozen=True)
class _Plurals:
    count: int  # nplurals
    singular: int | None  # the form for n = 1, filled from msgid (None: every form from msgid_plural)
    header: str | None  # the Plural-Forms value to write into the header, where it has none


def plural_of(expression: str, n: int) -> int | None:
    """The form a Plural-Forms expression (C's ternaries, logic, comparisons and arithmetic on n)
    picks for `n`, None where it is not one gettext reads."""
    if len(expression) > _LONGEST_EXPRESSION:
        return None
    tokens = re.findall(r"\d+|n|\|\||&&|==|!=|<=|>=|[-+*/%<>!?:()]|\S", expression)
    position = 0
    levels = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"), ("*", "/", "%"))

    def divide(a: int, b: int) -> int:  # C's, truncating toward zero
        quotient = abs(a) // abs(b)
        return quotient if (a < 0) == (b < 0) else -quotient

    operations: dict[str, Callable[[int, int], int]] = {
        "||": lambda a, b: int(bool(a or b)),
        "&&": lambda a, b: int(bool(a and b)),
        "==": lambda a, b: int(a == b),
        "!=": lambda a, b: int(a != b),
        "<": lambda a, b: int(a < b),
        ">": lambda a, b: int(a > b),
        "<=": lambda a, b: int(a <= b),
        ">=": lambda a, b: int(a >= b),
        "+": lambda a, b: a + b,
        "-": lambda a, b: a - b,
        "*": lambda a, b: a * b,
        "/": divide,
        "%": lambda a, b: a - b * divide(a, b),
    }

    def peek() -> str:
        return tokens[position] if position < len(tokens) else ""

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def conditional() -> int:
        condition = binary(0)
        if peek() != "?":
            return condition
        take()
        yes = conditional()
        if take() != ":":
            raise ValueError
        no = conditional()
        return yes if condition else no

    def binary(level: int) -> int:
        if level == len(levels):
            return unary()
        left = binary(level + 1)
        while peek() in levels[level]:
            operation = operations[take()]
            left = operation(left, binary(level + 1))
        return left

    def unary() -> int:
        token = take()
        if token == "!":
            return int(not unary())
        if token == "(":
            value = conditional()
            if take() != ")":
                raise ValueError
            return value
        if token == "n":
            return n
        if token.isdigit():
            return int(token)
        raise ValueError

    try:
        value = conditional()
    except (ValueError, IndexError, ZeroDivisionError, RecursionError):
        return None
    return value if position == len(tokens) else None


def _language_plurals(language: str) -> tuple[int, str]:
    """nplurals and gettext's plural expression of a language, from CLDR's rules (Babel's)."""
    from babel.core import UnknownLocaleError
    from babel.messages.plurals import get_plural

    try:
        rule = get_plural(language.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return _GETTEXT_PLURALS
    return rule.num_plurals, rule.plural_expr


def plurals_for(header: Entry | None, target_language: str, persons_forms: frozenset[int] = frozenset()) -> _Plurals:
    """The plural forms of the file: its header's Plural-Forms, else those its people's plural
    translations all have where that is gettext's default count (two: gettext read the file so,
    and msgfmt -c passed it), else its target language's. WTForms' Persian catalog has no
    Plural-Forms and its people wrote two forms; Babel gives Persian one, and a header saying one
    made msgfmt -c refuse the people's entries (#49)."""
    declared = header_field(header, "Plural-Forms") or ""
    count = re.search(r"nplurals\s*=\s*(\d+)", declared)
    expression = re.search(r"(?<![a-z])plural\s*=\s*([^;]*)", declared)
    written = None
    if count is None:  # none, or a template's `nplurals=INTEGER; plural=EXPRESSION;`
        nplurals, rule = _language_plurals(target_language) if target_language else _GETTEXT_PLURALS
        if persons_forms == {_GETTEXT_PLURALS[0]} and nplurals != _GETTEXT_PLURALS[0]:
            nplurals, rule = _GETTEXT_PLURALS
        written = f"nplurals={nplurals}; plural={rule};"
    else:
        nplurals, rule = int(count.group(1)), expression.group(1).strip() if expression else ""
        if not 1 <= nplurals <= _MOST_PLURAL_FORMS:
            raise BadDocument(
                f"this PO file's header says nplurals={nplurals} (its Plural-Forms); "
                f"a language has 1 to {_MOST_PLURAL_FORMS} plural forms"
            )
    if nplurals == 1:
        return _Plurals(1, None, written)
    singular = plural_of(rule, 1)
    return _Plurals(nplurals, singular if singular is not None and 0 <= singular < nplurals else 0, written)
