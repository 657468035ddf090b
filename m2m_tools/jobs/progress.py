"""A job's progress bar (records, sentences/s, ETA) and its summary line."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Summary:
    records: int = 0  # in the job
    already_done: int = 0  # found finished in the checkpoints
    translated: int = 0  # translated by this run (rejects included)
    sentences: int = 0  # sentences (pieces) this run translated
    rejects: int = 0  # in the whole job, earlier runs included
    seconds: float = 0.0  # this run's translation time, wall clock
    # Records the job's translation memory answered, earlier runs included; None: no memory named.
    memory: int | None = None

    @property
    def sentences_per_second(self) -> float | None:
        return self.sentences / self.seconds if self.seconds > 0 else None

    def line(self) -> str:
        rate = self.sentences_per_second
        speed = f"{rate:.1f} sentences/s" if rate is not None else "- sentences/s"
        return (
            f"{self.records} records ({self.already_done} already done, {self.translated} translated now), "
            f"{self.sentences} sentences in {self.seconds:.1f} s, {speed}, {self.rejects} rejected"
            + (f", {self.memory} from the translation memory" if self.memory is not None else "")
        )


class Progress:
    """A tqdm bar on stderr counting records (its ETA), with sentences/s alongside."""

    def __init__(self, total: int, initial: int, enabled: bool | None) -> None:
        from tqdm import tqdm

        # None: a bar only when stderr is a terminal (tqdm's rule), so logs stay readable.
        self._bar: Any = tqdm(
            total=total,
            initial=initial,
            unit="rec",
            file=sys.stderr,
            disable=None if enabled is None else not enabled,
            dynamic_ncols=True,
            smoothing=0.1,
        )
        self._started = time.perf_counter()
        self.sentences = 0

    def advance(self, records: int, sentences: int) -> None:
        self.sentences += sentences
        elapsed = time.perf_counter() - self._started
        if elapsed > 0:
            self._bar.set_postfix_str(f"{self.sentences / elapsed:.1f} sent/s", refresh=False)
        self._bar.update(records)

    def close(self) -> None:
        self._bar.close()
