"""Physically consistent identification as an SDP (paper 003, Eq. 25).

    min  ||W (Y theta - F)||^2 + gamma prior(theta)
    s.t. J(theta_i) >= margin_i                   (Thm. 3: full physical consistency)
         J(theta_i) realizable on a bounding shape (Thm. 4, Cor. 2, moment relaxations)
         CoM of body i in a region                 (Eq. 22)

The prior term is either Euclidean, (theta - theta_prior)^T M (theta - theta_prior)
(paper 003 uses M = 1), or the entropic (log-det Bregman) divergence of Lee, Wensing and
Park ("GEO"), sum_i -log det J_i + log det J_prior_i + tr(J_prior_i^-1 J_i) - 4, which
keeps J inside the cone. ``gamma`` weighs it against the *sum* of squares; paper 003's
Eq. 25 divides the sum by the number of samples n_s, so its w_pi is gamma / n_s, and
``weight`` (the older argument) is gamma / n_rows.

The margin: ``margin=0`` solves Eq. 25 with J >= 0, exactly as published; a float is
an absolute margin, J >= margin 1 [kg m^2]; None (the default) is scale-aware,
J >= 1e-6 m diag(l^2, l^2, l^2, 1), with l the body's length scale: every direction
must hold a thousandth of l of RMS thickness, whatever the mass. When a margin bounds
the optimum (it moved the answer), the result says so and a ``MarginActiveWarning``
is issued. Every certificate uses the one tolerance rule of ``core.inertial``.

The problem is built once with cvxpy Parameters on the R factor of the data
(``RegressionData``), whose size does not depend on the number of samples, so that
streaming re-solves skip the compilation (DPP) and reuse the solver's workspace. The
variables are scaled to O(1) (notes Sec. 5, pitfall 1): J_i = s D_i^-1 X_i D_i^-1 with
D_i = diag(1/l_i, 1/l_i, 1/l_i, 1) and s a mass scale chosen from the prior or the data,
which small bodies (grams) need as much as large ones.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import cvxpy as cp
import numpy as np

from ..consistency import solve_with_fallback, theta_of, worst_violation
from ..inertial import InertialParameters, meets_bound
from .least_squares import RegressionData
from .shapes import Shape, ShapeUnion

Regularizer = Literal["none", "euclidean", "entropic"]
RELATIVE_MARGIN = 1e-6  # of m l^2 (the default, scale-aware margin)
ACTIVE_FACTOR = 1.1  # a margin is active when J does not clear 1.1 times it


class MarginActiveWarning(UserWarning):
    """The consistency margin bounds the optimum: a smaller margin would move the answer."""


@dataclass(frozen=True)
class SdpResult:
    """What the SDP solved and how: bodies, extra parameters and the solver's account.

    ``objective`` is ||W (Y theta - F)||^2 + gamma prior(theta) at the answer, in the
    data's units (the module docstring's form); ``data_misfit`` its first term.
    ``min_eigenvalues`` [kg m^2] holds each body's smallest pseudo-inertia eigenvalue,
    ``margin_active`` whether the margin bounded it, ``margins`` the bound each body had
    to meet (4x4). ``shape_margins()`` gives each body's realizability margin.
    """

    bodies: list[InertialParameters]
    extra: np.ndarray
    solver: str
    status: str = ""
    objective: float = float("nan")
    data_misfit: float = float("nan")
    iterations: int | None = None
    solve_time: float = float("nan")  # the solver's own time [s]
    wall_time: float = float("nan")  # solve() end to end [s]
    min_eigenvalues: np.ndarray = field(default_factory=lambda: np.zeros(0))
    margin_active: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    margins: list[np.ndarray] = field(default_factory=list)
    shapes: list[Shape | ShapeUnion | None] = field(default_factory=list, repr=False)

    @property
    def params(self) -> InertialParameters:
        """The single body's parameters (for one-body problems)."""
        return self.bodies[0]

    def shape_margins(self) -> np.ndarray:
        """Each body's realizability margin t [kg] (>= 0: fits its shape; NaN: no shape).

        Closed form for ellipsoids; a small SDP per body for other shapes.
        """
        return np.array(
            [
                np.nan if shape is None else shape.realizability_margin(body)
                for body, shape in zip(self.bodies, self.shapes, strict=True)
            ]
        )


