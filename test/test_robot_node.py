"""core.grasp_signals and robot_node on MuJoCo-simulated joint states, F/T and IMU readings,
against the simulator's noise-free grasp signals; bad input is rejected and counted.

Reference: ``ground_truth.grasps`` of a run, Pinocchio on the true joint states with MuJoCo's
own joint accelerations and flange F/T. The pipeline differentiates velocities by central
differences, so dV is compared outside the ``settle`` stretches (where gains switch and the
acceleration jumps) within 2 % of its range, the bound the simulator's own tests justify for
central differences; everything not differentiated must match to round-off.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from scipy import signal
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from inertia_estimation_ros.core.grasp_signals import (
    HELD_BEFORE_URDF,
    GraspSignals,
    GraspSignalSettings,
)
from inertia_estimation_ros.core.robot_kinematics import RobotModelError
from inertia_estimation_ros.core.signals import butterworth_lowpass, causal_lowpass
from inertia_estimation_ros.core.spatial import transform, wrench_to
from inertia_estimation_ros.msg import GraspState, GraspStateArray
from inertia_estimation_ros.ros.conversions import (
    grasp_sample,
    grasp_samples,
    seconds,
    to_pose,
    to_time,
    to_wrench,
)
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.nodes import robot_node
from inertia_estimation_ros.ros.nodes.robot_node import STALE, RobotNode
from inertia_estimation_ros.ros.parameters import ParameterError
from inertia_estimation_ros.ros.runtime import EXECUTORS
from inertia_estimation_ros.ros.spin import spin_until
from inertia_estimation_ros.sim.scenario import read_scenario_yaml, run_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"
DV_TOLERANCE = 0.02  # central differences, relative to the signal's range (see the docstring)


def ideal_wrists() -> dict:
    """Two 6-DoF wrists with F/T sensors and wrist IMUs, all ideal, 200 Hz."""
    data = read_scenario_yaml(SCENARIOS / "test_two_wrists.yaml")
    data["robot_defaults"]["sensors"] = {"rate_hz": 200, "imu": {"enabled": True}}
    for robot in data["robots"]:
        robot.pop("sensors", None)
    data["excitation"] = data["excitation"][:2]
    return data


@pytest.fixture(scope="module")
def gimbals():
    """Three Delta robots with passive gimbals and F/T sensors, ideal, 100 Hz, 3.9 s."""
    return run_scenario(SCENARIOS / "test_graph.yaml")


@pytest.fixture(scope="module")
def efforts():
    """The same team sensing forces through the slides' joint efforts."""
    data = read_scenario_yaml(SCENARIOS / "test_graph.yaml")
    data["robot_defaults"]["sensors"] = {"rate_hz": 100, "wrench": {"source": "joint_torque"}}
    return run_scenario(data)


@pytest.fixture(scope="module")
def wrists():
    return run_scenario(ideal_wrists())


def settings(result, robot_id: str, **overrides) -> GraspSignalSettings:
    """The robot's pipeline settings: no filter, every sample, gravity of its home frame."""
    record, truth = result.robots[robot_id], result.ground_truth
    g_i0 = truth.T_w_i0[robot_id][:3, :3].T @ truth.gravity_w
    values = {
        "robot_id": robot_id,
        "grasp_frame": record.grasp_frame_id,
        "home_frame": record.home_frame_id,
        "has_torque": record.kind == "wrist_6dof",
        "gravity_i0": tuple(g_i0),
        "cutoff_hz": 0.0,
        "output_rate_hz": 0.0,
    }
    return GraspSignalSettings(**(values | overrides))


def feed(signals: GraspSignals, record, pose: bool = False) -> list:
    """Every message of a robot's streams, in the order a driver sends them."""
    out = []
    for k, t in enumerate(record.stamp):
        if pose:
            out += signals.add_pose(t, record.home_frame_id, record.grasp.T_i0_i[k])
        else:
            joints = record.joints
            out += signals.add_joint_state(
                t, joints.names, joints.position[k], joints.velocity[k], joints.effort[k]
            )
        if record.wrench is not None and signals.settings.wrench_source == "ft_sensor":
            out += signals.add_wrench(t, record.wrench.frame_id, record.wrench.wrench[k])
        if record.imu is not None and signals.settings.gravity_source == "imu":
            imu = record.imu
            out += signals.add_imu(
                t, imu.frame_id, imu.angular_velocity[k], imu.linear_acceleration[k]
            )
    return out


def nearest(t: np.ndarray, stamps: np.ndarray) -> np.ndarray:
    """Index of the time in t nearest to each stamp."""
    return np.abs(np.subtract.outer(np.atleast_1d(stamps), t)).argmin(axis=1)


def stacked(samples: list, truth) -> dict[str, np.ndarray]:
    """The samples' fields stacked, the matching truth rows, and where the payload moves."""
    t = np.array([s.stamp for s in samples])
    index = nearest(truth.t, t)
    np.testing.assert_allclose(truth.t[index], t, atol=1e-9)  # messages round to 1 ns
    return {
        "t": t,
        "index": index,
        "moving": truth.meta["phase"][index] != "settle",
        "T": np.array([s.T_i0_i for s in samples]),
        "V": np.array([s.V_i for s in samples]),
        "dV": np.array([s.dV_i for s in samples]),
        "F": np.array([s.F_i for s in samples]),
        "g": np.array([np.full(3, np.nan) if s.g_i is None else s.g_i for s in samples]),
    }


def assert_dV_close(got: dict, truth) -> None:
    reference = truth.dV_i[got["index"]]
    error = np.abs(got["dV"] - reference)[got["moving"]].max(axis=0)
    assert np.all(error <= DV_TOLERANCE * np.abs(truth.dV_i).max(axis=0)), error


