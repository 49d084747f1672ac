"""The human's wrench on the payload from the team's cable tensions (paper 002, eqs. 38-39),
with a covariance propagated from each robot's UKF covariance of (xi_k, mu_k).

The wrench is ``[F_H (in I); M_H (in L)]``, force first, as eq. 3 (see ``allocation``).
Quasi-static (eq. 39) drops the payload's inertia; dynamic (eq. 38, beyond the paper) keeps
m_L x_ddot_L and J_L Omega_dot_L and adds the gyroscopic term Omega x J_L Omega of eq. 5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import block_diag

from .allocation import AllocationError, CableAllocation


class UnobservableWrenchError(AllocationError):
    """The cables cannot balance an arbitrary human wrench, so it is not observable."""


@dataclass(frozen=True)
class HumanWrenchEstimate:
    """wrench [F_H (I, N); M_H (L, N m)] and its 6x6 covariance."""

    wrench: np.ndarray
    covariance: np.ndarray

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.diag(self.covariance))


def tension_vector_covariance(
    tension: np.ndarray, xi: np.ndarray, cable_covariances: np.ndarray
) -> np.ndarray:
    """Cov of mu = [-mu_k xi_k] (3n x 3n) from each robot's 4x4 covariance of (xi_k, mu_k),
    to first order: J_k = d(-mu_k xi_k)/d(xi_k, mu_k) = [-mu_k I, -xi_k]; robots independent."""
    blocks = []
    for mu, direction, C in zip(tension, xi, cable_covariances, strict=True):
        J = np.hstack([-mu * np.eye(3), -direction[:, None]])
        blocks.append(J @ C @ J.T)
    return block_diag(*blocks)


class HumanWrenchEstimator:
    """Team-level estimator for attach points rho_L (n, 3) in the payload frame L (at the
    CoM), payload mass m_L [kg] and inertia J_L (3x3, about the CoM, in L)."""

    def __init__(self, rho_L: np.ndarray, payload_mass: float, payload_inertia: np.ndarray):
        try:
            self.allocation = CableAllocation(rho_L)
        except AllocationError as error:
            raise UnobservableWrenchError(
                f"the human wrench is not observable from {len(np.atleast_2d(rho_L))} cables: "
                "their tensions cannot balance a moment about the line through the attach "
                "points, so that component reads as zero whatever the human does. Use n >= 3 "
                f"robots with non-collinear attach points ({error})"
            ) from error
        self.mass = float(payload_mass)
        self.inertia = np.asarray(payload_inertia, dtype=float)

    def _check_shapes(
        self, tension: np.ndarray, xi: np.ndarray, cable_covariances: np.ndarray
    ) -> None:
        n = self.allocation.n
        shapes = (np.shape(tension), np.shape(xi), np.shape(cable_covariances))
        if shapes != ((n,), (n, 3), (n, 4, 4)):
            raise ValueError(
                f"expected the {n} robots' tensions (n,), cable directions (n, 3) and (xi, mu) "
                f"covariances (n, 4, 4) in attach-point order, got shapes {shapes}"
            )

    def quasi_static(
        self, R_L: np.ndarray, tension: np.ndarray, xi: np.ndarray, cable_covariances: np.ndarray
    ) -> HumanWrenchEstimate:
        """Eq. 39: w_H = -P mu + [m_L g e3; 0] (erratum 12: m = m_L); tension (n,), xi (n, 3),
        cable_covariances (n, 4, 4) of (xi_k, mu_k)."""
        self._check_shapes(tension, xi, cable_covariances)
        wrench = self.allocation.external_wrench(R_L, tension, xi, self.mass)
        P = self.allocation.matrix(R_L)
        covariance = P @ tension_vector_covariance(tension, xi, cable_covariances) @ P.T
        return HumanWrenchEstimate(wrench, 0.5 * (covariance + covariance.T))

    def dynamic(
        self,
        R_L: np.ndarray,
        tension: np.ndarray,
        xi: np.ndarray,
        cable_covariances: np.ndarray,
        accel: np.ndarray,
        Omega: np.ndarray,
        Omega_dot: np.ndarray,
        accel_covariance: np.ndarray | None = None,
    ) -> HumanWrenchEstimate:
        """Eq. 38 with eq. 5's gyroscopic term: w_H = [m_L x_ddot_L; J_L Omega_dot + Omega x
        J_L Omega] + (eq. 39). accel = x_ddot_L (in I), Omega, Omega_dot in L;
        accel_covariance: 6x6 of (x_ddot_L, Omega_dot_L) (Omega's uncertainty is neglected)."""
        static = self.quasi_static(R_L, tension, xi, cable_covariances)
        J = self.inertia
        inertial = np.concatenate(
            [self.mass * np.asarray(accel), J @ Omega_dot + np.cross(Omega, J @ Omega)]
        )
        covariance = static.covariance
        if accel_covariance is not None:
            D = block_diag(self.mass * np.eye(3), J)
            covariance = covariance + D @ accel_covariance @ D.T
        return HumanWrenchEstimate(static.wrench + inertial, covariance)
