"""What a batch costs: predicted from measured batches, and padded as recent batches were."""

from __future__ import annotations

from collections import deque

# Weight of each older batch in the padding ratio (about the last ten batches count).
PADDING_DECAY = 0.9


class CostModel:
    """Predicted seconds for a batch: `fixed + per_piece * pieces + per_token * padded tokens`.

    Fitted by weighted least squares over the most recent batches, the newest weighing most (a
    machine's speed drifts: other work, thermal limits), with a small pull towards the previous
    estimate so that a run of identical batches (which cannot separate the three terms) still
    gives a stable, sensible prediction. Until a batch has been seen, it knows nothing. The
    engine's calibration batches (1 piece, then a full batch) span the sizes it will predict, so
    it interpolates rather than extrapolates: extrapolated from small batches on a busy machine,
    a fit once put a full batch at 20 times its real cost.
    """

    def __init__(self, history: int = 64, ridge: float = 1e-3, decay: float = 0.95) -> None:
        self.samples: deque[tuple[int, int, float]] = deque(maxlen=history)
        self.ridge = ridge
        self.decay = decay
        self.coefficients: tuple[float, float, float] | None = None

    @property
    def ready(self) -> bool:
        return self.coefficients is not None

    def observe(self, pieces: int, tokens: int, seconds: float) -> None:
        self.samples.append((pieces, tokens, seconds))
        self.coefficients = self._fit()

    def predict(self, pieces: int, tokens: int) -> float:
        if self.coefficients is None or pieces <= 0:
            return 0.0
        fixed, per_piece, per_token = self.coefficients
        return fixed + per_piece * pieces + per_token * tokens

    def _fit(self) -> tuple[float, float, float]:
        import numpy as np

        data = np.array(self.samples, dtype=float)
        x = np.column_stack([np.ones(len(data)), data[:, 0], data[:, 1]])
        y = data[:, 2]
        # Scale columns so the ridge term means the same for seconds, pieces and tokens.
        scale = np.maximum(np.abs(x).max(axis=0), 1e-9)
        xs = x / scale
        prior = np.zeros(3)
        if self.coefficients is not None:
            prior = np.array(self.coefficients) * scale
        else:
            # First sample: all of it fixed cost. A model's batch time grows far slower than its
            # size (measured: 32 fixture pieces cost 3x one piece, not 32x), so this errs less
            # than any per-piece guess; the warm-up's second batch, of another size, corrects it.
            prior = np.array([y.mean(), 0.0, 0.0]) * scale
        decayed = self.decay ** np.arange(len(y) - 1, -1, -1, dtype=float)
        robust = np.ones(len(y))
        pull = self.ridge * decayed.sum() + 1e-9
        # A few rounds of Huber reweighting: one batch slowed by something else on the machine
        # (a pause, a neighbour's burst) must not raise every prediction after it, since an
        # overestimate refuses work a healthy engine would have done in time.
        for _ in range(4):
            weights = decayed * robust
            xw = xs * weights[:, None]
            solved = np.linalg.solve(xw.T @ xs + pull * np.eye(3), xw.T @ y + pull * prior)
            residuals = np.abs(y - xs @ solved)
            spread = 1.4826 * float(np.median(residuals)) + 1e-6
            robust = np.minimum(1.0, 1.345 * spread / np.maximum(residuals, 1e-12))
        coefficients = np.maximum(solved / scale, 0.0)
        if not np.any(coefficients):
            coefficients[2] = max(float(y.mean()), 0.0) / max(float(data[:, 1].mean()), 1.0)
        return float(coefficients[0]), float(coefficients[1]), float(coefficients[2])


class PaddingRatio:
    """Padded tokens per real token of recent batches (decayed sums, so full batches count most):
    the cost model is fitted on padded tokens, so a prediction made from the queue's real lengths
    must pad them the same way, or it promises too early."""

    def __init__(self) -> None:
        self._padded = 0.0
        self._real = 0.0

    def observe(self, padded_tokens: int, real_tokens: int) -> None:
        self._padded = PADDING_DECAY * self._padded + padded_tokens
        self._real = PADDING_DECAY * self._real + real_tokens

    @property
    def value(self) -> float:
        """1.0 before any batch."""
        return max(1.0, self._padded / self._real) if self._real else 1.0
