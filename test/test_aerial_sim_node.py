"""sim_node flying an aerial scenario over DDS: it publishes the aerial topics, and a
planner's payload reference (``/payload/reference/pose``) steers the team."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from inertia_estimation_ros import bags
from inertia_estimation_ros.core.spatial import transform
from inertia_estimation_ros.ros.conversions import pose_matrix, seconds, to_pose
from inertia_estimation_ros.ros.interface import RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.nodes.sim_node import SimNode
from inertia_estimation_ros.ros.spin import spin_until
from inertia_estimation_ros.sim.aerial.topics import topic_types


def test_sim_node_flies_the_team_to_a_published_reference(ros_context, tmp_path):
    """A 0.3 m step of the reference along x, published while the node runs: the payload ends
    within 3 cm of it after 5 s (RotorTM's payload gains settle in about 4 s); the mocap and
    ground-truth topics arrive with 100 Hz stamps."""
    scenario = tmp_path / "aerial.yaml"
    scenario.write_text(
        yaml.safe_dump({"type": "aerial_cable_team", "name": "node_test", "duration": 5.0})
    )
    sim = SimNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("scenario", value=str(scenario)),
            Parameter("real_time_factor", value=0.0),
        ],
        use_global_arguments=False,
    )
    listener = Node("listener", context=ros_context)
    received = defaultdict(list)
    robots = [f"robot_{k + 1}" for k in range(3)]
    for topic, kind in topic_types_of(robots).items():
        qos = RELIABLE_QOS if topic == "/clock" else SENSOR_QOS
        listener.create_subscription(bags.rclpy_class(kind), topic, received[topic].append, qos)
    planner = listener.create_publisher(PoseStamped, "/payload/reference/pose", RELIABLE_QOS)
    goal = PoseStamped(pose=to_pose(transform(np.eye(3), [0.3, 0.0, 1.0])))
    goal.header.frame_id = "world"
    listener.create_timer(0.05, lambda: planner.publish(goal))
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(sim)
    executor.add_node(listener)
    try:
        assert spin_until(executor, lambda: sim.stepper.done, timeout=120)
        spin_until(executor, lambda: False, timeout=0.5)
    finally:
        executor.shutdown()
        sim.destroy_node()
        listener.destroy_node()
    final = pose_matrix(received["/ground_truth/payload_pose"][-1].pose)
    assert np.linalg.norm(final[:3, 3] - [0.3, 0.0, 1.0]) < 0.03
    # sensor QoS is best effort: count arrivals loosely, check the 100 Hz sample stamps
    for topic in ("/robot_2/mocap/pose", "/payload/mocap/twist", "/ground_truth/human_wrench"):
        stamps = np.array([seconds(m.header.stamp) for m in received[topic]])
        assert len(stamps) > 100 and np.diff(stamps).min() == pytest.approx(0.01), topic
        assert np.allclose(np.round(stamps / 0.01) * 0.01, stamps, atol=1e-9)
    tension = received["/ground_truth/robot_1/cable_tension"][-1].vector
    assert np.hypot(np.hypot(tension.x, tension.y), tension.z) > 0.5  # taut, ~0.91 N


def topic_types_of(robots: list[str]) -> dict[str, str]:
    """The topics sim_node publishes for an aerial run of these robots."""

    class Run:
        robot_ids = robots

    return topic_types(Run())
