"""core.aerial payload and robot controllers (paper 002, eqs. 8-12, 28-30): equilibria, error
signs, and the robot controller flying one robot on a cable to a fixed attach point through
the taut-cable dynamics of eq. 8 integrated here (notes section 6.5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from inertia_estimation_ros.core.aerial.allocation import E3, GRAVITY
from inertia_estimation_ros.core.aerial.cables import (
    RigidBodyState,
    attach_accelerations,
    cable_states,
    taut_tension,
)
from inertia_estimation_ros.core.aerial.payload_controller import (
    PayloadController,
    PayloadReference,
)
from inertia_estimation_ros.core.aerial.robot_controller import (
    RobotController,
    cable_force,
    desired_attitude,
)
from inertia_estimation_ros.core.spatial import exp3, skew

J_L = np.diag([0.00625019392, 0.00625019392, 0.01245978846])
M_L = 0.278
M_K, J_K, L_K = 0.25, np.diag([0.000601, 0.000589, 0.001076]), 1.0


def at_rest(x: list, R: np.ndarray | None = None) -> RigidBodyState:
    R = np.eye(3) if R is None else R
    return RigidBodyState(np.asarray(x, float), np.zeros(3), R, np.zeros(3))


def test_payload_controller_on_reference_asks_for_the_weight():
    controller = PayloadController(M_L, J_L)
    command = controller.update(
        at_rest([0, 0, 1.0]), PayloadReference(x=np.array([0, 0, 1.0])), 0.01
    )
    assert np.allclose(command.force, [0, 0, M_L * GRAVITY])
    assert np.allclose(command.moment, 0.0) and np.allclose(command.accel, GRAVITY * E3)


def test_payload_controller_errors_are_desired_minus_actual():
    """Eq. 12 with + K (notes 2.4): a payload below and rolled about +x is pushed up and
    rolled back about -x; e_R matches the rotation vector of R^T R_d for small angles."""
    controller = PayloadController(M_L, J_L)
    R = exp3([0.05, 0.0, 0.0])
    command = controller.update(
        at_rest([0, 0, 0.9], R), PayloadReference(x=np.array([0, 0, 1.0])), 0.01
    )
    assert command.force[2] > M_L * GRAVITY
    assert command.moment[0] == pytest.approx(-0.55 * np.sin(0.05), rel=1e-9)
    assert np.allclose(command.moment[1:], 0.0, atol=1e-12)


def test_payload_controller_feedforward_terms_of_eq11():
    """On a spinning reference with zero error, M = J Omegadot_d + Omega_d x J Omega_d."""
    controller = PayloadController(M_L, J_L)
    Omega, Omega_dot = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.2, -0.3])
    state = RigidBodyState(np.zeros(3), np.zeros(3), np.eye(3), Omega)
    ref = PayloadReference(x=np.zeros(3), Omega=Omega, Omega_dot=Omega_dot)
    command = controller.update(state, ref, 0.01)
    assert np.allclose(command.moment, J_L @ Omega_dot + np.cross(Omega, J_L @ Omega))


def test_robot_force_at_hover_carries_weight_and_cable():
    """Erratum 1: the cable pulls the robot with +|mu| xi (down), so at equilibrium u = m g e3
    + mu_des (the tension vector on the payload, pointing up); f = |u| for a level robot."""
    mu_des = np.array([0.0, 0.0, 0.909])
    controller = RobotController(M_K, J_K, L_K)
    command = controller.update(at_rest([0, 0, 2.0]), -E3, np.zeros(3), mu_des, GRAVITY * E3)
    assert np.allclose(command.force, M_K * GRAVITY * E3 + mu_des)
    assert command.thrust == pytest.approx(M_K * GRAVITY + 0.909)
    assert np.allclose(command.R_des, np.eye(3)) and np.allclose(command.moment, 0.0)


def test_desired_attitude_follows_force_and_yaw():
    R = desired_attitude(np.array([1.0, 0.0, 5.0]), yaw=0.3)
    assert np.allclose(R.T @ R, np.eye(3))
    assert np.allclose(R[:, 2], np.array([1.0, 0.0, 5.0]) / np.sqrt(26))
    assert np.arctan2(R[1, 0], R[0, 0]) == pytest.approx(0.3, abs=0.02)


def test_robot_controller_steers_a_cable_to_its_desired_direction():
    """One robot, its attach point fixed (a_k = g e3): eq. 8 driven by the eq. 28 force. The
    cable swings from vertical to 25 deg off it; the closed-form tension then equals |mu_des|
    (eq. 28's parallel part) and the direction error is below 1e-3 rad after 5 s."""
    tilt = np.deg2rad(25.0)
    xi_des = -np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    mu_des = -1.2 * xi_des
    a = GRAVITY * E3

    def force(xi, xi_dot):
        return cable_force(M_K, L_K, RobotController(M_K, J_K, L_K).gains, xi, xi_dot, mu_des, a)

    def rhs(_, y):
        xi, xi_dot = y[:3], y[3:]
        u = force(xi, xi_dot)
        S = skew(xi)
        return np.r_[xi_dot, S @ S @ (u - M_K * a) / (M_K * L_K) - (xi_dot @ xi_dot) * xi]

    sol = solve_ivp(rhs, (0, 5.0), np.r_[-E3, np.zeros(3)], rtol=1e-9, atol=1e-11)
    xi, xi_dot = sol.y[:3, -1], sol.y[3:, -1]
    assert np.arccos(np.clip(xi @ xi_des / np.linalg.norm(xi), -1, 1)) < 1e-3
    tension = taut_tension(M_K, L_K, xi, xi_dot, force(xi, xi_dot), a)
    assert tension == pytest.approx(1.2, abs=1e-3)


def test_cable_states_and_attach_accelerations():
    """Eq. 41 on a rigidly moving system gives xi_dot = (v_att - v_k)/l; eq. 9 matches a
    second finite difference of the attach point on a spinning payload."""
    rho = np.array([[0.3, 0.0, 0.0], [0.0, 0.3, 0.0]])
    payload = RigidBodyState(
        np.array([0, 0, 1.0]), np.array([0.1, 0, 0]), np.eye(3), np.array([0, 0, 1.0])
    )
    robots = np.array([[0.3, 0.0, 2.0], [0.0, 0.3, 2.0]])
    xi, xi_dot = cable_states(payload, rho, robots, np.zeros((2, 3)), np.ones(2))
    assert np.allclose(xi, -E3) and np.allclose(xi_dot, [[0.1, 0.3, 0], [-0.2, 0, 0]])
    Omega, Omega_dot = np.array([0.2, -0.1, 0.7]), np.array([0.3, 0.1, -0.2])
    R0 = exp3([0.1, 0.2, 0.3])

    def p_att(t):
        R = R0 @ exp3(Omega * t + 0.5 * Omega_dot * t**2)
        return R @ rho[0]

    h = 1e-4
    numeric = (p_att(h) - 2 * p_att(0) + p_att(-h)) / h**2
    analytic = attach_accelerations(np.zeros(3), R0, Omega, Omega_dot, rho)[0]
    assert np.allclose(analytic, numeric, atol=1e-5)
