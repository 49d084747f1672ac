"""The project's identification method: a shape-based Bayesian prior, bias-compensated
noise-weighted data, and the consistency and realizability LMIs.

It combines the estimators of this package:

1. **Data (WLS + TLS idea).** The full Newton-Euler rows (``core.regressor``), each
   wrench component weighted by its noise: the sensor noise plus what the errors of
   the measured twist derivative dV propagate through the model (errors in
   variables). White errors in dV also bias least squares (they inflate Y^T Y, which
   shrinks the inertia); with ``bias_compensation`` their expected contribution is
   subtracted from the normal equations, as TLS does implicitly (Kubus et al.). Turn
   it off for filtered, lagging signals (e.g. Kalman-filtered accelerations), whose
   errors are not independent of the motion.
2. **Prior (PMD's shape knowledge, as a distribution).** The object fills ``shape``;
   its density varies about the uniform one independently in cells of size ``cell``
   by a relative spread s. Over the cells' point masses (paper 001's discretization)
   this is a Gaussian prior on theta: mean m theta_uniform, covariance
   s^2 m^2 Phi Phi^T / n^2. The data fix m and c; the prior fills in the inertia the
   motion did not excite, as the most uniform body with those m and c.
3. **Constraints (paper 003).** The MAP estimate is the SDP of ``sdp``: J >= margin
   (Thm. 3) and J realizable on the shape (Thm. 4, Cor. 2, moment relaxations).

After a first solve, each component's weight is re-estimated from its residuals
(``refinements``), so that unmodelled errors lower the trust in the data.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigvalsh

from ..inertial import InertialParameters, meets_bound
from ..regressor import body_regressor
from .least_squares import RegressionData, check_gravity_load, checked_samples, gravity_load
from .point_masses import point_mass_basis
from .sdp import ConsistentIdentification
from .shapes import Shape, ShapeUnion

PMD_CELL = (1.0 / 0.04e6) ** (1.0 / 3.0)  # 0.04 points per cm^3, paper 001 Sec. VI [m]
# Y(0, e_j, 0): how a unit error in component j of dV enters the regressor (Y is affine in dV).
_DV_DIRECTIONS = np.stack([body_regressor(np.zeros(6), e) for e in np.eye(6)])


class ShapePriorIdentification:
    """MAP inertial parameters of one object of known shape, streaming (``add``, ``solve``)."""

    def __init__(
        self,
        shape: Shape | ShapeUnion,
        wrench_std: np.ndarray,
        twist_derivative_std: np.ndarray | None = None,
        *,
        bias_compensation: bool = True,
        density_spread: float = 0.5,
        cell: float = PMD_CELL,
        margin: float | None = None,
        realizable: bool = True,
    ) -> None:
        """``wrench_std`` (6,): noise of (moment, force), 0 for noise-free data;
        ``twist_derivative_std`` (6,): errors of dV = (alpha, dv); ``density_spread`` s
        and ``cell`` [m] set the prior; ``margin`` is ``ConsistentIdentification``'s."""
        self.wrench_std = _positive_vector(wrench_std, "wrench_std", allow_zero=True)
        self.twist_derivative_std = (
            np.zeros(6)
            if twist_derivative_std is None
            else _positive_vector(twist_derivative_std, "twist_derivative_std", allow_zero=True)
        )
        self.bias_compensation = bias_compensation
        self.density_spread = density_spread
        cells = shape.grid(cell)
        fine = shape.grid(cell / 4)
        if len(cells) < 4:
            raise ValueError(f"cell {cell} m is too coarse for the shape: use a smaller cell")
        Phi = point_mass_basis(cells)
        self._theta_uniform = point_mass_basis(fine).mean(axis=1)  # unit mass, uniform fill
        self._prior_covariance = Phi @ Phi.T / len(cells) ** 2  # unit mass, unit spread
        self.sdp = ConsistentIdentification(margin=margin, shapes=shape if realizable else None)
        self.reset()

    def reset(self) -> None:
        """Forget the data (the compiled problem and the prior's shape are kept)."""
        self.components = [RegressionData() for _ in range(6)]  # one per wrench component
        self._gravity_load_sum = 0.0
        self.n_samples = 0

    def add(self, V: np.ndarray, dV: np.ndarray, g: np.ndarray, F: np.ndarray) -> None:
        """Add samples (K, 6) / (K, 3): body twist, its derivative, gravity and the wrench
        on the object, all in the frame of the parameters."""
        V, dV, g, F = checked_samples(V, dV, g, F)
        load = float(np.sum(gravity_load(g, F)))
        Y = body_regressor(V, dV, g)
        for c, data in enumerate(self.components):
            data.add(Y[:, c], F[:, c])
        self._gravity_load_sum += load
        self.n_samples += len(V)

    def prior(self) -> tuple[InertialParameters, np.ndarray]:
        """(mean, covariance 10x10) of the shape prior, scaled by the gravity-load mass."""
        mass = self._gravity_load_sum / max(self.n_samples, 1)
        check_gravity_load(mass)
        covariance = (self.density_spread * mass) ** 2 * self._prior_covariance
        return InertialParameters(mass * self._theta_uniform), covariance

    def solve(self, refinements: int = 1) -> InertialParameters:
        """The MAP estimate; raises ConsistencyError if no solver certifies it.

        ``refinements`` unconstrained passes first re-estimate each wrench component's
        noise from the residuals of the data's own fit (not the prior's misfit); the last
        pass is the SDP.
        """
        if self.n_samples == 0:
            raise ValueError("no data: add samples first")
        prior, covariance = self.prior()
        if not meets_bound(prior.pseudo_inertia, self.sdp.margin_bound(prior)):
            raise ValueError(
                f"the margin exceeds the smallest pseudo-inertia eigenvalue of the uniform"
                f" body ({prior.consistency_margin():.1e}): lower the margin"
            )
        M = np.linalg.inv(covariance + 1e-12 * np.trace(covariance) * np.eye(10))
        u = _DV_DIRECTIONS @ prior.vec  # (6 error directions, 6 components)
        variance = np.maximum(
            self.wrench_std**2 + self.twist_derivative_std**2 @ u**2, self._variance_floor()
        )
        dof = max(self.n_samples - 10 / 6, 1.0)
        for _ in range(refinements):
            # The residual of the data's own fit (a vanishing prior): the prior's misfit
            # is not noise, and counting it would make a wrong prior ever more trusted.
            theta = self._data_fit(variance)
            residual = np.array([c.residual_norm(theta) ** 2 for c in self.components])
            variance = np.maximum(variance, residual / dof)
        L, b = self._posterior(prior, M, variance)
        return self.sdp.solve(RegressionData.from_rows(L.T, np.linalg.solve(L, b))).params

    def _variance_floor(self) -> np.ndarray:
        """(1e-6 RMS of each wrench component)^2: noise-free data (std 0) need no made-up
        noise, and the data then outweigh the prior wherever they determine theta."""
        rms2 = np.array([c.column_norms()[-1] ** 2 / max(c.n_rows, 1) for c in self.components])
        return np.maximum(1e-12 * rms2, 1e-300)

    def _data_fit(self, variance: np.ndarray) -> np.ndarray:
        """theta of the noise-weighted data alone (least squares, minimum norm)."""
        weights = 1.0 / np.sqrt(variance)
        R = np.vstack([w * c.R for w, c in zip(weights, self.components, strict=True)])
        theta, *_ = np.linalg.lstsq(R[:, :-1], R[:, -1], rcond=None)
        return theta

    def _posterior(
        self, prior: InertialParameters, M: np.ndarray, variance: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(L, b) with the negative log posterior theta^T L L^T theta - 2 b^T theta + const."""
        weights = 1.0 / np.sqrt(variance)
        R = np.linalg.qr(
            np.vstack([w * c.R for w, c in zip(weights, self.components, strict=True)]), mode="r"
        )
        A = R[:, :-1].T @ R[:, :-1] + M
        b = R[:, :-1].T @ R[:, -1] + M @ prior.vec
        if self.bias_compensation:
            B = self.n_samples * np.einsum(
                "j,jci,c,jck->ik",
                self.twist_derivative_std**2,
                _DV_DIRECTIONS,
                weights**2,
                _DV_DIRECTIONS,
            )
            # Subtract at most 90 % of what keeps A - B positive definite.
            largest = eigvalsh(B, A)[-1]
            A = A - min(1.0, 0.9 / largest) * B if largest > 0 else A
        return np.linalg.cholesky(A), b


def _positive_vector(values: np.ndarray, name: str, allow_zero: bool = False) -> np.ndarray:
    values = np.asarray(values, dtype=float).reshape(6)
    if (
        not np.all(np.isfinite(values))
        or np.any(values < 0)
        or (not allow_zero and np.any(values == 0))
    ):
        raise ValueError(
            f"{name} must be 6 finite {'non-negative' if allow_zero else 'positive'} values"
        )
    return values
