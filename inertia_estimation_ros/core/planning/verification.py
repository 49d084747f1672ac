"""Worst-case balancing verification over every realizable inertia (paper 004, Sec. VI, Eq. 13).

For one object, row h_i of the face form and one instant (regressor Y):

    maximize  h_i^T Y theta   over theta with m = 1, CoM in C, and theta realizable on K,

with realizability relaxed by moments (``Shape.realizability_constraints``, order 2 for
boxes and cylinders). The optimum upper-bounds the worst violation; <= 0 certifies the
instant. The SDP is built once with a cvxpy Parameter for c = Y^T h_i (DPP) and re-solved.

Along a trajectory most (instant, row) pairs are far from binding. ``ThetaBounds``
(the interval hull of the feasible theta, 18 SDPs once per object) bounds every
h_i^T Y theta from above in closed form; SDPs are solved only where that bound could
still exceed the best SDP value found (branch and bound), so the reported maximum is
the SDP maximum over all pairs, not an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from ..consistency import solve_with_fallback, theta_of
from .objects import BalancedObject


@dataclass(frozen=True)
class Verification:
    """The largest worst-case value of any row at any instant (<= 0: certified)."""

    max_violation: float
    time: float  # when it occurs [s]
    row: int  # which row of H
    certified: bool
    sdp_solves: int
    pairs: int  # (instant, row) pairs covered
    exact: bool  # False: the solve budget ran out and max_violation is an upper bound
    solved_max: float = -np.inf  # the largest SDP value solved: max_violation >= it


class WorstCaseVerifier:
    """Eq. 13 for one object, built once (cvxpy Parameter), re-solved per (instant, row)."""

    def __init__(self, obj: BalancedObject, H: np.ndarray) -> None:
        self.obj, self.H = obj, np.asarray(H, dtype=float)
        J = cp.Variable((4, 4), symmetric=True)
        self._theta = theta_of(J)
        h = J[:3, 3]
        self._constraints = [
            J[3, 3] == 1.0,
            h >= obj.com_lo,
            h <= obj.com_hi,
            *obj.shape.realizability_constraints(J),
        ]
        self._c = cp.Parameter(10)
        self._problem = cp.Problem(cp.Maximize(self._c @ self._theta), self._constraints)
        self._lo, self._hi = self._theta_bounds()

    def worst_case(self, c: np.ndarray) -> float:
        """max c . theta over the relaxed realizable set (one SDP)."""
        self._c.value = np.asarray(c, dtype=float)
        solve_with_fallback(self._problem, lambda: None)
        return float(self._problem.value)

    def _theta_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Interval hull of the feasible theta: 2 SDPs per coordinate (m = 1 is fixed)."""
        lo, hi = np.ones(10), np.ones(10)
        for k in range(1, 10):
            e = np.eye(10)[k]
            hi[k] = self.worst_case(e)
            lo[k] = -self.worst_case(-e)
        return lo, hi

    def upper_bounds(self, C: np.ndarray) -> np.ndarray:
        """max over the interval hull of c . theta for rows c of C (>= the SDP value)."""
        return np.maximum(C * self._lo, C * self._hi).sum(axis=-1) + 1e-9 * np.abs(C).sum(axis=-1)

    def verify(self, times: np.ndarray, Y: np.ndarray, max_solves: int = 400) -> Verification:
        """The SDP maximum of h_i^T Y(t) theta over all instants and rows (branch and bound).

        Y: (n_t, 6, 10) regressors in {e}. If ``max_solves`` runs out first, the returned
        value is the (still valid) upper bound of the best remaining pair.
        """
        C = np.einsum("hw,twp->thp", self.H, Y).reshape(-1, 10)
        bounds = self.upper_bounds(C)
        order = np.argsort(-bounds)
        best, best_pair, solves, exact = -np.inf, int(order[0]), 0, True
        solved = -np.inf
        for pair in order:
            if bounds[pair] <= best:
                break
            if solves == max_solves:
                best, best_pair, exact = float(bounds[pair]), int(pair), False
                break
            value = self.worst_case(C[pair])
            solves += 1
            if value > best:
                best, best_pair, solved = value, int(pair), value
        t_index, row = divmod(best_pair, len(self.H))
        return Verification(
            max_violation=float(best),
            time=float(times[t_index]),
            row=int(row),
            certified=bool(best <= 0.0),
            sdp_solves=solves,
            pairs=len(C),
            exact=exact,
            solved_max=float(solved),
        )
