"""Covariance inflation for residuals that are correlated in time (filtered signals).

Least-squares covariances assume independent samples. Filtered and differentiated data
are correlated over tens of samples, so those covariances are too small by about the
factor kappa = 1 + 2 sum_l (1 - l / (L + 1)) rho_l (Bartlett-weighted autocorrelation
rho_l of the whitened residuals, lags l = 1..L). ``ResidualCorrelation`` accumulates it
in constant memory, one sample or one batch at a time, and several of them pool
(``pooled_inflation``); ``variance_inflation`` does it for one batch.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def _kappa(lagged: np.ndarray, power: float) -> float:
    if power <= 0:
        return 1.0
    lags = len(lagged)
    bartlett = 1.0 - np.arange(1, lags + 1) / (lags + 1)
    return float(max(1.0 + 2.0 * np.sum(bartlett * lagged / power), 1.0))


def variance_inflation(residuals: np.ndarray, lags: int) -> float:
    """kappa of residual vectors (Q, d), pooled over components; 1 when lags is 0."""
    r = np.asarray(residuals, dtype=float).reshape(len(residuals), -1)
    lags = min(lags, len(r) - 1)
    if lags <= 0:
        return 1.0
    lagged = np.array([np.sum(r[l:] * r[:-l]) for l in range(1, lags + 1)])
    return _kappa(lagged, float(np.sum(r * r)))


class ResidualCorrelation:
    """Running lagged sums sum_k r_k . r_k-l (l = 1..lags) and power sum_k |r_k|^2, with the
    last ``lags`` residuals in a ring buffer."""

    def __init__(self, lags: int) -> None:
        self.lags = lags
        self.reset()

    def reset(self) -> None:
        self._buffer: np.ndarray | None = None
        self._position = 0  # slot of the next residual
        self._filled = 0
        self.lagged = np.zeros(self.lags)
        self.power = 0.0
        self.count = 0

    def _ready(self, dimension: int) -> None:
        if self._buffer is None or self._buffer.shape[1] != dimension:
            self._buffer = np.zeros((self.lags, dimension))
            self._position, self._filled = 0, 0

    def add(self, r: np.ndarray) -> None:
        """One residual vector."""
        if self.lags == 0:
            return
        r = np.asarray(r, dtype=float).ravel()
        self._ready(len(r))
        slots = np.arange(self._filled)
        lag_of_slot = (self._position - slots - 1) % self.lags  # 0 for the newest
        self.lagged[lag_of_slot] += self._buffer[slots] @ r
        self.power += float(r @ r)
        self.count += 1
        self._buffer[self._position] = r
        self._position = (self._position + 1) % self.lags
        self._filled = min(self._filled + 1, self.lags)

    def add_batch(self, R: np.ndarray) -> None:
        """Consecutive residual vectors (Q, d), oldest first."""
        R = np.asarray(R, dtype=float).reshape(len(R), -1)
        if self.lags == 0 or len(R) == 0:
            return
        self._ready(R.shape[1])
        recent = np.roll(self._buffer, -self._position, axis=0)[self.lags - self._filled :]
        X = np.vstack([recent, R])
        start = len(recent)
        for lag in range(1, self.lags + 1):
            first = max(start, lag)
            if first < len(X):
                self.lagged[lag - 1] += np.sum(X[first:] * X[first - lag : len(X) - lag])
        self.power += float(np.sum(R * R))
        self.count += len(R)
        tail = X[-self.lags :]
        self._buffer[: len(tail)] = tail
        self._filled = len(tail)
        self._position = len(tail) % self.lags

    def absorb(self, other: ResidualCorrelation) -> None:
        """Add another accumulator's sums (e.g. of an earlier stretch being merged)."""
        self.lagged = self.lagged + other.lagged
        self.power += other.power
        self.count += other.count

    def inflation(self) -> float:
        return _kappa(self.lagged, self.power) if self.lags else 1.0


def pooled_inflation(correlations: Iterable[ResidualCorrelation]) -> float:
    """kappa of several accumulators pooled (1 when none has data)."""
    parts = [c for c in correlations if c.lags and c.power > 0]
    if not parts:
        return 1.0
    return _kappa(sum(c.lagged for c in parts), sum(c.power for c in parts))
