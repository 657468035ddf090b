"""The simulated backend: a call's time from its curve, and answers that are the source."""

from __future__ import annotations

import time

import pytest

from translator.config import ConfigError, Engine, Generation, load_settings
from translator.contract.protocol import Piece
from translator.engine.backends.simulated_backend import H200_418M_GREEDY, SimulatedBackend, batch_seconds

pytestmark = pytest.mark.pure


def test_batch_time_is_interpolated_on_the_curve_and_extended_per_row_past_it() -> None:
    curve = [(32, 0.2), (1, 0.1), (128, 0.4)]  # any order
    assert batch_seconds(curve, 1) == 0.1
    assert batch_seconds(curve, 0) == 0.0
    assert batch_seconds(curve, 16) == pytest.approx(0.1 + 0.1 * 15 / 31)
    assert batch_seconds(curve, 80) == pytest.approx(0.3)
    assert batch_seconds(curve, 256) == pytest.approx(0.8)  # 0.4 s per 128 rows past the last point
    assert batch_seconds([], 512) == 0.0
    # The H200 curve: a batch of 512 costs about what a batch of 1 does, times 1.5.
    assert batch_seconds(H200_418M_GREEDY, 512) / batch_seconds(H200_418M_GREEDY, 1) == pytest.approx(1.5, abs=0.01)


def test_a_call_takes_its_time_and_answers_each_row_with_its_source_tokens() -> None:
    backend = SimulatedBackend([(1, 0.05), (2, 0.1)])
    started = time.monotonic()
    out = backend.generate([[7, 10, 11, 2], [8, 12, 2]], targets=[9, 9], max_new_tokens=16)
    assert time.monotonic() - started >= 0.1
    assert [g.ids for g in out] == [[10, 11], [12]] and all(g.ended for g in out)


@pytest.mark.model
def test_the_engine_translates_through_it_with_the_checkpoints_tokenizer(fixture_model) -> None:
    from translator.engine.translator import Translator

    translator = Translator(fixture_model, Engine(backend="simulated"), Generation())
    texts = ["Life is like a box of chocolates.", "Good morning, everyone!"]
    results = translator.translate([Piece(text=t, source="en", target="ja") for t in texts])
    assert [r.text for r in results] == texts


def test_a_curve_is_for_the_simulated_backend_only(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "services:\n  TranslationEngine:\n    translation:\n      engine:\n"
        "        backend: ctranslate2\n        simulated_batch_s: [[1, 0.1]]\n"
    )
    with pytest.raises(ConfigError, match="simulated_batch_s and simulated_lock_share are for backend simulated only"):
        load_settings(path)


def test_auto_on_cuda_keeps_the_faster_engine_and_releases_the_other() -> None:
    from translator.engine.backends import fastest

    slow, fast = SimulatedBackend([(1, 0.03)]), SimulatedBackend([(1, 0.01)])
    released: list[str] = []
    slow.release_memory = lambda: released.append("slow")  # type: ignore[method-assign]
    rows, targets = [[7, 10, 2]] * 4, [9] * 4
    chosen, timings = fastest([("slow", lambda: slow), ("fast", lambda: fast)], rows, targets, 16)
    assert chosen is fast and released == ["slow"]
    assert timings["slow"] > timings["fast"] > 0

    def broken() -> SimulatedBackend:
        raise RuntimeError("Library libcublas.so.12 is not found")

    chosen, timings = fastest([("ctranslate2", broken), ("fast", lambda: fast)], rows, targets, 16)
    assert chosen is fast and timings["ctranslate2"] == float("inf")
    with pytest.raises(RuntimeError, match="no engine could run"):
        fastest([("ctranslate2", broken)], rows, targets, 16)


@pytest.mark.model
def test_auto_is_measured_on_cuda_among_the_engines_that_can_run_the_model(converted_fixture_model, fixture_model):
    from translator.engine.backends import cuda_candidates, measured_on_cuda

    assert measured_on_cuda(Engine(device="cuda"), converted_fixture_model)
    # Without a CTranslate2 model: the two torch backends (eager and compiled) are measured.
    assert measured_on_cuda(Engine(device="cuda"), fixture_model)
    assert cuda_candidates(fixture_model) == [("compiled", "bfloat16"), ("transformers", "bfloat16")]
    assert ("ctranslate2", "float16") in cuda_candidates(converted_fixture_model)
    assert not measured_on_cuda(Engine(device="cpu"), converted_fixture_model)
    assert not measured_on_cuda(Engine(device="cuda", backend="transformers"), converted_fixture_model)
