"""The MuJoCo ground team: physics consistency, excitation, kinematics, sensor models, determinism.

Tolerances. Semi-implicit Euler makes ``qacc`` exactly the velocity increment per step, and
the F/T readings come from the same forward pass, so Newton-Euler holds to round-off on the
payload itself (``test_newton_euler_is_exact_on_the_payload``). The grasp signals are the
robots' flanges, which the welds (time constant 2 dt) let move relative to the payload by
about 1e-5 m and 1e-4 rad; on those signals the Newton-Euler residual is bounded by that
compliance, 1e-3 of the wrench scale while moving and 1e-5 in static holds.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
import yaml
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.regressor import body_regressor
from inertia_estimation_ros.core.spatial import adjoint, inverse, transform
from inertia_estimation_ros.sim.ground_team import Gains, SimulationError
from inertia_estimation_ros.sim.ground_truth import (
    body_inertial_parameters,
    body_pose_in_world,
    site_pose_in_body,
    site_pose_in_world,
)
from inertia_estimation_ros.sim.scenario import load_scenario, run_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"
LINEAR_FIRST = np.array([3, 4, 5, 0, 1, 2])


def scenario_dict(name: str) -> dict:
    return yaml.safe_load((SCENARIOS / name).read_text())


@pytest.fixture(scope="module")
def gimbals():
    """Three Delta-gimbal robots, ideal sensors at 500 Hz, every program."""
    return run_scenario(SCENARIOS / "test_three_gimbals.yaml")


@pytest.fixture(scope="module")
def wrists():
    """Two 6-DoF wrists, F/T sensors and IMUs with every sensor error, 200 Hz."""
    return run_scenario(SCENARIOS / "test_two_wrists.yaml")


def short(name: str, **robot_defaults) -> dict:
    """A scenario cut to a 1.5 s scripted motion, with robot defaults overridden."""
    data = scenario_dict(name)
    data["excitation"] = [
        {
            "program": "scripted",
            "waypoints": [
                {"t": 0.0},
                {"t": 0.5, "xyz": [0.01, -0.02, 0.02], "rotvec_deg": [4.0, -3.0, 5.0]},
                {"t": 1.0},
            ],
        }
    ]
    data["robot_defaults"] = {**data["robot_defaults"], **robot_defaults}
    return data


def newton_euler_residual(result):
    """sum_i Ad(T_i_s)^T F_i + F_human - Y(V_s, dV_s, g_s) theta_s on the true grasp signals."""
    truth = result.ground_truth
    s = truth.grasps[truth.reference_robot]
    total = truth.F_human_s.copy()
    for rid, series in truth.grasps.items():
        total += series.F_i @ adjoint(inverse(truth.T_s_i[rid]))
    predicted = body_regressor(s.V_i, s.dV_i, s.g_i) @ truth.payload.vec
    return total - predicted, predicted, s.meta["phase"]


@pytest.mark.parametrize("fixture", ["gimbals", "wrists"])
def test_newton_euler_holds_on_the_grasp_signals(fixture, request):
    residual, predicted, phase = newton_euler_residual(request.getfixturevalue(fixture))
    scale = np.repeat([np.abs(predicted[:, :3]).max(), np.abs(predicted[:, 3:]).max()], 3)
    moving = phase != "settle"
    assert np.all(np.abs(residual[moving]) <= 1e-3 * scale)
    static = phase == "static"
    assert static.sum() > 100
    assert np.all(np.abs(residual[static]) <= 1e-5 * scale)


def test_newton_euler_is_exact_on_the_payload():
    """MuJoCo's F/T at each flange is the wrench on the payload, applied at the weld's payload
    site, and qacc after mj_step is the pre-step state's: the payload's Newton-Euler residual
    is round-off."""
    scenario = load_scenario(SCENARIOS / "test_three_gimbals.yaml")
    model = scenario.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    actuated = [model.actuator(a).trnid[0] for a in range(model.nu)]
    rest = data.qpos[[model.jnt_qposadr[j] for j in actuated]]
    payload = model.body("payload")
    theta_P = body_inertial_parameters(model, "payload")
    V, A, worst = np.zeros(6), np.zeros(6), 0.0
    for step in range(400):
        data.ctrl[:] = rest + 0.02 * np.sin(0.01 * step * np.arange(1, model.nu + 1))
        mujoco.mj_step(model, data)
        if step < 200 or step % 20:
            continue
        # Pre-step state: kinematics, sensors and qacc of the step just taken.
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, payload.id, V, 1)
        mujoco.mj_objectAcceleration(model, data, mujoco.mjtObj.mjOBJ_XBODY, payload.id, A, 1)
        T_w_P = body_pose_in_world(data, "payload")
        g_P = T_w_P[:3, :3].T @ model.opt.gravity
        dV = np.concatenate([A[:3], A[3:] + g_P - np.cross(V[:3], V[3:])])
        total = np.zeros(6)
        for robot in scenario.robots:
            sensor = site_pose_in_world(data, robot.grasp_frame)
            anchor = site_pose_in_world(data, f"payload/{robot.robot_id}")
            F = np.concatenate(
                [data.sensor(f"{robot.robot_id}/{k}").data for k in ("torque", "force")]
            )
            T_P_anchor = inverse(T_w_P) @ transform(sensor[:3, :3], anchor[:3, 3])
            total += adjoint(inverse(T_P_anchor)).T @ F
        predicted = body_regressor(V, dV, g_P) @ theta_P.vec
        worst = max(worst, np.abs(total - predicted).max() / np.abs(predicted).max())
    assert worst < 1e-10


def test_ft_sensors_read_the_force_on_the_payload_which_carries_its_weight(gimbals):
    truth = gimbals.ground_truth
    static = gimbals.phase_samples(truth.grasps["robot_1"], "static")
    weight = truth.payload.mass * truth.gravity_w
    R_w_s = truth.T_w_s[static, :3, :3]
    total = sum(
        np.einsum("kij,jl,kl->ki", R_w_s, truth.T_s_i[rid][:3, :3], s.F_i[static, 3:])
        for rid, s in truth.grasps.items()
    )
    np.testing.assert_allclose(total, -np.tile(weight, (len(static), 1)), atol=1e-3)
    # The F/T topic carries the reaction (the payload on the robot): minus the same.
    record = gimbals.robots["robot_2"]
    np.testing.assert_array_equal(record.wrench.wrench[:, 3:], -record.grasp.F_i[:, 3:])
    truth_moment = truth.grasps["robot_2"].F_i[:, :3]
    np.testing.assert_array_equal(record.wrench.wrench[:, :3], -truth_moment)


def test_passive_gimbals_transmit_only_the_damping_moment(gimbals):
    for rid, series in gimbals.ground_truth.grasps.items():
        moment = np.abs(series.F_i[:, :3]).max()
        damping_bound = 0.02 * np.abs(series.V_i[:, :3]).max() * 3
        assert moment < damping_bound, rid
        assert np.all(np.isnan(gimbals.robots[rid].grasp.F_i[:, :3]))
        assert not gimbals.robots[rid].grasp.has_torque


def test_excitation_programs_move_the_payload_as_asked(gimbals):
    truth = gimbals.ground_truth
    phase = truth.grasps["robot_1"].meta["phase"]
    R_w_s0 = truth.T_w_s[0, :3, :3]
    R_s0_s = np.einsum("ji,kjl->kil", R_w_s0, truth.T_w_s[:, :3, :3])
    tilt = np.linalg.norm(Rotation.from_matrix(R_s0_s).as_rotvec(), axis=1)
    assert np.rad2deg(tilt[phase == "human_guided"].max()) > 3.0
    assert np.rad2deg(tilt.max()) < 14.0  # programs ask for at most 8 deg per axis
    static = phase == "static"
    speeds = np.linalg.norm(truth.grasps["robot_1"].V_i[static], axis=1)
    assert speeds.max() < 1e-4
    sphere = phase == "sphere"
    locked = truth.grasps["robot_3"].T_i0_i[sphere, :3, 3]
    moving = truth.grasps["robot_1"].T_i0_i[sphere, :3, 3]
    # The locked robot yields only through its stiff slides (a few mm under tens of N).
    assert np.ptp(locked, axis=0).max() < 3e-3 < 3e-2 < np.ptp(moving, axis=0).max()
    assert np.rad2deg(tilt[sphere].max()) > 3.0


@pytest.mark.parametrize("fixture", ["gimbals", "wrists"])
def test_urdf_kinematics_in_pinocchio_reproduce_mujoco(fixture, request):
    """Pinocchio on each robot's URDF, at the simulated joint positions and velocities, gives
    MuJoCo's grasp pose and body twist to round-off."""
    result = request.getfixturevalue(fixture)
    model = load_scenario(SCENARIOS / f"{result.scenario_name}.yaml").compile()
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    for record in result.robots.values():
        robot = pin.buildModelFromXML(record.urdf)
        robot_data = robot.createData()
        frame = robot.getFrameId(record.grasp_frame_id)
        names = [robot.names[j] for j in range(1, robot.njoints)]
        assert names == record.joints.names
        qadr = [model.joint(n).qposadr[0] for n in names]
        dadr = [model.joint(n).dofadr[0] for n in names]
        for k in rng.choice(len(record.time), size=20, replace=False):
            q, dq = record.joints.position[k], rng.normal(size=6)
            data.qpos[qadr], data.qvel[dadr] = q, dq
            mujoco.mj_forward(model, data)
            T_mj = inverse(body_pose_in_world(data, record.home_frame_id)) @ site_pose_in_world(
                data, record.grasp_frame_id
            )
            V_mj = np.zeros(6)
            site = model.site(record.grasp_frame_id).id
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, site, V_mj, 1)
            pin.forwardKinematics(robot, robot_data, q, dq)
            pin.updateFramePlacements(robot, robot_data)
            T_pin = robot_data.oMf[frame].homogeneous
            V_pin = pin.getFrameVelocity(robot, robot_data, frame, pin.LOCAL).vector
            np.testing.assert_allclose(T_pin, T_mj, atol=1e-12)
            np.testing.assert_allclose(V_pin[LINEAR_FIRST], V_mj, atol=1e-12)


