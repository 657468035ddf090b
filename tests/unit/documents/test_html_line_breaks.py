"""A line break inside an HTML paragraph is white space, not a sentence end: a hard-wrapped sentence
is translated whole, and its line break comes back into the translation (translator/text/units.py,
breaks.py's `place_breaks`). Plain text keeps its rule: each line ends a sentence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from translator.contract import limits
from translator.documents.formats import read_document
from translator.text.plan import plan_record

pytestmark = pytest.mark.pure

Model = Callable[[str], str]
BOX = "Life is like a box of chocolates."
BOITE = "La vie est comme une boîte de chocolats."


def knows(answers: dict[str, str]) -> Model:
    return lambda text: answers.get(text, f"«{text}»")


def translate(text: str, model: Model, fmt: str = "html", target: str = "fr") -> tuple[str, list[str]]:
    """(the answer, the sentences sent first)."""
    plan = plan_record(text, "en", limits.MAX_PIECE_CHARS, target, fmt)
    first = plan.first_round
    resolution = plan.resolve([model(t) for t in first])
    return resolution.render([model(t) for t in resolution.second_round]), first


def test_a_hard_wrapped_html_sentence_is_one_sentence_and_its_break_comes_back():
    answer, first = translate("<p>Life is like a box\n of chocolates.</p>", knows({BOX: BOITE}))
    assert first == [BOX]
    assert answer == "<p>La vie est comme une\n boîte de chocolats.</p>"


def test_plain_text_keeps_a_line_a_sentence():
    answer, first = translate("Life is like a box\n of chocolates.", str.upper, fmt="text")
    assert first == ["Life is like a box", "of chocolates."]
    assert answer == "LIFE IS LIKE A BOX\n OF CHOCOLATES."


def test_breaks_between_sentences_stay_where_they_were_and_indentation_comes_back():
    source = "<p>\n    One sentence here. Another one\n    goes on here.\n</p>"
    answer, first = translate(source, str.upper)
    assert first == ["One sentence here.", "Another one goes on here."]
    assert answer == "<p>\n    ONE SENTENCE HERE. ANOTHER ONE\n    GOES ON HERE.\n</p>"


def test_a_break_inside_an_inline_element_goes_back_at_the_nearest_space():
    answer, first = translate("<p>You never know <b>what you\n are going</b> to get.</p>", str.upper)
    assert first == ["You never know what you are going to get."]
    assert answer == "<p>YOU NEVER KNOW <b>WHAT YOU\n ARE GOING</b> TO GET.</p>"


def test_a_translation_without_spaces_keeps_none_of_the_breaks():
    answer, _ = translate(
        "<p>Life is like a box\nof chocolates.</p>", lambda _: "人生はチョコレートの箱だ。", target="ja"
    )
    assert answer == "<p>人生はチョコレートの箱だ。</p>"


def test_a_break_already_in_a_fragment_left_as_it_was_is_not_added_twice():
    # An unclosed <b> makes the sentence go in fragments; the "\n" between the tags has no letters
    # and comes back as it was.
    answer, first = translate("<p>Box of <i>42</i>\n<b>chocolates</p>", str.upper)
    assert first == ["Box of 42 chocolates"]
    assert answer == "<p>BOX OF <i>42</i>\n<b>CHOCOLATES</p>"


def test_html_and_markdown_documents_translate_a_wrapped_sentence_whole():
    html = read_document("a.html", b"<p>Life is like a box\n  of chocolates.</p>\n")
    markdown = read_document("a.md", b"Life is like a box\nof chocolates.\n")
    for document in (html, markdown):
        (unit,) = document.units
        assert plan_record(unit.text, "en", limits.MAX_PIECE_CHARS, "fr", unit.fmt).first_round == [BOX]
