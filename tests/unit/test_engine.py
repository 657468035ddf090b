"""The model-owning class with the fixture model, on every engine backend and CPU precision:
exact translations, batching invariants, per-piece failures, the output budget."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from fixture.build import load_corpus, sentence_pairs
from fixture.engines import SAMPLE_STRIDES
from translator.config import Engine, Generation
from translator.contract.protocol import Piece
from translator.engine.translator import Translator

pytestmark = pytest.mark.model

SPECIAL = re.compile(r"__[a-z]{2,3}__|<s>|</s>|<pad>|<unk>|madeupword")


# Every backend and precision the engine runs on a CPU; each test below runs on all of them.
# Samples of the corpus translated in one call: the fixture's build checks exactly these batches.
ONE_IN_FIVE, ONE_IN_SEVEN = SAMPLE_STRIDES

ENGINES = [
    pytest.param(("transformers", "float32"), id="transformers-float32"),
    pytest.param(("transformers", "int8"), id="transformers-int8"),
    pytest.param(("ctranslate2", "float32"), id="ctranslate2-float32"),
    pytest.param(("ctranslate2", "int8"), id="ctranslate2-int8"),
]


@pytest.fixture(scope="module", params=ENGINES)
def kind(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param


@pytest.fixture(scope="module")
def make(kind, converted_fixture_model: Path):
    """A Translator on this module's backend and precision, with other settings as given."""

    def build(generation: Generation | None = None, **engine) -> Translator:
        backend, dtype = kind
        settings = Engine(warmup=False, device="cpu", backend=backend, dtype=dtype, **engine)
        return Translator(converted_fixture_model, settings, generation)

    return build


@pytest.fixture(scope="module")
def translator(make) -> Translator:
    return make()


def test_runs_the_backend_and_precision_asked_for(translator, kind):
    assert (translator.backend.name, translator.precision) == kind
    assert translator.describe_generation()["backend"] == kind[0]


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str, str, str]]:
    return sentence_pairs(load_corpus())


def pieces_of(pairs):
    return [Piece(text=src_text, source=src, target=tgt) for src, tgt, src_text, _ in pairs]


def test_whole_corpus_in_one_mixed_batch_is_exact(translator, pairs):
    results = translator.translate(pieces_of(pairs))
    assert [r.error for r in results] == [None] * len(pairs)
    assert [r.text for r in results] == [ref for *_, ref in pairs]


def test_contract_example_both_directions(translator):
    en = "Life is like a box of chocolates."
    ja = "人生はチョコレートの箱のようなものだ。"
    out = translator.translate([Piece(text=en, source="en", target="ja"), Piece(text=ja, source="ja", target="en")])
    assert [r.text for r in out] == [ja, en]


def test_item_alone_equals_item_in_a_mixed_batch(translator, pairs):
    batch = pieces_of(pairs[::ONE_IN_SEVEN])
    together = translator.translate(batch)
    alone = [translator.translate([piece])[0] for piece in batch]
    # Errors first: an engine that failed every call would pass the texts check on None == None.
    assert [r.error for r in together] == [r.error for r in alone] == [None] * len(batch)
    assert [r.text for r in together] == [r.text for r in alone]
    assert len({(p.source, p.target) for p in batch}) > 3


def test_greedy_is_exact_too(make, pairs):
    greedy = make(Generation(num_beams=1))
    assert greedy.num_beams == 1
    sample = pairs[::ONE_IN_FIVE]
    assert [r.text for r in greedy.translate(pieces_of(sample))] == [ref for *_, ref in sample]


def test_beams_default_to_the_checkpoint_generation_config(translator, fixture_model):
    from transformers import GenerationConfig

    assert translator.num_beams == GenerationConfig.from_pretrained(str(fixture_model)).num_beams == 5
    assert translator.decoding.num_beams == 5


def test_no_language_or_special_tokens_in_output(translator, pairs):
    for result in translator.translate(pieces_of(pairs)):
        assert not SPECIAL.search(result.text)


class WatchedBackend:
    """The translator's real backend behind the `Backend` interface, with a hook that sees (and
    may refuse) every call: what the tests below watch instead of the translator's insides."""

    def __init__(self, real, before):
        self.real, self.before = real, before
        self.name, self.device, self.precision = real.name, real.device, real.precision

    def generate(self, rows, targets, max_new_tokens, min_new_tokens=0, hypotheses=1):
        self.before(rows, targets)
        return self.real.generate(rows, targets, max_new_tokens, min_new_tokens, hypotheses)

    def release_memory(self):
        self.real.release_memory()

    def describe(self):
        return self.real.describe()


