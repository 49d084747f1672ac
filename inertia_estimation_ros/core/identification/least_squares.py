"""Streaming regression data and the unconstrained estimators: OLS, WLS, TLS, recursive TLS.

Every estimator of this package is fed by the same regressor rows ``F = Y theta``
(``core.regressor``). ``RegressionData`` keeps them as the upper-triangular factor R
of the weighted, augmented matrix [W Y | W F]; then for every theta

    ||W (Y theta - F)||^2 = ||R [theta; -1]||^2,

so the batch and streaming forms are the same computation and the stored data do not
grow with the number of samples (notes ``lmi-physical-consistency.md`` Sec. 3.4: a
QR, not the normal equations, which would square the condition number).
"""

from __future__ import annotations

import numpy as np

from ..inertial import PARAMETER_NAMES, InertialParameters


class ExcitationError(ValueError):
    """The data do not determine the parameters: the motion did not excite them."""


class RegressionData:
    """Weighted regressor rows [W Y | W F], compressed to an R factor (at most n+1 rows)."""

    def __init__(self, n_params: int = 10) -> None:
        self.n_params = n_params
        self._R = np.zeros((0, n_params + 1))
        self.n_rows = 0

    @classmethod
    def from_rows(
        cls, Y: np.ndarray, F: np.ndarray, weight: np.ndarray | float | None = None
    ) -> RegressionData:
        """The data of stacked rows; see ``add``."""
        data = cls(np.shape(Y)[-1])
        data.add(Y, F, weight)
        return data

    @classmethod
    def from_gram(cls, gram: np.ndarray, n_rows: int) -> RegressionData:
        """The data whose [W Y | W F]^T [W Y | W F] is ``gram`` ((n+1) x (n+1), positive
        semidefinite), standing for ``n_rows`` rows (e.g. rows weighted after they were
        accumulated as moments)."""
        values, vectors = np.linalg.eigh(0.5 * (gram + gram.T))
        rows = np.sqrt(np.clip(values, 0.0, None))[:, None] * vectors.T
        data = cls(len(gram) - 1)
        data._R = np.linalg.qr(rows, mode="r")
        data.n_rows = int(n_rows)
        return data

    def add(self, Y: np.ndarray, F: np.ndarray, weight: np.ndarray | float | None = None) -> None:
        """Append rows F = Y theta.

        Y: (..., n_params) rows, e.g. (K, 6, 10) body regressors; F: the matching
        (...) measurements. weight W multiplies rows: a scalar, one value per row
        (shape of F, e.g. 1/sigma per wrench component), or a matrix per sample
        (shape (..., 6, 6), a whitening factor such as inv(chol(Sigma_F))).
        """
        Y = np.asarray(Y, dtype=float)
        F = np.asarray(F, dtype=float)
        if Y.shape[-1] != self.n_params or Y.shape[:-1] != F.shape:
            raise ValueError(f"Y {Y.shape} and F {F.shape} do not match {self.n_params} parameters")
        if weight is not None:
            W = np.asarray(weight, dtype=float)
            if W.ndim >= 2 and W.shape[-2:] == (F.shape[-1], F.shape[-1]) and W.ndim == F.ndim + 1:
                Y, F = W @ Y, np.einsum("...ij,...j->...i", W, F)
            else:
                W = np.broadcast_to(W, F.shape)
                Y, F = W[..., None] * Y, W * F
        rows = np.concatenate([Y.reshape(-1, self.n_params), F.reshape(-1, 1)], axis=1)
        if not np.all(np.isfinite(rows)):
            raise ValueError(
                "regressor rows or measurements contain NaN or Inf; drop those samples"
            )
        self._R = np.linalg.qr(np.vstack([self._R, rows]), mode="r")
        self.n_rows += rows.shape[0]

    @property
    def R(self) -> np.ndarray:
        """The (k, n+1) upper-triangular factor, k <= n + 1."""
        return self._R.copy()

    @property
    def information(self) -> np.ndarray:
        """Y^T W^T W Y (n x n): the Fisher information of theta for unit-variance rows."""
        R_theta = self._R[:, : self.n_params]
        return R_theta.T @ R_theta

    def residual_norm(self, theta: np.ndarray) -> float:
        """||W (Y theta - F)||."""
        return float(np.linalg.norm(self._R @ np.append(theta, -1.0)))

    def column_norms(self) -> np.ndarray:
        """||W Y e_j|| for each parameter j and ||W F|| last."""
        return np.linalg.norm(self._R, axis=0)

    def check_excitation(self, max_condition: float = 1e10) -> None:
        """Raise ExcitationError naming the least-excited parameters if Y^T W^T W Y is singular."""
        if self.n_rows < self.n_params:
            raise ExcitationError(
                f"only {self.n_rows} rows for {self.n_params} parameters: collect more samples"
            )
        norms = self.column_norms()[:-1]
        _, s, Vt = np.linalg.svd(self._R[:, : self.n_params] / np.where(norms > 0, norms, 1.0))
        s = np.concatenate([s, np.zeros(self.n_params - len(s))])
        weak = s <= s[0] / max_condition
        if not weak.any():
            return
        Vt = np.vstack([Vt, np.zeros((self.n_params - len(Vt), self.n_params))])
        share = np.linalg.norm(Vt[weak], axis=0)  # of each parameter in the undetermined space
        names = ", ".join(n for n, v in zip(PARAMETER_NAMES, share, strict=False) if v > 0.3)
        raise ExcitationError(
            f"the data do not determine {names} ({weak.sum()} undetermined directions):"
            " rotate the payload about all three axes and change its orientation to gravity, or"
            " use a constrained estimator with a prior"
        )


