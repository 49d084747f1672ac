"""Issue 14 items 3-4, ROS-free: the admittance mode's supervision (start refused with the
reason, bad wrenches ignored and counted, safe stops, bumpless restart) and the robots'
commands (poses, twists, wrench shares that carry the estimated model)."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.following import grasp_commands, wrench_shares
from inertia_estimation_ros.core.collaboration.supervisor import AdmittanceSupervisor, ModelSummary
from inertia_estimation_ros.sim import analytic as an

DT = 0.01
MODEL = ModelSummary(True, 10.0, np.array([0.3, 0.1, 0.0]), np.diag([0.5, 0.6, 0.9]))


def _supervisor(**options: object) -> AdmittanceSupervisor:
    sup = AdmittanceSupervisor(input_timeout=0.2, fraction=0.2, time_constant=0.2, **options)
    sup.on_estimate(MODEL)
    sup.on_pose(0.0, sp.transform(np.eye(3), [1.0, 0.0, 0.8]))
    return sup


def _run(sup: AdmittanceSupervisor, start: float, seconds: float, wrench: np.ndarray | None):
    ref = None
    for k in range(round(seconds / DT)):
        now = start + k * DT
        sup.on_pose(now, sup.last_reference().T_w_s if sup.last_reference() else np.eye(4))
        if wrench is not None:
            sup.on_wrench(now, wrench)
        ref = sup.tick(now, DT)
    return ref


def test_start_is_refused_with_the_reason() -> None:
    sup = AdmittanceSupervisor()
    assert sup.start() == (False, "admittance refused: no estimate received")
    sup.on_estimate(ModelSummary(False, reason="mass_valid is false: hold the payload still"))
    ok, message = sup.start()
    assert not ok and "mass_valid is false" in message
    sup.on_estimate(MODEL)
    assert sup.start() == (False, "admittance refused: no payload pose received yet")
    with pytest.raises(ValueError, match="fraction"):
        AdmittanceSupervisor(fraction=5.0)


def test_a_push_moves_the_reference_and_the_com_frame_is_used() -> None:
    """A force on the CoM translates the payload without turning it: F / D at steady state."""
    sup = _supervisor()
    assert sup.start()[0]
    ref = _run(sup, 0.0, 1.5, np.r_[0, 0, 0, 2.0, 0, 0])
    D = 0.2 * 10.0 / 0.2
    np.testing.assert_allclose(ref.T_w_s[:3, :3], np.eye(3), atol=1e-12)
    v_s = ref.V_s[3:]
    assert v_s[0] == pytest.approx(2.0 / D, rel=1e-3)
    assert ref.T_w_s[0, 3] > 1.0
    # a pure moment about the CoM turns the payload about the CoM: the CoM stays put
    sup = _supervisor()
    sup.start()
    ref = _run(sup, 0.0, 1.0, np.r_[0, 0, 0.3, 0, 0, 0])
    p_c = ref.T_w_s @ np.r_[MODEL.p_s_c, 1.0]
    np.testing.assert_allclose(p_c[:3], [1.3, 0.1, 0.8], atol=1e-9)


def test_bad_wrenches_are_ignored_and_counted() -> None:
    sup = _supervisor()
    sup.start()
    assert not sup.on_wrench(0.0, np.r_[np.nan, 0, 0, 1, 0, 0])
    sup.on_pose(5.0, np.eye(4))
    assert not sup.on_wrench(1.0, np.zeros(6))  # 4 s behind the pose
    assert sup.on_wrench(5.0, np.zeros(6))
    assert not sup.on_wrench(4.99, np.zeros(6))
    assert dict(sup.ignored) == {
        "non-finite wrench": 1,
        "stale wrench": 1,
        "wrench out of order": 1,
    }


def test_safe_stops_decelerate_and_hold() -> None:
    """Invalid estimate, silent inputs, stop(): the reference decelerates within the limit
    (1 m/s^2 here) and holds; start() resumes bumplessly from the held reference."""
    for cause in ("estimate", "silence", "stop"):
        sup = _supervisor(max_linear_acceleration=1.0)
        sup.start()
        moving = _run(sup, 0.0, 1.0, np.r_[0, 0, 0, 4.0, 0, 0])
        speed = np.linalg.norm(moving.V_s[3:])
        assert speed > 0.1
        if cause == "estimate":
            sup.on_estimate(ModelSummary(False, reason="a robot went silent"))
        elif cause == "stop":
            sup.stop()
        wrench = None if cause == "silence" else np.r_[0, 0, 0, 4.0, 0, 0]
        refs = [_run(sup, 1.0 + k * DT, DT, wrench) for k in range(150)]
        speeds = [np.linalg.norm(r.V_s[3:]) for r in refs]
        # The stabilizer reports on its own (a silent input's held wrench grows old)
        modes = [e for e in sup.events if "stabilizer" not in e]
        assert not sup.active and "safe stop" in modes[-1]
        assert speeds[-1] == 0.0
        assert np.all(np.diff(speeds) <= 1.0 * DT + 1e-9)
        held = refs[-1].T_w_s
        if cause != "estimate":
            assert sup.start()[0]
            np.testing.assert_allclose(sup.tick(3.0, DT).T_w_s, held, atol=1e-12)


def test_wrench_shares_carry_the_model_and_force_only_robots_get_forces() -> None:
    team, payload = an.paper_team(), an.paper_payload()
    rng = np.random.default_rng(5)
    T_w_s, V_s, dV_s = an.paper_inertia_motion(rng).evaluate(np.array([1.3]))
    g_w = np.array([0, 0, -9.81])
    has_torque = {r: team.has_torque(r) for r in team.robot_ids}
    team_command = grasp_commands(
        T_w_s[0], V_s[0], dV_s[0], payload.vec, team.T_s_i, has_torque, g_w
    )
    g_s = T_w_s[0, :3, :3].T @ g_w
    needed = an.net_wrench(payload, V_s, dV_s, g_s[None])[0]
    applied = sum(
        sp.wrench_to(sp.inverse(team.T_s_i[r]), c.F_i) for r, c in team_command.commands.items()
    )
    np.testing.assert_allclose(applied, needed, atol=1e-9)
    np.testing.assert_allclose(team_command.unbalanced, 0.0, atol=1e-9)
    for rid, command in team_command.commands.items():
        assert not command.F_i[:3].any()  # gimbals: forces only
        np.testing.assert_allclose(command.T_w_i, T_w_s[0] @ team.T_s_i[rid])
        np.testing.assert_allclose(
            command.V_i, sp.twist_to(sp.inverse(team.T_s_i[rid]), V_s[0]), atol=1e-12
        )
    # two gimbals cannot carry a moment about the line through them: reported
    T = {"a": np.eye(4), "b": sp.transform(np.eye(3), [1.0, 0, 0])}
    _, unbalanced = wrench_shares(T, {"a": False, "b": False}, np.r_[0.5, 0, 0, 0, 0, 10.0])
    np.testing.assert_allclose(unbalanced, [0.5, 0, 0, 0, 0, 0], atol=1e-12)


def test_start_is_refused_while_the_wrench_source_lags_then_accepted() -> None:
    """A coordinator frozen after its solves sends wrenches 1-2 s old for a few seconds
    (measured); a start then would stop for want of a valid wrench (demo --collaborate
    stopped 2.5 s after ~/enable). It is refused, saying why, until they are current."""
    sup = _supervisor()
    sup.on_pose(5.0, sp.transform(np.eye(3), [1.0, 0.0, 0.8]))
    assert not sup.on_wrench(4.5, np.zeros(6))  # 0.5 s behind the pose: stale, ignored
    ok, message = sup.start()
    assert not ok and "0.50 s older than the payload pose" in message and "lags" in message
    assert sup.on_wrench(4.95, np.zeros(6))
    ok, message = sup.start()
    assert ok and sup.active, message
