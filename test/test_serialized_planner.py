"""ros/serialized.py's readers of the planner's inputs and its reference as bytes (issue 14):
what the planner reads of serialized ExternalWrench, GraspState and PoseStamped is what it
reads of rclpy's messages, bytes of another encoding take rclpy's deserialization, and the
reference it publishes as bytes is the message it published before, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.serialization import deserialize_message, serialize_message
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.supervisor import Reference
from inertia_estimation_ros.msg import ExternalWrench, GraspState
from inertia_estimation_ros.ros.admittance_mode import reference_messages
from inertia_estimation_ros.ros.conversions import to_pose, to_time, to_wrench
from inertia_estimation_ros.ros.nodes.planner_node import PlannerNode
from inertia_estimation_ros.ros.serialized import (
    external_wrench_reader,
    grasp_state_reader,
    pose_stamped_reader,
)

FRAMES = ["", "a", "ab", "abc", "robot_1/grasp", "payload/mocap_frame"]


def _wrenches(rng: np.random.Generator) -> list[ExternalWrench]:
    out = []
    for k, frame in enumerate(FRAMES * 3):
        msg = ExternalWrench(wrench=to_wrench(rng.normal(size=6) * 10), method="model")
        msg.header.stamp, msg.header.frame_id = to_time(1e9 + 0.37 * k + 1e-10 * k), frame
        msg.center.x, msg.center.z = float(rng.normal()), float(k)
        msg.degraded_reasons = ["robot_2 is silent"] * (k % 3)
        if k % 4 == 1:
            msg.wrench.force.y = float("nan")
        out.append(msg)
    return out


def _grasp_states(rng: np.random.Generator) -> list[GraspState]:
    out = []
    for k, frame in enumerate(FRAMES * 3):
        T = sp.transform(Rotation.random(random_state=k).as_matrix(), rng.normal(size=3))
        msg = GraspState(robot_id=FRAMES[k % 4], home_frame_id=frame[::-1], has_pose=k % 5 > 0)
        msg.header.stamp, msg.header.frame_id, msg.pose = to_time(12.5 + k), frame, to_pose(T)
        msg.wrench_covariance = [1.0] * 36 * (k % 2)
        out.append(msg)
    return out


def _poses(rng: np.random.Generator) -> list[PoseStamped]:
    out = []
    for k, frame in enumerate(FRAMES):
        T = sp.transform(Rotation.random(random_state=k).as_matrix(), rng.normal(size=3))
        msg = PoseStamped(pose=to_pose(T))
        msg.header.stamp, msg.header.frame_id = Time(sec=k, nanosec=999_999_999 - k), frame
        out.append(msg)
    return out


@pytest.mark.parametrize(
    "reader, messages",
    [
        (external_wrench_reader, _wrenches),
        (grasp_state_reader, _grasp_states),
        (pose_stamped_reader, _poses),
    ],
)
def test_readers_read_what_the_messages_hold(reader, messages) -> None:
    reading = reader()
    assert reading.usable
    for msg in messages(np.random.default_rng(3)):
        fields = reading.read(serialize_message(msg))
        expected = reading.fields(msg)
        assert fields.stamp == expected.stamp and fields.strings == expected.strings
        np.testing.assert_array_equal(fields.numbers, expected.numbers)  # NaN as NaN
        big_endian = b"\x00\x00" + serialize_message(msg)[2:]  # another encoding: rclpy's
        assert reading._read(big_endian) is None


def test_bytes_of_an_unknown_encoding_take_rclpys_deserialization() -> None:
    reading = external_wrench_reader()
    msg = _wrenches(np.random.default_rng(4))[4]
    reading.usable = False  # as on an RMW whose encoding differs
    fields = reading.read(serialize_message(msg))
    assert fields.strings == ("robot_1/grasp",) and fields.numbers == reading.fields(msg).numbers


@pytest.mark.timeout(60)
def test_the_planner_publishes_the_reference_messages_bit_for_bit(ros_context) -> None:
    """The reference the planner publishes as bytes (its inputs as bytes too) is the message
    path's PoseStamped and TwistStamped serialized, for several frames and references."""
    planner = PlannerNode(context=ros_context)
    mode, published = planner.admittance, []
    mode._pose.publish = lambda raw: published.append(("pose", raw))
    mode._twist.publish = lambda raw: published.append(("twist", raw))
    try:
        rng = np.random.default_rng(5)
        for k, state in enumerate(_grasp_states(rng)[1:5]):
            mode._on_pose_bytes(serialize_message(state))
            T = sp.transform(Rotation.random(random_state=k).as_matrix(), rng.normal(size=3))
            reference = Reference(0.0, T, rng.normal(size=6), True)
            now = 1e9 + 0.01 * k + 3e-10 * k
            mode._publish(now, reference)
            pose, twist = reference_messages(now, reference, mode.frames)
            assert mode.frames == (state.home_frame_id, state.header.frame_id)
            assert published[-2:] == [
                ("pose", serialize_message(pose)),
                ("twist", serialize_message(twist)),
            ]
            assert deserialize_message(published[-2][1], PoseStamped) == pose
            assert deserialize_message(published[-1][1], TwistStamped) == twist
    finally:
        planner.destroy_node()
