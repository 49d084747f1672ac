"""Payload identification in flight (beyond paper 002): with no one touching the payload, the
cable tension vectors are wrenches at known attach points, so the team identifies the
payload's mass, CoM and inertia with the package's rigid-body regressor and its physically
consistent identification (``core.regressor``, ``core.identification``).

Frame {b} is the payload's mocap frame L (the attach points rho_k are given in it). Per sample
the wrench the cables apply about its origin, in {b}, moment first (``core/spatial.py``):
``(sum rho_k x mu_k^L, sum mu_k^L)`` with mu_k^L = R_L^T (-|mu_k| xi_k), equals
Y(V, dV, g) theta (``body_regressor``) for the body twist V = (Omega, R^T v), its derivative
dV = (Omega_dot, R^T a - Omega x R^T v) and gravity g = R^T (0, 0, -g). Each sample's rows are
whitened by the tensions' covariance (the UKFs'); the motion is taken as exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..identification import ConsistentIdentification, RegressionData
from ..inertial import InertialParameters
from ..regressor import body_regressor
from ..spatial import skew
from .allocation import E3, GRAVITY
from .human_wrench import tension_vector_covariance


@dataclass(frozen=True)
class IdentifiedPayload:
    """theta (``InertialParameters`` in {b}) and its 10x10 covariance (the inverse Fisher
    information of the whitened rows), and how many samples it rests on."""

    params: InertialParameters
    covariance: np.ndarray
    samples: int

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.diag(self.covariance))


class InFlightIdentification:
    """Accumulates no-contact samples of the team; ``solve`` identifies the payload or raises
    ``ExcitationError`` naming the parameters the motion did not excite.

    ``direction_floor`` [rad] is added to each cable direction's standard deviation: the UKFs
    state about 1e-3 rad, less than their error against MuJoCo's cables, and rows weighted by
    it made a hovering payload's mass 12 % light (0.244 for 0.278 kg); with 0.01 rad, 0.278."""

    def __init__(self, rho_L: np.ndarray, direction_floor: float = 0.01):
        self.rho_L = np.asarray(rho_L, dtype=float)
        self.direction_floor = float(direction_floor)
        self.data = RegressionData()
        self._map = np.vstack([np.hstack(list(skew(self.rho_L))), np.tile(np.eye(3), len(rho_L))])

    def add(
        self,
        R_L: np.ndarray,
        tension: np.ndarray,
        xi: np.ndarray,
        cable_covariances: np.ndarray,
        v: np.ndarray,
        accel: np.ndarray,
        Omega: np.ndarray,
        Omega_dot: np.ndarray,
    ) -> None:
        """One sample: the payload's attitude, the robots' tensions (n,), cable directions
        (n, 3) and (xi, mu) covariances (n, 4, 4), its velocity and acceleration (in I) and
        body rate and angular acceleration (in L)."""
        blocks = np.kron(np.eye(len(self.rho_L)), R_L.T)  # tension vectors I -> L
        mu_L = blocks @ (-(np.asarray(tension)[:, None] * np.asarray(xi))).ravel()
        wrench = self._map @ mu_L
        cable_covariances = np.array(cable_covariances, dtype=float)
        cable_covariances[:, :3, :3] += self.direction_floor**2 * np.eye(3)
        covariance = self._map @ blocks @ tension_vector_covariance(tension, xi, cable_covariances)
        covariance = covariance @ blocks.T @ self._map.T
        v_b = R_L.T @ v
        V = np.concatenate([Omega, v_b])
        dV = np.concatenate([Omega_dot, R_L.T @ accel - np.cross(Omega, v_b)])
        Y = body_regressor(V, dV, R_L.T @ (-GRAVITY * E3))
        whitening = np.linalg.inv(np.linalg.cholesky(covariance))
        self.data.add(Y, wrench, whitening)

    def solve(self) -> IdentifiedPayload:
        """The consistent optimum (paper 003's SDP, Clarabel with SCS fallback) and its
        covariance; ExcitationError names what the motion did not excite."""
        self.data.check_excitation(max_condition=1e8)
        result = ConsistentIdentification(1).solve(self.data)
        covariance = np.linalg.inv(self.data.information)
        return IdentifiedPayload(result.params, covariance, self.data.n_rows // 6)
