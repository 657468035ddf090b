"""The linger after a batch: how long the model loop waits for the callers that batch answered.

Closed-loop clients answered by a batch come back a little later. Started at once, the next batch
would hold only the clients that were not in the last one, and the two halves would alternate for
ever. So while the queue holds fewer pieces than the last batch had (plus what was already
waiting), the loop waits for them; and while interactive callers it answered are not back, it waits
for them too, even with bulk work queued: started without them, the next batch makes each of them
wait a whole batch more. How long they take is measured (translator/engine/returns.py), not
assumed: the linger lasts their usual return time, at least `linger_fraction` of the batch it is
waiting to fill, never more than `linger_max_fraction` of that batch nor `linger_max_s`. A lone
client is never kept waiting: one piece back is all it expected. Pure functions of the state the
scheduler passes in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LingerSettings:
    fraction: float
    max_fraction: float
    max_s: float

    @property
    def off(self) -> bool:
        return not (self.fraction and self.max_fraction and self.max_s)


def linger_s(settings: LingerSettings, upcoming_s: float, learnt_return_s: float | None) -> float:
    """How long the loop may wait, from now, for the callers the last batch answered.

    Priced against the batch the linger is waiting to fill (`upcoming_s` seconds), not the one just
    done: after a small batch, a share of its time is too short for its clients to come back, and a
    31-and-1 split would last for ever. Never shorter than the share assumed before any return was
    timed: a return time timed after a batch of one (a lone client's) says little of 32 callers'
    (tests/unit/test_scheduler.py holds the cold start that showed it). The wait ends anyway as soon
    as they are back."""
    if settings.off:
        return 0.0
    wait = max(settings.fraction * upcoming_s, learnt_return_s or 0.0)
    return min(wait, settings.max_fraction * upcoming_s, settings.max_s)


def worth_waiting(
    queued: int, expected: int, interactive_missing: int, interactive_queued: int, batch_size: int
) -> bool:
    """Whether callers the last batch answered are still to come back and would change the next
    batch: enough of them to fill it, or interactive ones that would otherwise wait for it."""
    if queued < expected:
        return True
    return interactive_missing > 0 and interactive_queued < batch_size
