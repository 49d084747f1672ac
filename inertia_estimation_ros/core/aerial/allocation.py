"""The cable-force allocation of paper 002 (eqs. 3-4, 13, 22-23, 39).

P maps the stacked tension vectors on the payload to its wrench ``[F (in I); M (in L)]``:
P = diag(R_L, I) P_b blkdiag(R_L^T, ...) with the constant body part
P_b = [I ... I; [rho_1] ... [rho_n]] (notes section 2.2). P_b^+, an orthonormal basis N_b of
its null space and the projector are computed once, so the world-frame basis
N = blkdiag(R_L, ...) N_b is continuous in time (notes pitfall 3).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import block_diag

from ..spatial import skew

GRAVITY = 9.81  # [m/s^2], the paper's g
E3 = np.array([0.0, 0.0, 1.0])


class AllocationError(ValueError):
    """The attach points cannot carry an arbitrary payload wrench (rank P < 6)."""


def edge_null_vectors(rho_L: np.ndarray) -> np.ndarray:
    """(3n, n(n-1)/2) internal 'stretching' forces +e_ij / -e_ij along each attach-point pair
    (notes section 2.2): each lies in the null space of P_b; for n = 3 they span it."""
    rho_L = np.asarray(rho_L, dtype=float)
    n = len(rho_L)
    columns = []
    for i in range(n):
        for j in range(i + 1, n):
            e = rho_L[i] - rho_L[j]
            column = np.zeros(3 * n)
            column[3 * i : 3 * i + 3] = e / np.linalg.norm(e)
            column[3 * j : 3 * j + 3] = -e / np.linalg.norm(e)
            columns.append(column)
    return np.array(columns).T


def _orthonormal_null_basis(P_b: np.ndarray, rho_L: np.ndarray) -> np.ndarray:
    """N_b: for n = 3 the orthonormalised edge vectors (closed form); otherwise from the SVD."""
    if len(rho_L) == 3:
        Q, _ = np.linalg.qr(edge_null_vectors(rho_L))
        return Q
    _, _, Vt = np.linalg.svd(P_b)
    return Vt[6:].T


class CableAllocation:
    """P, P^+, N and B for attach points rho_k in the payload frame L (shape (n, 3))."""

    def __init__(self, rho_L: np.ndarray):
        rho_L = np.asarray(rho_L, dtype=float)
        if rho_L.ndim != 2 or rho_L.shape[1] != 3:
            raise AllocationError(f"attach points must have shape (n, 3), got {rho_L.shape}")
        self.rho_L = rho_L
        self.n = len(rho_L)
        self.P_b = np.vstack([np.hstack([np.eye(3)] * self.n), np.hstack(list(skew(rho_L)))])
        rank = np.linalg.matrix_rank(self.P_b, tol=1e-9)
        if rank < 6:
            raise AllocationError(
                f"the allocation matrix P of {self.n} cables has rank {rank} < 6: the team "
                "cannot control the payload's six degrees of freedom; use n >= 3 cables whose "
                "attach points are not collinear"
            )
        self.P_b_pinv = np.linalg.pinv(self.P_b)
        self.N_b = _orthonormal_null_basis(self.P_b, rho_L)
        self.B_b = np.eye(3 * self.n) - self.P_b_pinv @ self.P_b

    def _stacked(self, R_L: np.ndarray) -> np.ndarray:
        return block_diag(*[R_L] * self.n)

    def matrix(self, R_L: np.ndarray) -> np.ndarray:
        """P (6, 3n) of eq. 4: diag(R_L, I) P_b blkdiag(R_L^T)."""
        return block_diag(R_L, np.eye(3)) @ self.P_b @ self._stacked(R_L).T

    def pseudo_inverse(self, R_L: np.ndarray) -> np.ndarray:
        """P^+ (3n, 6) = blkdiag(R_L) P_b^+ diag(R_L^T, I) (eq. 13)."""
        return self._stacked(R_L) @ self.P_b_pinv @ block_diag(R_L.T, np.eye(3))

    def null_basis(self, R_L: np.ndarray) -> np.ndarray:
        """N (3n, 3n-6): an orthonormal basis of the null space of P, continuous in R_L."""
        return self._stacked(R_L) @ self.N_b

    def projector(self, R_L: np.ndarray) -> np.ndarray:
        """B = I - P^+ P (eq. 23), the orthogonal projector onto the null space of P."""
        stacked = self._stacked(R_L)
        return stacked @ self.B_b @ stacked.T

    def solve(self, R_L: np.ndarray, wrench: np.ndarray) -> np.ndarray:
        """P^+ w (3n,) in O(n), without forming P^+ (eq. 13)."""
        w = np.asarray(wrench, dtype=float)
        body = self.P_b_pinv @ np.concatenate([R_L.T @ w[:3], w[3:]])
        return (body.reshape(self.n, 3) @ R_L.T).ravel()

    def project(self, R_L: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """B mu = mu - P^+ P mu (eq. 23) in O(n): the part of mu that leaves the wrench alone."""
        return np.asarray(mu, dtype=float) - self.solve(R_L, self.wrench(R_L, mu))

    def wrench(self, R_L: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """P mu: the wrench [F (I); M (L)] of the stacked tension vectors mu (3n,) (eq. 3)."""
        mu_L = (np.asarray(mu, dtype=float).reshape(self.n, 3)) @ R_L
        return np.concatenate([R_L @ mu_L.sum(axis=0), np.cross(self.rho_L, mu_L).sum(axis=0)])

    def external_wrench(
        self, R_L: np.ndarray, tension: np.ndarray, xi: np.ndarray, payload_mass: float
    ) -> np.ndarray:
        """The quasi-static human wrench [F_H (I); M_H (L)] of eq. 39 (erratum 12: m = m_L)
        from tension magnitudes (n,) and cable directions xi (n, 3)."""
        mu = -(np.asarray(tension, dtype=float)[:, None] * np.asarray(xi, dtype=float))
        gravity = np.concatenate([payload_mass * GRAVITY * E3, np.zeros(3)])
        return -self.wrench(R_L, mu.ravel()) + gravity
