"""The tray planner (paper 004, Eq. 7) and the free-flying tray's kinematics.

References: body twists and accelerations by numerical differentiation of the pose
(independent of the closed-form Euler-rate maps), the OCP's own constraints, and the
worst-case SDP (Eq. 13) for the robust plan's certificate.
"""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core.planning.objects import BalancedObject
from inertia_estimation_ros.core.planning.planner import (
    OSQP_SETTINGS,
    PlannerSettings,
    PlanningError,
    TrayPlanner,
)
from inertia_estimation_ros.core.planning.session import verify_plan
from inertia_estimation_ros.core.planning.tray import (
    body_motion,
    interpolate,
    regressors,
    rotation,
)
from inertia_estimation_ros.core.planning.verification import WorstCaseVerifier
from inertia_estimation_ros.core.spatial import log3

START = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
GOAL = np.array([1.5, 0.5, 1.2])
SETTINGS = PlannerSettings(duration=5.0)
OBJECT = BalancedObject.box((0.15, 0.15, 0.5))


def test_body_motion_matches_numerical_differentiation():
    rng = np.random.default_rng(3)
    times = np.array([0.0, 1.0])
    X = np.zeros((2, 18))
    X[0] = np.concatenate([[0.1, 0.2, 0.3, 0.2, -0.3, 0.5], rng.normal(size=6), rng.normal(size=6)])
    U = rng.normal(size=(1, 6))
    t, h = np.array([0.4]), 1e-5
    x_minus, x, x_plus = (interpolate(times, X, U, t + d)[0] for d in (-h, 0.0, h))
    R_minus, R, R_plus = (rotation(y[:6]) for y in (x_minus, x, x_plus))
    V, dV, g_e = body_motion(x)
    omega_fd = log3(R.T @ R_plus) / h
    np.testing.assert_allclose(V[:3], omega_fd, atol=1e-4)
    np.testing.assert_allclose(V[3:], R.T @ x[6:9], atol=1e-12)
    V_minus, _, _ = body_motion(x_minus)
    V_plus, _, _ = body_motion(x_plus)
    np.testing.assert_allclose(dV, (V_plus - V_minus) / (2 * h), atol=1e-5)
    np.testing.assert_allclose(g_e, R.T @ [0, 0, -9.81], atol=1e-12)


@pytest.fixture(scope="module")
def robust_plan():
    return TrayPlanner([OBJECT], "robust", SETTINGS).plan(START, GOAL)


def test_plan_reaches_the_goal_within_limits(robust_plan):
    """Terminal condition (U-9) and hard limits, to OSQP's tolerance (1e-4 scaled)."""
    X, U = robust_plan.X, robust_plan.U
    np.testing.assert_allclose(X[-1, :3], GOAL, atol=1e-3)
    np.testing.assert_allclose(X[-1, 6:], 0.0, atol=1e-3)
    np.testing.assert_allclose(X[0], np.concatenate([START, np.zeros(12)]), atol=1e-12)
    tol = 1e-3
    assert np.all(np.abs(X[:, 6:12]) <= np.array(SETTINGS.velocity_limit) + tol)
    assert np.all(np.abs(X[:, 12:]) <= np.array(SETTINGS.acceleration_limit) + tol)
    assert np.all(np.abs(U) <= np.array(SETTINGS.jerk_limit) + tol)
    assert np.all(np.abs(X[:, 3:5]) <= SETTINGS.tilt_limit + tol)
    assert robust_plan.forces.min() >= -tol
    assert robust_plan.qp_status == ["solved"] * 3
    # the soft balancing residuals: small next to gravity's 9.81 / sqrt(6 n) per entry
    assert robust_plan.balancing_rms < 0.01
    # nodes follow the exact triple integrator (dynamics equalities)
    again = interpolate(robust_plan.times, X, U, robust_plan.times)
    np.testing.assert_allclose(again, X, atol=1e-3)


def test_robust_plan_is_certified_for_every_realizable_inertia(robust_plan):
    H = OBJECT.contacts.face_form()
    verifier = WorstCaseVerifier(OBJECT, H)
    times = robust_plan.sample_times(0.02)
    result = verifier.verify(times, regressors(robust_plan.states(times)))
    assert result.certified and result.exact and result.max_violation < -0.1