def test_ground_truth_grasps_are_the_scenario_grasps(wrists):
    scenario = load_scenario(SCENARIOS / "test_two_wrists.yaml")
    truth = wrists.ground_truth
    T_P = {r.robot_id: r.T_P_i for r in scenario.robots}
    T_P_s = site_pose_in_body(scenario.compile(), "payload/robot_1")
    np.testing.assert_allclose(T_P_s, T_P["robot_1"], atol=1e-12)
    for rid, T_s_i in truth.T_s_i.items():
        np.testing.assert_allclose(T_s_i, inverse(T_P["robot_1"]) @ T_P[rid], atol=1e-12)
    assert truth.clock_offsets == {"robot_1": 0.0, "robot_2": 0.0123}


def test_ideal_sensors_give_the_true_grasp_signals(gimbals):
    for rid, record in gimbals.robots.items():
        truth = gimbals.ground_truth.grasps[rid]
        measured = record.grasp
        np.testing.assert_array_equal(measured.t, truth.t)
        np.testing.assert_allclose(measured.T_i0_i, truth.T_i0_i, atol=1e-15)
        np.testing.assert_allclose(measured.V_i, truth.V_i, atol=1e-15)
        np.testing.assert_array_equal(measured.F_i[:, 3:], truth.F_i[:, 3:])
        # dV: central differences of the velocities at 500 Hz (second order in the step).
        moving = measured.meta["phase"] != "settle"
        error = np.abs(measured.dV_i - truth.dV_i)[moving].max(axis=0)
        assert np.all(error <= 0.02 * np.abs(truth.dV_i).max(axis=0))


