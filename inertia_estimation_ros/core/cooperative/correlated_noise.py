"""Covariance inflation for residuals that are correlated in time (filtered signals).

Least-squares covariances assume independent samples. Filtered and differentiated data
are correlated over tens of samples, so those covariances are too small by about the
factor kappa = 1 + 2 sum_l (1 - l / (L + 1)) rho_l (Bartlett-weighted autocorrelation
rho_l of the whitened residuals, lags l = 1..L). ``ResidualCorrelation`` accumulates it
in constant memory, one sample or one batch at a time, and several of them pool
(``pooled_inflation``); ``variance_inflation`` does it for one batch.

``BlockSums`` estimates the same factor by batch means, from the stacked measurement
vectors x_k themselves rather than from residuals: residuals r_k = P x_k are linear in
x_k, so the sums of consecutive blocks of x_k give the variance of the residuals' block
sums for any residual map P, the final fit's included. A solve from scratch then gets the
inflation of its own residuals whatever fits came before it (issue 15: the residual
accumulators fed by the previous fit's residuals were empty when no fit preceded the
final one, and the grasp frames of ``test_graph`` were stated with sigma 4-7x too small).
"""

from __future__ import annotations

import copy
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


BLOCK_SECONDS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # batch-means block lengths
MIN_BLOCKS = 8  # a block length counts once this many blocks are complete


class BlockSums:
    """Second moments of the sums of consecutive blocks of stacked vectors x_k (batch means).

    For each block length L (1, and ``BLOCK_SECONDS`` at ``rate_hz``) it keeps
    S_L = sum_b s_b s_b^T of the completed blocks' sums s_b = sum_{k in b} x_k, and the
    running partial sums. Constant memory; several pool (``absorb``).
    """

    def __init__(self, dim: int, rate_hz: float, seconds: Iterable[float] = BLOCK_SECONDS) -> None:
        self.lengths = np.array(sorted({1} | {max(2, round(t * rate_hz)) for t in seconds}))
        self.partial = np.zeros((len(self.lengths), dim))
        self.filled = np.zeros(len(self.lengths), dtype=int)
        self.S = np.zeros((len(self.lengths), dim, dim))
        self.blocks = np.zeros(len(self.lengths), dtype=int)

    def add(self, x: np.ndarray, product: np.ndarray | None = None) -> None:
        """One stacked vector (weighted as in the moments it accompanies); ``product``: its
        outer product if the caller has it (the block of length 1's sum is x)."""
        self.partial += x
        self.filled += 1
        for k in np.flatnonzero(self.filled == self.lengths):
            if k == 0 and product is not None:
                self.S[0] += product
            else:
                self.S[k] += np.outer(self.partial[k], self.partial[k])
            self.blocks[k] += 1
            self.partial[k] = 0.0
            self.filled[k] = 0

    def add_rows(self, X: np.ndarray, product: np.ndarray | None = None) -> None:
        """``add`` for consecutive stacked vectors X (Q, dim), oldest first; ``product``:
        X^T X if the caller has it (the blocks of length 1 are the rows themselves)."""
        if len(X) <= 1:
            if len(X):
                self.add(X[0], product)
            return
        q, total, lengths = len(X), None, self.lengths.tolist()
        for k, (length, filled) in enumerate(zip(lengths, self.filled.tolist(), strict=True)):
            if filled + q < length:  # no block completes: all rows into the open one
                total = X.sum(axis=0) if total is None else total
                self.partial[k] += total
                self.filled[k] = filled + q
            elif length == 1:  # the partial block of length 1 is empty: the rows are the sums
                self.S[k] += X.T @ X if product is None else product
                self.blocks[k] += q
            else:
                self._complete(k, X, length, filled)

    def _complete(self, k: int, X: np.ndarray, length: int, filled: int) -> None:
        """The blocks of length ``length`` (index ``k``) that rows X complete, after
        ``filled`` rows of the open one: one sum per block (the open one's partial sum added
        to the first), the rows after the last block the new open one."""
        first = length - filled - 1  # the last row of the first block completed
        end = first + (len(X) - 1 - first) // length * length + 1  # after the last block's
        sums = np.add.reduceat(X[:end], [0, *range(first + 1, end, length)], axis=0)
        sums[0] += self.partial[k]
        self.S[k] += sums.T @ sums
        self.blocks[k] += len(sums)
        self.partial[k] = X[end:].sum(axis=0)
        self.filled[k] = len(X) - end

    @classmethod
    def pooled(cls, accumulators: Iterable[BlockSums]) -> BlockSums:
        """One accumulator with the completed blocks of several of the same lengths (``absorb``):
        residuals through one map P need its second moments projected once."""
        accumulators = list(accumulators)
        out = copy.copy(accumulators[0])
        out.S = np.sum([a.S for a in accumulators], axis=0)
        out.blocks = np.sum([a.blocks for a in accumulators], axis=0)
        out.partial, out.filled = np.zeros_like(out.partial), np.zeros_like(out.filled)
        return out

    def absorb(self, other: BlockSums) -> None:
        """Pool another accumulator's completed blocks (its partial blocks are dropped), in
        place (as every ``add``)."""
        self.S += other.S
        self.blocks += other.blocks

    def inflation(self, P: np.ndarray) -> float:
        """kappa of the residuals r_k = P x_k: the largest over the block lengths L with at
        least ``MIN_BLOCKS`` blocks of var(block sum) / (L var(r_k)); 1 when none has."""
        return pooled_block_inflation([(self, P)])


def pooled_block_inflation(parts: Iterable[tuple[BlockSums, np.ndarray]]) -> float:
    """``BlockSums.inflation`` pooled over accumulators, each with its residual map P
    (whitened, so that every part's residuals count alike); 1 when none has data."""
    parts = list(parts)
    if not parts:
        return 1.0
    lengths = parts[0][0].lengths
    power = sum(np.einsum("ab,lbc,ac->l", P, sums.S, P) for sums, P in parts)
    blocks = sum(sums.blocks for sums, _ in parts)
    if blocks[0] == 0 or power[0] <= 0:
        return 1.0
    ratios = (power / np.maximum(blocks, 1)) / (lengths * power[0] / blocks[0])
    return float(max([1.0, *ratios[(blocks >= MIN_BLOCKS) & (lengths > 1)]]))


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
        if len(R) == 1:
            self.add(R[0])
            return
        self._ready(R.shape[1])
        recent = np.roll(self._buffer, -self._position, axis=0)[self.lags - self._filled :]
        X = np.vstack([recent, R])
        start = len(recent)
        kept = min(start, self.lags)  # lags 1..kept: every new residual has its partner
        if kept:  # one product for them all, each lag's sum as ``np.sum`` sums it
            partners = X[(start - np.arange(1, kept + 1))[:, None] + np.arange(len(R))]
            self.lagged[:kept] += (partners * X[start:]).reshape(kept, -1).sum(axis=1)
        for lag in range(kept + 1, self.lags + 1):
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