def test_several_objects_are_planned_and_certified_together():
    """A cylinder and a box side by side: one virtual object per vertex of each polytope."""
    can = BalancedObject.cylinder(0.05, 0.3, centre_xy=(0.06, 0.0), mu=0.3, name="can")
    box = BalancedObject.box((0.1, 0.1, 0.25), centre_xy=(-0.07, 0.0), name="box")
    planner = TrayPlanner([can, box], "robust", PlannerSettings(duration=3.0))
    assert len(planner.virtual) == 16
    plan = planner.plan(START, np.array([1.0, 0.5, 1.0]))
    results = verify_plan(plan, [can, box], max_solves=120, period=0.05)
    assert all(r.certified and r.exact for r in results.values())


def test_unreachable_goal_and_infeasible_horizon_are_refused():
    planner = TrayPlanner([OBJECT], "center", SETTINGS)
    with pytest.raises(PlanningError, match="outside the workspace"):
        planner.plan(START, np.array([30.0, 0.0, 1.0]))
    short = TrayPlanner([OBJECT], "center", PlannerSettings(duration=0.5))
    with pytest.raises(PlanningError, match="infeasible"):
        short.plan(START, GOAL)
    with pytest.raises(PlanningError, match="method"):
        TrayPlanner([OBJECT], "nominal", SETTINGS)


def test_without_the_terminal_condition_the_cost_alone_pulls_the_tray_near_the_goal():
    """``terminal_constraint=False`` (the authors' OCS2 stack, notes §3.5): no rows for
    p(q_N) = p_d and no rest at the end, so the plan ends only near the goal, and is
    refused if that is farther than the caller's tolerance."""
    free = PlannerSettings(duration=5.0, terminal_constraint=False, goal_tolerance=0.3)
    plan = TrayPlanner([OBJECT], "center", free).plan(START, GOAL)
    constrained = TrayPlanner([OBJECT], "center", SETTINGS).plan(START, GOAL)
    miss = np.linalg.norm(plan.X[-1, :3] - GOAL)
    # solved to 1e-8 the plan ends 0.76 mm from the goal, moving at 8.7e-3 (m/s, rad/s)
    assert 0 < miss < 0.3
    assert np.abs(plan.X[-1, 6:]).max() > 1e-3 > np.abs(constrained.X[-1, 6:]).max()
    with pytest.raises(PlanningError, match="from the goal"):
        TrayPlanner(
            [OBJECT],
            "center",
            PlannerSettings(duration=5.0, terminal_constraint=False, goal_tolerance=miss / 2),
        ).plan(START, GOAL)


def test_screening_the_contact_forces_keeps_the_plan(monkeypatch):
    """A virtual object's normal forces enter the QP only once its ZMP leaves the support
    (``screen_forces``): solved tightly, the plan equals the one with every object's forces
    always in the QP, here where a fast 0.5 m move in 2 s tips some vertex objects (a QP
    is solved again with their forces: 4 QPs for 3 SQP iterations)."""
    monkeypatch.setitem(OSQP_SETTINGS, "eps_abs", 1e-8)
    monkeypatch.setitem(OSQP_SETTINGS, "eps_rel", 1e-8)
    tall = BalancedObject.box((0.15, 0.15, 0.6))
    goal = START[:3] + [0.5, 0.0, 0.0]
    screened, full = (
        TrayPlanner([tall], "robust", PlannerSettings(duration=2.0, screen_forces=s)).plan(
            START, goal
        )
        for s in (True, False)
    )
    assert screened.qp_solves > 3 == full.qp_solves
    # the two QPs differ (and so OSQP's iterates); their common minimizer is met to ~1e-8
    np.testing.assert_allclose(screened.X, full.X, atol=2e-3)
    np.testing.assert_allclose(screened.balancing_rms, full.balancing_rms, rtol=1e-5)
    # nonnegative forces: the inactive objects' by NNLS, the active ones' to OSQP's 1e-8
    assert screened.forces.min() >= -1e-6
