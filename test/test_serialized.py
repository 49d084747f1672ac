"""ros/serialized.py: the robot node's messages as serialized bytes are the messages that
``conversions`` builds, number for number, and the commands that robot_node publishes from a
serialized reference are those of the message path (follow_commands)."""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.human_wrench import ExternalWrenchEstimate
from inertia_estimation_ros.core.samples import GraspSample
from inertia_estimation_ros.msg import ExternalWrench, GraspFrame, GraspState, PayloadEstimate
from inertia_estimation_ros.ros.conversions import (
    to_external_wrench,
    to_grasp_state,
    to_pose,
    to_time,
    to_transform,
)
from inertia_estimation_ros.ros.follow_commands import PARAMETERS, FollowCommands
from inertia_estimation_ros.ros.parameters import declare
from inertia_estimation_ros.ros.serialized import (
    STAMP,
    ExternalWrenchLayout,
    GraspStateLayout,
    JointStateReader,
    StampedLayout,
    stamp_bytes,
)
from inertia_estimation_ros.sim import analytic as an


def samples(robot_id: str, count: int = 200) -> list[GraspSample]:
    """Random samples with every flag and non-finite pattern robot_node can produce."""
    rng = np.random.default_rng(7)
    out = []
    for k in range(count):
        T = sp.transform(Rotation.random(random_state=k).as_matrix(), rng.normal(size=3))
        F = rng.normal(size=6) * 10
        if k % 3 == 0:
            F[:3] = np.nan  # a gimbal: no moment
        if k % 7 == 0:
            F[:] = np.nan  # F/T data missing
        g = None if k % 5 == 0 else rng.normal(size=3)
        out.append(
            GraspSample(
                robot_id,
                1e9 + 0.01 * k + 1e-10 * k,
                np.full((4, 4), np.nan) if k % 11 == 0 else T,
                np.full(6, np.nan) if k % 13 == 0 else rng.normal(size=6),
                rng.normal(size=6),
                F,
                g,
                has_force=k % 7 != 0,
                has_torque=k % 3 != 0,
            )
        )
    return out


def test_grasp_states_are_the_messages_of_conversions():
    layout = GraspStateLayout("robot_2", "team/robot_2/grasp", "team/robot_2/home")
    assert layout.usable
    for sample in samples("robot_2"):
        raw = layout.encode(sample)
        assert deserialize_message(raw, GraspState) == to_grasp_state(sample, *layout.frames)
        assert raw[STAMP] == stamp_bytes(sample.stamp)
    with_covariance = dataclasses.replace(samples("robot_2", 1)[0], V_cov=np.eye(6))
    assert layout.encode(with_covariance) is None  # the message path then


@pytest.mark.parametrize(
    ("kind", "count", "fields"),
    [
        (PoseStamped, 7, ("pose.position", "pose.orientation")),
        (TwistStamped, 6, ("twist.linear", "twist.angular")),
        (WrenchStamped, 6, ("wrench.force", "wrench.torque")),
    ],
)
def test_stamped_layouts_write_and_read_the_trailing_numbers(kind, count, fields):
    layout = StampedLayout(kind(header=Header(frame_id="robot_1/grasp")), count)
    assert layout.usable
    numbers = tuple(np.random.default_rng(1).normal(size=count).tolist())
    raw = layout.encode(stamp_bytes(12.345678901), numbers)
    msg = deserialize_message(raw, kind)
    assert msg.header.stamp == to_time(12.345678901) and msg.header.frame_id == "robot_1/grasp"
    assert layout.read(raw) == numbers
    other = kind(header=Header(frame_id="a/much/longer/frame_id", stamp=to_time(3.5)))
    renumbered = deserialize_message(layout.renumbered(serialize_message(other), numbers), kind)
    assert renumbered.header == other.header and layout.read(serialize_message(renumbered)) == (
        numbers
    )


def estimate() -> PayloadEstimate:
    team, payload = an.paper_team(), an.paper_payload()
    msg = PayloadEstimate(grasps_valid=True, mass_valid=True, parameters=payload.vec)
    msg.grasps = [
        GraspFrame(robot_id=r, transform=to_transform(team.T_s_i[r])) for r in team.robot_ids
    ]
    return msg


