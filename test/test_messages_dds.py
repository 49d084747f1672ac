"""Every custom message round-trips through a real rclpy publisher and subscriber over DDS."""

from __future__ import annotations

import numpy as np
import pytest
from geometry_msgs.msg import Vector3
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from inertia_estimation_ros.msg import CableTensions, GraspFrame, GraspState, PayloadEstimate
from inertia_estimation_ros.ros.spin import spin_until


def filled_grasp_state() -> GraspState:
    msg = GraspState(robot_id="robot_2", home_frame_id="robot_2/home")
    msg.header.frame_id = "robot_2/grasp"
    msg.header.stamp.sec, msg.header.stamp.nanosec = 12, 345_000_000
    msg.pose.position.x, msg.pose.orientation.z, msg.pose.orientation.w = 0.5, 0.6, 0.8
    msg.twist.angular.y, msg.twist_derivative.linear.z = -0.3, 2.5
    msg.wrench.force.z, msg.wrench.torque.x = 37.3, 0.25
    msg.gravity = Vector3(x=0.1, y=0.0, z=-9.8)
    msg.has_pose = msg.has_twist = msg.has_force = msg.has_gravity = True
    msg.has_torque = False
    msg.pose_covariance = np.arange(36, dtype=float)
    msg.wrench_covariance = np.eye(6).reshape(36) * 0.25
    return msg


def filled_payload_estimate() -> PayloadEstimate:
    msg = PayloadEstimate(reference_robot_id="robot_1", stage=PayloadEstimate.STAGE_DYNAMICS)
    msg.header.frame_id = "robot_1/grasp"
    msg.inertia.m, msg.inertia.com.y, msg.inertia.izz = 11.412, 0.172, 5.698
    msg.parameters = np.linspace(1.0, 10.0, 10)
    msg.parameter_covariance = np.linspace(0.0, 1.0, 100)
    msg.grasps = [
        GraspFrame(
            robot_id=f"robot_{k}", child_frame_id=f"robot_{k}/grasp", covariance=np.full(36, k)
        )
        for k in (1, 2, 3)
    ]
    msg.grasps[1].transform.translation.x = 0.647
    msg.mass_valid = msg.physically_consistent = True
    msg.consistency_margin = 1e-3
    msg.advice = ["rotation about the robot_1/grasp z axis is not excited: rotate about it"]
    msg.samples_dynamic, msg.samples_rejected = 5200, 3
    return msg


def filled_cable_tensions() -> CableTensions:
    msg = CableTensions(robot_ids=["quad_1", "quad_2"])
    msg.header.frame_id = "world"
    msg.tensions = [4.5, 5.25]
    msg.directions = [Vector3(x=0.0, y=0.6, z=0.8), Vector3(x=0.0, y=-0.6, z=0.8)]
    msg.tension_variances = [0.01, 0.02]
    msg.direction_covariances = list(np.linspace(0.0, 1e-3, 18))
    return msg


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "message",
    [
        filled_grasp_state(),
        filled_payload_estimate(),
        filled_cable_tensions(),
        GraspFrame(robot_id="robot_3", child_frame_id="robot_3/grasp", covariance=np.arange(36.0)),
    ],
    ids=lambda m: type(m).__name__,
)
def test_message_round_trip_over_dds(ros_context, message):
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    talker = Node("talker", context=ros_context)
    listener = Node("listener", context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(talker)
    executor.add_node(listener)
    topic = f"/roundtrip/{type(message).__name__}"
    received = []
    listener.create_subscription(type(message), topic, received.append, qos)
    publisher = talker.create_publisher(type(message), topic, qos)
    try:
        assert spin_until(executor, lambda: publisher.get_subscription_count() > 0, 30.0)
        publisher.publish(message)
        assert spin_until(executor, lambda: bool(received), 30.0)
        assert received[0] == message
    finally:
        executor.shutdown()
        talker.destroy_node()
        listener.destroy_node()


def test_message_equality_sees_array_differences():
    """Guards the round-trip test: == must compare array fields element-wise."""
    a, b = filled_payload_estimate(), filled_payload_estimate()
    assert a == b
    b.parameter_covariance[57] += 1e-12
    assert a != b
