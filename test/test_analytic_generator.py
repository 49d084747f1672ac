"""sim.analytic: exact kinematics and wrenches of a payload carried by N robots, and its noise.

Independent references: finite differences on SE(3) for twists, Pinocchio's body regressor
for Newton-Euler, and the grasp map for the wrench split.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.sim import analytic as an

RATE = 100.0


def motions(rng):
    kin = an.paper_kinematics_motion(rng)
    return {
        "multisine 6-DoF": kin,
        "pivot": an.paper_inertia_motion(rng),
        "holds": an.paper_static_motion(),
        "ramped": an.PayloadMotion(
            an.Ramped(kin.rotation, 6.0, 1.5), an.Ramped(kin.translation, 6.0, 1.5), kin.pivot_s
        ),
    }


@pytest.mark.parametrize("name", ["multisine 6-DoF", "pivot", "holds", "ramped"])
def test_twists_are_derivatives_of_the_poses(name):
    motion = motions(np.random.default_rng(3))[name]
    h = 1e-5
    t = np.linspace(0.3, 5.7, 40)
    T, V, dV = motion.evaluate(t)
    T_plus, V_plus, _ = motion.evaluate(t + h)
    T_minus, V_minus, _ = motion.evaluate(t - h)
    for k in range(len(t)):
        body = (sp.log6(sp.inverse(T_minus[k]) @ T_plus[k])) / (2 * h)  # T^-1 dT/dt
        np.testing.assert_allclose(body, V[k], atol=1e-6)
    np.testing.assert_allclose((V_plus - V_minus) / (2 * h), dV, atol=1e-5)


def test_zyx_rates_against_scipy():
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.normal(size=(3, 5, 3))
    R, omega, _ = an.zyx_body_rates(q, qd, qdd)
    np.testing.assert_allclose(R, Rotation.from_euler("ZYX", q).as_matrix(), atol=1e-12)
    h = 1e-6
    R_next = Rotation.from_euler("ZYX", q + h * qd).as_matrix()
    omega_fd = sp.unskew(np.swapaxes(R, 1, 2) @ (R_next - R) / h)
    np.testing.assert_allclose(omega, omega_fd, atol=1e-5)


def test_newton_euler_matches_pinocchio():
    """net_wrench == pin.bodyRegressor (v, a - g) times the dynamic parameters."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        I = pin.Inertia.Random()
        body = InertialParameters.from_pinocchio(I.toDynamicParameters())
        V, dV, g = rng.normal(size=(3, 1, 6))
        g = g[:, :3]
        F = an.net_wrench(body, V, dV, g)[0]
        Y = pin.bodyRegressor(
            pin.Motion(V[0, 3:], V[0, :3]), pin.Motion(dV[0, 3:] - g[0], dV[0, :3])
        )
        F_pin = Y @ I.toDynamicParameters()
        np.testing.assert_allclose(F, np.r_[F_pin[3:], F_pin[:3]], atol=1e-10)


@pytest.mark.parametrize("moments", [False, True])
def test_split_wrench_sums_to_the_net_wrench_with_any_internal_forces(moments):
    rng = np.random.default_rng(6)
    team, _ = an.ring_team(5, rng, moment_capable=moments)
    F_s = rng.normal(size=(7, 6))
    internal = rng.normal(scale=30.0, size=(7, 30))
    F = an.split_wrench(team, F_s, internal)
    total = sum(
        F[:, k] @ sp.adjoint(sp.inverse(team.T_s_i[r])) for k, r in enumerate(team.robot_ids)
    )
    np.testing.assert_allclose(total, F_s, atol=1e-9)
    if not moments:
        assert np.all(F[:, :, :3] == 0.0)
    assert np.abs(F - an.split_wrench(team, F_s)).max() > 1.0  # the internal forces are there


def test_exact_simulation_is_a_rigid_team():
    """V_i = Ad(T_i_j) V_j for every pair, T_i0_i consistent with the homes, gravity in {i}."""
    team, payload = an.paper_team(), an.paper_payload()
    motion = an.paper_kinematics_motion(np.random.default_rng(7))
    sim = an.simulate(team, payload, motion, np.arange(0, 3, 1 / RATE))
    exact, homes = sim.exact, an.default_homes(team, motion)
    for i in team.robot_ids:
        for j in team.robot_ids:
            Ad = sp.adjoint(sp.inverse(team.T_s_i[i]) @ team.T_s_i[j])
            np.testing.assert_allclose(exact[i].V_i, exact[j].V_i @ Ad.T, atol=1e-12)
            np.testing.assert_allclose(exact[i].dV_i, exact[j].dV_i @ Ad.T, atol=1e-12)
        R_w_i = homes[i][:3, :3] @ exact[i].T_i0_i[:, :3, :3]
        np.testing.assert_allclose(exact[i].g_i, np.einsum("kji,j->ki", R_w_i, an.GRAVITY_W))
        np.testing.assert_allclose(exact[i].T_i0_i[0], np.eye(4), atol=1e-12)  # home = start


