"""Force distribution of paper 002: nominal (eq. 13) and human-aware by gradient (eqs. 17-24).

Both return the stacked desired tension vectors on the payload mu_des (3n,); robot k is
asked to sit at p_att,k + l_k mu_k/|mu_k| (eq. 16-17).
"""

from __future__ import annotations

import numpy as np

from .allocation import CableAllocation

_TINY = 1e-9  # [N] tension norms below this have no direction


def nominal_distribution(
    allocation: CableAllocation,
    R_L: np.ndarray,
    wrench: np.ndarray,
    min_vertical_tension: float | None = None,
) -> np.ndarray:
    """mu_bar = P^+ [F_L,des; M_L,des] (eq. 13), the minimum-norm tensions.

    A cable can only pull: with ``min_vertical_tension`` set, each vertical component is
    raised to at least that value (notes pitfall 1; RotorTM clamps it at 0), which changes
    the wrench only when P^+ asked a cable to push."""
    mu = allocation.solve(R_L, wrench)
    if min_vertical_tension is not None:
        mu[2::3] = np.maximum(mu[2::3], min_vertical_tension)
    return mu


def desired_robot_positions(attach: np.ndarray, mu: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """x_k = p_att,k + l_k mu_k / |mu_k| (eqs. 16-17), shape (n, 3)."""
    mu = np.asarray(mu, dtype=float).reshape(-1, 3)
    norms = np.maximum(np.linalg.norm(mu, axis=1, keepdims=True), _TINY)
    return attach + np.asarray(lengths)[:, None] * mu / norms


def distance_gradient(
    mu: np.ndarray, attach: np.ndarray, lengths: np.ndarray, p_O: np.ndarray
) -> np.ndarray:
    """d w / d mu_tilde (eqs. 19-20, erratum 2: the sum runs over the n robots), (3n,):
    -2 l_k (I - xi xi^T)(p_O - p_att,k) / |mu_k| per robot, exact (notes section 2.6.1)."""
    mu = np.asarray(mu, dtype=float).reshape(-1, 3)
    norms = np.maximum(np.linalg.norm(mu, axis=1, keepdims=True), _TINY)
    xi = mu / norms
    r = p_O - attach
    tangential = r - np.sum(r * xi, axis=1, keepdims=True) * xi
    return (-2.0 * np.asarray(lengths)[:, None] * tangential / norms).ravel()


class GradientDistribution:
    """Human-aware distribution by gradient projection (eqs. 17-24).

    Each ``update`` performs one step of the fixed-point iteration of the notes (pitfall 4):
    the gradient is evaluated at the previous modifier mu_tilde, weighted by
    Q_k = a exp(-b |p_O - x_k|) (eq. 21), projected with B (eq. 23, erratum 3: the decision
    variable is mu_tilde) and *replaces* mu_tilde (eq. 24). Small a converges; a = 5, b = 2
    on the RotorTM triangle cycles (notes section 4.6)."""

    def __init__(self, allocation: CableAllocation, lengths: np.ndarray, a: float, b: float):
        self.allocation, self.lengths = allocation, np.asarray(lengths, dtype=float)
        self.a, self.b = float(a), float(b)
        self.mu_tilde = np.zeros(3 * allocation.n)

    def update(
        self,
        R_L: np.ndarray,
        attach: np.ndarray,
        mu_bar: np.ndarray,
        p_O: np.ndarray | None,
        robot_x: np.ndarray | None = None,
    ) -> np.ndarray:
        """mu_des (eq. 24). ``robot_x`` (n, 3): measured robot positions for Q (eq. 21); by
        default the positions the previous tensions ask for (eq. 16)."""
        if p_O is None:
            self.mu_tilde = np.zeros_like(self.mu_tilde)
            return np.array(mu_bar, dtype=float)
        mu_prev = mu_bar + self.mu_tilde
        if robot_x is None:
            robot_x = desired_robot_positions(attach, mu_prev, self.lengths)
        Q = self.a * np.exp(-self.b * np.linalg.norm(p_O - robot_x, axis=1))
        mu0 = np.repeat(Q, 3) * distance_gradient(mu_prev, attach, self.lengths, p_O)  # eq. 18
        self.mu_tilde = self.allocation.project(R_L, mu0)  # eq. 23, O(n)
        return mu_bar + self.mu_tilde