def _per_body(value: object, n_bodies: int, name: str) -> list:
    if value is None or isinstance(value, Shape | ShapeUnion):
        return [value] * n_bodies
    values = list(value)
    if len(values) != n_bodies:
        raise ValueError(f"{name}: {len(values)} given for {n_bodies} bodies")
    return values


def _half_extent(shape: Shape | ShapeUnion) -> float:
    return float(np.ptp(np.array(shape.aabb()), axis=0).max() / 2)


class ConsistentIdentification:
    """Paper 003, Eq. 25 for n bodies (10 parameters each) and n_extra free parameters.

    Build once; call ``solve`` for each new batch of data.

    ``margin``: None (default) the scale-aware margin J >= 1e-6 m diag(l^2, l^2, l^2, 1);
    a float the absolute margin J >= margin 1 [kg m^2]; 0 the published J >= 0. A margin
    keeps the certified body non-degenerate; it must stay below the body's smallest
    eigenvalue, m t^2 / 12 for a thickness t (notes Sec. 5, pitfall 1).
    ``length_scale`` [m] (default: each body's shape's half extent, else 0.1 m) is l.
    ``mass_scale`` [kg] (default: from the prior, else from a least-squares fit) only
    conditions the problem; neither scale changes the answer of a fixed margin.
    """

    def __init__(
        self,
        n_bodies: int = 1,
        *,
        n_extra: int = 0,
        margin: float | None = None,
        shapes: Shape | ShapeUnion | Sequence[Shape | ShapeUnion | None] | None = None,
        com_regions: Shape | Sequence[Shape | None] | None = None,
        regularizer: Regularizer = "none",
        length_scale: float | None = None,
        mass_scale: float | None = None,
    ) -> None:
        if regularizer not in ("none", "euclidean", "entropic"):
            raise ValueError(f"unknown regularizer {regularizer!r}")
        if margin is not None and not margin >= 0:
            raise ValueError(f"margin must be >= 0 [kg m^2] or None (scale-aware), got {margin}")
        if mass_scale is not None and not mass_scale > 0:
            raise ValueError(f"mass_scale must be positive [kg], got {mass_scale}")
        self.n_bodies, self.n_extra, self.margin = n_bodies, n_extra, margin
        self.regularizer, self.mass_scale = regularizer, mass_scale
        self.shapes = _per_body(shapes, n_bodies, "shapes")
        self.length_scales = [
            length_scale or (_half_extent(s) if s is not None else 0.1) for s in self.shapes
        ]
        n_inertial = 10 * n_bodies
        n = n_inertial + n_extra
        self._X = [cp.Variable((4, 4), symmetric=True) for _ in range(n_bodies)]
        # J_i / s: entries of one magnitude, so the solver's tolerance is as fine on the
        # inertia as on the mass, for grams as for tonnes.
        self._J = [
            np.diag([ell] * 3 + [1.0]) @ X @ np.diag([ell] * 3 + [1.0])
            for X, ell in zip(self._X, self.length_scales, strict=True)
        ]
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
            # log det J = log det X + const: the scaled X keeps the log-det cone well posed.
            objective = cp.sum_squares(residual) + sum(
                -self._gamma * cp.log_det(X) + cp.trace(P @ J)
                for X, J, P in zip(self._X, self._J, self._P, strict=True)
            )
        self._margin_over_scale = cp.Parameter(nonneg=True)
        self._scale_value = 1.0
        constraints = []
        for X, J, shape, region in zip(
            self._X,
            self._J,
            self.shapes,
            _per_body(com_regions, n_bodies, "com_regions"),
            strict=True,
        ):
            if margin is None:  # D J D >= eps m 1, i.e. X >= eps X_33 1
                constraints.append(X >> RELATIVE_MARGIN * X[3, 3] * np.eye(4))
            else:
                constraints.append(J >> self._margin_over_scale * np.eye(4))
            if shape is not None:
                constraints += shape.realizability_constraints(J)
            if region is not None:
                constraints += region.com_constraints(J)
        self.problem = cp.Problem(cp.Minimize(objective), constraints)

    def margin_bound(self, body: InertialParameters, index: int = 0) -> np.ndarray:
        """The 4x4 bound B that body ``index`` must meet, J >= B."""
        if self.margin is not None:
            return self.margin * np.eye(4)
        ell = self.length_scales[index]
        return RELATIVE_MARGIN * max(body.mass, 0.0) * np.diag([ell**2] * 3 + [1.0])

    def solve(
        self,
        data: RegressionData,
        prior: Sequence[InertialParameters] | InertialParameters | None = None,
        weight: float | np.ndarray | None = None,
        *,
        gamma: float | np.ndarray | None = None,
    ) -> SdpResult:
        """The SDP optimum for the data so far.

        ``prior`` is one InertialParameters per body. Give its weight as ``gamma``, in
        the units of the published objectives ||W (Y theta - F)||^2 + gamma prior(theta)
        (paper 003's w_pi is gamma / n_s), or as ``weight`` = gamma / n_rows. For
        "euclidean" either is a scalar or a PSD metric M (10 n x 10 n, e.g. a prior's
        inverse covariance); for "entropic" a scalar. Raises ConsistencyError if no
        solver certifies a consistent optimum, ValueError on bad input.
        """
        start = time.perf_counter()
        n = 10 * self.n_bodies + self.n_extra
        if data.n_params != n:
            raise ValueError(f"data have {data.n_params} parameters, the problem {n}")
        if data.n_rows == 0:
            raise ValueError("no data: add regressor rows first")
        weight = _prior_weight(weight, gamma, data.n_rows)
        priors = self._priors(prior)
        R = np.zeros((n + 1, n + 1))
        R[: data.R.shape[0]] = data.R
        scale = self._scale_value = self._scale(R, priors)
        # Scale-free objective for the solver: divide everything by the mean square of W F.
        mean_square = max(float(np.sum(R[:, -1] ** 2)) / data.n_rows, 1e-300)
        self._R.value = scale * R[:, :-1] / np.sqrt(data.n_rows * mean_square)
        self._d.value = R[:, -1] / np.sqrt(data.n_rows * mean_square)
        self._margin_over_scale.value = (self.margin or 0.0) / scale
        self._set_prior(priors, weight, mean_square, scale)
        solver = solve_with_fallback(self.problem, self._certify)
        bodies = [InertialParameters.from_pseudo_inertia(scale * J.value) for J in self._J]
        extra = scale * np.array(self._extra.value) if self.n_extra else np.zeros(0)
        return self._result(data, bodies, extra, solver, priors, weight, start)

    def _scale(self, R: np.ndarray, priors: list[InertialParameters] | None) -> float:
        """The mass scale s [kg]: given, else the priors' mean mass, else a fit's."""
        if self.mass_scale is not None:
            return self.mass_scale
        if priors is not None:
            masses = np.array([p.mass for p in priors])
        else:
            theta, *_ = np.linalg.lstsq(R[:, :-1], R[:, -1], rcond=None)
            masses = theta[: 10 * self.n_bodies : 10]
        masses = np.abs(masses[np.isfinite(masses)])
        masses = masses[masses > 0]
        return float(np.median(masses)) if len(masses) else 1.0

    def _certify(self) -> str | None:
        """None if every body meets its margin and the other constraints hold, else why not."""
        if any(J.value is None for J in self._J):
            return f"status {self.problem.status}"
        for index, J in enumerate(self._J):
            value = self._scale_value * 0.5 * (J.value + J.value.T)
            body = InertialParameters.from_pseudo_inertia(value)
            if body.mass <= 1e-9 * self._scale_value:
                return f"infeasible: the constraints leave body {index} no mass ({body.mass:.1e})"
            if not meets_bound(value, self.margin_bound(body, index)):
                eig = np.linalg.eigvalsh(value)[0]
                return f"body {index}: min eig(J) {eig:.3e} below its margin"
        if (violation := worst_violation(self.problem)) > 1e-6:
            return f"a constraint is violated by {violation:.3e} (relative)"
        return None

    def _result(
        self,
        data: RegressionData,
        bodies: list[InertialParameters],
        extra: np.ndarray,
        solver: str,
        priors: list[InertialParameters] | None,
        weight: float | np.ndarray,
        start: float,
    ) -> SdpResult:
        theta = np.concatenate([b.vec for b in bodies] + [extra])
        misfit = data.residual_norm(theta) ** 2
        prior_term = self._prior_term(bodies, priors, weight) * data.n_rows
        margins = [self.margin_bound(body, i) for i, body in enumerate(bodies)]
        active = np.array(
            [
                self.margin != 0 and not meets_bound(body.pseudo_inertia, ACTIVE_FACTOR * B)
                for body, B in zip(bodies, margins, strict=True)
            ]
        )
        min_eigenvalues = np.array([body.consistency_margin() for body in bodies])
        if active.any():
            warnings.warn(
                MarginActiveWarning(
                    f"the consistency margin bounds bodies {np.flatnonzero(active).tolist()}"
                    f" (min eig J {min_eigenvalues[active]}): it moved the answer. Pass"
                    " margin=0 to solve the published problem (J >= 0), or a smaller margin"
                ),
                stacklevel=3,
            )
        stats = self.problem.solver_stats
        return SdpResult(
            bodies,
            extra,
            solver,
            status=self.problem.status,
            objective=misfit + prior_term,
            data_misfit=misfit,
            iterations=stats.num_iters,
            solve_time=float(stats.solve_time or np.nan),
            wall_time=time.perf_counter() - start,
            min_eigenvalues=min_eigenvalues,
            margin_active=active,
            margins=margins,
            shapes=self.shapes,
        )

    def _prior_term(
        self,
        bodies: list[InertialParameters],
        priors: list[InertialParameters] | None,
        weight: float | np.ndarray,
    ) -> float:
        """weight prior(theta): the Euclidean metric or the entropic divergence."""
        if priors is None:
            return 0.0
        if self.regularizer == "euclidean":
            delta = np.concatenate([b.vec - p.vec for b, p in zip(bodies, priors, strict=True)])
            M = np.asarray(weight, dtype=float) * (
                np.eye(len(delta)) if np.ndim(weight) == 0 else 1.0
            )
            return float(delta @ M @ delta)
        divergence = 0.0
        for body, prior in zip(bodies, priors, strict=True):
            J, J_prior = body.pseudo_inertia, prior.pseudo_inertia
            divergence += (
                -np.linalg.slogdet(J)[1]
                + np.linalg.slogdet(J_prior)[1]
                + np.trace(np.linalg.solve(J_prior, J))
                - 4.0
            )
        return float(weight) * divergence

    def _priors(
        self, prior: Sequence[InertialParameters] | InertialParameters | None
    ) -> list[InertialParameters] | None:
        if self.regularizer == "none":
            return None
        if prior is None:
            raise ValueError(f"the {self.regularizer} regularizer needs a prior")
        priors = [prior] if isinstance(prior, InertialParameters) else list(prior)
        if len(priors) != self.n_bodies:
            raise ValueError(f"{len(priors)} priors for {self.n_bodies} bodies")
        if self.regularizer == "entropic" and not all(p.consistency_margin() > 0 for p in priors):
            raise ValueError("the entropic prior must be physically consistent (J > 0)")
        return priors

    def _set_prior(
        self,
        priors: list[InertialParameters] | None,
        weight: float | np.ndarray,
        mean_square: float,
        scale: float,
    ) -> None:
        if priors is None:
            return
        if self.regularizer == "euclidean":
            n = 10 * self.n_bodies
            M = np.asarray(weight, dtype=float) * (np.eye(n) if np.ndim(weight) == 0 else 1.0)
            if M.shape != (n, n):
                raise ValueError(f"the prior metric must be {n}x{n}, got {M.shape}")
            L = np.linalg.cholesky(0.5 * (M + M.T) / mean_square + 1e-12 * np.eye(n)).T
            self._L.value = scale * L
            self._b.value = L @ np.concatenate([p.vec for p in priors])
            return
        if np.ndim(weight) != 0 or weight < 0:
            raise ValueError("the entropic regularizer needs a scalar weight gamma >= 0")
        self._gamma.value = float(weight) / mean_square
        for P, body in zip(self._P, priors, strict=True):
            J_inv = np.linalg.inv(body.pseudo_inertia)
            P.value = self._gamma.value * scale * 0.5 * (J_inv + J_inv.T)


def _prior_weight(
    weight: float | np.ndarray | None, gamma: float | np.ndarray | None, n_rows: int
) -> float | np.ndarray:
    """The prior's weight relative to (1/n_rows) ||W (Y theta - F)||^2."""
    if weight is not None and gamma is not None:
        raise ValueError("give the prior's weight as gamma or as weight, not both")
    if gamma is not None:
        return np.asarray(gamma, dtype=float) / n_rows if np.ndim(gamma) else gamma / n_rows
    return 0.0 if weight is None else weight
