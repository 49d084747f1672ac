"""Worst-case verification SDP (paper 004, Eq. 13) and the estimate -> CoM polytope map.

References: the notes' §8.3 check values (closed forms given there), rigeo 0.2.0's moment
constraints for boxes (the paper's exact relaxation; ours adds face products, so it is at
least as tight), and brute force over all (instant, row) pairs for the branch and bound.
Tolerances: 1e-4, the agreement of Clarabel and SCS on (13) reported in notes §5.7.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import rigeo as rg

from inertia_estimation_ros.core.consistency import theta_of
from inertia_estimation_ros.core.planning.objects import (
    BalancedObject,
    ComEstimate,
    PolytopeError,
    informed_com_box,
    robust_constraint_values,
)
from inertia_estimation_ros.core.planning.verification import WorstCaseVerifier
from inertia_estimation_ros.core.regressor import body_regressor

G = np.array([0.0, 0.0, -9.81])
STATIC = body_regressor(np.zeros(6), np.zeros(6), G)
TRANSLATING = body_regressor(np.zeros(6), np.array([0, 0, 0, 1.0, 0, 0]), G)
ROTATING = body_regressor(
    np.array([0.3, -0.2, 0.5, 0.4, 0.1, 0.0]), np.array([1.0, 0.5, -0.8, 0.6, -0.3, 0.2]), G
)


@pytest.fixture(scope="module", params=[0.3, 0.6])
def case(request):
    obj = BalancedObject.box((0.15, 0.15, request.param))
    H = obj.contacts.face_form()
    return request.param, obj, H, WorstCaseVerifier(obj, H)


def test_notes_check_values(case):
    """Notes §8.3: static -mu g; translating (h + 0.06 g)/0.075 - g; centroid CoM -4.81."""
    h, obj, H, verifier = case
    static = max(verifier.worst_case(row @ STATIC) for row in H)
    translating = [verifier.worst_case(row @ TRANSLATING) for row in H]
    assert static == pytest.approx(-0.2 * 9.81, abs=1e-4)
    assert max(translating) == pytest.approx((h + 0.06 * 9.81) / 0.075 - 9.81, abs=1e-4)
    centroid = obj.parameters_at(np.array([0, 0, h / 2]))
    assert robust_constraint_values(H, TRANSLATING, centroid).max() == pytest.approx(
        -4.81, abs=1e-9
    )
    # pure translation: the inertia drops out and the SDP equals the vertex maximum (Sec. IV-B)
    vertices = robust_constraint_values(H, TRANSLATING, obj.parameters_at(obj.com_vertices))
    np.testing.assert_allclose(translating, vertices.max(axis=0), atol=1e-4)


def _rigeo_worst_case(obj: BalancedObject, c: np.ndarray) -> float:
    """Eq. 13 with rigeo's moment constraints for the box (the paper's relaxation, r = 2)."""
    box = rg.Box(obj.shape.half_extents, center=obj.shape.p_b_s)
    J = cp.Variable((4, 4), symmetric=True)
    h = J[:3, 3]
    constraints = [J[3, 3] == 1, h >= obj.com_lo, h <= obj.com_hi]
    problem = cp.Problem(cp.Maximize(c @ theta_of(J)), constraints + box.moment_sdp_constraints(J))
    problem.solve(solver=cp.CLARABEL)
    return float(problem.value)


def test_rigeo_oracle_on_boxes(case):
    """Ours (tighter relaxation) <= rigeo's; equal where the vertex bound is attained."""
    _, obj, H, verifier = case
    for Y in (TRANSLATING, ROTATING):
        row = H[np.argmax([verifier.worst_case(r @ Y) for r in H])]
        ours, theirs = verifier.worst_case(row @ Y), _rigeo_worst_case(obj, row @ Y)
        assert ours <= theirs + 1e-4
        if Y is TRANSLATING:
            assert ours == pytest.approx(theirs, abs=1e-4)


def test_sdp_bounds_realizable_bodies_with_com_in_the_polytope(case):
    """Under rotation the inertia matters: every realizable body with its CoM in C stays below."""
    _, obj, H, verifier = case
    rng = np.random.default_rng(0)
    coms = obj.com_lo + rng.uniform(size=(50, 3)) * (obj.com_hi - obj.com_lo)
    values = robust_constraint_values(H, ROTATING, obj.parameters_at(coms))
    worst_row = int(np.argmax(values.max(axis=0)))
    sdp = verifier.worst_case(H[worst_row] @ ROTATING)
    # those bodies are realizable only if their CoM lets the uniform box fit; the SDP is an
    # upper bound of every realizable one, e.g. the point mass at each sampled CoM:
    point_masses = np.array([[1, *c, *_point_mass_inertia(c)] for c in coms])
    assert (H[worst_row] @ ROTATING @ point_masses.T).max() <= sdp + 1e-4


