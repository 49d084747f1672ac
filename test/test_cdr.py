"""``ros.cdr.decode`` reads CDR bytes into the same rclpy message objects as rclpy's
``deserialize_message``, field for field and bit for bit (compared as rosbags' serialization
of both), for random messages of every field kind the package's messages use; what it does
not read it refuses (``UnsupportedError``: the caller asks rclpy)."""

from __future__ import annotations

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from inertia_estimation_ros.bags import serialize
from inertia_estimation_ros.msg import GraspFrame, GraspState, GraspStateArray, PayloadEstimate
from inertia_estimation_ros.ros.cdr import UnsupportedError, decode

TEXT = ["", "robot_1", "grasp/über", "ロボット", "x" * 37]


def random_estimate(rng: np.random.Generator) -> PayloadEstimate:
    m = PayloadEstimate()
    m.header.stamp.sec = int(rng.integers(-(2**31), 2**31))
    m.header.stamp.nanosec = int(rng.integers(0, 10**9))
    m.header.frame_id = TEXT[rng.integers(len(TEXT))]
    m.reference_robot_id = TEXT[rng.integers(len(TEXT))]
    m.age, m.stage = float(rng.normal()), int(rng.integers(0, 5))
    m.grasps_valid, m.mass_valid = bool(rng.integers(2)), bool(rng.integers(2))
    m.inertia.m, m.inertia.com.x, m.inertia.ixy = rng.normal(size=3).tolist()
    m.principal_axes.w = float(rng.normal())
    m.parameters = rng.normal(size=10) * 10.0 ** rng.integers(-300, 300, 10)
    m.parameter_covariance = np.where(rng.random(100) < 0.1, np.nan, rng.normal(size=100))
    m.com_covariance = np.full(9, np.inf)
    for k in range(int(rng.integers(0, 4))):
        g = GraspFrame(robot_id=f"robot_{k}", child_frame_id=TEXT[rng.integers(len(TEXT))])
        g.transform.translation.y = float(rng.normal())
        g.covariance = rng.normal(size=36)
        m.grasps.append(g)
    m.advice = [TEXT[i] for i in rng.integers(0, len(TEXT), int(rng.integers(0, 4)))]
    m.samples_kinematics, m.samples_rejected = (int(v) for v in rng.integers(0, 2**32, 2))
    m.consistency_margin = float(rng.normal())
    return m


def random_grasp_state_array(rng: np.random.Generator) -> GraspStateArray:
    k = int(rng.integers(0, 5))
    m = GraspStateArray(robot_id="robot_2", has_force=True)
    m.sec = rng.integers(-(2**31), 2**31, k).astype(np.int32).tolist()
    m.nanosec = rng.integers(0, 10**9, k).astype(np.uint32).tolist()
    m.position, m.wrench = rng.normal(size=3 * k).tolist(), rng.normal(size=6 * k).tolist()
    return m


def random_grasp_state(rng: np.random.Generator) -> GraspState:
    m = GraspState(robot_id="robot_3", has_pose=True, has_torque=bool(rng.integers(2)))
    m.pose.orientation.z = float(rng.normal())
    m.wrench_covariance = rng.normal(size=36 * int(rng.integers(0, 2))).tolist()
    return m


@pytest.mark.parametrize(
    ("make", "msgtype"),
    [
        (random_estimate, "inertia_estimation_ros/msg/PayloadEstimate"),
        (random_grasp_state_array, "inertia_estimation_ros/msg/GraspStateArray"),
        (random_grasp_state, "inertia_estimation_ros/msg/GraspState"),
    ],
)
def test_decoded_messages_are_rclpys(make, msgtype):
    rng = np.random.default_rng(len(msgtype))
    for _ in range(60):
        message = make(rng)
        raw = serialize_message(message)
        expected = deserialize_message(raw, type(message))
        got = decode(raw, type(message))
        assert serialize(got, msgtype) == serialize(expected, msgtype)  # NaN bits too
        assert [type(getattr(got, f)) for f in got.get_fields_and_field_types()] == [
            type(getattr(expected, f)) for f in expected.get_fields_and_field_types()
        ]


def test_what_it_does_not_read_is_refused():
    pose = PoseStamped()
    assert decode(serialize_message(pose), PoseStamped) == pose  # a common message
    raw = serialize_message(random_estimate(np.random.default_rng(0)))
    with pytest.raises(UnsupportedError, match="little-endian"):
        decode(b"\x00\x00" + raw[2:], PayloadEstimate)  # big-endian
    with pytest.raises(UnsupportedError):
        decode(raw[: len(raw) // 2], PayloadEstimate)  # cut short
    joints = JointState(name=["a", "b"], position=[1.0, 2.0])
    assert decode(serialize_message(joints), JointState) == joints