# ----- the core pipeline ----------------------------------------------------------------------
def test_joint_states_and_ft_give_the_true_grasp_signals(gimbals):
    for rid, record in gimbals.robots.items():
        truth = gimbals.ground_truth.grasps[rid]
        signals = GraspSignals(settings(gimbals, rid), record.urdf)
        got = stacked(feed(signals, record), truth)
        # Each sample leaves when the next arrives: all but the first and the last, in order.
        np.testing.assert_array_equal(got["t"], record.stamp[1:-1])
        i = got["index"]
        np.testing.assert_allclose(got["T"], truth.T_i0_i[i], atol=1e-12)
        np.testing.assert_allclose(got["V"], truth.V_i[i], atol=1e-12)
        assert_dV_close(got, truth)
        # F/T in the grasp frame reads minus F_i; a passive gimbal reports no moment.
        np.testing.assert_allclose(got["F"][:, 3:], truth.F_i[i, 3:], atol=1e-12)
        assert np.all(np.isnan(got["F"][:, :3]))
        np.testing.assert_allclose(got["g"], truth.g_i[i], atol=1e-12)
        assert not signals.rejected and not signals.restarts and not signals.missing


def test_joint_efforts_give_the_simulators_wrench(efforts):
    """F_i = (J^T)^+ (tau - RNEA): the simulator's own measured grasp samples use the same
    formula with the same central differences (bit for bit), and match the flange F/T up to the
    slides' mass times the differenced accelerations' error (0.05 N, as the simulator's test)
    outside the settle stretches."""
    for rid, record in efforts.robots.items():
        truth = efforts.ground_truth.grasps[rid]
        signals = GraspSignals(settings(efforts, rid, wrench_source="joint_efforts"), record.urdf)
        got = stacked(feed(signals, record), truth)
        simulator = record.grasp.F_i[1:-1]
        np.testing.assert_allclose(got["F"][:, 3:], simulator[:, 3:], rtol=1e-12, atol=1e-12)
        error = np.abs(got["F"][:, 3:] - truth.F_i[got["index"], 3:])[got["moving"]]
        assert error.max() < 0.05


def test_wrist_ft_with_moments_and_gravity_from_the_imu(wrists):
    """The IMU sits at the grasp origin: g_i = (dv + omega x v) - f, so its error is exactly the
    differenced linear acceleration's error."""
    for rid, record in wrists.robots.items():
        truth = wrists.ground_truth.grasps[rid]
        signals = GraspSignals(settings(wrists, rid, gravity_source="imu"), record.urdf)
        got = stacked(feed(signals, record), truth)
        i = got["index"]
        np.testing.assert_allclose(got["F"], truth.F_i[i], atol=1e-12)
        dv_error = np.abs(got["dV"][:, 3:] - truth.dV_i[i, 3:])
        assert np.all(np.abs(got["g"] - truth.g_i[i]) <= dv_error + 1e-9)
        assert_dV_close(got, truth)


def test_grasp_pose_mode_differentiates_on_se3(wrists):
    """Half-step twists log(T_k^-1 T_k+1) / h interpolated to t_k: second order in h, within
    1 % of the twist's range at 200 Hz; no URDF needed, gravity from the pose."""
    for rid, record in wrists.robots.items():
        truth = wrists.ground_truth.grasps[rid]
        signals = GraspSignals(settings(wrists, rid, kinematics_source="grasp_pose"))
        got = stacked(feed(signals, record, pose=True), truth)
        i, moving = got["index"], got["moving"]
        np.testing.assert_allclose(got["T"], truth.T_i0_i[i], atol=1e-12)
        V_error = np.abs(got["V"] - truth.V_i[i])[moving].max(axis=0)
        assert np.all(V_error <= 0.01 * np.abs(truth.V_i).max(axis=0))
        assert_dV_close(got, truth)
        np.testing.assert_allclose(got["F"], truth.F_i[i], atol=1e-12)
        np.testing.assert_allclose(got["g"], truth.g_i[i], atol=1e-12)


def test_the_causal_filter_delays_the_signals_by_its_group_delay(gimbals):
    """With a 10 Hz 4th-order Butterworth, the outputs are the true signals tau0 seconds late
    (tau0 its group delay at 0 Hz, from scipy). Tolerance: how far the filter is from a pure
    delay on each true signal (|sosfilt(x) - x(t - tau0)|, scipy), plus 25 % for filtering the
    joint values before the nonlinear kinematics instead of after, plus the unfiltered dV error.
    """
    rid, cutoff = "robot_2", 10.0
    record, truth = gimbals.robots[rid], gimbals.ground_truth.grasps[rid]
    rate = 1.0 / np.median(np.diff(record.stamp))
    b, a = signal.sos2tf(butterworth_lowpass(cutoff, rate))
    tau0 = signal.group_delay((b, a), w=[0.0], fs=rate)[1][0] / rate
    filtered = stacked(
        feed(GraspSignals(settings(gimbals, rid, cutoff_hz=cutoff), record.urdf), record), truth
    )
    raw = stacked(feed(GraspSignals(settings(gimbals, rid), record.urdf), record), truth)
    t, moving = filtered["t"], filtered["moving"] & (filtered["t"] > truth.t[0] + 5 * tau0)
    checks = {
        "p": (filtered["T"][:, :3, 3], truth.T_i0_i[:, :3, 3], 0.0),
        "V": (filtered["V"], truth.V_i, 0.0),
        "dV": (
            filtered["dV"],
            truth.dV_i,
            np.abs(raw["dV"] - truth.dV_i[raw["index"]])[raw["moving"]].max(axis=0),
        ),
        "f": (filtered["F"][:, 3:], truth.F_i[:, 3:], 0.0),
    }
    for name, (got, x, unfiltered_error) in checks.items():
        delayed = np.column_stack([np.interp(t - tau0, truth.t, column) for column in x.T])
        lowpassed = causal_lowpass(x, rate, cutoff)[filtered["index"]]
        not_a_delay = np.abs(lowpassed - delayed)[moving].max(axis=0)
        error = np.abs(got - delayed)[moving].max(axis=0)
        assert np.all(error <= 1.25 * not_a_delay + unfiltered_error + 1e-9), name
    # The analog 4th-order Butterworth delays by 2.613 / w_c; the bilinear transform at
    # f_c / f_s = 0.1 shortens that by about 3 %.
    assert tau0 == pytest.approx(2.6131 / (2 * np.pi * cutoff), rel=0.05)


