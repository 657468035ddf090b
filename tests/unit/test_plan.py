"""Text and HTML records through `translator.text.plan` with stand-in models: what is sent, and
that the markup, kept elements and placeholders come back, checked with lxml (a parser other than
the one the service uses)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import html as lxml_html

from translator.contract import limits
from translator.text.markup import html_tokens, text_tokens
from translator.text.placeholders import placeholder_spans
from translator.text.plan import language_text, plan_record, record_tokens

pytestmark = pytest.mark.pure

Model = Callable[[str], str]


def translate(text: str, model: Model, fmt: str = "html", source: str = "en", target: str = "fr"):
    """(answer, texts sent in the first round, texts sent in the second)."""
    plan = plan_record(text, source, limits.MAX_PIECE_CHARS, target, fmt)
    first = plan.first_round
    resolution = plan.resolve([model(t) for t in first])
    second = resolution.second_round
    return resolution.render([model(t) for t in second]), first, second


def upper(text: str) -> str:
    return text.upper()


def corpus(pairs: dict[str, str]) -> Model:
    """A model that knows some sentences, and answers anything else with its own marker."""
    return lambda text: pairs.get(text, f"«{text}»")


def test_sentences_are_cut_as_in_text_and_the_markup_stays():
    answer, first, second = translate("<p class='a'>One here. Two there!</p>\n<ul><li>Three</li></ul>", upper)
    assert first == ["One here.", "Two there!", "Three"] and second == []
    assert answer == "<p class='a'>ONE HERE. TWO THERE!</p>\n<ul><li>THREE</li></ul>"


def test_an_element_around_whole_sentences_is_kept_outside_them():
    answer, first, _ = translate('<p><b>One here.</b> <a href="x">Two there. Three.</a></p>', upper)
    assert first == ["One here.", "Two there.", "Three."]
    assert answer == '<p><b>ONE HERE.</b> <a href="x">TWO THERE. THREE.</a></p>'


def test_an_inline_element_goes_around_its_words_when_the_model_copied_them():
    model = corpus({"My sister lives in Paris with her cats.": "Ma sœur habite à Paris avec ses chats."})
    answer, first, second = translate('<p>My sister lives in <a href="/p">Paris</a> with her cats.</p>', model)
    assert first == ["My sister lives in Paris with her cats."] and second == []
    assert answer == '<p>Ma sœur habite à <a href="/p">Paris</a> avec ses chats.</p>'


def test_an_inline_element_goes_around_the_translation_of_its_words_when_found():
    model = corpus({"I like green tea a lot.": "J'aime beaucoup le thé vert.", "green tea": "thé vert"})
    answer, _, second = translate("<p>I like <em>green tea</em> a lot.</p>", model)
    assert "green tea" in second
    assert answer == "<p>J'aime beaucoup le <em>thé vert</em>.</p>"


def test_otherwise_the_sentence_is_translated_in_fragments_and_no_tag_is_lost():
    answer, first, second = translate("<p>Press <b>the red button</b> now, please.</p>", upper)
    assert first == ["Press the red button now, please."]
    assert set(second) == {"Press", "the red button", "now, please."}
    assert answer == "<p>PRESS <b>THE RED BUTTON</b> NOW, PLEASE.</p>"


def test_nesting_that_the_translation_would_break_falls_back_to_fragments():
    # both words found, but in the translation the <b> would close inside the <i>
    pairs = {"Alpha beta gamma.": "Gamma alpha beta."}
    answer, _, _ = translate("<p><i>Alpha <b>beta</b></i> gamma.</p>", corpus(pairs))
    assert lxml_html.fromstring(answer).xpath("//i/b")  # the <b> is still inside the <i>


def test_kept_elements_come_back_byte_for_byte():
    kept = [
        "<pre>  Keep   this.\n  <b>as is</b> &amp; </pre>",
        "<script>if (a < b) { x = '</p>'; }</script>",
        "<style>p { color: red }</style>",
        "<span translate=no class='x'>Do &amp; not translate.</span>",
        '<div class="notranslate">Not this. <i>Nor this.</i></div>',
        "<code>make&nbsp;test</code>",
        "<!-- a comment. With sentences. -->",
    ]
    document = "<p>Before this. " + " ".join(kept) + " After that.</p>"
    answer, first, _ = translate(document, upper)
    for element in kept:
        assert element in answer
    assert "Keep" not in " ".join(first) and "Do & not" not in " ".join(first)


def test_inline_code_is_context_for_the_model_and_comes_back_verbatim():
    model = corpus({"Run make test now.": "Lancez make test maintenant."})
    answer, first, second = translate("<p>Run <code>make test</code> now.</p>", model)
    assert first == ["Run make test now."] and second == []
    assert answer == "<p>Lancez <code>make test</code> maintenant.</p>"


def test_entities_outside_translated_text_are_kept_and_translated_text_is_escaped():
    answer, first, _ = translate("<p>Tom &amp; Jerry &lt;3.&nbsp;<br>&copy; 2024</p>", lambda t: t + " <&>")
    assert first == ["Tom & Jerry <3."]  # "© 2024" has no letters: not sent, kept as written
    assert answer == "<p>Tom &amp; Jerry &lt;3. &lt;&amp;&gt;&nbsp;<br>&copy; 2024</p>"


def test_text_without_letters_is_not_sent():
    answer, first, _ = translate("<p>12345</p><p>👍 🎉</p><p>  </p>", upper)
    assert first == [] and answer == "<p>12345</p><p>👍 🎉</p><p>  </p>"


@pytest.mark.parametrize(
    "placeholder",
    [
        "[X7X]",
        "%s",
        "%1$s",
        "%(count)d",
        "{name}",
        "{{ user.name }}",
        "${HOME}",
        "%1",
        "%{count}",
        "$t(common.app_name)",
        "https://example.com/a?b=c",
        "a@b.org",
    ],
)
def test_placeholders_come_back_byte_identical_in_text_and_html(placeholder):
    for fmt in ("text", "html"):
        text = f"Hello {placeholder} and welcome."
        answer, _, _ = translate(text, upper, fmt=fmt)
        assert placeholder in answer, (fmt, answer)
        # a model that copies the placeholder: one sentence, translated whole
        answer, first, second = translate(text, lambda t: t.replace("Hello", "Bonjour"), fmt=fmt)
        assert (first, second) == ([text], []) and answer == text.replace("Hello", "Bonjour")


def test_placeholder_spans():
    text = "See https://en.wikipedia.org/wiki/Python_(language). Write to me@x.org, 50 % of {0} %d %"
    found = [text[a:b] for a, b in placeholder_spans(text)]
    assert found == ["https://en.wikipedia.org/wiki/Python_(language)", "me@x.org", "{0}", "%d"]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Open %1 in %2.", ["%1", "%2"]),
        ("Up 50% today, 20 % of %1", ["%1"]),
        ("%{count} files, %{name}'s", ["%{count}", "%{name}"]),
        ('See $t(common.more) and $t(items, {"count": 2}).', ["$t(common.more)", '$t(items, {"count": 2})']),
    ],
    ids=["positional", "not a percentage", "rails", "i18next nesting"],
)
def test_placeholder_families_of_catalogs(text, found):
    assert [text[a:b] for a, b in placeholder_spans(text)] == found


def test_tokens_cover_the_source_exactly():
    source = "<!DOCTYPE html>\r\n<p class=x>a &amp; b&nbsp;<b>c</b> < d &notit; <br/>\n<script>x<y</script>tail &#x41;"
    assert "".join(token.raw for token in html_tokens(source)) == source
    assert "".join(token.raw for token in text_tokens("a {b} c")) == "a {b} c"


def test_language_text_leaves_out_markup_code_and_placeholders():
    document = "<p>Hallo <b>Welt</b><script>var x</script> <code>ls -l</code> https://x.de</p>"
    text = language_text(record_tokens(document, "html"))
    assert text.split() == ["Hallo", "Welt"]


# --- properties over generated documents ---------------------------------------------------------

WORDS = [
    "Hello",
    "world",
    "Paris",
    "tea",
    "élan",
    "日本語",
    "über",
    "x",
    "42",
    "&amp;",
    "&nbsp;",
    "&lt;",
    "{name}",
    "%s",
]
ENDS = [".", "!", "?", ",", "", " "]
INLINE = ["b", "i", "em", "strong", "span", 'a href="https://x.test/p?q=1&amp;r=2"', "span class='c'"]
BLOCK = ["p", "div", "li", "h2", "blockquote"]
KEPT = [
    "<code>x &lt; y</code>",
    "<span translate='no'>:blob: cat.</span>",
    "<pre> keep\n me. </pre>",
    "<script>var a = '<b>';</script>",
    "<!-- note. -->",
    '<img src="e.png" alt="emoji">',
]


def sentence() -> st.SearchStrategy[str]:
    return (
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)
        .map(" ".join)
        .flatmap(lambda words: st.sampled_from(ENDS).map(lambda end: words + end))
    )


def node(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(sentence(), st.sampled_from(KEPT), st.just(" "))
    if depth == 0:
        return leaf

    def wrap(tags: list[str]) -> Callable[[tuple[str, list[str]]], str]:
        return lambda item: f"<{item[0]}>{''.join(item[1])}</{item[0].split()[0]}>"

    children = st.lists(node(depth - 1), min_size=1, max_size=4)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(INLINE), children).map(wrap(INLINE)),
        st.tuples(st.sampled_from(BLOCK), children).map(wrap(BLOCK)),
    )


documents = st.lists(node(3), min_size=1, max_size=4).map("".join).map(lambda body: f"<div>{body}</div>")


def shape(document: str) -> Counter:
    """Every element with its attributes and the path of elements above it (order-free: a
    translation may reorder inline elements inside a sentence, never move them elsewhere)."""
    tree = lxml_html.fragment_fromstring(document, create_parent="root")
    out: Counter = Counter()
    for element in tree.iter():
        if not isinstance(element.tag, str):
            continue
        path = tuple(a.tag for a in element.iterancestors() if isinstance(a.tag, str))
        out[(path, element.tag, tuple(sorted(element.attrib.items())))] += 1
    return out


MODELS: dict[str, Model] = {
    "identity": lambda t: t,
    "upper": upper,
    "reversed words": lambda t: " ".join(reversed(t.split())),
    "empty": lambda t: "",
    "markup in the answer": lambda t: f"<i>{t}</i> & co",
}


@given(documents, st.sampled_from(sorted(MODELS)))
def test_any_document_keeps_its_elements_and_kept_parts(document: str, model_name: str):
    answer, _, _ = translate(document, MODELS[model_name])
    assert shape(answer) == shape(document)
    for kept in KEPT:
        assert answer.count(kept) >= document.count(kept)


@given(documents)
def test_the_identity_model_gives_back_the_same_document(document: str):
    answer, _, _ = translate(document, lambda t: t)
    original = lxml_html.fragment_fromstring(document, create_parent="root")
    translated = lxml_html.fragment_fromstring(answer, create_parent="root")
    assert translated.text_content() == original.text_content()
    assert [e.tag for e in translated.iter()] == [e.tag for e in original.iter()]


# --- found in review: each of these once failed ---------------------------------------------------


def test_a_long_kept_span_inside_an_inline_element_splits_the_block_without_failing():
    long_url = "https://example.com/" + "a" * 250
    answer, _, _ = translate(f"<p><b>See {long_url} now.</b></p>", upper)
    assert answer == f"<p><b>SEE {long_url} NOW.</b></p>"


@pytest.mark.parametrize(
    ("document", "kept"),
    [
        ("See https://example.com/search?q=x&page=2 today.", "https://example.com/search?q=x&page=2"),
        ("Mail sales&support@x.com today.", "support@x.com"),
        ("Hello&world{name} is here.", "{name}"),
        ("Price: 5 &euro%s, nice.", "%s"),
    ],
)
def test_an_ampersand_that_is_not_a_reference_is_text(document, kept):
    answer, _, _ = translate(document, lambda t: t)
    assert answer.count(kept) == 1
    assert lxml_html.fragment_fromstring(answer, create_parent="p").text_content() == (
        lxml_html.fragment_fromstring(document, create_parent="p").text_content()
    )


def test_a_mastodon_link_keeps_its_url_and_empty_spans():
    link = (
        '<a href="https://ex.com/blog/how-to-cook" rel="nofollow noopener" target="_blank">'
        '<span class="invisible">https://</span><span class="">ex.com/blog/how-to-cook</span>'
        '<span class="invisible"></span></a>'
    )
    post = f"<p>Read this article {link} it is great.</p>"
    answer, first, second = translate(post, lambda t: t)
    assert answer == post and second == []
    answer, first, second = translate(post, upper)
    assert answer == f"<p>READ THIS ARTICLE {link} IT IS GREAT.</p>"
    assert not any("ex.com" in text for text in second)


def test_an_inline_element_is_never_placed_inside_a_word():
    pairs = {"Click on the button.": "Cliquez sur le bouton.", "I have a cat.": "J'ai un chat."}
    for document in ("Click <b>on</b> the button.", "I have <em>a</em> cat."):
        answer, _, _ = translate(document, corpus(pairs))
        assert "bout<b>" not in answer and "J'<em>" not in answer


def test_urls_and_addresses_in_text_without_spaces():
    for text, url in (
        ("详见 https://example.com，谢谢你的帮助。", "https://example.com"),
        ("请访问https://example.com了解更多。", "https://example.com"),
        ("请联系me@x.com谢谢", "me@x.com"),
    ):
        assert [text[a:b] for a, b in placeholder_spans(text)] == [url]


@pytest.mark.parametrize(
    "document",
    [
        '<p translate="no">Keep<p>Translate me please.',
        '<ul><li class="notranslate">Keep<li>Translate me please.</ul>',
        "<p>Hi <b translate=no>Bob</p><p>Translate me please.</p>",
    ],
)
def test_an_unclosed_element_not_to_translate_ends_where_html_ends_it(document):
    answer, first, _ = translate(document, upper)
    assert "TRANSLATE ME PLEASE." in answer
    assert "Keep" in answer or "Bob" in answer


@pytest.mark.parametrize(
    ("document", "kept"),
    [
        ("<p><code>x = 1<br>y = 2</code></p>", "<code>x = 1<br>y = 2</code>"),
        ("<p>Run <samp>make<br/>make test</samp> first.</p>", "<samp>make<br/>make test</samp>"),
        ('<p><span translate="no">Keep<br>this</span> Translate me please.</p>', "Keep<br>this"),
        ("<p><kbd>Ctrl<img src=plus.png>C</kbd> copies.</p>", "<kbd>Ctrl<img src=plus.png>C</kbd>"),
        ("<p><code>a<input value=b>c</code> ok</p>", "<code>a<input value=b>c</code>"),
    ],
    ids=["code", "samp", "translate=no", "an image inside", "a form control inside"],
)
def test_an_element_not_to_translate_stays_so_across_a_line_break_or_any_phrasing_child(document, kept):
    # #49: docutils' quickref.html came back with `y = 2` translated: the element was taken as
    # ended at the `<br>`.
    answer, _, _ = translate(document, upper)
    assert kept in answer


def test_markup_cut_off_at_the_end_is_kept_as_markup():
    for tail in ("<b", "<!-- open", "</di"):
        answer, first, _ = translate(f"<p>Hello there.</p>{tail}", upper)
        assert answer == f"<p>HELLO THERE.</p>{tail}" and first == ["Hello there."]


def test_an_element_whose_translation_is_the_whole_sentences_does_not_swallow_the_words_around_it():
    # A model that answers text it does not know with one sentence it does (the fixture; a real
    # model now and then) gives the element's words and the sentence the same translation: found
    # around every word, the element would take the plain run's words and their formatting with it
    # (python-docx's par-hlink-frags.docx: "Eight with <link>link to file</link>." all link;
    # xlsx2csv's "Regular <b>Bold</b>" all bold). Translated in fragments, each run keeps words.
    known = "Danach haben wir den Wein der Region probiert."
    answers = {"Eight with link to file.": known, "link to file": known, "Eight with": "Acht mit"}
    answer, first, second = translate('<p>Eight with <a href="f">link to file</a>.</p>', corpus(answers))
    assert first == ["Eight with link to file."] and set(second) == {"link to file", "Eight with"}
    assert answer == f'<p>Acht mit <a href="f">{known}</a>.</p>'
    # Where the element's translation is a part of the sentence's, it is placed there, as before.
    answer, _, _ = translate("Regular <b>Bold</b>", corpus({"Regular Bold": "Normal Fett", "Bold": "Fett"}))
    assert answer == "Normal <b>Fett</b>"
