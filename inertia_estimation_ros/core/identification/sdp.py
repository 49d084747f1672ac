"""Physically consistent identification as an SDP (paper 003, Eq. 25).

    min  (1/N) ||W (Y theta - F)||^2 + prior term
    s.t. J(theta_i) >= margin 1                   (Thm. 3: full physical consistency)
         J(theta_i) realizable on a bounding shape (Thm. 4, Cor. 2, moment relaxations)
         CoM of body i in a region                 (Eq. 22)

The prior term is either Euclidean, ||L (theta - theta_prior)||^2 (paper 003 uses
L = sqrt(w) 1), or the entropic (log-det Bregman) divergence of Lee, Wensing and Park
("GEO"), gamma (-log det J + tr(J_prior^-1 J)) + const, which keeps J inside the cone.

The problem is built once with cvxpy Parameters on the R factor of the data
(``RegressionData``), whose size does not depend on the number of samples, so that
streaming re-solves skip the compilation (DPP) and reuse the solver's workspace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import cvxpy as cp
import numpy as np

from ..consistency import ConsistencyError, consistency_constraints, solve_checked, theta_of
from ..inertial import InertialParameters
from .least_squares import RegressionData
from .shapes import Shape, ShapeUnion

Regularizer = Literal["none", "euclidean", "entropic"]


@dataclass(frozen=True)
class SdpResult:
    """The identified bodies, extra parameters (e.g. friction) and the solver that was used."""

    bodies: list[InertialParameters]
    extra: np.ndarray
    solver: str

    @property
    def params(self) -> InertialParameters:
        """The single body's parameters (for one-body problems)."""
        return self.bodies[0]


def _per_body(value: object, n_bodies: int, name: str) -> list:
    if value is None or isinstance(value, Shape | ShapeUnion):
        return [value] * n_bodies
    values = list(value)
    if len(values) != n_bodies:
        raise ValueError(f"{name}: {len(values)} given for {n_bodies} bodies")
    return values