def test_decimation_keeps_every_nth_sample_with_its_own_stamp(gimbals):
    rid = "robot_1"
    record = gimbals.robots[rid]
    full = GraspSignals(settings(gimbals, rid), record.urdf)
    every = feed(full, record)
    halved = GraspSignals(settings(gimbals, rid, output_rate_hz=50.0), record.urdf)
    evaluated = []  # the kinematics are computed for the kept samples only
    evaluate = halved.kinematics.evaluate
    halved.kinematics.evaluate = lambda *a: evaluated.append(1) or evaluate(*a)
    decimated = feed(halved, record)
    assert halved.decimation == 2
    assert "aliases" in halved.notes[0]  # no low-pass below the decimated Nyquist rate
    assert [s.stamp for s in decimated] == [s.stamp for s in every[::2]]
    assert len(evaluated) == len(decimated)
    for kept, sample in zip(decimated, every[::2], strict=True):
        for field in ("T_i0_i", "V_i", "dV_i", "F_i", "g_i"):
            assert getattr(kept, field).tobytes() == getattr(sample, field).tobytes(), field
    assert halved.missing == full.missing and halved.rejected == full.rejected


# What the code before issue 14's CPU work (main at 0ad9aab) made of robot_1's first 60 joint
# states of ``efforts`` (joint efforts, gimbal, 5-Hz filter, every 2nd sample): per field, the
# sum over its 29 samples (NaN as 0) and the last sample's body twist and wrench.
PINNED_SUMS = {
    "T_i0_i": [
        28.999898027008392, 0.00010499089999192831, -0.04304715486497017, 1.7321134723897622e-05,
        9.834984231134473e-05, 28.99989851980882, 0.04368161700214804, -1.40651156850441e-05,
        0.04304718168791261, -0.04368158890309356, 28.99979654683064, 4.274711032482658,
        0.0, 0.0, 0.0, 29.0,
    ],
    "V_i": [
        0.28399196429486595, 0.2816178372998659, -1.2445467023433498e-05,
        0.0004840289533768945, -0.0005348544287644887, 0.37694425488135636,
    ],
    "dV_i": [
        -0.042809199792492675, 0.02710427226943527, 0.0016115286105546618,
        0.0004704797466724643, -0.0020939913137678146, 0.008543302035429506,
    ],
    "F_i": [0.0, 0.0, 0.0, 2.7703131517473096, -2.8264707649958916, 4338.923267252437],
    "g_i": [-0.4222928523584226, 0.4285163871393478, -284.4880041244086],
}  # fmt: skip
PINNED_LAST_V = [
    -0.00034170069653208837, 0.0001765335072065741, 1.427134144355006e-05,
    1.3287863052113826e-06, -9.128252206637798e-06, -4.427911153511625e-05,
]  # fmt: skip
PINNED_LAST_F = [
    np.nan,
    np.nan,
    np.nan,
    -0.13868352779492626,
    0.1407134431384212,
    150.2473543725408,
]


def test_the_outputs_of_a_short_input_stay_those_of_before(efforts):
    """The signals of a short deterministic input as the code before the CPU work made them
    (to round-off: the simulation and BLAS may differ in the last bits across machines)."""
    rid = "robot_1"
    record = efforts.robots[rid]
    overrides = dict(wrench_source="joint_efforts", has_torque=False, cutoff_hz=5.0)
    signals = GraspSignals(settings(efforts, rid, output_rate_hz=50.0, **overrides), record.urdf)
    out, j = [], record.joints
    for k in range(60):
        t, q, dq, tau = record.stamp[k], j.position[k], j.velocity[k], j.effort[k]
        out += signals.add_joint_state(t, j.names, q, dq, tau)
    assert len(out) == 29 and out[-1].stamp == pytest.approx(1.57, abs=1e-12)
    for field, sums in PINNED_SUMS.items():
        got = np.nansum([getattr(sample, field) for sample in out], axis=0).ravel()
        np.testing.assert_allclose(got, sums, rtol=1e-9, atol=1e-12, err_msg=field)
    np.testing.assert_allclose(out[-1].V_i, PINNED_LAST_V, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(out[-1].F_i, PINNED_LAST_F, rtol=1e-9)


def urdf_with_sensor_frame(urdf: str, parent: str, T_parent_f: np.ndarray) -> str:
    """The URDF plus a link ``sensor`` fixed to ``parent`` at T_parent_f (an F/T mount)."""
    robot = ET.fromstring(urdf)
    ET.SubElement(robot, "link", name="sensor")
    joint = ET.SubElement(robot, "joint", name="sensor_mount", type="fixed")
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link="sensor")
    rpy = Rotation.from_matrix(T_parent_f[:3, :3]).as_euler("xyz")  # URDF: fixed axes x, y, z
    xyz = T_parent_f[:3, 3]
    numbers = lambda v: " ".join(str(float(x)) for x in v)  # noqa: E731
    ET.SubElement(joint, "origin", xyz=numbers(xyz), rpy=numbers(rpy))
    return ET.tostring(robot, encoding="unicode")