def test_joint_torque_wrench_recovers_the_ft_reading():
    """Forces from the slides' efforts (robot dynamics compensated by RNEA on the URDF) equal the
    flange F/T up to link mass x the error of the differenced joint accelerations."""
    result = run_scenario(
        short(
            "test_three_gimbals.yaml",
            sensors={"rate_hz": 500, "wrench": {"source": "joint_torque"}},
        )
    )
    for rid, record in result.robots.items():
        truth = result.ground_truth.grasps[rid]
        assert record.wrench is None
        error = np.abs(record.grasp.F_i[:, 3:] - truth.F_i[:, 3:])
        assert error.max() < 0.05, rid  # N, against forces of tens of N
        assert np.all(record.joints.effort[:, 3:] == 0.0)  # passive gimbal joints


def test_sensor_errors_follow_their_models(wrists):
    scenario = load_scenario(SCENARIOS / "test_two_wrists.yaml")
    config = scenario.robots[1].sensors
    record = wrists.robots["robot_2"]
    truth = wrists.ground_truth.grasps["robot_2"]
    n_all = len(truth.t)
    # Drop-outs: about 2 % of the samples are missing; the rest keep their true times.
    assert 0.005 < 1 - len(record.time) / n_all < 0.05
    assert np.all(np.isin(record.time, truth.t))
    # Clock: offset 12.3 ms, 50 ppm drift, jitter within +-0.5 ms.
    skew = record.stamp - record.time * (1 + 50e-6) - 0.0123
    assert np.abs(skew).max() <= 0.0005 and skew.std() > 1e-4
    assert np.all(np.diff(record.stamp) > 0)
    # Encoders: quantized positions.
    q = record.joints.position
    np.testing.assert_allclose(q[:, :3] / 1e-5, np.round(q[:, :3] / 1e-5), atol=1e-6)
    step = np.deg2rad(0.01)
    np.testing.assert_allclose(q[:, 3:] / step, np.round(q[:, 3:] / step), atol=1e-6)
    # The drawn constant errors are reported, and the F/T reading is scale * F + bias + noise.
    errors = record.sensor_errors
    keep = np.isin(truth.t, record.time)
    F_true = truth.F_i[keep]
    residual = -record.wrench.wrench - (F_true * errors["wrench_scale"] + errors["wrench_bias"])
    assert residual[:, 3:].std(axis=0) == pytest.approx([0.2] * 3, rel=0.15)
    assert residual[:, :3].std(axis=0) == pytest.approx([0.01] * 3, rel=0.15)
    assert config.wrench.force_noise == 0.2
    # The IMU measures the grasp frame's angular velocity (gyro noise 0.002 rad/s + bias).
    gyro_error = record.imu.angular_velocity - truth.V_i[keep, :3] - errors["gyro_bias"]
    assert gyro_error.std(axis=0) == pytest.approx([0.002] * 3, rel=0.2)