def checked_samples(
    V: np.ndarray, dV: np.ndarray, g: np.ndarray, F: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(V, dV, g, F) as finite (K, 6), (K, 6), (K, 3), (K, 6) arrays, or ValueError."""
    V, dV, g, F = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (V, dV, g, F))
    K = len(V)
    if V.shape != (K, 6) or dV.shape != (K, 6) or g.shape != (K, 3) or F.shape != (K, 6):
        raise ValueError(f"shapes V {V.shape}, dV {dV.shape}, g {g.shape}, F {F.shape} differ")
    if not all(np.all(np.isfinite(x)) for x in (V, dV, g, F)):
        raise ValueError("samples contain NaN or Inf: drop them before adding")
    return V, dV, g, F


def gravity_load(g: np.ndarray, F: np.ndarray) -> np.ndarray:
    """m_k = f_k . (-g_k) / |g_k|^2 per sample: the mass that the forces would hold up.

    Gravity dominates slow motion (paper 001, Sec. III-A), so this estimates the mass; a
    negative value means F is the load on the sensor, not the wrench on the object.
    """
    g, F = np.atleast_2d(g), np.atleast_2d(F)
    norm2 = np.sum(g**2, axis=1)
    if not np.all(norm2 > 0):
        raise ValueError("gravity must be given in the sensor frame for every sample")
    return -np.sum(F[:, 3:] * g, axis=1) / norm2


def check_gravity_load(mass: float) -> None:
    """Raise ValueError unless the forces hold a positive mass up against gravity."""
    if not mass > 0:
        raise ValueError(
            "the forces do not hold the object up against gravity: F must be the wrench"
            " applied ON the object (negate a sensor's load reading), with the payload's weight"
            " not tared away"
        )


def least_squares(data: RegressionData) -> InertialParameters:
    """OLS (Atkeson et al. 1986; paper 003 Eq. 4), or WLS when the rows were weighted.

    Raises ExcitationError if the regressor is rank deficient.
    """
    data.check_excitation()
    R = data.R
    theta, *_ = np.linalg.lstsq(R[:, :-1], R[:, -1], rcond=None)
    return InertialParameters(theta)


def total_least_squares(
    data: RegressionData, column_scale: np.ndarray | None = None
) -> InertialParameters:
    """TLS (Kubus et al. 2008): noise in Y and F alike, min ||[dY dF]||_F.

    theta is read off the right singular vector of the smallest singular value of
    [W Y D | W F s]. TLS is not scale invariant: by default D and s equilibrate the
    columns (unit norm), as Kubus et al. recommend.
    """
    data.check_excitation()
    norms = data.column_norms()
    scale = 1.0 / np.where(norms > 0, norms, 1.0) if column_scale is None else column_scale
    _, _, Vt = np.linalg.svd(data.R * scale)
    v = Vt[-1] * scale
    if abs(v[-1]) < 1e-12 * np.abs(v).max():
        raise ExcitationError("TLS is undetermined (the measurements are not in the model's range)")
    return InertialParameters(-v[:-1] / v[-1])


class RecursiveTotalLeastSquares:
    """Recursive TLS (Kubus et al. 2008): the TLS estimate after each new block of rows.

    Kubus et al. update an SVD of [Y | F] incrementally; here the QR factor of
    ``RegressionData`` is updated instead and the (n+1)x(n+1) SVD is recomputed, which
    gives the batch TLS answer exactly at a cost independent of the number of samples.
    """

    def __init__(self, column_scale: np.ndarray | None = None) -> None:
        self.data = RegressionData()
        self.column_scale = column_scale

    def update(
        self, Y: np.ndarray, F: np.ndarray, weight: np.ndarray | float | None = None
    ) -> InertialParameters | None:
        """Add rows; return the current estimate, or None while it is not determined yet."""
        self.data.add(Y, F, weight)
        try:
            return total_least_squares(self.data, self.column_scale)
        except ExcitationError:
            return None