def test_ft_readings_in_a_sensor_frame_on_the_grasp_link_are_moved_to_the_grasp(wrists):
    """A sensor at T_i_f reads W_f = -Ad(T_i_f)^T F_i (what the payload exerts on the robot);
    the node recovers F_i. With ``ft_measures: wrench_on_payload`` the sign flips."""
    rid = "robot_1"
    record, truth = wrists.robots[rid], wrists.ground_truth.grasps[rid]
    T_i_f = transform(
        Rotation.from_euler("xyz", [10.0, -20.0, 30.0], degrees=True).as_matrix(),
        [0.01, -0.02, 0.05],
    )
    urdf = urdf_with_sensor_frame(record.urdf, record.grasp_frame_id, T_i_f)
    for measures, sign in (("wrench_on_robot", -1.0), ("wrench_on_payload", 1.0)):
        signals = GraspSignals(settings(wrists, rid, ft_measures=measures), urdf)
        out = []
        for k, t in enumerate(record.stamp):
            joints = record.joints
            out += signals.add_joint_state(
                t, joints.names, joints.position[k], joints.velocity[k], joints.effort[k]
            )
            W_f = sign * wrench_to(T_i_f, record.grasp.F_i[k])
            out += signals.add_wrench(t, "sensor", W_f)
        got = stacked(out, truth)
        np.testing.assert_allclose(got["F"], truth.F_i[got["index"]], atol=1e-10)
        assert not signals.rejected


def test_a_frame_prefix_and_sensor_offsets_from_tf_static(wrists):
    """tf2 frames as robot_state_publisher names them: every frame id carries the
    ``frame_prefix``; an F/T frame the URDF lacks is attached to the grasp frame by two fixed
    transforms on /tf_static (parent -> child, the child's pose in the parent), chained."""
    rid = "robot_1"
    record, truth = wrists.robots[rid], wrists.ground_truth.grasps[rid]
    prefix = "team_a/"
    grasp = prefix + record.grasp_frame_id
    T_i_a = transform(Rotation.from_euler("z", 90.0, degrees=True).as_matrix(), [0.0, 0.0, 0.04])
    T_a_f = transform(Rotation.from_euler("x", 30.0, degrees=True).as_matrix(), [0.01, 0.0, 0.02])
    signals = GraspSignals(settings(wrists, rid, frame_prefix=prefix), record.urdf)
    assert signals.settings.frame_id(record.grasp_frame_id) == grasp
    signals.add_static_transform(grasp, "team_a/ft_adapter", T_i_a)
    signals.add_static_transform("team_a/ft_adapter", "team_a/ft_link", T_a_f)
    out = []
    for k, t in enumerate(record.stamp):
        joints = record.joints
        out += signals.add_joint_state(
            t, joints.names, joints.position[k], joints.velocity[k], joints.effort[k]
        )
        out += signals.add_wrench(
            t, "team_a/ft_link", -wrench_to(T_i_a @ T_a_f, record.grasp.F_i[k])
        )
    got = stacked(out, truth)
    np.testing.assert_allclose(got["F"], truth.F_i[got["index"]], atol=1e-10)
    assert not signals.rejected
    signals.add_wrench(record.stamp[-1] + 0.01, record.grasp_frame_id, np.zeros(6))
    assert signals.rejected["wrong_frame"] == 1  # the unprefixed name is not a TF frame here
    assert "/tf_static" in signals.last_error


def test_joint_states_from_several_sources_are_merged(gimbals):
    """The slides' controller and the wrist driver publish their own JointStates (the wrist's
    carries the joint nearest the grasp and makes the samples): the same samples as from one
    source; a wrist message before any slide state is refused naming the missing joints."""
    rid = "robot_3"
    record = gimbals.robots[rid]
    one = feed(GraspSignals(settings(gimbals, rid), record.urdf), record)
    signals = GraspSignals(settings(gimbals, rid), record.urdf)
    j, chain = record.joints, signals.kinematics.joint_names
    wrist = [k for k, n in enumerate(j.names) if n in chain[3:]]
    slides = [k for k, n in enumerate(j.names) if n in chain[:3]]
    first = signals.add_joint_state(
        record.stamp[0],
        [j.names[k] for k in wrist],
        *(v[0][wrist] for v in (j.position, j.velocity, j.effort)),
    )
    assert not first and signals.rejected["unknown_joints"] == 1
    assert all(n in signals.last_error for n in chain[:3])
    merged = []
    for k, t in enumerate(record.stamp):
        for part in (slides, wrist):
            names = [j.names[i] for i in part]
            merged += signals.add_joint_state(
                t, names, j.position[k][part], j.velocity[k][part], j.effort[k][part]
            )
        merged += signals.add_wrench(t, record.wrench.frame_id, record.wrench.wrench[k])
    assert len(merged) == len(one)
    for a, b in zip(merged, one, strict=True):
        np.testing.assert_allclose(a.T_i0_i, b.T_i0_i, atol=1e-12)
        np.testing.assert_allclose(a.dV_i, b.dV_i, atol=1e-9)
        np.testing.assert_allclose(a.F_i, b.F_i, atol=1e-9)


def joint_message(record, k: int) -> tuple:
    j = record.joints
    return record.stamp[k], list(j.names), j.position[k], j.velocity[k], j.effort[k]