class ConsistentIdentification:
    """Paper 003, Eq. 25 for n bodies (10 parameters each) and n_extra free parameters.

    Build once; call ``solve`` for each new batch of data. ``margin`` [kg m^2] is the
    smallest eigenvalue every J must keep: far below m t^2 / 12 of the thinnest body
    dimension t, far above the solver tolerance (notes Sec. 5, pitfall 1).
    ``length_scale`` [m] (default: the shapes' size, else 0.1 m) only conditions the
    problem (notes Sec. 5, pitfall 1: D J D); it does not change the answer.
    """

    def __init__(
        self,
        n_bodies: int = 1,
        *,
        n_extra: int = 0,
        margin: float = 1e-7,
        shapes: Shape | ShapeUnion | Sequence[Shape | ShapeUnion | None] | None = None,
        com_regions: Shape | Sequence[Shape | None] | None = None,
        regularizer: Regularizer = "none",
        length_scale: float | None = None,
    ) -> None:
        if regularizer not in ("none", "euclidean", "entropic"):
            raise ValueError(f"unknown regularizer {regularizer!r}")
        self.n_bodies, self.n_extra, self.margin = n_bodies, n_extra, margin
        self.regularizer = regularizer
        n_inertial = 10 * n_bodies
        n = n_inertial + n_extra
        # Variables J~ = D J D, D = diag(1/L, 1/L, 1/L, 1): entries of one magnitude (kg), so
        # the solver's absolute tolerance is as fine on the inertia as on the mass.
        shape_list = [s for s in _per_body(shapes, n_bodies, "shapes") if s is not None]
        if length_scale is None:
            extents = [np.ptp(np.array(s.aabb()), axis=0).max() / 2 for s in shape_list]
            length_scale = max(extents) if extents else 0.1
        D_inv = np.diag([length_scale] * 3 + [1.0])
        self._J = [D_inv @ cp.Variable((4, 4), symmetric=True) @ D_inv for _ in range(n_bodies)]
        self._extra = cp.Variable(n_extra) if n_extra else None
        theta = cp.hstack([theta_of(J) for J in self._J] + ([self._extra] if n_extra else []))
        self._R = cp.Parameter((n + 1, n))
        self._d = cp.Parameter(n + 1)
        residual = self._R @ theta - self._d
        if regularizer == "euclidean":
            self._L = cp.Parameter((n_inertial, n_inertial))
            self._b = cp.Parameter(n_inertial)
            residual = cp.hstack([residual, self._L @ theta[:n_inertial] - self._b])
        # ||r|| has the minimizer of ||r||^2, and the solver's tolerance then bounds r itself.
        objective = cp.norm(residual)
        if regularizer == "entropic":
            self._gamma = cp.Parameter(nonneg=True)
            self._P = [cp.Parameter((4, 4), symmetric=True) for _ in range(n_bodies)]
            objective = cp.sum_squares(residual) + sum(
                -self._gamma * cp.log_det(J) + cp.trace(P @ J)
                for J, P in zip(self._J, self._P, strict=True)
            )
        constraints = []
        for J, shape, region in zip(
            self._J,
            _per_body(shapes, n_bodies, "shapes"),
            _per_body(com_regions, n_bodies, "com_regions"),
            strict=True,
        ):
            # Twice the margin inside, so that the solver's tolerance cannot push the
            # certified result (re-checked against the margin itself) below it.
            constraints += consistency_constraints(J, 2.0 * margin)
            if shape is not None:
                constraints += shape.realizability_constraints(J)
            if region is not None:
                constraints += region.com_constraints(J)
        self.problem = cp.Problem(cp.Minimize(objective), constraints)

    def solve(
        self,
        data: RegressionData,
        prior: Sequence[InertialParameters] | InertialParameters | None = None,
        weight: float | np.ndarray = 0.0,
    ) -> SdpResult:
        """The SDP optimum for the data so far.

        ``prior`` is one InertialParameters per body. ``weight``: for "euclidean", a
        scalar w (the term is w ||theta - theta_prior||^2, paper 003 Eq. 25) or a PSD
        metric M (10 n x 10 n; the term is (theta - theta_prior)^T M (theta - theta_prior),
        e.g. a prior's inverse covariance); for "entropic", gamma. Both are relative to
        the data term (1/N) ||W (Y theta - F)||^2. Raises ConsistencyError if no solver
        certifies a consistent optimum.
        """
        n = 10 * self.n_bodies + self.n_extra
        if data.n_params != n:
            raise ValueError(f"data have {data.n_params} parameters, the problem {n}")
        if data.n_rows == 0:
            raise ValueError("no data: add regressor rows first")
        R = np.zeros((n + 1, n + 1))
        R[: data.R.shape[0]] = data.R
        # Scale-free objective for the solver: divide everything by the mean square of W F.
        mean_square = max(float(np.sum(R[:, -1] ** 2)) / data.n_rows, 1e-300)
        self._R.value = R[:, :-1] / np.sqrt(data.n_rows * mean_square)
        self._d.value = R[:, -1] / np.sqrt(data.n_rows * mean_square)
        self._set_prior(prior, weight, mean_square)
        _, solver = solve_checked(self.problem, self._J[0], self.margin, violation_tol=1e-6)
        bodies = [InertialParameters.from_pseudo_inertia(J.value) for J in self._J]
        for index, body in enumerate(bodies[1:], start=1):  # body 0 was checked by solve_checked
            eig = np.linalg.eigvalsh(body.pseudo_inertia)
            if eig[0] < self.margin - 1e-9 * max(abs(eig[-1]), 1e-12):
                raise ConsistencyError(f"body {index}: min eig(J) {eig[0]:.3e} < margin")
        extra = np.array(self._extra.value) if self.n_extra else np.zeros(0)
        return SdpResult(bodies, extra, solver)

    def _set_prior(
        self,
        prior: Sequence[InertialParameters] | InertialParameters | None,
        weight: float | np.ndarray,
        scale: float,
    ) -> None:
        if self.regularizer == "none":
            return
        if prior is None:
            raise ValueError(f"the {self.regularizer} regularizer needs a prior")
        priors = [prior] if isinstance(prior, InertialParameters) else list(prior)
        if len(priors) != self.n_bodies:
            raise ValueError(f"{len(priors)} priors for {self.n_bodies} bodies")
        if self.regularizer == "euclidean":
            n = 10 * self.n_bodies
            M = np.asarray(weight, dtype=float) * (np.eye(n) if np.ndim(weight) == 0 else 1.0)
            L = np.linalg.cholesky(0.5 * (M + M.T) / scale + 1e-12 * np.eye(n)).T
            self._L.value = L
            self._b.value = L @ np.concatenate([p.vec for p in priors])
            return
        if np.ndim(weight) != 0 or weight < 0:
            raise ValueError("the entropic regularizer needs a scalar weight gamma >= 0")
        self._gamma.value = float(weight) / scale
        for P, body in zip(self._P, priors, strict=True):
            if not body.is_consistent():
                raise ValueError("the entropic prior must be physically consistent (J > 0)")
            J_inv = np.linalg.inv(body.pseudo_inertia)
            P.value = self._gamma.value * 0.5 * (J_inv + J_inv.T)
