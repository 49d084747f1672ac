"""Covariance inflation for residuals that are correlated in time (filtered signals).

Least-squares covariances assume independent samples. Filtered and differentiated data
are correlated over tens of samples, so those covariances are too small by about the
factor kappa = 1 + 2 sum_l (1 - l / (L + 1)) rho_l (Bartlett-weighted autocorrelation
rho_l of the whitened residuals, lags l = 1..L). ``ResidualCorrelation`` accumulates it
one sample at a time in constant memory; ``variance_inflation`` does it for a batch.
"""

from __future__ import annotations

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
    """Running kappa over the last ``lags`` residual vectors (a ring buffer)."""

    def __init__(self, lags: int) -> None:
        self.lags = lags
        self.reset()

    def reset(self) -> None:
        self._buffer: np.ndarray | None = None
        self._position = 0
        self._filled = 0
        self._lagged = np.zeros(self.lags)
        self._power = 0.0

    def add(self, r: np.ndarray) -> None:
        if self.lags == 0:
            return
        r = np.asarray(r, dtype=float).ravel()
        if self._buffer is None or self._buffer.shape[1] != len(r):
            self._buffer = np.zeros((self.lags, len(r)))
            self._position, self._filled = 0, 0
        slots = np.arange(self._filled)
        lag_of_slot = (self._position - slots - 1) % self.lags  # 0 for the newest
        self._lagged[lag_of_slot] += self._buffer[slots] @ r
        self._power += float(r @ r)
        self._buffer[self._position] = r
        self._position = (self._position + 1) % self.lags
        self._filled = min(self._filled + 1, self.lags)

    def inflation(self) -> float:
        return _kappa(self._lagged, self._power) if self.lags else 1.0
