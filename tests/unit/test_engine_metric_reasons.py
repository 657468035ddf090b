"""The reasons the engine counts refusals and drops by (translator/engine/observer.py), which the
Prometheus observer shows at 0 from start-up. They are enums, and the observer takes nothing else
(mypy, in `make lint`, refuses a plain string), so no reason can be counted that is not listed:
what is left to test is that each is counted where it happens."""

from __future__ import annotations

import pytest

from tests import virtual_time
from tests.unit.helpers.fake_engine import FakeModel, piece, run, tokens
from translator.engine import health
from translator.engine.admission import Refused
from translator.engine.observer import NullObserver, RefusalReason
from translator.engine.scheduler import Scheduler, SchedulerSettings

pytestmark = pytest.mark.pure


class Reasons(NullObserver):
    def __init__(self) -> None:
        self.refusals: list[str] = []

    def refused(self, reason: RefusalReason) -> None:
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
