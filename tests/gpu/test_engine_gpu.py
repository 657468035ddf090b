"""The model-owning class on CUDA, on every backend, in the half-precision types they run there.

Marked `gpu`: skipped, saying so, where torch sees no CUDA device (tests/conftest.py), so the
suite stays green on CPU-only machines and these run wherever a GPU is. Exact on the fixture: the
translations eager float32 gives on the CPU (the corpus), whatever the backend and precision.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus import corpus_sentences
from translator.config import Engine, Generation
from translator.contract.protocol import Piece
from translator.engine.model_runner import RunnerProcess
from translator.engine.translator import Translator

pytestmark = [pytest.mark.model, pytest.mark.gpu]

SETTINGS = [
    ("transformers", "bfloat16"),
    ("transformers", "float16"),
    ("compiled", "bfloat16"),
    ("ctranslate2", "float16"),
    ("ctranslate2", "bfloat16"),
    ("ctranslate2", "int8_float16"),
]


@pytest.fixture(scope="module", params=SETTINGS, ids=["-".join(s) for s in SETTINGS])
def translator(request: pytest.FixtureRequest, fixture_model: Path) -> Translator:
    import torch

    backend, dtype = request.param
    if "bfloat16" in dtype and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16")
    model = request.getfixturevalue("converted_fixture_model") if backend == "ctranslate2" else fixture_model
    # In this process (runner: thread), so that the test can look at the model itself.
    engine = Engine(backend=backend, device="cuda", dtype=dtype, warmup=False, runner="thread")  # type: ignore[arg-type]
    return Translator(model, engine)


def pieces(pairs: list[tuple[str, str, str, str]]) -> list[Piece]:
    return [Piece(text=text, source=source, target=target) for source, target, text, _ in pairs]


def test_runs_on_the_gpu_in_the_type_asked_for(translator: Translator) -> None:
    assert translator.device == "cuda"
    if translator.backend.name in ("transformers", "compiled"):
        parameter = next(translator.backend.model.parameters())  # type: ignore[attr-defined]
        assert parameter.is_cuda and str(parameter.dtype) == f"torch.{translator.precision}"
    else:
        assert translator.backend.translator.device == "cuda"  # type: ignore[attr-defined]
        assert translator.backend.translator.compute_type == translator.precision  # type: ignore[attr-defined]


def test_whole_corpus_in_one_mixed_batch_is_exact(translator: Translator) -> None:
    pairs = corpus_sentences()
    results = translator.translate(pieces(pairs))
    assert [r.error for r in results] == [None] * len(pairs)
    assert [r.text for r in results] == [expected for *_, expected in pairs]


def test_batched_output_equals_single_output(translator: Translator) -> None:
    # Padding in a half-precision batch must not change any piece's translation.
    batch = pieces(corpus_sentences()[::5])
    together = translator.translate(batch)
    alone = [translator.translate([piece])[0] for piece in batch]
    # Errors first: an engine that fails every call gives None == None everywhere (CTranslate2
    # without CUDA 12's cuBLAS passed this test on an H200 before it checked them).
    assert [r.error for r in together] == [r.error for r in alone] == [None] * len(batch)
    assert [r.text for r in together] == [r.text for r in alone]
    assert len({(p.source, p.target) for p in batch}) > 3


def test_the_compiled_engine_runs_its_batches_as_graphs_compiled_at_load(fixture_model: Path) -> None:
    import torch._dynamo.utils

    translator = Translator(
        fixture_model, Engine(backend="compiled", device="cuda", dtype="bfloat16", warmup=False, runner="thread")
    )
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    pairs = corpus_sentences()
    for size in (1, 5, len(pairs)):  # batch sizes 8, 8 and the next power of two
        assert [r.text for r in translator.translate(pieces(pairs[:size]))] == [t for *_, t in pairs[:size]]
    described = translator.backend.describe()
    assert described["compile_mode"] == "reduce-overhead"
    assert described["compiled_calls"] >= 3 and described["eager_calls"] == 0
    # Nothing compiled after load, and no CUDA graph skipped (a skip runs the step eager, silently).
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs
    assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] == 0


def test_beam_search_on_the_compiled_engine_is_exact_and_replays_graphs(fixture_model: Path) -> None:
    import torch._dynamo.utils

    translator = Translator(
        fixture_model,
        Engine(backend="compiled", device="cuda", dtype="bfloat16", warmup=False, runner="thread"),
        Generation(num_beams=5),
    )
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    pairs = corpus_sentences()
    assert [r.text for r in translator.translate(pieces(pairs))] == [expected for *_, expected in pairs]
    described = translator.backend.describe()
    assert described["compiled_calls"] >= 1 and described["eager_calls"] == 0 and described["beam_steps"] > 0
    # The steps replayed CUDA graphs over a cache reordered in place: nothing compiled after load,
    # no graph skipped (a reorder that moved the cache's tensors would skip them).
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs
    assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] == 0


def test_on_cuda_the_model_runs_in_a_process_of_its_own_and_answers_the_same(fixture_model: Path) -> None:
    translator = Translator(fixture_model, Engine(backend="transformers", device="cuda", dtype="bfloat16"))
    try:
        assert isinstance(translator.backend, RunnerProcess)
        pairs = corpus_sentences()
        assert [r.text for r in translator.translate(pieces(pairs))] == [expected for *_, expected in pairs]
    finally:
        translator.close()
