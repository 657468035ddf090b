"""The scheduler's stand-ins for a model, on virtual time (tests/virtual_time.py): a fake backend
that spends a cost growing with the batch in virtual seconds and records every batch, and the
pieces and token counts it is given. Shared by the scheduler's tests and the engine metrics'."""

from __future__ import annotations

import threading

from tests import virtual_time
from translator.contract.protocol import Piece, PieceResult


class FakeModel:
    def __init__(self, fixed_s: float = 0.02, per_piece_s: float = 0.002, fail_on: str | None = None) -> None:
        self.fixed_s = fixed_s
        self.per_piece_s = per_piece_s
        self.fail_on = fail_on
        self.batches: list[list[str]] = []
        self.running = 0
        self.overlap = False
        self.gate: virtual_time.Gate | None = None
        self.entered: list[list[str]] = []  # each batch as it enters the model, before the gate
        self._lock = threading.Lock()

    def __call__(self, pieces: list[Piece]) -> list[PieceResult]:
        with self._lock:
            self.running += 1
            self.overlap |= self.running > 1
            self.entered.append([p.text for p in pieces])
        try:
            if self.gate is not None:
                self.gate.wait()
            self.batches.append([p.text for p in pieces])
            virtual_time.sleep_in_thread(self.fixed_s + self.per_piece_s * len(pieces))
            return [
                PieceResult(error="bad piece") if p.text == self.fail_on else PieceResult(text=p.text.upper())
                for p in pieces
            ]
        finally:
            with self._lock:
                self.running -= 1


def tokens(piece: Piece) -> int:
    return len(piece.text.split()) + 2


def piece(text: str) -> Piece:
    return Piece(text=text, source="en", target="fr")


def run(coro):
    return virtual_time.run(coro, 60)
