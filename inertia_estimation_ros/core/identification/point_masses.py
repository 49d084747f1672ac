"""Point-mass discretization (PMD) of paper 001 (Nadeau, Giamou, Kelly, Sec. IV).

The object's shape is voxelized into n points p_i (``shapes.voxel_centres``); the
unknowns are their masses m_i >= 0, so theta = Phi m is physically consistent by
construction. Problem 1 (Eq. 8), with Hadamard weights w = tanh(3 nu / c1) (Eq. 9)
of the dynamism nu (Eq. 4) per sample:

    min_m ||(1 - w) o (A_red m - b)|| + ||w o (A m - b)|| + lambda ||m||,  m >= 0

A = Y(V, dV, g) Phi is the full Newton-Euler model, A_red = Y(0, 0, g) Phi the
gravity-only (reduced) model. Both residuals are kept as ``RegressionData`` factors,
so the SOCP has n + 2 cones whatever the number of samples.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from ..consistency import solve_with_fallback
from ..inertial import InertialParameters
from ..regressor import body_regressor
from .least_squares import RegressionData, check_gravity_load, checked_samples, gravity_load


def point_mass_basis(points: np.ndarray) -> np.ndarray:
    """Phi (10 x n): column i is theta of a unit mass at points[i] (paper 001, Sec. III-B)."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    return np.stack([InertialParameters.from_point_masses([1.0], [p]).vec for p in points], axis=1)


def dynamism(V: np.ndarray, dV: np.ndarray, scales: tuple = (1.0, 1.0, 0.5)) -> np.ndarray:
    """nu = (|a|/n1)^2 + (|alpha|/n2)^2 + (|omega|/n3)^2 (paper 001, Eq. 4), per sample.

    a is the gravity-free acceleration of the frame's origin, alpha the angular
    acceleration and omega the angular velocity; paper values n = (1, 1, 0.5).
    """
    V, dV = np.atleast_2d(V), np.atleast_2d(dV)
    a = dV[:, 3:] + np.cross(V[:, :3], V[:, 3:])
    n1, n2, n3 = scales
    return (
        (np.linalg.norm(a, axis=1) / n1) ** 2
        + (np.linalg.norm(dV[:, :3], axis=1) / n2) ** 2
        + (np.linalg.norm(V[:, :3], axis=1) / n3) ** 2
    )


def full_model_weight(nu: np.ndarray, c1: float) -> np.ndarray:
    """w = tanh(3 nu / c1) (paper 001, Eq. 9): the share of the full model in the objective."""
    return np.tanh(3.0 * np.asarray(nu, dtype=float) / c1)


class PointMassDiscretization:
    """PMD, paper 001 Problem 1; streaming: ``add`` samples, ``solve`` any time.

    Paper values: c1 = 300 in simulation (5e3 to 25e3 on a real robot), lambda = 0.1,
    about 0.04 points per cm^3. ``component_weight`` (6,) optionally scales the
    wrench rows (m, f), e.g. 1/sigma; the paper leaves them unweighted.
    """

    def __init__(
        self,
        points: np.ndarray,
        c1: float = 300.0,
        regularization: float = 0.1,
        dynamism_scales: tuple = (1.0, 1.0, 0.5),
        component_weight: np.ndarray | None = None,
    ) -> None:
        self.points = np.asarray(points, dtype=float).reshape(-1, 3)
        P = np.hstack([self.points, np.ones((len(self.points), 1))])
        if len(self.points) < 4 or np.linalg.matrix_rank(P) < 4:
            raise ValueError("PMD needs at least 4 non-coplanar points (paper 001, App. A)")
        self.c1, self.dynamism_scales = c1, dynamism_scales
        self.component_weight = component_weight
        self.reduced = RegressionData()
        self.full = RegressionData()
        self._gravity_load_sum = 0.0
        self.Phi = point_mass_basis(self.points)
        self._masses = cp.Variable(len(self.points), nonneg=True)
        self._R_reduced = cp.Parameter((11, 11))
        self._R_full = cp.Parameter((11, 11))
        self._lambda = cp.Parameter(nonneg=True, value=regularization)
        theta_1 = cp.hstack([self.Phi @ self._masses, -1.0])
        objective = (
            cp.norm(self._R_reduced @ theta_1)
            + cp.norm(self._R_full @ theta_1)
            + self._lambda * cp.norm(self._masses)
        )
        self.problem = cp.Problem(cp.Minimize(objective))

    def add(self, V: np.ndarray, dV: np.ndarray, g: np.ndarray, F: np.ndarray) -> None:
        """Add samples: body twists V, their derivatives dV, gravity g in the sensor frame,
        and the wrenches F the sensor applies on the object, all (K, 6) / (K, 3)."""
        V, dV, g, F = checked_samples(V, dV, g, F)
        load = float(np.sum(gravity_load(g, F)))
        w = full_model_weight(dynamism(V, dV, self.dynamism_scales), self.c1)[:, None]
        component = np.ones(6) if self.component_weight is None else self.component_weight
        zeros = np.zeros_like(V)
        self.reduced.add(body_regressor(zeros, zeros, g), F, (1.0 - w) * component)
        self.full.add(body_regressor(V, dV, g), F, w * component)
        self._gravity_load_sum += load

    def solve(self) -> InertialParameters:
        """The PMD estimate; raises ConsistencyError if no solver certifies a consistent one."""
        if self.full.n_rows == 0:
            raise ValueError("no data: add samples first")
        check_gravity_load(self._gravity_load_sum)
        for parameter, data in ((self._R_reduced, self.reduced), (self._R_full, self.full)):
            R = np.zeros((11, 11))
            R[: data.R.shape[0]] = data.R
            parameter.value = R
        solve_with_fallback(self.problem, self._check)
        return InertialParameters(self.Phi @ self.masses)

    def _check(self) -> str | None:
        if self.problem.status != cp.OPTIMAL:
            return f"status {self.problem.status}"
        masses = self._masses.value
        if masses.min() < -1e-6 * np.abs(masses).max():
            return f"returned a negative mass {masses.min():.2e}"
        params = InertialParameters(self.Phi @ np.maximum(masses, 0.0))
        if not params.is_consistent():
            return f"all mass on a plane, min eig J {params.consistency_margin():.1e}"
        return None

    @property
    def masses(self) -> np.ndarray:
        """The point masses of the last solve [kg] (solver round-off below zero clipped)."""
        return np.maximum(self._masses.value, 0.0)
