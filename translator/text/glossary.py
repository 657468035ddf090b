"""Glossary terms held out of the model's reach: one mechanism for every API (#33).

A glossary maps source terms to target terms (a term mapped to itself is kept as it is). Each
occurrence of a source term in a record's *text* tokens (translator/text/markup.py: plain text, or
HTML text nodes; never inside a placeholder, URL, address, `<code>` or `translate="no"` element,
which are KEEP or BREAK tokens already) becomes a KEEP token whose `text` is the source term, which
the model sees for context, and whose `raw` is the target term. The planner and placement
(translator/text/plan.py, placement.py) then treat it as they treat a placeholder: the target term
goes where the model put the source term when it copied it (names, product names), or the
sentence is rebuilt in fragments around it. Either way the target term is in the answer verbatim.

Matching: longest entry first at each position; case-sensitive, except that an entry written in
lower case also matches with a capital first letter (a sentence's first word), and its target
then gets one too; in a language written with spaces only whole words match (`cat` is not found
in `concatenate`); in Chinese, Japanese, Thai and the other unspaced scripts any occurrence does.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from translator.contract.language_codes import base_language
from translator.text.markup import KEEP, TEXT, Token
from translator.text.markup import _slice as slice_token
from translator.text.segment import UNSPACED_LANGUAGES

# The `name` of a KEEP token that holds a glossary term: placement finds it as a whole word only.
TERM = "glossary-term"


@dataclass(frozen=True)
class Terms:
    """A glossary's entries for one language pair, ready to match."""

    source_lang: str
    target_lang: str
    entries: Mapping[str, str]
    _pattern: dict[bool, re.Pattern[str] | None] = field(default_factory=dict, compare=False, repr=False)

    def applies(self, source: str, target: str) -> bool:
        return bool(self.entries) and source == self.source_lang and target == self.target_lang

    def variants(self) -> dict[str, tuple[str, str]]:
        """Each matchable spelling -> (its entry's source term, the target to write)."""
        out: dict[str, tuple[str, str]] = {}
        for source, target in self.entries.items():
            capital = source[:1].upper() + source[1:]
            if source == source.lower() and capital != source and capital not in self.entries:
                out[capital] = (source, target[:1].upper() + target[1:])
        for source, target in self.entries.items():
            out[source] = (source, target)
        return out

    def pattern(self, spaced: bool) -> re.Pattern[str] | None:
        if spaced not in self._pattern:
            terms = sorted(self.variants(), key=lambda term: (-len(term), term))
            alternatives = [_alternative(term, spaced) for term in terms if term]
            self._pattern[spaced] = re.compile("|".join(alternatives)) if alternatives else None
        return self._pattern[spaced]


def _alternative(term: str, spaced: bool) -> str:
    body = re.escape(term)
    if not spaced:
        return body
    # Whole words: no word character may touch a term's edge that is itself a word character.
    before = r"(?<!\w)" if re.match(r"\w", term[0]) else ""
    after = r"(?!\w)" if re.match(r"\w", term[-1]) else ""
    return f"(?:{before}{body}{after})"


@dataclass
class Applied:
    """What a glossary did to one record: the entries it applied, in order of first use."""

    entries: dict[str, str] = field(default_factory=dict)


def apply_terms(tokens: list[Token], terms: Terms, language: str, html_format: bool) -> tuple[list[Token], Applied]:
    """The record's tokens with each glossary match in a TEXT token turned into a KEEP token."""
    applied = Applied()
    pattern = terms.pattern(spaced=base_language(language) not in UNSPACED_LANGUAGES)  # zho_Hans is zh
    if pattern is None:
        return tokens, applied
    variants = terms.variants()
    out: list[Token] = []
    moved: dict[int, int] = {}  # a token's index before -> after: tags name their partner by index
    for index, token in enumerate(tokens):
        moved[index] = len(out)
        if token.kind != TEXT:
            out.append(token)
            continue
        cursor = 0
        for match in pattern.finditer(token.text):
            start, end = match.span()
            source, target = variants[match.group()]
            applied.entries.setdefault(source, terms.entries[source])
            if start > cursor:
                out.append(slice_token(token, cursor, start, TEXT))
            raw = html.escape(target, quote=False) if html_format else target
            out.append(Token(KEEP, raw, match.group(), name=TERM))
            cursor = end
        if cursor == 0:
            out.append(token)
        elif cursor < len(token.text):
            out.append(slice_token(token, cursor, len(token.text), TEXT))
    if len(out) == len(tokens):
        return out, applied
    return [replace(t, partner=moved[t.partner]) if t.partner >= 0 else t for t in out], applied