def watch(translator, monkeypatch, before) -> None:
    monkeypatch.setattr(translator, "backend", WatchedBackend(translator.backend, before))


def test_small_token_budget_splits_calls_but_not_results(make, pairs, monkeypatch):
    small = make(max_batch_tokens=64)
    calls = []

    def counting(rows, targets):
        calls.append(len(rows))
        assert max(len(r) for r in rows) * len(rows) * small.num_beams <= 64 or len(rows) == 1

    watch(small, monkeypatch, counting)
    sample = pairs[:20]
    assert [r.text for r in small.translate(pieces_of(sample))] == [ref for *_, ref in sample]
    assert len(calls) > 1


def test_duplicates_are_translated_once(translator, monkeypatch):
    rows_seen = []
    watch(translator, monkeypatch, lambda rows, targets: rows_seen.append(len(rows)))
    piece = Piece(text="Life is like a box of chocolates.", source="en", target="ja")
    results = translator.translate([piece, piece, piece])
    assert {r.text for r in results} == {"人生はチョコレートの箱のようなものだ。"}
    assert sum(rows_seen) == 1


def test_a_piece_counted_by_the_scheduler_is_not_encoded_again_for_its_batch(make):
    translator = make()  # its own cache of encoded pieces
    encoded = []
    original = translator._encode_uncached
    translator._encoded = functools.lru_cache(maxsize=64)(lambda s, t: encoded.append(t) or original(s, t))
    piece = Piece(text="Life is like a box of chocolates.", source="en", target="ja")
    assert translator.count_tokens(piece) == len(original("en", piece.text))
    [result] = translator.translate([piece])
    assert result.text == "人生はチョコレートの箱のようなものだ。"
    assert encoded == [piece.text]


def test_a_failing_piece_does_not_fail_its_batch(translator, monkeypatch):
    poison = translator._encode("en", "Where is the nearest station?")

    def fragile(rows, targets):
        if poison in rows:
            raise RuntimeError("simulated failure")

    watch(translator, monkeypatch, fragile)
    results = translator.translate(
        [
            Piece(text="Life is like a box of chocolates.", source="en", target="ja"),
            Piece(text="Where is the nearest station?", source="en", target="ja"),
            Piece(text="Please do not be late.", source="en", target="ja"),
        ]
    )
    assert results[0].text == "人生はチョコレートの箱のようなものだ。"
    assert results[1].text is None and "simulated failure" in results[1].error
    assert results[2].text == "遅れないでください。"


def test_unsupported_language_and_blank_text_are_answered_per_piece(translator):
    results = translator.translate(
        [
            Piece(text="Hello.", source="xx", target="ja"),
            Piece(text="  \n", source="en", target="ja"),
            Piece(text="Please do not be late.", source="en", target="ja"),
        ]
    )
    assert results[0].error == "unsupported source language 'xx'"
    assert results[1].text == "  \n"
    assert results[2].text == "遅れないでください。"


def test_literal_language_token_in_text_is_plain_text(translator):
    ids = translator._encode("en", "__fr__")
    assert translator.lang_ids["fr"] not in ids
    assert translator.translate([Piece(text="__fr__ hello", source="en", target="ja")])[0].error is None


def test_languages_come_from_the_tokenizer(translator):
    assert {"en", "ja", "fr", "de", "es", "zh"} <= set(translator.languages)
    assert len(translator.languages) == 100


@pytest.mark.parametrize("beams", [1, 2])
def test_forced_new_tokens_gives_every_output_exactly_that_many_tokens(make, pairs, beams, monkeypatch):
    forced_tokens = 7
    forced = make(Generation(num_beams=beams, forced_new_tokens=forced_tokens))
    sample = pairs[::9]
    # Without forcing, these would end at different lengths, some shorter and some longer than 7.
    natural = {len(forced.tokenizer.sp_model.encode(ref)) for *_, ref in sample}
    assert min(natural) < forced_tokens < max(natural)
    calls = []
    original = forced.backend.generate

    def spy(rows, targets, max_new_tokens, min_new_tokens=0, hypotheses=1):
        outputs = original(rows, targets, max_new_tokens, min_new_tokens, hypotheses)
        calls.append(outputs)
        return outputs

    monkeypatch.setattr(forced.backend, "generate", spy)
    results = forced.translate(pieces_of(sample))
    assert [r.error for r in results] == [None] * len(sample)
    assert len({(p.source, p.target) for p in pieces_of(sample)}) > 3
    (outputs,) = calls
    # No row ended early (end token) or was padded: every row has exactly 7 real tokens.
    assert [len(out.ids) for out in outputs] == [forced_tokens] * len(sample)
    assert not any(forced.eos_id in out.ids or forced.pad_id in out.ids for out in outputs)