@pytest.mark.timeout(60)
def test_commands_from_serialized_references_are_those_of_the_messages(ros_context):
    """Every robot's commands for 50 references and twists, through the subscriptions'
    serialized callbacks and through the message path: the same messages, bit for bit."""
    node = Node("robot_1_commands", context=ros_context)
    node.params = declare(node, PARAMETERS)
    rng = np.random.default_rng(5)
    try:
        for rid in an.paper_team().robot_ids:
            commands = FollowCommands(node, node.params, rid, f"{rid}/grasp")
            commands.on_estimate(estimate())
            for k in range(50):
                twist = TwistStamped()
                twist.twist.linear.x, twist.twist.angular.z = rng.normal(size=2).tolist()
                commands.on_twist_bytes(serialize_message(twist))
                T_w_s = sp.transform(
                    Rotation.random(random_state=k).as_matrix(), rng.normal(size=3)
                )
                reference = PoseStamped(pose=to_pose(T_w_s))
                reference.header.frame_id, reference.header.stamp = "robot_1/home", to_time(k)
                pose_bytes, wrench_bytes = commands.on_reference_bytes(serialize_message(reference))
                pose, wrench = commands.on_reference(reference)
                assert deserialize_message(pose_bytes, PoseStamped) == pose
                assert deserialize_message(wrench_bytes, WrenchStamped) == wrench
            bad = PoseStamped()
            bad.pose.orientation.w = 0.0  # a zero quaternion: no command, no error
            assert commands.on_reference_bytes(serialize_message(bad)) is None
            assert commands.on_reference(bad) is None
    finally:
        node.destroy_node()


def test_stamps_are_those_of_to_time():
    """``stamp_bytes`` writes the sec and nanosec ``conversions.to_time`` gives: nanosecond
    rounding (halves, values just below a second), zero, negative times, 2038's edge."""
    rng = np.random.default_rng(11)
    times = [0.0, 1e-10, 4.9999e-10, 5e-10, 0.9999999995, 1.0 - 1e-12, -0.25, -1e-10]
    times += [2.0**31 - 1.0, 1795789927.955346186, *(rng.uniform(-1e3, 2e9, 2000))]
    times += list(rng.integers(0, 2**31 - 1, 500) + rng.integers(0, 10**9, 500) * 1e-9)
    for t in times:
        time = to_time(float(t))
        assert stamp_bytes(float(t)) == struct.pack("=iI", time.sec, time.nanosec), t


@pytest.mark.parametrize("frame_id", ["", "s", "robot_1/grasp", "robot_12/grasp_frame"])
def test_external_wrenches_are_the_messages_of_conversions(frame_id):
    """The coordinator's ExternalWrench as bytes: the message ``to_external_wrench`` makes of
    the same estimate, field for field (every string alignment of the frame id; stamps
    negative, of 1e9 s, on nanosecond boundaries; every observable pattern; contact and
    none), and byte for byte (signed zeros included) but for the two padding bytes after
    ``observable``: zeros here, whatever rclpy's serializer left there."""
    layout = ExternalWrenchLayout(frame_id)
    assert layout.usable
    rng = np.random.default_rng(3)
    for k in range(300):
        A = rng.normal(size=(6, 6)) * 10.0 ** rng.integers(-3, 4)
        wrench = rng.normal(size=6) * 10.0 ** rng.integers(-4, 3)
        wrench[k % 6] = -0.0 if k % 2 else 0.0
        estimate = ExternalWrenchEstimate(
            [-1.0, 0.0, 1e9 + 0.999999999, 12.3456789, 5e-10][k % 5] + k,
            wrench,
            A @ A.T,
            rng.normal(size=3),
            rng.random(6) < [0.0, 0.5, 1.0][k % 3],
            np.empty((0, 6)),
        )
        raw = layout.encode(estimate)
        expected = to_external_wrench(estimate, frame_id)
        assert deserialize_message(raw, ExternalWrench) == expected
        ours, theirs = bytearray(raw), bytearray(serialize_message(expected))
        for padding in range(layout.offset + 366, layout.offset + 368):  # after observable
            assert ours[padding] == 0
            ours[padding] = theirs[padding] = 0
        assert ours == theirs


def test_joint_states_are_read_as_rclpy_reads_them():
    """Names of every length (every alignment), with and without efforts; a message without
    positions or velocities is left to rclpy (None)."""
    reader, rng = JointStateReader(), np.random.default_rng(0)
    assert reader.usable
    for k in range(500):
        n = 1 + k % 7
        msg = JointState(name=[f"{'j' * (k % 5)}{i}" for i in range(n)])
        msg.header.frame_id = "f" * (k % 9)
        msg.header.stamp = Time(sec=int(rng.integers(0, 2**31)), nanosec=int(rng.integers(1e9)))
        msg.position, msg.velocity = rng.normal(size=n).tolist(), rng.normal(size=n).tolist()
        msg.effort = rng.normal(size=n if k % 3 else 0).tolist()
        fields = reader.read(serialize_message(msg))
        assert (fields.sec, fields.nanosec) == (msg.header.stamp.sec, msg.header.stamp.nanosec)
        assert fields.names == list(msg.name)
        for got, sent in zip(fields[3:], (msg.position, msg.velocity, msg.effort), strict=True):
            np.testing.assert_array_equal(got, sent)
    assert reader.read(serialize_message(JointState(name=["a"], position=[1.0]))) is None