def test_messages_before_the_urdf_are_held_and_come_out_once_it_arrives(gimbals):
    """A robot_description that arrives after the first joint states (robot_state_publisher
    started late, or discovered late) loses nothing: the same samples as with it from the start;
    beyond the held limit the oldest are dropped and counted."""
    rid = "robot_3"
    record = gimbals.robots[rid]
    frame = record.wrench.frame_id

    def feed(signals: GraspSignals, ks: range) -> list:
        out = []
        for k in ks:
            out += signals.add_joint_state(*joint_message(record, k))
            out += signals.add_wrench(record.stamp[k], frame, record.wrench.wrench[k])
        return out

    reference = feed(GraspSignals(settings(gimbals, rid), record.urdf), range(60))
    late = GraspSignals(settings(gimbals, rid))
    assert feed(late, range(30)) == []
    samples = late.set_urdf(record.urdf) + feed(late, range(30, 60))
    assert len(samples) == len(reference) > 0 and not late.rejected
    for a, b in zip(samples, reference, strict=True):
        assert (
            a.stamp == b.stamp
            and np.array_equal(a.F_i, b.F_i, equal_nan=True)
            and np.array_equal(a.T_i0_i, b.T_i0_i)
        )

    overflow = GraspSignals(settings(gimbals, rid))
    for _ in range(HELD_BEFORE_URDF // 2 + 5):
        feed(overflow, range(1))
    assert overflow.rejected == {"no_urdf": 10} and "robot_description" in overflow.last_error


def test_bad_input_is_rejected_and_counted_and_a_looping_clock_restarts(gimbals):
    rid = "robot_3"
    record = gimbals.robots[rid]
    signals = GraspSignals(settings(gimbals, rid))
    frame = record.wrench.frame_id
    signals.set_urdf(record.urdf)
    out = []
    for k in range(40):
        out += signals.add_joint_state(*joint_message(record, k))
        out += signals.add_wrench(record.stamp[k], frame, record.wrench.wrench[k])
    t, names, q, dq, tau = joint_message(record, 40)
    bad = [
        signals.add_joint_state(t, names, np.full(6, np.nan), dq, tau),
        signals.add_joint_state(t, names[:-1] + ["elbow"], q, dq, tau),
        signals.add_joint_state(t, names, q[:3], dq, tau),
        signals.add_joint_state(record.stamp[39], names, q, dq, tau),  # duplicate stamp
        signals.add_joint_state(record.stamp[35], names, q, dq, tau),  # out of order
        signals.add_wrench(t, "robot_1/grasp", record.wrench.wrench[40]),  # another robot's
        signals.add_wrench(t, frame, np.array([np.inf, 0, 0, 0, 0, 0])),
        signals.add_pose(t, record.home_frame_id, np.eye(4)),  # not this node's source
    ]
    assert bad == [[]] * len(bad)
    assert signals.rejected == {
        "non_finite": 2,
        "unknown_joints": 1,
        "malformed": 1,
        "duplicate_stamp": 1,
        "out_of_order": 1,
        "wrong_frame": 1,
        "unused_stream": 1,
    }
    assert signals.last_error.startswith("unused_stream: a grasp pose arrives")
    for k in range(40, 80):  # the stream goes on unharmed
        out += signals.add_joint_state(*joint_message(record, k))
        out += signals.add_wrench(record.stamp[k], frame, record.wrench.wrench[k])
    np.testing.assert_array_equal([s.stamp for s in out], record.stamp[1:79])
    # A bag that loops: stamps jump back to the start; everything restarts, nothing is lost.
    again = []
    for k in range(20):
        again += signals.add_joint_state(*joint_message(record, k))
        again += signals.add_wrench(record.stamp[k], frame, record.wrench.wrench[k])
    assert signals.restarts == {"clock_jump": 1}
    np.testing.assert_array_equal([s.stamp for s in again], record.stamp[1:19])
    assert all(s.has_force for s in out + again)


def test_missing_ft_data_delays_samples_at_most_the_sync_timeout(gimbals):
    rid = "robot_1"
    record = gimbals.robots[rid]
    signals = GraspSignals(settings(gimbals, rid, sync_timeout=0.035), record.urdf)
    out = []
    for k in range(30):
        out += signals.add_joint_state(*joint_message(record, k))
    # Each sample waits until the kinematics are more than 35 ms (4 samples) ahead of it.
    np.testing.assert_array_equal([s.stamp for s in out], record.stamp[1:26])
    assert not any(s.has_force or s.has_torque for s in out)
    assert signals.missing["ft_sensor"] == len(out)


def test_settings_and_models_that_cannot_work_are_refused(gimbals):
    with pytest.raises(ValueError, match="joint_efforts needs kinematics_source joint_states"):
        GraspSignalSettings("r", "r/grasp", "r/home", "grasp_pose", "joint_efforts")
    with pytest.raises(ValueError, match="gravity_source 'compass' is not one of"):
        GraspSignalSettings("r", "r/grasp", "r/home", gravity_source="compass")
    record = gimbals.robots["robot_1"]
    with pytest.raises(RobotModelError, match="grasp frame 'robot_1/tool' is not in the URDF"):
        GraspSignals(settings(gimbals, "robot_1", grasp_frame="robot_1/tool"), record.urdf)


# ----- the node over DDS ----------------------------------------------------------------------
class Harness:
    """A RobotNode and a test node that feeds it in lock step and collects its outputs, on
    rclpy's single-threaded executor or another of ``runtime.EXECUTORS``."""

    def __init__(self, context, robot_id: str, executor: str = "single", **parameters):
        overrides = [Parameter(k, value=v) for k, v in parameters.items()]
        self.node = RobotNode(
            context=context,
            namespace=robot_id,
            parameter_overrides=overrides,
            use_global_arguments=False,
        )
        self.tester = Node("tester", context=context, namespace=robot_id)
        self.executor = EXECUTORS[executor](context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.tester)
        self.out: dict[str, list] = {"grasp_state": [], "grasp_twist": [], "grasp_wrench": []}
        self.diagnostics = []
        for topic, kind in (
            ("grasp_state", GraspState),
            ("grasp_twist", TwistStamped),
            ("grasp_wrench", WrenchStamped),
        ):
            self.tester.create_subscription(kind, topic, self.out[topic].append, SENSOR_QOS)
        self.tester.create_subscription(
            DiagnosticArray, "/diagnostics", self.diagnostics.append, RELIABLE_QOS
        )
        self.pub = {
            "joint_states": self.tester.create_publisher(JointState, "joint_states", SENSOR_QOS),
            "ft_sensor": self.tester.create_publisher(WrenchStamped, "ft_sensor", SENSOR_QOS),
            "grasp_pose": self.tester.create_publisher(PoseStamped, "grasp_pose", SENSOR_QOS),
            "robot_description": self.tester.create_publisher(
                String, "robot_description", LATCHED_QOS
            ),
        }

    def spin_until(self, done, timeout: float = 10.0) -> bool:
        return spin_until(self.executor, done, timeout)

    def connected(self, *topics: str) -> bool:
        return self.spin_until(lambda: all(self.pub[t].get_subscription_count() for t in topics))

    def send(self, topic: str, msg) -> None:
        """Publish and spin until the node has taken the message (accepted or rejected)."""
        signals = self.node.signals
        before = sum(signals.accepted.values()) + sum(signals.rejected.values())
        self.pub[topic].publish(msg)
        assert self.spin_until(
            lambda: sum(signals.accepted.values()) + sum(signals.rejected.values()) > before
        ), f"{topic} message never arrived"

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.tester.destroy_node()


def joint_state(record, k: int, **changes) -> JointState:
    """Sample k's JointState, with fields replaced by ``changes``."""
    j = record.joints
    fields = {
        "name": list(j.names),
        "position": j.position[k].tolist(),
        "velocity": j.velocity[k].tolist(),
        "effort": j.effort[k].tolist(),
    }
    msg = JointState(**(fields | changes))
    msg.header.stamp = to_time(record.stamp[k])
    return msg


def ft_reading(record, k: int, frame: str | None = None) -> WrenchStamped:
    msg = WrenchStamped(wrench=to_wrench(record.wrench.wrench[k]))
    msg.header.stamp = to_time(record.stamp[k])
    msg.header.frame_id = frame or record.wrench.frame_id
    return msg


@pytest.mark.timeout(120)
@pytest.mark.parametrize("executor", ["single", "events"])  # the executable spins on "events"
def test_robot_node_publishes_what_the_core_computes(ros_context, gimbals, executor):
    """Joint states, F/T and the latched URDF in; GraspState, TwistStamped and WrenchStamped
    out, stamped with the input's sample times, equal to the offline core (and so to the
    simulator's grasp signals, tested above)."""
    rid = "robot_2"
    record, truth = gimbals.robots[rid], gimbals.ground_truth.grasps[rid]
    h = Harness(ros_context, rid, executor, has_torque=False, cutoff_hz=0.0, rate_hz=0.0)
    try:
        assert h.connected("joint_states", "ft_sensor", "robot_description")
        h.pub["robot_description"].publish(String(data=record.urdf))
        assert h.spin_until(lambda: h.node.signals.kinematics is not None)
        for k in range(len(record.stamp)):
            h.send("joint_states", joint_state(record, k))
            h.send("ft_sensor", ft_reading(record, k))
        n = len(record.stamp) - 2
        assert h.spin_until(
            lambda: len(h.out["grasp_state"]) == n and len(h.out["grasp_wrench"]) == n
        )
        expected = feed(GraspSignals(settings(gimbals, rid), record.urdf), record)
        got = [grasp_sample(m) for m in h.out["grasp_state"]]
        assert [s.stamp for s in got] == pytest.approx([s.stamp for s in expected], abs=1e-9)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a.T_i0_i, b.T_i0_i, atol=1e-12)
            np.testing.assert_allclose(a.V_i, b.V_i, atol=1e-12)
            np.testing.assert_allclose(a.dV_i, b.dV_i, atol=1e-12)
            np.testing.assert_allclose(a.F_i[3:], b.F_i[3:], atol=1e-12)
            np.testing.assert_allclose(a.g_i, b.g_i, atol=1e-12)
            assert not a.has_torque and a.has_force
        state = h.out["grasp_state"][0]
        assert (state.header.frame_id, state.home_frame_id, state.robot_id) == (
            f"{rid}/grasp",
            f"{rid}/home",
            rid,
        )
        twist = h.out["grasp_twist"][5]
        assert twist.header.frame_id == f"{rid}/grasp"
        assert twist.header.stamp == h.out["grasp_state"][5].header.stamp
        (i,) = nearest(truth.t, seconds(twist.header.stamp))
        assert twist.twist.angular.x == pytest.approx(truth.V_i[i, 0], abs=1e-12)
        wrench = h.out["grasp_wrench"][5].wrench
        assert [wrench.force.x, wrench.torque.x] == pytest.approx([truth.F_i[i, 3], 0.0], abs=1e-12)
    finally:
        h.close()