def test_forced_new_tokens_out_of_range_is_refused(make):
    with pytest.raises(ValueError, match="forced_new_tokens"):
        make(Generation(forced_new_tokens=5000))


def test_an_output_cut_at_its_budget_is_retried_with_the_models_room(make, pairs):
    # A budget far too small for any translation: every output hits it, and is redone alone with
    # all the room the model has. Nothing comes back cut.
    tight = make(Generation(max_length_ratio=0.05, max_length_margin=1))
    sample = pairs[::9]
    results = tight.translate(pieces_of(sample))
    assert [r.error for r in results] == [None] * len(sample)
    assert [r.text for r in results] == [ref for *_, ref in sample]


def test_a_translation_that_cannot_end_within_the_model_fails_as_truncated(translator, pairs, monkeypatch):
    from translator.contract.protocol import TRUNCATED

    small = translator
    # As if the model had 8 positions: no long sentence's translation can end in 6 tokens,
    # even cut in parts, and none is returned cut.
    monkeypatch.setattr(small, "max_positions", 8)
    long_pair = max(pairs, key=lambda p: len(p[3]))
    [result] = small.translate(pieces_of([long_pair]))
    assert result.error_kind == TRUNCATED and result.text is None
    assert "limit of 8 positions" in result.error


def test_a_source_longer_than_the_checkpoints_positions_allow_is_split_before_it_is_sent(
    translator, pairs, monkeypatch
):
    # As if the checkpoint had 64 positions (real M2M100 fine-tunes and distillations vary): a
    # source row may hold (64 - 2 - 16) / 3 = 15 tokens for its translation to fit too. A longer
    # one is cut at a clause and each part translated; the model never sees a row past that.
    monkeypatch.setattr(translator, "max_positions", 64)
    assert translator.max_source_tokens == 15
    widths: list[int] = []
    watch(translator, monkeypatch, lambda rows, targets: widths.extend(len(row) for row in rows))
    long_pair = max(pairs, key=lambda p: translator.count_tokens(pieces_of([p])[0]))
    assert translator.count_tokens(pieces_of([long_pair])[0]) > 15, "the corpus has a sentence to cut"
    [result] = translator.translate(pieces_of([long_pair]))
    assert result.error is None and result.text
    assert widths and max(widths) <= 15


@pytest.mark.pure
def test_split_clause_cuts_near_the_middle_at_punctuation_first():
    from translator.text.segment import split_clause

    assert split_clause("The first clause is here, and the second one follows it.") == (
        "The first clause is here,",
        "and the second one follows it.",
    )
    assert split_clause("no punctuation at all in this rather long line") is not None
    assert split_clause("x") is None


def test_a_failing_batch_is_retried_in_halves_not_piece_by_piece(translator, pairs, monkeypatch):
    engine = translator
    sizes: list[int] = []

    def generate(rows, targets):
        sizes.append(len(rows))
        if len(rows) > 2:
            raise MemoryError("out of memory (as a GPU would say)")

    watch(engine, monkeypatch, generate)
    sample = pairs[:8]
    results = engine.translate(pieces_of(sample))
    assert [r.text for r in results] == [ref for *_, ref in sample]
    # 8 fails, then 4 + 4 fail, then four batches of 2: seven calls, none of one piece.
    assert sorted(sizes, reverse=True) == [8, 4, 4, 2, 2, 2, 2]


def test_a_piece_that_cannot_be_encoded_fails_alone(translator, pairs, monkeypatch):
    engine = translator
    real = engine._encode

    def encode(source, text):
        if text == "poison":
            raise ValueError("cannot encode this")
        return real(source, text)

    monkeypatch.setattr(engine, "_encode", encode)
    sample = pairs[:3]
    pieces = pieces_of(sample)
    pieces.insert(1, Piece(text="poison", source="en", target="fr"))
    results = engine.translate(pieces)
    assert results[1].error == "ValueError: cannot encode this"
    assert [r.text for i, r in enumerate(results) if i != 1] == [ref for *_, ref in sample]


def test_alternatives_are_the_next_hypotheses_of_the_beam(translator):
    text = "Life is like a box of chocolates."
    asked = Piece(text=text, source="en", target="ja", alternatives=3)
    [with_alternatives, plain] = translator.translate([asked, Piece(text=text, source="en", target="ja")])
    # the fixture's beam (5) is already wider than 3 + 1 hypotheses: the best is the same
    assert with_alternatives.text == plain.text == "人生はチョコレートの箱のようなものだ。"
    assert plain.alternatives == []
    others = with_alternatives.alternatives
    assert 1 <= len(others) <= 3 and len(set(others)) == len(others) and plain.text not in others
