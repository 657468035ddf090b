"""The reasons the engine counts refusals and drops by (translator/engine/observer.py), which the
Prometheus observer shows at 0 from start-up: every reason the engine's code can report is listed
there, or its series would appear only with its first event."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import virtual_time
from tests.unit.test_scheduler import FakeModel, piece, run, tokens
from translator.engine import health
from translator.engine.admission import Refused
from translator.engine.observer import DROP_REASONS, REFUSAL_REASONS, NullObserver
from translator.engine.scheduler import Scheduler, SchedulerSettings

ENGINE = Path(__file__).resolve().parents[2] / "translator" / "engine"


def _literal_args(source: Path, function: str, position: int) -> set[str]:
    """String literals passed at `position` to calls of a function or method named `function`."""
    found = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or len(node.args) <= position:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        arg = node.args[position]
        if name == function and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.add(arg.value)
    return found


def test_every_refusal_reason_the_scheduler_counts_is_listed():
    counted = _literal_args(ENGINE / "scheduler.py", "refused", 0)
    # The scheduler also counts what health.unavailable refuses with (closed, failed).
    counted |= {r.reason for r in (health.unavailable(True, None), health.unavailable(False, "x")) if r is not None}
    assert counted and counted <= set(REFUSAL_REASONS), counted - set(REFUSAL_REASONS)


def test_every_drop_reason_is_listed():
    scheduler = ENGINE / "scheduler.py"
    dropped = _literal_args(scheduler, "dropped", 0) | _literal_args(scheduler, "_cancel", 1)
    assert dropped == set(DROP_REASONS)


class Reasons(NullObserver):
    def __init__(self) -> None:
        self.refusals: list[str] = []

    def refused(self, reason: str) -> None:
        self.refusals.append(reason)


def test_new_work_refused_by_a_closed_engine_is_counted_with_its_reason():
    observer = Reasons()

    async def main():
        scheduler = Scheduler(
            FakeModel(), tokens, SchedulerSettings(max_batch_size=4), observer, clock=virtual_time.now
        )
        scheduler.start()
        await scheduler.submit([piece("before")])
        await scheduler.close()
        with pytest.raises(Refused) as refused:
            await scheduler.submit([piece("after")])
        return refused.value.reason

    assert run(main()) == "shutting_down"
    assert observer.refusals == ["shutting_down"]


def test_the_refusal_callback_is_told_only_of_refusals():
    told: list[str] = []
    assert health.unavailable(False, None, told.append) is None
    assert health.unavailable(False, "the loop stopped", told.append).reason == "unhealthy"
    assert told == ["unhealthy"]
