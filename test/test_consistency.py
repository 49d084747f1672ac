"""core.consistency: the pseudo-inertia LMI and the projection onto consistent parameters."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from inertia_estimation_ros.core.consistency import (
    ConsistencyError,
    project_to_consistent,
    pseudo_inertia_of,
    solve_checked,
    solve_with_fallback,
    theta_of,
    worst_violation,
)
from inertia_estimation_ros.core.inertial import InertialParameters


def test_theta_of_inverts_the_pseudo_inertia():
    body = InertialParameters.from_mass_com_inertia(2.0, [0.1, -0.3, 0.2], np.diag([0.3, 0.2, 0.4]))
    J = cp.Parameter((4, 4), symmetric=True, value=body.pseudo_inertia)
    assert np.allclose(theta_of(J).value, body.vec)


def test_consistent_estimate_is_returned_unchanged():
    body = InertialParameters.from_mass_com_inertia(1.0, [0.0, 0.1, 0.0], np.diag([1.0, 1.5, 2.0]))
    result = project_to_consistent(body.vec)
    assert not result.moved and np.array_equal(result.params.vec, body.vec)


def test_triangle_violation_projects_onto_the_boundary():
    """diag(1, 1, 3) -> the nearest (Euclidean in theta) body with J1 + J2 = J3: (4/3, 4/3, 8/3)."""
    body = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
    result = project_to_consistent(body.vec)
    assert result.moved and result.solver == cp.CLARABEL
    assert result.params.is_consistent()
    moments = np.linalg.eigvalsh(result.params.inertia_about_com)
    assert np.allclose(moments, [4 / 3, 4 / 3, 8 / 3], atol=1e-4)


def test_weight_protects_well_known_parameters():
    """A heavy weight on mass and h keeps them; the correction goes into the inertia."""
    body = InertialParameters.from_mass_com_inertia(3.0, [0.2, 0.0, 0.1], np.diag([0.1, 0.1, 0.5]))
    W = np.diag([1e6] * 4 + [1.0] * 6)
    result = project_to_consistent(body.vec, W)
    assert result.params.is_consistent()
    assert np.allclose(result.params.vec[:4], body.vec[:4], rtol=1e-5)


def test_negative_mass_is_repaired():
    theta = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.eye(3)).vec
    theta[0] = -0.5
    assert project_to_consistent(theta).params.is_consistent()


def test_nan_is_refused():
    with pytest.raises(ValueError, match="NaN"):
        project_to_consistent(np.full(10, np.nan))


def test_infeasible_certificate_raises():
    J = cp.Variable((4, 4), symmetric=True)
    problem = cp.Problem(cp.Minimize(0), [J >> np.eye(4), cp.trace(J) <= 1.0])
    with pytest.raises(ConsistencyError, match="status infeasible"):
        solve_checked(problem, J, margin=1.0)


def test_pseudo_inertia_of_is_the_inverse_of_theta_of():
    body = InertialParameters.from_mass_com_inertia(1.5, [0.2, -0.1, 0.3], np.diag([0.2, 0.3, 0.4]))
    theta = cp.Parameter(10, value=body.vec)
    assert np.allclose(pseudo_inertia_of(theta).value, body.pseudo_inertia)
    assert np.allclose(theta_of(pseudo_inertia_of(theta)).value, body.vec)


def test_scs_results_are_rechecked_against_every_constraint():
    """SCS at default tolerances satisfies a problem's LMIs only to ~1e-5: with a strict
    ``violation_tol`` the re-check refuses its answer; Clarabel's passes a sane one."""
    theta_hat = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([1, 1, 3.0])).vec
    J = cp.Variable((4, 4), symmetric=True)
    objective = cp.sum_squares(theta_of(J) - theta_hat)
    extra = [cp.trace(J) <= 2.5]
    problem = cp.Problem(cp.Minimize(objective), [J >> 1e-3 * np.eye(4), *extra])
    with pytest.raises(ConsistencyError, match="violated"):
        solve_checked(problem, J, 0.0, (cp.SCS,), violation_tol=1e-12)
    value, solver = solve_checked(problem, J, 1e-3, violation_tol=1e-7)
    assert solver == cp.CLARABEL and np.trace(value) <= 2.5 + 1e-7
    assert worst_violation(problem) <= 1e-7 * np.abs(np.linalg.eigvalsh(value)).max()


def test_solve_with_fallback_tries_every_solver_and_reports_each_reason():
    x = cp.Variable()
    problem = cp.Problem(cp.Minimize(cp.square(x - 1.0)))
    seen = []

    def reject_first():
        seen.append(float(x.value))
        return "not good enough" if len(seen) == 1 else None

    assert solve_with_fallback(problem, reject_first) == cp.SCS
    assert np.allclose(seen, 1.0, atol=1e-3)
    with pytest.raises(ConsistencyError, match="CLARABEL: never.*SCS: never"):
        solve_with_fallback(problem, lambda: "never")
