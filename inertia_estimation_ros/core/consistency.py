"""Physical consistency as a convex constraint, and the projection onto consistent parameters.

Paper 003 (Wensing, Kim, Slotine), Thm. 3: theta is physically consistent iff its
pseudo-inertia J(theta) is positive definite. J is linear in theta, and the map is a
bijection between R^10 and symmetric 4x4 matrices, so the problems here optimize
over a symmetric J and read theta off it (``theta_of``), which keeps the LMI exact.

These builders are shared by every estimator that must return consistent
parameters (the cooperative payload estimator, the identification SDPs and the
balancing checks). Solvers are always named: Clarabel first, SCS as fallback, and
each result is re-checked numerically, never trusted on the solver's word.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .inertial import InertialParameters, meets_bound

if TYPE_CHECKING:
    import cvxpy as cp

# cvxpy loads where a problem is built (seconds of start-up that a consistent estimate,
# the common case, never needs); its solver names:
SOLVERS = ("CLARABEL", "SCS")
# J(e_k) for the unit vectors of theta: J(theta) = sum_k theta_k PSEUDO_INERTIA_BASIS[k].
PSEUDO_INERTIA_BASIS = np.stack([InertialParameters(e).pseudo_inertia for e in np.eye(10)])


class ConsistencyError(RuntimeError):
    """No physically consistent parameters could be certified."""


def theta_of(J: cp.Expression) -> cp.Expression:
    """theta (10) as a linear expression of a symmetric 4x4 pseudo-inertia J (paper 003, Def. 7)."""
    import cvxpy as cp

    Sigma = J[:3, :3]
    tr = cp.trace(Sigma)
    return cp.hstack(
        [
            J[3, 3],
            J[0, 3],
            J[1, 3],
            J[2, 3],
            tr - Sigma[0, 0],
            -Sigma[0, 1],
            -Sigma[0, 2],
            tr - Sigma[1, 1],
            -Sigma[1, 2],
            tr - Sigma[2, 2],
        ]
    )


def consistency_constraints(J: cp.Expression, margin: float = 0.0) -> list[cp.Constraint]:
    """J(theta) >= margin 1 (paper 003, Thm. 3); a margin > 0 keeps the body non-degenerate."""
    return [J >> margin * np.eye(4)]


def pseudo_inertia_of(theta: cp.Expression) -> cp.Expression:
    """J (4x4) as a linear expression of a 10-vector theta, the inverse of ``theta_of``."""
    return sum(theta[k] * PSEUDO_INERTIA_BASIS[k] for k in range(10))


def worst_violation(problem: cp.Problem) -> float:
    """The largest violation of any constraint of a solved problem, recomputed by cvxpy."""
    return max((float(np.max(c.violation())) for c in problem.constraints), default=0.0)


def default_margin(theta: np.ndarray) -> float:
    """A scale-aware margin: 1e-6 of the largest pseudo-inertia eigenvalue magnitude."""
    J = InertialParameters(theta).pseudo_inertia
    return 1e-6 * max(float(np.abs(np.linalg.eigvalsh(J)).max()), 1e-12)


@dataclass(frozen=True)
class Projection:
    """The consistent parameters closest to an estimate, in the metric of ``weight``."""

    params: InertialParameters
    moved: bool  # False if the estimate already was consistent with the margin
    distance: float  # sqrt((theta - theta_hat)^T W (theta - theta_hat))
    solver: str  # "" when no solve was needed


def solve_with_fallback(
    problem: cp.Problem, check: Callable[[], str | None], solvers: tuple[str, ...] = SOLVERS
) -> str:
    """Solve with each solver in turn; return the first one whose result ``check`` accepts.

    Results with status optimal or optimal_inaccurate reach ``check``, which reads the
    variables' values (and ``problem.status``) and returns None to accept them or the
    reason to reject them. Raises ConsistencyError with every solver's reason otherwise.
    """
    import cvxpy as cp

    failures = []
    for solver in solvers:
        try:
            with warnings.catch_warnings():  # an inaccurate result is judged by check() below
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=solver)
        except cp.error.SolverError as error:
            failures.append(f"{solver}: {error}")
            continue
        if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            failures.append(f"{solver}: status {problem.status}")
            continue
        if (reason := check()) is None:
            return solver
        failures.append(f"{solver}: {reason}")
    raise ConsistencyError("; ".join(failures))


def solve_checked(
    problem: cp.Problem,
    J: cp.Variable,
    margin: float,
    solvers: tuple[str, ...] = SOLVERS,
    *,
    violation_tol: float | None = None,
) -> tuple[np.ndarray, str]:
    """Solve with each solver in turn; return (J value, solver) for the first certified result.

    A result counts only if the solver reports success and J >= margin 1 holds under
    the one tolerance rule (``core.inertial.meets_bound``). With
    ``violation_tol``, every other constraint of the problem (e.g. shape-realizability
    LMIs) must also hold to within ``violation_tol`` times J's scale (``worst_violation``).
    """

    def check() -> str | None:
        if J.value is None:
            return f"status {problem.status}"
        eig = np.linalg.eigvalsh(0.5 * (J.value + J.value.T))
        if not meets_bound(J.value, margin):
            return f"returned min eig(J) {eig[0]:.3e} < margin {margin:.3e}"
        tol = None if violation_tol is None else violation_tol * max(abs(eig[-1]), 1e-12)
        if tol is not None and (violation := worst_violation(problem)) > tol:
            return f"a constraint is violated by {violation:.3e}"
        return None

    solver = solve_with_fallback(problem, check, solvers)
    return 0.5 * (J.value + J.value.T), solver


def project_to_consistent(
    theta_hat: np.ndarray, weight: np.ndarray | None = None, margin: float | None = None
) -> Projection:
    """argmin (theta - theta_hat)^T W (theta - theta_hat) s.t. J(theta) >= margin 1.

    ``weight`` is a 10x10 positive semidefinite metric, typically the information
    matrix (inverse covariance) of the estimate, so that the correction goes where
    the data are least sure; None means the identity. Directions W does not weigh
    are held near theta_hat by a 1e-9 relative ridge, so the answer is unique.
    Raises ConsistencyError if no solver certifies a consistent answer.
    """
    theta_hat = np.asarray(theta_hat, dtype=float)
    if not np.all(np.isfinite(theta_hat)):
        raise ValueError("theta_hat has NaN or Inf entries")
    margin = default_margin(theta_hat) if margin is None else margin
    params = InertialParameters(theta_hat)
    if params.is_consistent(margin):
        return Projection(params, moved=False, distance=0.0, solver="")
    import cvxpy as cp

    W = np.eye(10) if weight is None else 0.5 * (weight + weight.T)
    W = W / max(np.trace(W) / 10.0, 1e-300)  # scale-free objective for the solver
    L = np.linalg.cholesky(W + 1e-9 * np.eye(10))
    J = cp.Variable((4, 4), symmetric=True)
    residual = L.T @ (theta_of(J) - theta_hat)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(residual)), consistency_constraints(J, margin))
    J_value, solver = solve_checked(problem, J, margin)
    projected = InertialParameters.from_pseudo_inertia(J_value)
    delta = projected.vec - theta_hat
    distance = float(np.sqrt(max(delta @ (W @ delta), 0.0)))
    return Projection(projected, moved=True, distance=distance, solver=solver)