def test_runs_are_deterministic_and_robots_independently_seeded():
    data = short("test_two_wrists.yaml")
    first, again = run_scenario(data), run_scenario(data)
    other_seed = run_scenario(data, seed=99)
    for rid in first.robots:
        a, b, c = first.robots[rid], again.robots[rid], other_seed.robots[rid]
        np.testing.assert_array_equal(a.joints.position, b.joints.position)
        np.testing.assert_array_equal(a.stamp, b.stamp)
        np.testing.assert_array_equal(a.grasp.F_i, b.grasp.F_i)
        assert not np.array_equal(a.wrench.wrench, c.wrench.wrench)
    # A noisier robot_2 leaves robot_1's measurements unchanged.
    noisier = copy.deepcopy(data)
    noisier["robots"][1]["sensors"]["encoder"] = {"linear_noise": 1e-3}
    changed = run_scenario(noisier)
    np.testing.assert_array_equal(
        changed.robots["robot_1"].joints.position, first.robots["robot_1"].joints.position
    )
    assert not np.array_equal(
        changed.robots["robot_2"].joints.position, first.robots["robot_2"].joints.position
    )


def test_a_team_of_sixteen_holds_its_payload():
    data = scenario_dict("test_three_gimbals.yaml")
    data["payload"]["size"] = [1.6, 1.6, 0.04]
    data["robots"] = [
        {"id": f"robot_{k + 1}", "grasp": {"xyz": [0.45 * (k % 4), 0.45 * (k // 4), 0.0]}}
        for k in range(16)
    ]
    data["robot_defaults"]["sensors"] = {"rate_hz": 100}
    data["excitation"] = [{"program": "static_holds", "orientations_deg": [[3, 0, 0]], "hold": 0.6}]
    result = run_scenario(data)
    truth = result.ground_truth
    static = result.phase_samples(truth.grasps["robot_1"], "static")
    R_w_s = truth.T_w_s[static, :3, :3]
    total = sum(
        np.einsum("kij,jl,kl->ki", R_w_s, truth.T_s_i[rid][:3, :3], s.F_i[static, 3:])
        for rid, s in truth.grasps.items()
    )
    weight = -truth.payload.mass * truth.gravity_w
    np.testing.assert_allclose(total, np.tile(weight, (len(static), 1)), rtol=1e-4, atol=1e-2)
    assert len(result.robots) == 16


def test_phases_cover_the_run(wrists):
    programs = [p.program for p in wrists.phases]
    assert programs == ["human_guided", "static_holds", "scripted"]
    assert wrists.duration == pytest.approx(sum(p.end - p.start for p in wrists.phases))
    for a, b in zip(wrists.phases, wrists.phases[1:], strict=False):
        assert a.end == pytest.approx(b.start)
    labels = set(wrists.ground_truth.grasps["robot_1"].meta["phase"])
    assert labels == {"settle", "human_guided", "transition", "static", "scripted"}


def test_segments_are_the_contiguous_stretches_of_a_label(gimbals):
    holds = gimbals.segments("static")
    assert len(holds) == 2  # the scenario holds two orientations
    for hold in holds:
        for rid, series in hold.items():
            assert set(series.meta["phase"]) == {"static"}
            assert len(series.t) == len(series.V_i) == len(series.meta["time"]) > 100
            assert series.robot_id == rid and not series.has_torque
    truth = gimbals.segments("static", truth=True)
    np.testing.assert_array_equal(truth[0]["robot_2"].t, holds[0]["robot_2"].meta["time"])


def test_a_diverging_simulation_is_reported_not_returned():
    """The validation keeps gains stable; past it, MuJoCo's reset on divergence is an error."""
    scenario = load_scenario(short("test_three_gimbals.yaml"))
    reckless = [
        dataclasses.replace(r, stiff=Gains((5e8, 4e2), r.stiff.rotation)) for r in scenario.robots
    ]
    object.__setattr__(scenario, "robots", tuple(reckless))  # bypass the validation
    with pytest.raises(SimulationError, match="diverged.*lower the gains"):
        scenario.run()
