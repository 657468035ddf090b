"""Glossaries without a server (#33): matching, the request's glossary, the two stores, and
properties: a glossary's target term never lands in markup, a URL or a placeholder, and stands for
every whole-word occurrence of its source term in the text, whatever the model does with the rest."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.valkey import valkey  # noqa: F401 - the fixture
from translator.api.glossaries import GlossaryMismatch, GlossaryNotFound, request_terms, stored_terms
from translator.api.glossary_store import (
    Dictionary,
    FileStore,
    ValkeyStore,
    from_json,
    new_glossary,
    new_multilingual,
    store_for,
    to_json,
)
from translator.api.pipeline import translate_payload
from translator.contract.errors import InvalidRequest, PayloadTooLarge
from translator.contract.protocol import Piece, PieceResult
from translator.contract.schemas import Payload
from translator.text.glossary import Terms, _trie_pattern
from translator.text.plan import plan_record

pytestmark = pytest.mark.pure

LANGS = {"en", "fr", "de", "ja", "zh"}


def payload(*texts: str, src="en", tgt="fr", fmt="text", **extra) -> Payload:
    records = [{"id": str(i), "text": t} for i, t in enumerate(texts)]
    return Payload.model_validate({"fromLang": src, "toLang": tgt, "records": records, "format": fmt, **extra})


async def identity(pieces: list[Piece]) -> list[PieceResult]:
    return [PieceResult(text=p.text) for p in pieces]


async def upper(pieces: list[Piece]) -> list[PieceResult]:
    # A model that translates every word: no source term survives to be found.
    return [PieceResult(text=p.text.upper()) for p in pieces]


def translate(p: Payload, terms: Terms | None, engine=identity) -> list[dict]:
    result = asyncio.run(translate_payload(p, LANGS, engine, terms))
    return [r.model_dump(by_alias=True) for r in result.result]


def rendered(text: str, terms: Terms, language="en", target="fr", fmt="text") -> str:
    plan = plan_record(text, language, 200, target, fmt, terms=terms)
    resolution = plan.resolve(plan.first_round)
    return resolution.render(resolution.second_round)


TERMS = Terms("en", "fr", {"Paris": "Lutèce", "cat": "chat", "New York": "NYC", "New": "Neuf", "BentoML": "BentoML"})


def test_whole_words_longest_first_and_a_capital_first_letter():
    assert rendered("New York is new, Paris is not.", TERMS) == "NYC is new, Lutèce is not."
    assert rendered("Cat and cat, but not concatenate or cats.", TERMS) == "Chat and chat, but not concatenate or cats."
    assert rendered("New Yorker", TERMS) == "Neuf Yorker"


def test_kept_terms_and_the_report():
    p = payload("BentoML serves Paris.", "Nothing here.", glossaryReport=True)
    out = translate(p, TERMS)
    assert out[0]["text"] == "BentoML serves Lutèce."
    assert out[0]["glossary"] == [{"source": "BentoML", "target": None}, {"source": "Paris", "target": "Lutèce"}]
    assert out[1]["glossary"] == []
    assert "glossary" not in translate(payload("Paris."), TERMS)[0]  # off by default: the contract is unchanged


def test_unspaced_source_matches_inside_a_run_of_characters():
    terms = Terms("ja", "en", {"東京": "Edo"})
    assert rendered("東京は日本の首都です。", terms, "ja", "en") == "Edoは日本の首都です。"


def test_a_glossary_for_another_pair_does_nothing():
    assert rendered("Paris", TERMS, "en", "de") == "Paris"


def test_html_text_nodes_only_and_escaped():
    terms = Terms("en", "fr", {"cat": "<chat & co>"})
    html = '<p title="cat"><a href="https://cat.example/cat">cat</a> <code>cat</code> {cat} cat</p>'
    assert rendered(html, terms, fmt="html") == (
        '<p title="cat"><a href="https://cat.example/cat">&lt;chat &amp; co&gt;</a> <code>cat</code> {cat} '
        "&lt;chat &amp; co&gt;</p>"
    )


def test_the_target_term_is_placed_when_the_model_translates_the_words_around_it():
    out = translate(payload("My cat lives in Paris."), TERMS, upper)
    assert out[0]["text"] == "MY chat LIVES IN Lutèce."


def test_request_terms_checks_the_glossary_against_the_request(tmp_path):
    store = FileStore(tmp_path)
    entries = [{"source": "cat", "target": "chat"}]
    assert asyncio.run(request_terms(payload("x"), store)) is None
    inline = asyncio.run(request_terms(payload("x", glossary={"entries": entries}), store))
    assert inline is not None and inline.entries == {"cat": "chat"}
    with pytest.raises(InvalidRequest, match="fromLang"):
        asyncio.run(request_terms(payload("x", src="auto", glossary={"entries": entries}), store))
    with pytest.raises(InvalidRequest, match="given twice"):
        asyncio.run(request_terms(payload("x", glossary={"entries": entries * 2}), store))
    with pytest.raises(GlossaryNotFound):
        asyncio.run(request_terms(payload("x", glossaryId="00000000-0000-0000-0000-000000000000"), store))
    glossary = new_glossary("g", "en", "de", {"cat": "Katze"})
    asyncio.run(store.create(glossary))
    with pytest.raises(GlossaryMismatch, match="en -> de"):
        asyncio.run(request_terms(payload("x", glossaryId=glossary.glossary_id), store))
    terms = asyncio.run(request_terms(payload("x", src="auto", tgt="de", glossaryId=glossary.glossary_id), store))
    assert terms is not None and terms.applies("en", "de") and not terms.applies("fr", "de")


def test_a_term_is_one_line_without_edge_whitespace():
    with pytest.raises(ValueError, match="one line"):
        payload("x", glossary={"entries": [{"source": "cat\t", "target": "chat"}]})


def _store_round_trip(store) -> None:
    async def go() -> None:
        glossary = new_glossary("shop", "en", "fr", {"cat": "chat", "BentoML": "BentoML"})
        await store.create(glossary)
        assert await store.get(glossary.glossary_id) == glossary
        assert await store.exists(glossary.glossary_id) and not await store.exists("../../etc/passwd")
        assert glossary.glossary_id in [g.glossary_id for g in await store.list()]
        assert await store.get("../../etc/passwd") is None
        assert await store.delete(glossary.glossary_id)
        assert not await store.delete(glossary.glossary_id)
        assert await store.get(glossary.glossary_id) is None
        assert not await store.exists(glossary.glossary_id)

    asyncio.run(go())


class CountingReads(FileStore):
    def __init__(self, directory) -> None:
        super().__init__(directory)
        self.reads = 0

    async def get(self, glossary_id):
        self.reads += 1
        return await super().get(glossary_id)


def test_a_stored_glossary_is_read_once_and_its_deletion_still_seen(tmp_path):
    # A document job applies it chunk after chunk: one read, then only a check that it is there.
    store = CountingReads(tmp_path)

    async def go() -> None:
        glossary = new_glossary("shop", "en", "fr", {"cat": "chat"})
        await store.create(glossary)
        for _ in range(5):
            terms = await stored_terms(glossary.glossary_id, "en", "fr", store)
            assert terms.entries == {"cat": "chat"}
        assert store.reads == 1
        assert await store.delete(glossary.glossary_id)
        with pytest.raises(GlossaryNotFound, match="glossaryId: no glossary"):
            await stored_terms(glossary.glossary_id, "en", "fr", store)

    asyncio.run(go())


def test_file_store(tmp_path):
    _store_round_trip(FileStore(tmp_path / "glossaries"))


def test_the_local_store_is_the_servers_own(tmp_path, monkeypatch):
    # In the server's BENTOML_HOME, not the machine's temporary directory that every server shares.
    monkeypatch.setenv("BENTOML_HOME", str(tmp_path / "home"))
    store = store_for(None)
    assert isinstance(store, FileStore) and store.directory == tmp_path / "home" / "glossaries"


@pytest.mark.server
def test_valkey_store(valkey):  # noqa: F811
    _store_round_trip(ValkeyStore(valkey.url))


@pytest.mark.parametrize("kind", ["file", "valkey"])
@pytest.mark.server
def test_a_store_is_bounded_by_its_bytes_as_well_as_its_count(kind, tmp_path, request):
    one = new_glossary("shop", "en", "fr", {f"term{i}": f"terme{i}" for i in range(50)})
    size = len(to_json(one).encode())
    entries = one.dictionaries[0].entries
    if kind == "file":
        store = FileStore(tmp_path / "glossaries", max_bytes=2 * size + size // 2)
    else:
        store = ValkeyStore(request.getfixturevalue("valkey").url, max_bytes=2 * size + size // 2)

    async def go() -> None:
        first, second = one, new_glossary("shop", "en", "fr", dict(entries))
        await store.create(first)
        await store.create(second)
        with pytest.raises(PayloadTooLarge, match=r"glossaries: bytes stored exceeds the limit"):
            await store.create(new_glossary("shop", "en", "fr", dict(entries)))
        # Deleting one makes room again.
        assert await store.delete(first.glossary_id)
        await store.create(new_glossary("shop", "en", "fr", dict(entries)))
        for glossary in await store.list():
            await store.delete(glossary.glossary_id)

    asyncio.run(go())


def _store(kind, tmp_path, request):
    if kind == "file":
        return FileStore(tmp_path / "glossaries")
    return ValkeyStore(request.getfixturevalue("valkey").url)


@pytest.mark.parametrize("kind", ["file", "valkey"])
@pytest.mark.server
def test_a_glossary_of_several_dictionaries_is_stored_and_changed_in_place(kind, tmp_path, request):
    store = _store(kind, tmp_path, request)
    ende, deen = Dictionary("en", "de", {"cat": "Katze"}), Dictionary("de", "en", {"Katze": "cat"})

    async def go() -> None:
        glossary = new_multilingual("pets", (ende, deen))
        await store.create(glossary)
        read = await store.get(glossary.glossary_id)
        assert read == glossary and read.revision == await store.revision(glossary.glossary_id)

        def add_dog(g):
            more = replace(ende, entries={**ende.entries, "dog": "Hund"})
            return replace(g, name="more pets", dictionaries=(more, deen))

        changed = await store.update(glossary.glossary_id, add_dog)
        assert changed.name == "more pets" and changed.dictionaries[0].entries == {"cat": "Katze", "dog": "Hund"}
        assert changed.revision not in ("", read.revision) and changed == await store.get(glossary.glossary_id)
        assert changed.revision == await store.revision(glossary.glossary_id)
        # What a change raises is raised, and nothing is stored.
        with pytest.raises(InvalidRequest, match="refused"):
            await store.update(glossary.glossary_id, lambda g: (_ for _ in ()).throw(InvalidRequest("refused")))
        assert await store.get(glossary.glossary_id) == changed
        assert await store.update("00000000-0000-0000-0000-000000000000", add_dog) is None
        assert await store.revision("00000000-0000-0000-0000-000000000000") is None
        assert await store.delete(glossary.glossary_id) and await store.revision(glossary.glossary_id) is None

    asyncio.run(go())


@pytest.mark.parametrize("kind", ["file", "valkey"])
@pytest.mark.server
def test_concurrent_updates_lose_nothing(kind, tmp_path, request):
    # Replicas (here: tasks, each file update in a thread of its own) changing one glossary at once:
    # each update reads what the last one wrote.
    store = _store(kind, tmp_path, request)

    async def go() -> None:
        glossary = new_glossary("shop", "en", "fr", {"cat": "chat"})
        await store.create(glossary)

        def adding(term):
            def change(g):
                only = g.dictionaries[0]
                return replace(g, dictionaries=(replace(only, entries={**only.entries, term: term.upper()}),))

            return change

        terms = [f"term{i}" for i in range(12)]
        await asyncio.gather(*(store.update(glossary.glossary_id, adding(term)) for term in terms))
        final = await store.get(glossary.glossary_id)
        assert set(final.dictionaries[0].entries) == {"cat", *terms}

    asyncio.run(go())


def test_one_dictionary_keeps_the_shape_every_version_reads():
    # A replica of the previous version (a rolling update) reads a v2 or native glossary as it was.
    glossary = new_glossary("shop", "en", "fr", {"cat": "chat"})
    assert set(json.loads(to_json(glossary))) == {
        "glossary_id", "name", "source_lang", "target_lang", "creation_time", "entries"
    }  # fmt: skip
    assert from_json(to_json(glossary), "r") == glossary
    several = new_multilingual("pets", (Dictionary("en", "de", {"a": "b"}), Dictionary("de", "en", {"b": "a"})))
    assert from_json(to_json(several), "r") == several


def test_a_changed_glossary_is_read_anew_and_its_dictionary_chosen_by_the_pair(tmp_path):
    store = CountingReads(tmp_path)

    async def go() -> None:
        glossary = new_multilingual(
            "pets", (Dictionary("en", "de", {"cat": "Katze"}), Dictionary("fr", "de", {"chat": "Katze"}))
        )
        await store.create(glossary)
        assert (await stored_terms(glossary.glossary_id, "en", "de", store)).entries == {"cat": "Katze"}
        assert (await stored_terms(glossary.glossary_id, "fr", "de", store)).entries == {"chat": "Katze"}
        assert store.reads == 1
        with pytest.raises(GlossaryMismatch, match="into de from en, fr"):  # auto: which of the two?
            await stored_terms(glossary.glossary_id, "auto", "de", store)
        with pytest.raises(GlossaryMismatch, match="is for en -> de, fr -> de"):
            await stored_terms(glossary.glossary_id, "en", "fr", store)

        def only_english(g):
            return replace(g, dictionaries=(Dictionary("en", "de", {"cat": "Mieze"}),))

        await store.update(glossary.glossary_id, only_english)
        terms = await stored_terms(glossary.glossary_id, "auto", "de", store)
        assert terms.entries == {"cat": "Mieze"} and terms.applies("en", "de") and store.reads == 2

    asyncio.run(go())


def _flat_pattern(terms: list[str], spaced: bool) -> re.Pattern[str]:
    """The matcher as it was, one alternative per term, longest first: what the trie must equal."""

    def alternative(term: str) -> str:
        before = r"(?<!\w)" if spaced and re.match(r"\w", term[0]) else ""
        after = r"(?!\w)" if spaced and re.match(r"\w", term[-1]) else ""
        return f"(?:{before}{re.escape(term)}{after})"

    return re.compile("|".join(alternative(t) for t in sorted(terms, key=lambda t: (-len(t), t))))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.text(alphabet="ab .-é字(", min_size=1, max_size=5), min_size=1, max_size=8, unique=True),
    st.text(alphabet="ab .-é字(", max_size=40),
    st.booleans(),
)
def test_the_trie_matches_what_the_longest_first_alternatives_match(terms, text, spaced):
    expected = [m.span() for m in _flat_pattern(terms, spaced).finditer(text)]
    pattern = _trie_pattern(terms, spaced)
    assert pattern is not None and [m.span() for m in pattern.finditer(text)] == expected


def test_ten_thousand_terms_match_a_long_text_at_once():
    # One alternative per term took 27 s over 21,000 characters with 10,000 terms (13 s with 5,000);
    # the trie takes about a millisecond: a bound a thousand times that still tells them apart.
    entries = {f"word{i}x": f"mot{i}" for i in range(10_000)}
    pattern = Terms("en", "fr", entries).pattern(spaced=True)
    text = "The quick brown fox jumps over word42x and the lazy dog. " * 370
    assert pattern is not None
    started = time.perf_counter()
    assert len(pattern.findall(text)) == 370
    assert time.perf_counter() - started < 2.0


# --- properties ------------------------------------------------------------------------------------

TARGET = "ZZ-Gloss"
PROPERTY_TERMS = Terms("en", "fr", {"term": TARGET})
# (the segment, how many whole-word occurrences of "term" it has in text a reader sees)
SEGMENTS = [
    ("term", 1),
    ("hello", 0),
    ("terminal", 0),
    ("determ", 0),
    ("term-based", 1),
    ("{term}", 0),
    ("%(term)s", 0),
    ("[X7X]", 0),
    ("https://term.example/term?q=term", 0),
    ("<code>term</code>", 0),
    ('<a href="https://term.example/term" title="term">term</a>', 1),
    ("<b>the term</b>", 1),
    ('<span translate="no">term</span>', 0),
    ("<br>", 0),
    ("<!-- term -->", 0),
    (".", 0),
]
HTML_ONLY = ("<", "&")
PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
segments = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=14)
MARKUP = re.compile(r"<[^>]*>|\{term\}|%\(term\)s|https://\S+?(?=[\s<\"])|<code>term</code>")


def _record(parts: list[tuple[str, int]], fmt: str) -> tuple[str, int]:
    if fmt == "text":
        parts = [p for p in parts if not p[0].startswith(HTML_ONLY)]
    return " ".join(p for p, _ in parts) + " ", sum(n for _, n in parts)


@PROPERTIES
@given(segments, st.sampled_from(["text", "html"]), st.sampled_from([identity, upper]))
def test_target_terms_stand_for_every_occurrence_and_never_enter_markup(parts, fmt, engine):
    text, occurrences = _record(parts, fmt)
    out = translate(payload(text, fmt=fmt, glossaryReport=True), PROPERTY_TERMS, engine)[0]
    assert out["text"].count(TARGET) == occurrences
    assert out["glossary"] == ([{"source": "term", "target": TARGET}] if occurrences else [])
    # Markup, placeholders and URLs come back byte for byte, in order.
    assert MARKUP.findall(out["text"]) == MARKUP.findall(text)
    if engine is identity:  # a model that copies: only the terms changed
        assert out["text"].replace(TARGET, "term") == text


UNSPACED_TERMS = Terms("ja", "en", {"東京": TARGET})
# In an unspaced script a term matches inside a run of characters ("東京都"), never across a space.
UNSPACED_SEGMENTS = [
    ("東京", 1),
    ("東京都", 1),
    ("京都", 0),
    ("東", 0),
    ("{東京}", 0),
    ("<code>東京</code>", 0),
    ("<b>東京</b>", 1),
    ('<a href="https://example.com/x" title="東京">東京へ</a>', 1),
    ("。", 0),
]


async def other_words(pieces: list[Piece]) -> list[PieceResult]:
    # A model whose translation holds none of the source's characters: every term is placed in fragments.
    return [PieceResult(text="Translated words.") for _ in pieces]


@PROPERTIES
@given(st.lists(st.sampled_from(UNSPACED_SEGMENTS), min_size=1, max_size=12), st.sampled_from([identity, other_words]))
def test_unspaced_terms_stand_for_every_occurrence_and_never_enter_markup(parts, engine):
    text, occurrences = _record(parts, "html")
    out = translate(payload(text, src="ja", tgt="en", fmt="html"), UNSPACED_TERMS, engine)[0]
    assert out["text"].count(TARGET) == occurrences
    assert MARKUP.findall(out["text"]) == MARKUP.findall(text)
    for kept in ("<code>東京</code>", "{東京}", 'title="東京"'):
        assert out["text"].count(kept) == text.count(kept)


@pytest.mark.server
def test_an_unreachable_shared_store_is_a_503_not_a_500():
    import asyncio
    import socket

    from translator.api.glossary_store import ValkeyStore
    from translator.contract.errors import Unavailable

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = ValkeyStore(f"redis://127.0.0.1:{port}", timeout_s=0.5)
    for call in (store.get("00000000-0000-0000-0000-000000000000"), store.list()):
        with pytest.raises(Unavailable, match="shared store"):
            asyncio.run(call)