def test_paper_table_i_preset():
    team, payload = an.paper_team(), an.paper_payload()
    T_13 = team.T_s_i["robot_3"]
    T_23 = sp.inverse(team.T_s_i["robot_2"]) @ T_13
    np.testing.assert_allclose(T_23[:3, 3], [0.457, -0.838, 0.0], atol=1e-3)  # Table I p_23
    assert np.rad2deg(sp.rotation_angle(T_23[:3, :3])) == pytest.approx(90.0)
    assert payload.mass == pytest.approx(11.412)
    np.testing.assert_allclose(payload.com, [0.553, 0.172, 0.072])
    np.testing.assert_allclose(payload.principal_axes()[0], [2.258, 3.448, 5.698], atol=1e-9)
    assert not any(team.has_torque(r) for r in team.robot_ids)


def test_noise_model_quantizes_offsets_and_shifts_clocks():
    team, payload = an.paper_team(), an.paper_payload()
    noise = an.NoiseModel(
        angle_quantum=np.deg2rad(0.1),
        position_quantum=1e-3,
        angle_offset_std=np.deg2rad(1.0),
        clock_offset_std=0.05,
        wrench_scale_std=0.02,
        wrench_bias_std=(0.0, 2.0),
    )
    rng = np.random.default_rng(8)
    errors = noise.draw_errors(team.robot_ids, rng, "robot_1")
    t = np.arange(0, 2, 1 / RATE)
    sim = an.simulate(team, payload, an.paper_static_motion(), t, noise=noise, errors=errors)
    r2 = sim.measured["robot_2"]
    np.testing.assert_allclose(r2.t, t + errors.clock_offset["robot_2"])
    assert errors.clock_offset["robot_1"] == 0.0
    p = r2.T_i0_i[:, :3, 3] / 1e-3
    np.testing.assert_allclose(p, np.round(p), atol=1e-9)
    angles = Rotation.from_matrix(r2.T_i0_i[:, :3, :3]).as_euler("ZYX")
    np.testing.assert_allclose(
        angles / np.deg2rad(0.1), np.round(angles / np.deg2rad(0.1)), atol=1e-6
    )
    offset = Rotation.from_matrix(sim.exact["robot_2"].T_i0_i[0, :3, :3]).as_euler("ZYX")
    assert np.abs(angles[0] - offset - errors.angle_offset["robot_2"]).max() < np.deg2rad(0.051)
    scale, bias = errors.wrench_scale["robot_2"], errors.wrench_bias["robot_2"]
    np.testing.assert_allclose(
        r2.F_i[:, 3:], (1 + scale) * sim.exact["robot_2"].F_i[:, 3:] + bias[3:], atol=1e-9
    )
    assert np.all(np.isnan(r2.F_i[:, :3]))  # passive gimbals measure no moment


def test_session_joins_segments_on_one_clock():
    team, payload = an.paper_team(), an.paper_payload()
    statics = an.paper_static_motion()
    duration = statics.rotation.duration
    sim, labels = an.simulate_session(
        team, payload, [(statics, duration), (statics, duration)], RATE
    )
    t = sim.measured["robot_1"].t
    np.testing.assert_allclose(np.diff(t), 1 / RATE, atol=1e-9)
    assert labels[0] == 0 and labels[-1] == 1
    sets = an.synchronized_sets(sim.measured)
    assert len(sets) == len(t) and set(sets[5]) == set(team.robot_ids)
    # each segment starts and ends at rest at the home pose, so the poses join continuously
    boundary = np.flatnonzero(np.diff(labels))[0]
    T = sim.exact["robot_2"].T_i0_i
    np.testing.assert_allclose(T[boundary], T[boundary + 1], atol=1e-12)


def test_external_wrench_is_what_the_robots_do_not_apply():
    """An unmeasured wrench (HandPush, HumanGuidance) plus the robots' wrenches is the payload's
    Newton-Euler wrench; the hand's wrench is its force at its point, only in its interval."""
    team, payload = an.paper_team(), an.paper_payload()
    motion = an.paper_kinematics_motion(np.random.default_rng(9))
    t = np.arange(0, 4, 1 / RATE)
    push = an.HandPush(((1.0, 2.0),), (3.0, 0.0, -12.0), (0.4, 0.1, 0.02), ramp=0.1)
    guide = an.HumanGuidance(((0.0, 4.0),), ramp=0.5)

    def net(sim):
        return sum(sim.exact[r].F_i @ sp.adjoint(sp.inverse(team.T_s_i[r])) for r in team.robot_ids)

    free = an.simulate(team, payload, motion, t)
    pushed = an.simulate(team, payload, motion, t, external=push)
    guided = an.simulate(team, payload, motion, t, external=guide)
    T_w_s, V_s, dV_s = motion.evaluate(t)
    hand = net(free) - net(pushed)
    inside = (t > 1.1) & (t < 1.9)
    f_s = np.einsum("kji,j->ki", T_w_s[:, :3, :3], [3.0, 0.0, -12.0])
    np.testing.assert_allclose(hand[inside, 3:], f_s[inside], atol=1e-9)
    np.testing.assert_allclose(hand[inside, :3], np.cross([0.4, 0.1, 0.02], f_s[inside]), atol=1e-9)
    assert np.abs(hand[(t < 1.0) | (t > 2.0)]).max() < 1e-9
    # guided in the middle: the robots carry the weight only, the human all the rest
    g_s = np.einsum("kji,j->ki", T_w_s[:, :3, :3], an.GRAVITY_W)
    weight = an.net_wrench(payload, 0 * V_s, 0 * dV_s, g_s)
    middle = (t > 0.5) & (t < 3.5)
    np.testing.assert_allclose(net(guided)[middle], weight[middle], atol=1e-9)
