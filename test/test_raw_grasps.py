"""The coordinator's raw subscriptions: a grasp message's CDR bytes read at its layout's
offsets (``ingest.convert_raw``, ``bag_grasps.decode_grasp_state[_array]``) give what rclpy's
deserialization and ``ingest.convert`` give, bit for bit, on random messages with the edge
cases (K = 1, empty, NaN, arrays of the wrong length, another robot's id, covariances, missing
pose, zero quaternions, non-ASCII frames, cut bytes); what the arrays do not read is
deserialized and refused by name as before."""

from __future__ import annotations

import array
import dataclasses

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.samples import GraspSample
from inertia_estimation_ros.msg import GraspState, GraspStateArray
from inertia_estimation_ros.ros.bag_grasps import decode_grasp_state, decode_grasp_state_array
from inertia_estimation_ros.ros.ingest import GRASP_TOPICS, convert, convert_raw
from inertia_estimation_ros.ros.serialized import GraspStateLayout

ROBOT = "robot_3"


def random_values(rng: np.random.Generator, n: int) -> list[float]:
    x = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
    x[rng.random(n) < 0.03] = np.nan
    x[rng.random(n) < 0.01] = np.inf
    return list(x)


def random_array(rng: np.random.Generator) -> GraspStateArray:
    """A GraspStateArray of 0-12 samples, its flags at random; one in five damaged (an array
    one value short or long, gravity sent while unflagged, another robot's id)."""
    k = int(rng.choice([0, 1, 1, 2, 10, 12]))
    msg = GraspStateArray(robot_id=ROBOT, home_frame_id=f"{ROBOT}/home")
    msg.header.frame_id = str(rng.choice([f"{ROBOT}/grasp", "grasp_é", "w"]))
    msg.sec = array.array("i", rng.integers(-(2**31), 2**31 - 1, k))
    msg.nanosec = array.array("I", rng.integers(0, 10**9, k))
    msg.has_force, msg.has_torque, msg.has_gravity = (bool(b) for b in rng.integers(0, 2, 3))
    widths = {"position": 3, "orientation": 4, "twist": 6, "twist_derivative": 6, "wrench": 6}
    widths["gravity"] = 3 if msg.has_gravity else 0
    for name, width in widths.items():
        setattr(msg, name, random_values(rng, width * k))
    if k and rng.random() < 0.2:
        msg.orientation = [0.0] * 4 * k
    damage = rng.integers(0, 5) if rng.random() < 0.2 else None
    if damage == 0:
        msg.twist = random_values(rng, 6 * k + int(rng.choice([-1, 1])) if k else 1)
    elif damage == 1:
        msg.gravity = random_values(rng, 3 * k + 3)
    elif damage == 2:
        msg.robot_id = "robot_9"
    elif damage == 3:
        msg.nanosec = array.array("I", [1] * (k + 1))
    elif damage == 4:
        msg.sec = array.array("i", [])
    return msg


def random_state(rng: np.random.Generator) -> GraspState:
    """A GraspState, its flags at random; some with covariances, a zero quaternion or
    another robot's id."""
    msg = GraspState(robot_id=ROBOT, home_frame_id=f"{ROBOT}/home")
    msg.header.frame_id = str(rng.choice([f"{ROBOT}/grasp", "grasp_é"]))
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(rng.integers(0, 2**31)), 999_999_999
    p, q, v, dv, f, g = (random_values(rng, n) for n in (3, 4, 6, 6, 6, 3))
    if rng.random() < 0.1:
        q = [0.0] * 4
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = p
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = q
    for target, values in ((msg.twist, v), (msg.twist_derivative, dv)):
        target.linear.x, target.linear.y, target.linear.z = values[:3]
        target.angular.x, target.angular.y, target.angular.z = values[3:]
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = f[:3]
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = f[3:]
    msg.gravity.x, msg.gravity.y, msg.gravity.z = g
    flags = rng.random(6) < 0.85
    (
        msg.has_pose,
        msg.has_twist,
        msg.has_twist_derivative,
        msg.has_force,
        msg.has_torque,
        msg.has_gravity,
    ) = (bool(b) for b in flags)
    if rng.random() < 0.1:
        msg.wrench_covariance = list(np.eye(6).ravel())
    if rng.random() < 0.05:
        msg.robot_id = "robot_9"
    return msg


