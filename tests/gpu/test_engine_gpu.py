"""The model-owning class on CUDA, on both backends, in the half-precision types they run there.

Marked `gpu`: skipped, saying so, where torch sees no CUDA device (tests/conftest.py), so the
suite stays green on CPU-only machines and these run wherever a GPU is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus import corpus_sentences
from translator.config import Engine
from translator.contract.protocol import Piece
from translator.engine.translator import Translator

pytestmark = pytest.mark.gpu

SETTINGS = [
    ("transformers", "bfloat16"),
    ("transformers", "float16"),
    ("ctranslate2", "float16"),
    ("ctranslate2", "bfloat16"),
    ("ctranslate2", "int8_float16"),
]


@pytest.fixture(scope="module", params=SETTINGS, ids=["-".join(s) for s in SETTINGS])
def translator(request: pytest.FixtureRequest, converted_fixture_model: Path) -> Translator:
    import torch

    backend, dtype = request.param
    if "bfloat16" in dtype and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16")
    return Translator(converted_fixture_model, Engine(backend=backend, device="cuda", dtype=dtype, warmup=False))


def pieces(pairs: list[tuple[str, str, str, str]]) -> list[Piece]:
    return [Piece(text=text, source=source, target=target) for source, target, text, _ in pairs]


def test_runs_on_the_gpu_in_the_type_asked_for(translator: Translator) -> None:
    assert translator.device == "cuda"
    if translator.backend.name == "transformers":
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