@pytest.mark.timeout(120)
def test_robot_node_rejects_malformed_input_and_keeps_going(ros_context, gimbals):
    rid = "robot_1"
    record = gimbals.robots[rid]
    h = Harness(
        ros_context,
        rid,
        robot_description=record.urdf,
        has_torque=False,
        cutoff_hz=0.0,
        clock_jump=0.1,
        diagnostics_period=0.1,
    )
    try:
        assert h.connected("joint_states", "ft_sensor")
        for k in range(20):
            h.send("joint_states", joint_state(record, k))
            h.send("ft_sensor", ft_reading(record, k))
        assert h.spin_until(lambda: len(h.out["grasp_state"]) == 18)  # samples 1 to 18
        good = len(h.out["grasp_state"])
        h.send("joint_states", joint_state(record, 20, position=[float("nan")] * 6))
        h.send("joint_states", joint_state(record, 20, name=["a", "b", "c", "d", "e", "f"]))
        h.send("joint_states", joint_state(record, 19))  # duplicate stamp
        h.send("joint_states", joint_state(record, 10))  # out of order
        h.send("ft_sensor", ft_reading(record, 20, frame="world"))
        for k in range(3):  # the clock jumps back 0.19 s > clock_jump: a looping bag
            h.send("joint_states", joint_state(record, k))
        assert h.spin_until(
            lambda: any(_value(d, "restarts clock_jump") == "1" for d in h.diagnostics)
        )
        status = h.diagnostics[-1].status[0]
        assert status.name == "/robot_1/robot_node"
        for reason, count in (
            ("non_finite", "1"),
            ("unknown_joints", "1"),
            ("duplicate_stamp", "1"),
            ("out_of_order", "1"),
            ("wrong_frame", "1"),
        ):
            assert _value(h.diagnostics[-1], f"rejected {reason}") == count, reason
        assert h.node.context.ok()
        for k in range(3, 10):  # still alive: samples of the restarted stream come out
            h.send("joint_states", joint_state(record, k))
            h.send("ft_sensor", ft_reading(record, k))
        # Samples 1 and 2 of the restarted stream go without F/T once overdue, then 3 to 8.
        last = to_time(record.stamp[8])
        assert h.spin_until(lambda: h.out["grasp_state"][-1].header.stamp == last)
        restarted = h.out["grasp_state"][good:]
        assert [m.has_force for m in restarted] == [False, False] + [True] * 6
    finally:
        h.close()


