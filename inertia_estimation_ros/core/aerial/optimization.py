"""Human-aware distribution by optimisation (paper 002, eqs. 25-27), solved with SLSQP.

Decision vector c in R^(3n-6) (errata 4 and 6: Lambda is c, a = 3n - 6); N = blkdiag(R_L) N_b
is orthonormal and continuous, so warm starts stay meaningful (notes pitfall 3). The robot
positions are x_k(c) = p_att,k + l_k v_k/|v_k| with v_k = mu_bar_k + N_k c (eq. 26, erratum 5:
N_k is rows 3k..3k+2). Beyond the paper (notes section 3.6): each cable keeps a vertical
tension of at least ``min_vertical_tension`` and a norm of at most ``max_tension``. Every
constraint has its analytic Jacobian. A failed or infeasible solve falls back to the last
feasible c (or c = 0, the nominal distribution) and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from .allocation import CableAllocation

_TINY = 1e-9


@dataclass(frozen=True)
class OptimizationSettings:
    robot_distance: float = 0.75  # [m] r_r, between every robot pair
    head_distance: float = 0.75  # [m] h_r, between each robot and p_O
    min_vertical_tension: float = 0.1  # [N]
    max_tension: float = np.inf  # [N] per cable (thrust limit minus the robot's weight)
    max_iterations: int = 50
    tolerance: float = 1e-7
    feasibility_tolerance: float = 1e-4  # [m^2] or [N] slack accepted as feasible


@dataclass(frozen=True)
class OptimizationResult:
    mu_des: np.ndarray  # (3n,) eq. 27
    c: np.ndarray  # the null-space coordinates used
    solved: bool  # False: the fallback was used
    message: str
    iterations: int


class _Problem:
    """Cost, constraints and their Jacobians for one control step."""

    def __init__(
        self,
        N: np.ndarray,
        mu_bar: np.ndarray,
        attach: np.ndarray,
        lengths: np.ndarray,
        p_O: np.ndarray | None,
        settings: OptimizationSettings,
    ):
        self.N, self.mu_bar, self.attach, self.lengths = N, mu_bar, attach, lengths
        self.p_O, self.s = p_O, settings
        self.n = len(attach)
        self.N_k = N.reshape(self.n, 3, -1)
        self.pairs = [(i, j) for i in range(self.n) for j in range(i + 1, self.n)]

    def positions(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x_k(c) (n, 3) and their Jacobians dx_k/dc (n, 3, m) (notes pitfall 5)."""
        v = (self.mu_bar + self.N @ c).reshape(self.n, 3)
        norms = np.maximum(np.linalg.norm(v, axis=1), _TINY)
        u = v / norms[:, None]
        x = self.attach + self.lengths[:, None] * u
        proj = np.eye(3) - u[:, :, None] * u[:, None, :]
        J = (self.lengths / norms)[:, None, None] * proj @ self.N_k
        return x, J

    def cost(self, c: np.ndarray) -> tuple[float, np.ndarray]:
        r = self.mu_bar + self.N @ c
        return float(r @ r), 2.0 * self.N.T @ r

    def constraints(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values g(c) >= 0 and the Jacobian (rows)."""
        x, J = self.positions(c)
        values, rows = [], []
        for i, j in self.pairs:
            d = x[i] - x[j]
            values.append(d @ d - self.s.robot_distance**2)
            rows.append(2.0 * d @ (J[i] - J[j]))
        if self.p_O is not None:
            d = x - self.p_O
            values.extend(np.sum(d * d, axis=1) - self.s.head_distance**2)
            rows.extend(2.0 * np.einsum("ki,kim->km", d, J))
        v = (self.mu_bar + self.N @ c).reshape(self.n, 3)
        values.extend(v[:, 2] - self.s.min_vertical_tension)
        rows.extend(self.N_k[:, 2, :])
        if np.isfinite(self.s.max_tension):
            values.extend(self.s.max_tension**2 - np.sum(v * v, axis=1))
            rows.extend(-2.0 * np.einsum("ki,kim->km", v, self.N_k))
        return np.array(values), np.array(rows)

    def feasible(self, c: np.ndarray) -> bool:
        return bool(np.all(self.constraints(c)[0] >= -self.s.feasibility_tolerance))


class OptimizationDistribution:
    """Eqs. 25-27, warm-started from the previous step's c."""

    def __init__(
        self,
        allocation: CableAllocation,
        lengths: np.ndarray,
        settings: OptimizationSettings | None = None,
    ):
        self.allocation, self.lengths = allocation, np.asarray(lengths, dtype=float)
        self.settings = settings or OptimizationSettings()
        self.c = np.zeros(3 * allocation.n - 6)

    def update(
        self, R_L: np.ndarray, attach: np.ndarray, mu_bar: np.ndarray, p_O: np.ndarray | None
    ) -> OptimizationResult:
        problem = _Problem(
            self.allocation.null_basis(R_L), mu_bar, attach, self.lengths, p_O, self.settings
        )
        solution = minimize(
            problem.cost,
            self.c,
            jac=True,
            method="SLSQP",
            constraints=[
                {
                    "type": "ineq",
                    "fun": lambda c: problem.constraints(c)[0],
                    "jac": lambda c: problem.constraints(c)[1],
                }
            ],
            options={"maxiter": self.settings.max_iterations, "ftol": self.settings.tolerance},
        )
        solved = bool(solution.success) and problem.feasible(solution.x)
        if solved:
            self.c = solution.x
            message = "solved"
        else:
            keep = self.c if problem.feasible(self.c) else np.zeros_like(self.c)
            self.c = keep
            message = f"fallback to the last feasible solution: {solution.message}"
        return OptimizationResult(
            mu_bar + problem.N @ self.c, self.c.copy(), solved, message, int(solution.nit)
        )