def same_message(a, b) -> None:
    assert (a.robot_id, a.frame_id, a.refusal) == (b.robot_id, b.frame_id, b.refusal)
    assert len(a.samples) == len(b.samples)
    for x, y in zip(a.samples, b.samples, strict=True):
        for field in dataclasses.fields(x):
            u, w = getattr(x, field.name), getattr(y, field.name)
            if isinstance(u, np.ndarray) or isinstance(w, np.ndarray):
                u, w = np.asarray(u), np.asarray(w)
                assert u.tobytes() == w.tobytes(), field.name  # bit for bit, NaN included
            else:
                assert u == w, field.name


@pytest.mark.parametrize(
    ("topic", "make", "decode"),
    [
        ("grasp_state_array", random_array, decode_grasp_state_array),
        ("grasp_state", random_state, decode_grasp_state),
    ],
)
def test_raw_bytes_give_rclpys_samples_bit_for_bit(topic, make, decode):
    rng = np.random.default_rng(7)
    read = 0
    for _ in range(400):
        raw = serialize_message(make(rng))
        expected = convert(ROBOT, deserialize_message(raw, GRASP_TOPICS[topic]))
        same_message(convert_raw(ROBOT, topic, raw), expected)
        read += decode(raw, ROBOT) is not None
    assert 100 < read < 400  # many are read from the bytes, the unusual ones deserialized


def test_the_arrays_read_what_robot_node_sends_and_leave_the_rest():
    msg = GraspStateArray(robot_id=ROBOT, has_force=True, has_torque=True)
    msg.sec, msg.nanosec = array.array("i", [1, 2]), array.array("I", [3, 4])
    msg.position, msg.orientation = [0.0] * 6, [0.0, 0.0, 0.0, 1.0] * 2
    msg.twist = msg.twist_derivative = msg.wrench = [1.0] * 12
    assert decode_grasp_state_array(serialize_message(msg), ROBOT) is not None
    assert decode_grasp_state_array(serialize_message(msg), "robot_1") is None
    msg.wrench = [1.0] * 11
    assert decode_grasp_state_array(serialize_message(msg), ROBOT) is None
    refused = convert_raw(ROBOT, "grasp_state_array", serialize_message(msg))
    reason, detail = refused.refusal
    assert reason == "malformed message" and "wrench has 11 values" in detail
    other = convert_raw("robot_1", "grasp_state_array", serialize_message(msg))
    assert other.refusal[0] == "unknown robot id"


@pytest.mark.parametrize("topic", ["grasp_state", "grasp_state_array"])
def test_cut_bytes_are_refused_as_malformed(topic):
    raw = serialize_message(GRASP_TOPICS[topic](robot_id=ROBOT))
    refused = convert_raw(ROBOT, topic, raw[:40])
    assert refused.refusal[0] == "malformed message" and "40 bytes" in refused.refusal[1]
    assert not refused.samples


def test_what_robot_node_writes_the_coordinator_reads():
    """One layout (``grasp_layout``): ``serialized.GraspStateLayout`` writes, the raw readers
    read the same samples as rclpy's deserialization of those bytes, bit for bit."""
    layout = GraspStateLayout(ROBOT, f"{ROBOT}/grasp", f"{ROBOT}/home")
    assert layout.usable
    rng = np.random.default_rng(3)
    for k in range(50):
        q = rng.normal(size=4)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = Rotation.from_quat(q).as_matrix(), rng.normal(size=3)
        v, dv, f = (rng.normal(size=6) for _ in range(3))
        g = rng.normal(size=3) if k % 2 else None
        sample = GraspSample(ROBOT, 10.0 + k / 7, T, v, dv, f, g, has_torque=k % 3 > 0)
        raw = layout.encode(sample)
        assert decode_grasp_state(raw, ROBOT) is not None
        expected = convert(ROBOT, deserialize_message(raw, GraspState))
        same_message(convert_raw(ROBOT, "grasp_state", raw), expected)
        (read,) = convert_raw(ROBOT, "grasp_state", raw).samples
        assert read.stamp == pytest.approx(sample.stamp, abs=1e-9)
        assert np.allclose(read.T_i0_i, T) and np.array_equal(read.V_i, v)