def _value(diagnostics, key: str) -> str | None:
    for status in diagnostics.status:
        for item in status.values:
            if item.key == key:
                return item.value
    return None


@pytest.mark.timeout(120)
def test_robot_node_differentiates_a_grasp_pose_stream(ros_context, wrists):
    rid = "robot_2"
    record, truth = wrists.robots[rid], wrists.ground_truth.grasps[rid]
    h = Harness(
        ros_context,
        rid,
        kinematics_source="grasp_pose",
        wrench_source="none",
        cutoff_hz=0.0,
        rate_hz=0.0,
    )
    try:
        assert h.connected("grasp_pose")
        for k in range(60):
            msg = PoseStamped(pose=to_pose(record.grasp.T_i0_i[k]))
            msg.header.stamp, msg.header.frame_id = to_time(record.stamp[k]), record.home_frame_id
            h.send("grasp_pose", msg)
        assert h.spin_until(lambda: len(h.out["grasp_state"]) == 58)
        got = stacked([grasp_sample(m) for m in h.out["grasp_state"]], truth)
        np.testing.assert_allclose(got["T"], truth.T_i0_i[got["index"]], atol=1e-9)
        scale = np.abs(truth.V_i).max(axis=0)
        assert np.all(np.abs(got["V"] - truth.V_i[got["index"]]).max(axis=0) <= 0.01 * scale)
        assert not any(m.has_force for m in h.out["grasp_state"]) and not h.out["grasp_wrench"]
        assert h.node.get_subscriptions_info_by_topic(f"/{rid}/joint_states") == []
    finally:
        h.close()


def test_robot_node_parameters_that_cannot_work_are_refused(ros_context, gimbals):
    def start(namespace: str = "robot_1", **parameters):
        overrides = [Parameter(k, value=v) for k, v in parameters.items()]
        RobotNode(
            context=ros_context,
            namespace=namespace,
            parameter_overrides=overrides,
            use_global_arguments=False,
        )

    with pytest.raises(ParameterError, match="robot_1/robot_node.*joint_efforts needs"):
        start(kinematics_source="grasp_pose", wrench_source="joint_efforts")
    with pytest.raises(ParameterError, match="robot_description' cannot be used: grasp frame"):
        start(robot_description=gimbals.robots["robot_2"].urdf)  # robot_2's URDF for robot_1
    with pytest.raises(ParameterError, match="robot_id' is empty and the node has no namespace"):
        start(namespace="")
    with pytest.raises(ParameterError, match="cutoff_hz"):
        start(cutoff_hz=-1.0)


def test_the_executable_spins_on_the_events_executor_unless_told(monkeypatch, capsys):
    """``robot_node --executor`` chooses rclpy's executor (default: the events executor, the
    lowest latency from a reference to a command; docs/collaboration.md); a wrong one is
    refused with the choices."""
    monkeypatch.setattr(sys, "argv", ["robot_node", "--help"])
    with pytest.raises(SystemExit) as end:
        robot_node.main()
    assert end.value.code == 0
    usage = " ".join(capsys.readouterr().out.split())
    assert "--executor {events,multi,single}" in usage
    assert "tested on its default (default: events)" in usage
    monkeypatch.setattr(sys, "argv", ["robot_node", "--executor", "threads"])
    with pytest.raises(SystemExit) as end:
        robot_node.main()
    assert end.value.code == 2
    assert "invalid choice: 'threads'" in capsys.readouterr().err


@pytest.mark.timeout(120)
def test_robot_node_merges_joint_states_from_several_topics(ros_context, gimbals):
    """The slides' controller and the wrist driver publish on topics of their own
    (``joint_state_topics``): the node gives the samples of one complete JointState stream."""
    rid = "robot_3"
    record = gimbals.robots[rid]
    topics = {"slides": "base/joint_states", "wrist": "arm/joint_states"}
    h = Harness(
        ros_context,
        rid,
        robot_description=record.urdf,
        joint_state_topics=list(topics.values()),
        has_torque=False,
        cutoff_hz=0.0,
        rate_hz=0.0,
    )
    try:
        for part, topic in topics.items():
            h.pub[part] = h.tester.create_publisher(JointState, topic, SENSOR_QOS)
        assert h.connected("slides", "wrist", "ft_sensor")
        chain = h.node.signals.kinematics.joint_names
        names = list(record.joints.names)
        parts = {
            "slides": [k for k, n in enumerate(names) if n in chain[:3]],
            "wrist": [k for k, n in enumerate(names) if n in chain[3:]],
        }
        for k in range(40):
            whole = joint_state(record, k)
            for part, index in parts.items():
                msg = JointState(header=whole.header, name=[names[i] for i in index])
                msg.position, msg.velocity, msg.effort = (
                    [list(getattr(whole, f))[i] for i in index]
                    for f in ("position", "velocity", "effort")
                )
                h.send(part, msg)
            h.send("ft_sensor", ft_reading(record, k))
        assert h.spin_until(lambda: len(h.out["grasp_state"]) == 38)
        assert not h.node.signals.rejected
        one_source = GraspSignals(settings(gimbals, rid), record.urdf)
        expected = [s for k in range(40) for s in one_source_step(one_source, record, k)]
        got = [grasp_sample(m) for m in h.out["grasp_state"]]
        assert len(got) == len(expected) == 38
        for a, b in zip(got, expected, strict=True):
            assert a.stamp == pytest.approx(b.stamp, abs=1e-9)
            np.testing.assert_allclose(a.T_i0_i, b.T_i0_i, atol=1e-12)
            np.testing.assert_allclose(a.V_i, b.V_i, atol=1e-12)
            np.testing.assert_allclose(a.dV_i, b.dV_i, atol=1e-9)
            np.testing.assert_allclose(a.F_i[3:], b.F_i[3:], atol=1e-9)
    finally:
        h.close()