def _point_mass_inertia(c: np.ndarray) -> np.ndarray:
    I = (c @ c) * np.eye(3) - np.outer(c, c)
    return I[np.triu_indices(3)]


def test_branch_and_bound_finds_the_brute_force_maximum(case):
    _, obj, H, verifier = case
    Ys = np.stack([STATIC, TRANSLATING, 0.3 * ROTATING + 0.7 * STATIC])
    result = verifier.verify(np.array([0.0, 1.0, 2.0]), Ys)
    brute = [[verifier.worst_case(row @ Y) for row in H] for Y in Ys]
    assert result.max_violation == pytest.approx(np.max(brute), abs=1e-4)
    assert (result.time, result.row) == (1.0, int(np.argmax(brute[1])))
    assert result.sdp_solves < result.pairs  # the interval bounds screen the rest
    assert result.exact and result.solved_max == result.max_violation
    cut = verifier.verify(np.array([0.0, 1.0, 2.0]), Ys, max_solves=0)  # no budget: bounds
    assert not cut.exact and cut.solved_max == -np.inf and cut.max_violation >= np.max(brute) - 1e-5


# ----- estimate -> CoM polytope ------------------------------------------------------------
BOX60 = BalancedObject.box((0.15, 0.15, 0.6))


def test_informed_box_is_k_sigma_clipped_to_the_inset_object():
    estimate = ComEstimate(np.array([0.01, -0.02, 0.25]), np.diag([1e-4, 1e-4, 1e-2]), True)
    obj, informed = informed_com_box(BOX60, estimate, k_sigma=3.0)
    assert informed
    np.testing.assert_allclose(obj.com_lo, [-0.02, -0.05, 0.0])
    np.testing.assert_allclose(obj.com_hi, [0.04, 0.01, 0.55])
    assert len(obj.com_vertices) == 8


def test_invalid_estimate_gives_the_papers_full_height_box():
    estimate = ComEstimate(np.zeros(3), np.eye(3), valid=False)
    obj, informed = informed_com_box(BOX60, estimate)
    assert not informed
    np.testing.assert_allclose(obj.com_lo, [-0.06, -0.06, 0.0])
    np.testing.assert_allclose(obj.com_hi, [0.06, 0.06, 0.6])


@pytest.mark.parametrize(
    ("p", "cov", "match"),
    [
        ([0.2, 0.0, 0.3], np.diag([1e-6] * 3), "outside the object"),
        ([0.0, 0.0, 0.3], np.diag([np.nan, 1, 1]), "not finite"),
        ([0.0, 0.0, 0.3], -np.eye(3), "positive semidefinite"),
    ],
)
def test_unusable_estimates_are_refused(p, cov, match):
    with pytest.raises(PolytopeError, match=match):
        informed_com_box(BOX60, ComEstimate(np.array(p), cov, True))


def test_com_covariance_from_parameter_covariance():
    """c = h/m to first order, moved into the tray frame: checked by sampling."""
    rng = np.random.default_rng(1)
    theta = np.array([2.0, 0.1, -0.2, 0.6, 0, 0, 0, 0, 0, 0])
    L = np.diag([0.02, 0.004, 0.004, 0.01, 0, 0, 0, 0, 0, 0])
    T_e_s = np.eye(4)
    T_e_s[:3, 3] = [0.0, 0.0, -0.1]
    estimate = ComEstimate.from_parameters(theta, L @ L.T, True, T_e_s)
    draws = theta + rng.standard_normal((20000, 10)) @ L.T
    coms = draws[:, 1:4] / draws[:, :1] + T_e_s[:3, 3]
    np.testing.assert_allclose(estimate.p_e_c, [0.05, -0.1, 0.2])
    np.testing.assert_allclose(estimate.covariance, np.cov(coms.T), rtol=0.1, atol=1e-7)
    with pytest.raises(PolytopeError, match="non-finite"):
        ComEstimate.from_parameters(theta, np.full((10, 10), np.inf), True, None)


