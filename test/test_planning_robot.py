"""The paper's 9-DoF Ridgeback + UR10 (paper 004, III-B): its kinematics, the OCP over joint
space, the plan's certificate and its replay in MuJoCo.

References: the calibration's level tray at the home pose (notes §7.1), pinocchio's LOCAL
twist and acceleration against numerical differentiation of its own poses along a
constant-jerk motion, the OCP's constraints, the worst-case SDP (Eq. 13) and MuJoCo.
"""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core.planning.objects import BalancedObject
from inertia_estimation_ros.core.planning.planner import (
    PlannerSettings,
    PlanningError,
    TrayPlanner,
)
from inertia_estimation_ros.core.planning.robot import HOME, NQ, MobileManipulator
from inertia_estimation_ros.core.planning.session import verify_plan
from inertia_estimation_ros.core.planning.tray import interpolate
from inertia_estimation_ros.core.spatial import log3
from inertia_estimation_ros.sim.scenario import ScenarioError, load_scenario
from inertia_estimation_ros.sim.tray_balancing import point_mass_inertia, replay

SIZE = np.array([0.15, 0.15, 0.6])
OBJECT = BalancedObject.box(tuple(SIZE))
SETTINGS = PlannerSettings(duration=5.0)
OFFSET = np.array([2.0, 0.0, -0.25])  # the paper's r_d3 (code's point2)


@pytest.fixture(scope="module")
def robot():
    return MobileManipulator()


def test_home_pose_holds_the_tray_level(robot):
    R, p = robot.poses(HOME)
    np.testing.assert_allclose(R[0], np.eye(3), atol=2e-3)  # calibration rounding
    assert 0.5 < p[0, 2] < 1.5


def test_body_motion_matches_numerical_differentiation(robot):
    rng = np.random.default_rng(5)
    times = np.array([0.0, 1.0])
    X = np.zeros((2, 3 * NQ))
    X[0] = np.concatenate([HOME, rng.normal(size=NQ), rng.normal(size=NQ)])
    U = rng.normal(size=(1, NQ))
    t, h = np.array([0.4]), 1e-5
    x_minus, x, x_plus = (interpolate(times, X, U, t + d)[0] for d in (-h, 0.0, h))
    (R_minus, R, R_plus), (p_minus, _, p_plus) = robot.poses(np.array([x_minus, x, x_plus])[:, :NQ])
    V, dV, g_e = robot.body_motion(x)
    np.testing.assert_allclose(V[:3], log3(R_minus.T @ R_plus) / (2 * h), atol=1e-5)
    np.testing.assert_allclose(V[3:], R.T @ (p_plus - p_minus) / (2 * h), atol=1e-5)
    V_minus = robot.body_motion(x_minus)[0]
    V_plus = robot.body_motion(x_plus)[0]
    np.testing.assert_allclose(dV, (V_plus - V_minus) / (2 * h), atol=1e-4)
    np.testing.assert_allclose(g_e, R.T @ [0, 0, -9.81], atol=1e-12)
    _, J = robot.positions(x[:NQ])
    J_fd = np.column_stack(
        [(robot.poses(x[:NQ] + h * e)[1][0] - robot.poses(x[:NQ] - h * e)[1][0]) / (2 * h)
         for e in np.eye(NQ)]
    )  # fmt: skip
    np.testing.assert_allclose(J[0], J_fd, atol=1e-6)


def test_regressor_jacobian_matches_central_differences(robot):
    """Pinocchio's analytic kinematics derivatives chained with the regressor's (what the
    planner linearizes) against central differences of the regressor through the states."""
    rng = np.random.default_rng(1)
    X = np.hstack([HOME + 0.3 * rng.normal(size=(4, NQ)), rng.normal(size=(4, 2 * NQ))])
    Y, dY = robot.regressor_jacobian(X)
    np.testing.assert_allclose(Y, robot.regressors(X), atol=1e-12)
    h = 1e-6
    fd = np.stack(
        [(robot.regressors(X + h * e) - robot.regressors(X - h * e)) / (2 * h)
         for e in np.eye(3 * NQ)], axis=-1,
    )  # fmt: skip
    np.testing.assert_allclose(dY, fd, atol=2e-5)  # the forward-difference step in (V, dV, g)


@pytest.fixture(scope="module")
def robust_plan(robot):
    goal = robot.positions(HOME)[0][0] + OFFSET
    return TrayPlanner([OBJECT], "robust", SETTINGS, robot).plan(HOME, goal), goal


def test_joint_space_plan_reaches_the_goal_within_the_papers_limits(robot, robust_plan):
    plan, goal = robust_plan
    X, U, tol = plan.X, plan.U, 1e-3
    assert plan.robot == "ridgeback_ur10" and plan.qp_status == ["solved"] * 3
    np.testing.assert_allclose(robot.positions(X[-1, :NQ])[0][0], goal, atol=2e-3)
    np.testing.assert_allclose(X[-1, NQ:], 0.0, atol=tol)
    assert np.all(np.abs(X[:, NQ : 2 * NQ]) <= robot.velocity_limit + tol)
    assert np.all(np.abs(X[:, 2 * NQ :]) <= robot.acceleration_limit + tol)
    assert np.all(np.abs(U) <= robot.jerk_limit + tol)
    assert plan.balancing_rms < 0.01 and plan.forces.min() >= -tol


def test_joint_space_plan_is_certified_and_keeps_the_box_standing_in_mujoco(robot, robust_plan):
    plan, goal = robust_plan
    result = verify_plan(plan, [OBJECT], max_solves=60, period=0.02)["box"]
    assert result.certified and result.max_violation < -0.1
    com = np.array([0.06, 0.06, 0.3])  # top corner of the CoM polytope
    run = replay(plan, SIZE, com, point_mass_inertia(SIZE, com))
    assert run.success and run.max_displacement < 0.026 and run.in_contact.all()
    # the tray in MuJoCo followed the robot's forward kinematics to the goal
    np.testing.assert_allclose(run.tray_pose[-1, :3], goal, atol=2e-3)


def test_the_scenario_runs_the_robot_from_yaml():
    scenario = load_scenario(
        {"type": "tray_balancing", "robot": "ridgeback_ur10", "height": 0.3, "duration": 5.0}
    )
    run = scenario.run()
    assert run.success and run.max_displacement < 0.026
    with pytest.raises(ScenarioError, match="robot"):
        load_scenario({"type": "tray_balancing", "robot": "ur5"})


def test_a_goal_out_of_the_arms_reach_is_refused(robot):
    """3 m above the tray: no configuration reaches it; the plan is refused, not returned."""
    goal = robot.positions(HOME)[0][0] + [0.0, 0.0, 3.0]
    with pytest.raises(PlanningError, match="out of the ridgeback_ur10's reach"):
        TrayPlanner([OBJECT], "center", SETTINGS, robot).plan(HOME, goal)
