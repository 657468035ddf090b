"""The return-time measure behind the scheduler's linger (translator/engine/returns.py)."""

from __future__ import annotations

import pytest

from translator.contract.protocol import Priority
from translator.engine.returns import MARGIN, Returns, estimate

pytestmark = pytest.mark.pure

INTERACTIVE, BULK = Priority.INTERACTIVE, Priority.BULK


def test_nothing_is_known_before_a_return_was_timed():
    returns = Returns()
    assert returns.return_s([INTERACTIVE, BULK]) is None
    returns.batch_done(10.0, {INTERACTIVE: 3})
    assert returns.missing(INTERACTIVE) == 3 and returns.missing(BULK) == 0
    assert returns.answered() == [INTERACTIVE]
    assert returns.return_s([INTERACTIVE]) is None


def test_a_sample_times_the_return_of_every_caller_the_batch_answered():
    returns = Returns()
    returns.batch_done(10.0, {INTERACTIVE: 10})
    for k in range(9):
        returns.arrived(10.1 + 0.01 * k, INTERACTIVE)
    assert returns.return_s([INTERACTIVE]) is None  # 9 of 10 back: not yet
    assert returns.missing(INTERACTIVE) == 1
    returns.arrived(10.3, INTERACTIVE)  # the last one: it is the one the next batch would miss
    assert returns.return_s([INTERACTIVE]) == pytest.approx(MARGIN * 0.3)
    returns.arrived(15.0, INTERACTIVE)  # a new caller, not one coming back: no second sample
    assert returns.return_s([INTERACTIVE]) == pytest.approx(MARGIN * 0.3)
    assert returns.missing(INTERACTIVE) == 0


def test_priorities_are_timed_apart_and_the_slowest_asked_for_counts():
    returns = Returns()
    returns.batch_done(0.0, {INTERACTIVE: 1, BULK: 2})
    returns.arrived(0.05, INTERACTIVE)
    returns.arrived(0.3, BULK)
    assert returns.return_s([BULK]) is None  # one of two bulk callers back
    returns.arrived(0.5, BULK)
    assert returns.return_s([INTERACTIVE]) == pytest.approx(MARGIN * 0.05)
    assert returns.return_s([BULK]) == pytest.approx(MARGIN * 0.5)
    assert returns.return_s([INTERACTIVE, BULK]) == pytest.approx(MARGIN * 0.5)


def test_a_new_batch_forgets_the_callers_still_out():
    returns = Returns()
    returns.batch_done(0.0, {INTERACTIVE: 4})
    returns.arrived(0.1, INTERACTIVE)
    returns.batch_done(1.0, {INTERACTIVE: 2})
    assert returns.missing(INTERACTIVE) == 2
    returns.arrived(1.1, INTERACTIVE)
    returns.arrived(1.3, INTERACTIVE)
    assert returns.return_s([INTERACTIVE]) == pytest.approx(MARGIN * 0.3)


def test_the_estimate_is_a_high_quantile_of_recent_samples():
    assert estimate([0.1] * 9 + [5.0]) == pytest.approx(MARGIN * 0.1)  # one outlier in ten
    assert estimate([0.1] * 8 + [5.0, 5.0]) == pytest.approx(MARGIN * 5.0)
    returns = Returns()
    for k in range(100):  # old samples age out
        returns.batch_done(float(k), {BULK: 1})
        returns.arrived(k + (1.0 if k < 50 else 0.1), BULK)
    assert returns.return_s([BULK]) == pytest.approx(MARGIN * 0.1)
