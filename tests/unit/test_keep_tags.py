"""Elements a request keeps inline (`keepTags`, DeepL's `ignore_tags`): Weblate sends its
placeholders as `<x id="1"></x>` with ignore_tags=x. They are kept spans inside the sentence around
them, which is translated whole, not sentence boundaries (which they are without keepTags)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from translator.contract import limits
from translator.contract.schemas import Payload
from translator.text.glossary import Terms
from translator.text.markup import BREAK, KEEP, html_tokens
from translator.text.plan import plan_record

pytestmark = pytest.mark.pure

SENTENCE = "Welcome to Berlin!"
GERMAN = "Willkommen in Berlin!"
KEEP_X = frozenset({"x"})


def model(text: str) -> str:
    """Knows one sentence; anything else comes back marked, as a fixture model's would differ."""
    return {SENTENCE: GERMAN}.get(text, f"«{text}»")


def translate(text: str, keep: frozenset[str] = KEEP_X, terms: Terms | None = None) -> tuple[str, list[str]]:
    plan = plan_record(text, "en", limits.MAX_PIECE_CHARS, "de", "html", terms=terms, keep=keep)
    first = plan.first_round
    resolution = plan.resolve([model(t) for t in first])
    return resolution.render([model(t) for t in resolution.second_round]), first


def test_an_element_named_is_a_kept_span_not_a_boundary():
    source = 'Welcome to Berlin<x id="18"></x>!'
    assert [t.kind for t in html_tokens(source)] == ["text", BREAK, BREAK, "text"]
    assert [t.kind for t in html_tokens(source, KEEP_X)] == ["text", KEEP, "text"]
    assert [t.kind for t in html_tokens('a<x id="1"/>b', KEEP_X)] == ["text", KEEP, "text"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # Touching a word the model copied: beside that word.
        ('Welcome to Berlin<x id="18"></x>!', 'Willkommen in Berlin<x id="18"></x>!'),
        ('Welcome to <x id="0"></x>Berlin!', 'Willkommen in <x id="0"></x>Berlin!'),
        # At a sentence's edge: outside it, as ever.
        ('<x id="1"></x>Welcome to Berlin!<x id="2"/>', '<x id="1"></x>Willkommen in Berlin!<x id="2"/>'),
    ],
)
def test_the_sentence_around_a_kept_element_is_translated_whole(source, expected):
    answer, first = translate(source)
    assert first == [SENTENCE]
    assert answer == expected


def test_without_keep_tags_the_element_cuts_the_sentence():
    answer, first = translate('Welcome to Berlin<x id="18"></x>!', keep=frozenset())
    assert first == ["Welcome to Berlin"] and "«Welcome to Berlin»" in answer


def test_a_point_with_no_anchor_falls_back_to_fragments_and_is_kept():
    # Between two words the model did not copy: the sentence is rebuilt around it, nothing lost.
    answer, _ = translate('Welcome <x id="3"></x> to Berlin!')
    assert answer.count('<x id="3"></x>') == 1


def test_a_kept_element_beside_a_glossary_term():
    terms = Terms("en", "de", {"Berlin": "BERLIN"})
    answer, _ = translate('Welcome to <x id="0"></x>Berlin<x id="1"></x>!', terms=terms)
    assert answer == 'Willkommen in <x id="0"></x>BERLIN<x id="1"></x>!'


def test_keep_tags_are_element_names():
    body = {"fromLang": "en", "toLang": "de", "records": [], "format": "html"}
    assert Payload.model_validate({**body, "keepTags": ["X", "ph"]}).kept_tags() == {"x", "ph"}
    with pytest.raises(ValidationError, match="keepTags"):
        Payload.model_validate({**body, "keepTags": ["x" * 65]})
    with pytest.raises(ValidationError, match="keepTags"):
        Payload.model_validate({**body, "keepTags": ["x"] * (limits.MAX_KEEP_TAGS + 1)})