def one_source_step(signals: GraspSignals, record, k: int) -> list:
    """Sample k's complete JointState and F/T reading, through the core."""
    return signals.add_joint_state(*joint_message(record, k)) + signals.add_wrench(
        record.stamp[k], record.wrench.frame_id, record.wrench.wrench[k]
    )


def test_robot_node_refuses_joint_state_topics_it_cannot_merge(ros_context):
    def start(topics: list[str]) -> None:
        RobotNode(
            context=ros_context,
            namespace="robot_1",
            parameter_overrides=[Parameter("joint_state_topics", value=topics)],
            use_global_arguments=False,
        )

    with pytest.raises(ParameterError, match="names a topic twice"):
        start(["joint_states", "/robot_1/joint_states"])
    with pytest.raises(ParameterError, match="'arm joints' is not a topic name"):
        start(["arm joints"])


@pytest.mark.timeout(120)
def test_robot_node_staleness_follows_the_ros_clock(ros_context, gimbals):
    """Under ``use_sim_time`` (``ros2 bag play --clock``): a paused replay (neither /clock nor
    data for longer than the staleness limit of wall time) raises no ERROR; a clock that runs
    on, fast, without joint states does, with the silence in simulated seconds."""
    rid = "robot_1"
    record = gimbals.robots[rid]
    h = Harness(
        ros_context,
        rid,
        robot_description=record.urdf,
        use_sim_time=True,
        wrench_source="none",
        has_torque=False,
        cutoff_hz=0.0,
        diagnostics_period=0.1,
    )
    clock = h.tester.create_publisher(Clock, "/clock", RELIABLE_QOS)

    def tick(t: float) -> None:
        clock.publish(Clock(clock=to_time(t)))
        now = h.node.get_clock().now
        assert h.spin_until(lambda: now().nanoseconds * 1e-9 >= t - 1e-9), "no /clock"

    def levels(since: int) -> list[bytes]:
        return [
            d.status[0].level
            for d in h.diagnostics[since:]
            if d.status[0].name.startswith(f"/{rid}")
        ]

    try:
        assert h.connected("joint_states")
        assert h.spin_until(lambda: clock.get_subscription_count() > 0)
        for k in range(20):
            tick(record.stamp[k])
            h.send("joint_states", joint_state(record, k))
        assert h.spin_until(lambda: DiagnosticStatus.OK in levels(0))
        paused = len(h.diagnostics)
        h.spin_until(lambda: False, timeout=STALE + 1.0)  # paused: wall time only
        assert len(levels(paused)) >= 5 and DiagnosticStatus.ERROR not in levels(paused)
        t = record.stamp[19]
        for _ in range(30):  # 3 simulated seconds, as fast as the node takes the clock
            t += 0.1
            tick(t)
        assert h.spin_until(lambda: DiagnosticStatus.ERROR in levels(paused))
        error = next(
            d.status[0]
            for d in h.diagnostics[paused:]
            if d.status[0].level == DiagnosticStatus.ERROR
        )
        assert error.message.startswith("no joint_states for ")
        assert STALE < float(error.message.split()[3]) <= 3.0 + 1e-6
    finally:
        h.close()


@pytest.mark.timeout(120)
def test_batched_output_carries_the_same_samples_k_at_a_time(ros_context, gimbals, monkeypatch):
    """With batch_size K the node publishes GraspStateArray messages of K samples (the last,
    incomplete one once it has waited BATCH_WAIT), which convert back to exactly the samples
    the core computes, and no GraspState. BATCH_WAIT is 2 s here: on a loaded machine the
    test's samples can arrive more than the default 50 ms apart."""
    monkeypatch.setattr(robot_node, "BATCH_WAIT", 2.0)
    rid, k_batch, count = "robot_2", 4, 31
    record = gimbals.robots[rid]
    h = Harness(ros_context, rid, has_torque=False, cutoff_hz=0.0, rate_hz=0.0, batch_size=k_batch)
    batches = []
    h.tester.create_subscription(GraspStateArray, "grasp_state_array", batches.append, SENSOR_QOS)
    try:
        assert h.connected("joint_states", "ft_sensor", "robot_description")
        h.pub["robot_description"].publish(String(data=record.urdf))
        assert h.spin_until(lambda: h.node.signals.kinematics is not None)
        for k in range(count):
            h.send("joint_states", joint_state(record, k))
            h.send("ft_sensor", ft_reading(record, k))
        n = count - 2  # 29: central differences: the last two wait for their successors
        assert h.spin_until(lambda: sum(len(b.sec) for b in batches) == n)
        assert [len(b.sec) for b in batches] == [k_batch] * (n // k_batch) + [n % k_batch]
        assert not h.out["grasp_state"]
        got = [s for b in batches for s in grasp_samples(b)]
        expected = feed(GraspSignals(settings(gimbals, rid), record.urdf), record)[:n]
        assert [s.stamp for s in got] == pytest.approx([s.stamp for s in expected], abs=1e-9)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a.T_i0_i, b.T_i0_i, atol=1e-12)
            np.testing.assert_allclose(a.V_i, b.V_i, atol=1e-12)
            np.testing.assert_allclose(a.F_i[3:], b.F_i[3:], atol=1e-12)
            assert not a.has_torque and a.has_force
    finally:
        h.close()
