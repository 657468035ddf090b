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
from typing import Any

from translator.contract.language_codes import base_language
from translator.text.markup import KEEP, TEXT, Token
from translator.text.markup import html_slice as slice_token
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
    # Made once, as the pattern is: every record a glossary is applied to looks its matches up here.
    _variants: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False, repr=False)

    def applies(self, source: str, target: str) -> bool:
        return bool(self.entries) and source == self.source_lang and target == self.target_lang

    def variants(self) -> dict[str, tuple[str, str]]:
        """Each matchable spelling -> (its entry's source term, the target to write)."""
        if self._variants or not self.entries:
            return self._variants
        out: dict[str, tuple[str, str]] = {}
        for source, target in self.entries.items():
            capital = source[:1].upper() + source[1:]
            if source == source.lower() and capital != source and capital not in self.entries:
                out[capital] = (source, target[:1].upper() + target[1:])
        for source, target in self.entries.items():
            out[source] = (source, target)
        # Filled whole in one step: a request in another thread never sees it half made.
        self._variants.update(out)
        return out

    def pattern(self, spaced: bool) -> re.Pattern[str] | None:
        if spaced not in self._pattern:
            self._pattern[spaced] = _trie_pattern([term for term in self.variants() if term], spaced)
        return self._pattern[spaced]


_WORD = re.compile(r"\w")


def _trie_pattern(terms: list[str], spaced: bool) -> re.Pattern[str] | None:
    """One pattern matching the longest term at each position, whole words only where `spaced`.

    Built as a trie (`ab(?:c|d)`), not as one alternative per term: Python's `re` tries a flat
    alternation's branches one after another at every position, so 5,000 terms took 13 s over 21,000
    characters, and a trie takes a millisecond (each position tries only the branches of the
    characters that follow). At each node the longer terms are tried before the one that ends there:
    the longest term that matches wins, as with the alternatives sorted longest first."""
    root: dict[str, Any] = {}
    for term in terms:
        node = root
        for char in term:
            node = node.setdefault(char, {})
        node[_END] = True
    if not root:
        return None
    # Whole words: no word character may touch a term's edge that is itself a word character; a
    # term's first character says which of the two branches it is in.
    word = {c: n for c, n in root.items() if spaced and _WORD.match(c)}
    other = {c: n for c, n in root.items() if c not in word}
    branches = ([r"(?<!\w)" + _branches(word, spaced)] if word else []) + ([_branches(other, spaced)] if other else [])
    return re.compile("|".join(branches))


# The key of a trie node that marks a term ending there (no character is the empty string).
_END = ""


def _branches(node: dict[str, Any], spaced: bool, last: str = "") -> str:
    """The pattern of what follows a trie node (`last`: the character that led to it)."""
    alternatives = [re.escape(char) + _branches(child, spaced, char) for char, child in sorted(node.items()) if char]
    if _END in node:  # after the longer terms: a term ending here
        alternatives.append(r"(?!\w)" if spaced and _WORD.match(last) else "")
    return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"


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
