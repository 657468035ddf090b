"""What to send the model for one record, and how to put its answers back: text and HTML alike.

A record (translator/text/markup.py tokens) is cut into blocks (text between block-level tags)
and each block into sentences by `split_text`, the segmentation plain text gets. A sentence is a
*unit* (translator/text/units.py): its text (tags left out, kept spans in) is what the model
translates. Everything between units (whitespace, block tags, `<pre>`, `translate="no"` elements)
comes back byte for byte.

A unit holding kept spans (placeholders, inline `<code>`) or inline tags (`<b>`, `<a href>`) is
translated whole first, for the best translation, and then (translator/text/placement.py):
- *located*: each kept span is found verbatim in the translation, and each inline element around
  the translation of its words: its words themselves when the model copied them (names, numbers),
  or their translation on its own when that occurs in the sentence's translation; tags and kept
  spans nest as they did in the source. The tags are put around those words.
- otherwise *in fragments*: the text between the tags and kept spans is translated piece by piece
  and the tags and spans stay exactly where they were. Nothing is lost or unbalanced, at some cost
  in fluency for that sentence.
The words of an inline element and the fragments are asked for in one second round for all the
records of a request (`Resolution.second_round`).

Text with no letters (numbers, symbols, emoji, whitespace) is never sent to the model.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

from translator.contract.language_codes import base_language
from translator.text.breaks import place_breaks
from translator.text.glossary import Applied, Terms, apply_terms
from translator.text.markup import TEXT, Token, html_tokens, text_tokens
from translator.text.placement import fragments, locate, second_round_texts
from translator.text.segment import UNSPACED_LANGUAGES
from translator.text.units import record_units

TEXT_FORMAT, HTML_FORMAT = "text", "html"
FORMATS = (TEXT_FORMAT, HTML_FORMAT)


def record_tokens(text: str, fmt: str = TEXT_FORMAT, keep: frozenset[str] = frozenset()) -> list[Token]:
    """`keep`: in HTML, names of elements kept inline (a request's `keepTags`)."""
    return html_tokens(text, keep) if fmt == HTML_FORMAT else text_tokens(text)


def plan_record(
    text: str,
    language: str,
    max_chars: int,
    target: str,
    fmt: str = TEXT_FORMAT,
    tokens: list[Token] | None = None,
    terms: Terms | None = None,
    keep: frozenset[str] = frozenset(),
) -> Plan:
    """`tokens`: the record's `record_tokens`, when detection made them already (HTML is parsed once);
    `terms`: a glossary, applied when it is for this record's language pair (translator/text/glossary.py);
    `keep`: as for `record_tokens`."""
    if language == target:  # already in the target language: it comes back as it is
        return Plan(text, [], "", 1, "", _identity)
    escape = _escape if fmt == HTML_FORMAT else _identity
    parsed = record_tokens(text, fmt, keep) if tokens is None else tokens
    if terms is None or not terms.applies(language, target):
        return Plan(text, parsed, language, max_chars, target, escape, fmt == HTML_FORMAT)
    parsed, applied = apply_terms(parsed, terms, language, fmt == HTML_FORMAT)
    # The glossary's target terms are in the tokens' raw text: what lies between sentences comes from it.
    plan = Plan("".join(token.raw for token in parsed), parsed, language, max_chars, target, escape, fmt == HTML_FORMAT)
    plan.applied = applied
    return plan


def language_text(tokens: list[Token]) -> str:
    """The words of a record (its `record_tokens`) that show its language, for detection: what a
    reader sees (HTML without tags, scripts and styles), without placeholders, URLs, addresses
    and inline code."""
    return "".join(token.text if token.kind == TEXT else " " for token in tokens)


def _identity(text: str) -> str:
    return text


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


class Plan:
    def __init__(
        self,
        source: str,
        tokens: list[Token],
        language: str,
        max_chars: int,
        target: str,
        escape: Callable[[str], str],
        soft_breaks: bool = False,
    ) -> None:
        """`soft_breaks`: a line break inside a block is white space, as in HTML (translator/text/units.py)."""
        self.source = source
        self.escape = escape
        self.applied = Applied()  # the glossary entries this record used
        # Sentences that touched in the source (Japanese or Chinese after 。) get a space between
        # them when the target language writes with spaces, so ja→en is not "Hello.How are you?".
        # The text rules go by bare language: `zh-Hant` and NLLB's `zho_Hant` are `zh` here.
        self.spaced = bool(target) and base_language(target) not in UNSPACED_LANGUAGES
        self.units = record_units(tokens, base_language(language), max_chars, soft_breaks) if tokens else []

    @property
    def first_round(self) -> list[str]:
        """The texts to translate first: one per sentence that has letters."""
        return [unit.text for unit in self.units if unit.translatable]

    def resolve(self, first: Sequence[str]) -> Resolution:
        if len(first) != len(self.first_round):
            raise ValueError(f"expected {len(self.first_round)} translations, got {len(first)}")
        return Resolution(self, list(first))


class Resolution:
    """A plan with its first-round translations: what else to translate, and the answer."""

    def __init__(self, plan: Plan, first: list[str]) -> None:
        self.plan = plan
        answers = iter(first)
        self.translations = [next(answers) if unit.translatable else None for unit in plan.units]
        needed: dict[str, None] = {}
        self.located: list[str | None] = []
        for unit, translation in zip(plan.units, self.translations, strict=True):
            if translation is None or unit.plain:
                self.located.append(None)
                continue
            rendered = locate(unit, translation, {}, plan.escape, plan.spaced)
            self.located.append(rendered)
            if rendered is None:
                for text in second_round_texts(unit, translation, plan.spaced):
                    needed.setdefault(text, None)
        self.second_round = list(needed)

    def render(self, second: Sequence[str]) -> str:
        if len(second) != len(self.second_round):
            raise ValueError(f"expected {len(self.second_round)} translations, got {len(second)}")
        more = dict(zip(self.second_round, second, strict=True))
        plan = self.plan
        out: list[str] = []
        cursor = 0
        previous_end = -1
        previous_translated = False
        for unit, translation, located in zip(plan.units, self.translations, self.located, strict=True):
            out.append(plan.source[cursor : unit.raw_start])
            if translation is None:
                rendered = plan.source[unit.raw_start : unit.raw_end]
            elif unit.plain:
                rendered = plan.escape(translation)
            elif located is not None:
                rendered = located
            else:
                located = locate(unit, translation, more, plan.escape, plan.spaced)
                rendered = located or fragments(unit, more, plan.escape)
            if unit.breaks and translation:
                rendered = place_breaks(rendered, unit.breaks, len(unit.text))
            # Sentences that touched in the source (CJK, hard cuts) are spaced in a spaced target.
            touching = unit.raw_start == previous_end and previous_translated
            if plan.spaced and touching and translation and rendered:
                rendered = " " + rendered
            out.append(rendered)
            previous_translated = bool(translation) and bool(rendered)
            cursor = previous_end = unit.raw_end
        out.append(plan.source[cursor:])
        return "".join(out)