def test_cylinder_sdp_equals_the_vertex_maximum_in_translation():
    """A cylinder off the tray centre, octagonal contacts: Eq. 13 on the cylinder's moment
    relaxation equals Sec. IV-B's vertex maximum when the inertia drops out, and rest is safe."""
    obj = BalancedObject.cylinder(0.05, 0.3, centre_xy=(0.06, 0.0), mu=0.3, name="can")
    H = obj.contacts.face_form()
    verifier = WorstCaseVerifier(obj, H)
    sdp = [verifier.worst_case(row @ TRANSLATING) for row in H]
    vertices = robust_constraint_values(H, TRANSLATING, obj.parameters_at(obj.com_vertices))
    np.testing.assert_allclose(sdp, vertices.max(axis=0), atol=1e-4)
    assert verifier.verify(np.zeros(1), STATIC[None]).max_violation < 0


def test_a_refused_informed_tray_plan_is_replanned_until_certified():
    """The bench's estimator-informed 60 cm box (CoM estimated 4 mm off, 1 cm sigma, 3 sigma
    polytope): with the paper's w_s = 100 the worst-case inertia tips the T = 4 s plan at its
    start (SDP +1.32 at t = 0.1 s, measured); one re-plan with w_s = 1e3 is certified (the
    SDP's maximum, exact, <= 0) and still ends at rest at the goal."""
    from inertia_estimation_ros.core.planning.planner import PlannerSettings
    from inertia_estimation_ros.core.planning.session import plan_and_verify

    size = np.array([0.15, 0.15, 0.6])
    box = BalancedObject.box(tuple(size))
    estimate = ComEstimate(np.array([0.034, -0.026, 0.204]), np.diag([1e-4] * 3), True)
    informed, was_informed = informed_com_box(box, estimate, k_sigma=3.0)
    start, goal = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0]), np.array([-2.0, 1.0, 1.0])
    settings = PlannerSettings(duration=4.0)

    outcome = plan_and_verify([informed], "robust", settings, start, goal, max_solves=150)

    first, last = outcome.rounds[0], outcome.rounds[-1]
    assert was_informed and first.slack_weight == 100.0 and first.max_violation > 0.5
    assert outcome.certified and last is outcome.rounds[1] and last.slack_weight == 1e3
    assert outcome.worst[1].exact and outcome.worst[1].max_violation == last.max_violation <= 0
    assert np.linalg.norm(outcome.plan.X[-1, :3] - goal) < settings.goal_tolerance
    assert np.allclose(outcome.plan.X[-1, 6:], 0.0, atol=1e-4)  # at rest (OSQP: 1e-4)
    assert "re-planned: w_s 100: +" in outcome.summary()


def test_replanning_stops_at_a_qp_failure_and_returns_the_refused_plan(monkeypatch):
    """A re-plan whose QP has no solution ends the rounds: the outcome is the last plan's
    (not certified), with the failed round named; a failure in the first round raises."""
    from dataclasses import replace

    from inertia_estimation_ros.core.planning import session
    from inertia_estimation_ros.core.planning.planner import PlannerSettings, QPSolveError

    refused = session.Verification(0.5, 0.1, 10, False, 1, 1, True)
    monkeypatch.setattr(session, "verifiers_for", lambda objects: [None])
    monkeypatch.setattr(session, "verify_plan", lambda plan, objects, *a, **k: {"box": refused})
    plan = session.TrayPlanner.plan
    weights = []

    def plan_or_fail(self, start, goal, on_iteration=None, start_rates=None):
        weights.append(self.settings.slack_weight)
        if self.settings.slack_weight > 100.0:
            raise QPSolveError("the QP solver stopped without a solution (maximum iterations)")
        return plan(self, start, goal, on_iteration)

    monkeypatch.setattr(session.TrayPlanner, "plan", plan_or_fail)
    box, settings = [BalancedObject.box((0.15, 0.15, 0.3))], PlannerSettings(duration=3.0)
    start, goal = np.array([0, 0, 1.0, 0, 0, 0]), np.array([1.0, 0.0, 1.0])
    outcome = session.plan_and_verify(box, "robust", settings, start, goal)
    assert weights == [100.0, 1000.0] and not outcome.certified
    assert [r.slack_weight for r in outcome.rounds] == [100.0, 1000.0]
    assert "maximum iterations" in outcome.rounds[1].refused and "no plan" in outcome.summary()
    with pytest.raises(QPSolveError):
        session.plan_and_verify(box, "robust", replace(settings, slack_weight=1e3), start, goal)
