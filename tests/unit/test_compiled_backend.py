"""The compiled backend (translator/engine/backends/compiled_backend.py) on the CPU, where torch
compiles too: its buckets, its caches, and translations identical to eager transformers'."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus import corpus_sentences
from translator.config import Engine, Generation
from translator.contract.protocol import Piece
from translator.engine.backends import Decoding, SpecialIds, choose
from translator.engine.backends.compiled_backend import (
    DECODER_ROOM,
    CompiledBackend,
    batch_bucket,
    decoder_length,
    source_bucket,
)
from translator.engine.backends.transformers_backend import TransformersBackend
from translator.engine.tokenization import ModelTokenizer

pytestmark = [pytest.mark.model, pytest.mark.slow]

SPECIAL = SpecialIds(decoder_start=2, eos=2, pad=1)


@pytest.mark.pure
def test_buckets() -> None:
    assert [source_bucket(w) for w in (1, 32, 33, 64, 65)] == [32, 32, 64, 64, None]
    assert [batch_bucket(n) for n in (1, 8, 9, 33, 64, 65, 512, 513, 2048)] == [8, 8, 16, 64, 64, 128, 512, 1024, 2048]
    # The decoder's cache: as long as the budget needs, within the source bucket's room.
    assert [decoder_length(n, 32) for n in (16, 30, 60, 126, 127)] == [32, 32, 64, 128, None]
    assert decoder_length(200, 64) == 256 and decoder_length(200, 32) is None


def test_compiled_is_chosen_like_transformers(fixture_model: Path) -> None:
    assert choose(Engine(backend="compiled", device="cpu"), model_dir=fixture_model) == ("compiled", "cpu", "float32")
    assert choose(Engine(backend="compiled", device="cuda"), model_dir=fixture_model) == (
        "compiled",
        "cuda",
        "bfloat16",
    )
    with pytest.raises(ValueError, match="backend compiled runs float32, float16 or bfloat16, not int8"):
        choose(Engine(backend="compiled", device="cpu", dtype="int8"), model_dir=fixture_model)


@pytest.fixture(scope="module")
def tokenizer(fixture_model: Path) -> ModelTokenizer:
    return ModelTokenizer(fixture_model, 128112)


def batch(tokenizer: ModelTokenizer, count: int, offset: int = 0) -> tuple[list[list[int]], list[int]]:
    chosen = [corpus_sentences()[(offset + i) % len(corpus_sentences())] for i in range(count)]
    rows = [list(tokenizer.source_row(tokenizer.lang_ids[source], text)) for source, _, text, _ in chosen]
    return rows, [tokenizer.lang_ids[target] for _, target, _, _ in chosen]


@pytest.mark.parametrize("beams", [1, 4])
def test_translations_are_eager_transformers_own(fixture_model: Path, tokenizer: ModelTokenizer, beams: int) -> None:
    import torch._dynamo.utils

    decoding = Decoding(num_beams=beams, length_penalty=1.0, no_repeat_ngram_size=0)
    eager = TransformersBackend(fixture_model, "cpu", "float32", 2, decoding, SPECIAL)
    graphs_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    compiled = CompiledBackend(fixture_model, "cpu", "float32", 2, decoding, SPECIAL)
    graphs_after_load = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    # Batches padded to 8, 16 and 64 rows, mixed pairs, each shape twice (a cache reused, reset).
    for count, offset in ((3, 0), (11, 5), (40, 9), (3, 20), (40, 1)):
        rows, targets = batch(tokenizer, count, offset)
        assert compiled.generate(rows, targets, 48) == eager.generate(rows, targets, 48), (count, offset)
    # Alternatives: two hypotheses, within the configured beam (compiled) or a wider one (eager).
    rows, targets = batch(tokenizer, 5)
    assert compiled.generate(rows, targets, 48, hypotheses=2) == eager.generate(rows, targets, 48, hypotheses=2)
    # Forced lengths, as the benchmark's random weights need.
    rows, targets = batch(tokenizer, 6)
    assert compiled.generate(rows, targets, 16, min_new_tokens=16) == eager.generate(rows, targets, 16, 16)
    if beams == 1:
        assert compiled.compiled_calls == 6 and compiled.eager_calls == 1  # the alternatives' beam
        assert compiled.beam_steps == 0
    else:
        assert compiled.compiled_calls == 7 and compiled.eager_calls == 0
        # transformers' beam search calls the model's forward for each one-token step (what
        # _compiled_beam_steps relies on): the requests' ran compiled (the warm-up's not counted),
        # at least 15 for each of the forced call's 6 rows after its prefill.
        assert compiled.beam_steps >= 15
    # torch compiled the decode step on the CPU, at load, and nothing after: transformers compiles
    # off accelerators only when told (CompileConfig._compile_all_devices, a private name this pins).
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs_after_load > graphs_before


@pytest.mark.pure
def test_a_beam_reordered_in_place_keeps_its_tensors_and_gathers_only_filled_positions() -> None:
    import torch
    from transformers import M2M100Config, StaticCache

    from translator.engine.backends.compiled_backend import static_beam_cache

    config = M2M100Config(d_model=8, decoder_layers=2, decoder_attention_heads=2, encoder_attention_heads=2)
    cache = static_beam_cache()(
        StaticCache(config=config, max_cache_len=4), StaticCache(config=config, max_cache_len=3)
    )
    rows = torch.arange(4, dtype=torch.float32).view(4, 1, 1, 1)  # row i holds i
    for layer in range(2):
        cache.self_attention_cache.update(rows.expand(4, 2, 2, 4).clone(), rows.expand(4, 2, 2, 4).clone(), layer)
        cache.cross_attention_cache.update(rows.expand(4, 2, 3, 4).clone(), rows.expand(4, 2, 3, 4).clone(), layer)
    for layer in cache.self_attention_cache.layers:  # past the filled positions: 10 + the row
        for states in (layer.keys, layer.values):
            states[:, :, 2:] = 10 + rows
    before = [(layer.keys.data_ptr(), layer.values.data_ptr()) for layer in cache.self_attention_cache.layers]
    cache.reorder_cache(torch.tensor([1, 1, 3, 2]))
    for layer, pointers in zip(cache.self_attention_cache.layers, before, strict=True):
        assert (layer.keys.data_ptr(), layer.values.data_ptr()) == pointers
        for states in (layer.keys, layer.values):
            assert states[:, 0, :, 0].tolist() == [[1, 1, 10, 10], [1, 1, 11, 11], [3, 3, 12, 12], [2, 2, 13, 13]]
    for layer in cache.cross_attention_cache.layers:  # a sentence's beams share its source
        assert layer.keys[:, 0, 0, 0].tolist() == [0, 1, 2, 3]


def test_a_source_of_33_to_64_tokens_and_kept_caches_past_their_bound(
    fixture_model: Path, tokenizer: ModelTokenizer, monkeypatch
) -> None:
    from translator.engine.backends import compiled_backend

    decoding = Decoding(num_beams=1, length_penalty=1.0, no_repeat_ngram_size=0)
    eager = TransformersBackend(fixture_model, "cpu", "float32", 2, decoding, SPECIAL)
    compiled = CompiledBackend(fixture_model, "cpu", "float32", 2, decoding, SPECIAL)
    monkeypatch.setattr(compiled_backend, "MAX_CACHES", 1)
    compiled.release_memory()  # the warm-up's caches dropped: each shape below makes its own
    rows, targets = batch(tokenizer, 4)
    long_row = rows[0][:-1]
    while len(long_row) < 40:
        long_row += rows[1][1:-1]
    long_row = long_row[:50] + [rows[0][-1]]
    assert source_bucket(len(long_row)) == 64
    for _ in range(2):  # two shapes in turn, one cache kept: each made again, the answers the same
        assert compiled.generate([long_row, *rows], targets + targets[:1], 40) == eager.generate(
            [long_row, *rows], targets + targets[:1], 40
        )
        assert compiled.generate(rows, targets, 40) == eager.generate(rows, targets, 40)
        assert len(compiled.describe()["shapes"]) == 1
    assert compiled.compiled_calls == 4 and compiled.eager_calls == 0


def test_what_no_bucket_holds_runs_eager_with_the_same_answers(fixture_model: Path, tokenizer: ModelTokenizer) -> None:
    decoding = Decoding(num_beams=1, length_penalty=1.0, no_repeat_ngram_size=0)
    eager = TransformersBackend(fixture_model, "cpu", "float32", 2, decoding, SPECIAL)
    compiled = CompiledBackend(fixture_model, "cpu", "float32", 2, decoding, SPECIAL)
    rows, targets = batch(tokenizer, 4)
    long_row = rows[0][:-1] + rows[1][1:-1] * 12 + [rows[0][-1]]  # past the last source bucket
    assert source_bucket(len(long_row)) is None
    assert compiled.generate([long_row], targets[:1], 40) == eager.generate([long_row], targets[:1], 40)
    # An output budget past the bucket's decoder room (the one-row retry with the model's whole room).
    budget = DECODER_ROOM * 32
    assert compiled.generate(rows, targets, budget) == eager.generate(rows, targets, budget)
    assert compiled.eager_calls == 2 and compiled.compiled_calls == 0


def test_the_engine_translates_through_it(fixture_model: Path) -> None:
    from translator.engine.translator import Translator

    pieces = [Piece(text=text, source=source, target=target) for source, target, text, _ in corpus_sentences()[:12]]
    expected = [translation for _, _, _, translation in corpus_sentences()[:12]]
    translator = Translator(fixture_model, Engine(backend="compiled", device="cpu"), Generation())
    assert translator.backend.name == "compiled"
    assert [r.text for r in translator.translate(pieces)] == expected
