"""aerial_coordinator_node over DDS beside sim_node flying paper 002's team: it publishes the
cable tensions, the human's wrench with its covariance and dead band, and diagnostics."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from inertia_estimation_ros.msg import CableTensions, ExternalWrench
from inertia_estimation_ros.ros.conversions import seconds, wrench_vector
from inertia_estimation_ros.ros.graph import data_file
from inertia_estimation_ros.ros.interface import RELIABLE_QOS
from inertia_estimation_ros.ros.nodes.aerial_coordinator_node import AerialCoordinatorNode
from inertia_estimation_ros.ros.nodes.sim_node import SimNode
from inertia_estimation_ros.ros.parameters import ParameterError
from inertia_estimation_ros.ros.spin import spin_until

ROBOTS = ["robot_1", "robot_2", "robot_3"]
PUSH = {"kind": "step", "start": 1.0, "duration": 5.0, "force": [0.4, 0.0, 0.0]}


def _coordinator(ros_context, **overrides: object) -> AerialCoordinatorNode:
    parameters = {"robots": ROBOTS, "team_description": "aerial_team_paper002.yaml"} | overrides
    return AerialCoordinatorNode(
        context=ros_context,
        parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()],
        use_global_arguments=False,
    )


def test_coordinator_estimates_tensions_and_the_push_from_the_simulated_team(ros_context, tmp_path):
    """Hover 1 s, then a 0.4 N push along x at rho_2: the tensions read the hover share
    (0.91 N each, 0.278 kg / 3 robots) within 0.1 N, the wrench is quiet inside the dead band
    before the push and reports contact with F_x within 0.1 N (and 3 sigma) of 0.4 N after."""
    scenario = tmp_path / "aerial.yaml"
    human = {"grasp": [0.3083, 0.0, 0.01125], "profiles": [PUSH]}
    document = {"type": "aerial_cable_team", "name": "node", "duration": 2.5, "human": human}
    scenario.write_text(yaml.safe_dump(document))
    sim = SimNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("scenario", value=str(scenario)),
            Parameter("real_time_factor", value=1.0),
            Parameter("wait_for_subscribers", value=True),
        ],
        use_global_arguments=False,
    )
    coordinator = _coordinator(ros_context)
    listener = Node("listener", context=ros_context)
    received = defaultdict(list)
    for topic, kind in (
        ("/cable_tensions", CableTensions),
        ("/human_wrench_estimate", ExternalWrench),
        ("/human_wrench", WrenchStamped),
        ("/diagnostics", DiagnosticArray),
    ):
        listener.create_subscription(kind, topic, received[topic].append, RELIABLE_QOS)
    executor = SingleThreadedExecutor(context=ros_context)
    for node in (sim, coordinator, listener):
        executor.add_node(node)
    try:
        assert spin_until(executor, lambda: sim.stepper.done, timeout=120)
        spin_until(executor, lambda: False, timeout=0.5)
    finally:
        executor.shutdown()
        for node in (sim, coordinator, listener):
            node.destroy_node()
    tensions = received["/cable_tensions"]
    hover = [m for m in tensions if 0.6 < seconds(m.header.stamp) < 0.95]
    assert hover and hover[-1].robot_ids == ROBOTS
    np.testing.assert_allclose(hover[-1].tensions, 0.278 * 9.81 / 3, atol=0.1)
    assert all(v > 0 for v in hover[-1].tension_variances)
    estimates = received["/human_wrench_estimate"]
    quiet = [m for m in estimates if 0.6 < seconds(m.header.stamp) < 0.95]
    assert quiet and not any(m.contact for m in quiet)
    pushed = [m for m in estimates if seconds(m.header.stamp) > 2.0]
    assert pushed and all(m.contact for m in pushed)
    last = pushed[-1]
    assert last.header.frame_id == "payload" and last.method == "dynamic"
    force_x, sigma_x = last.wrench.force.x, np.sqrt(last.covariance[0])
    print(f"F_x {force_x:.3f} +- {sigma_x:.3f} N (0.4 N applied)")
    assert abs(force_x - 0.4) < min(0.1, 3 * sigma_x + 0.02)
    plain = received["/human_wrench"][-1]
    np.testing.assert_allclose(wrench_vector(plain.wrench)[3], force_x - 0.1, atol=0.02)
    statuses = {s.hardware_id for a in received["/diagnostics"] for s in a.status}
    assert set(ROBOTS) <= statuses


def test_two_robots_are_refused_at_start_up(ros_context, tmp_path):
    team = tmp_path / "team.yaml"
    document = yaml.safe_load(data_file("aerial_team_paper002.yaml", "config").read_text())
    document["payload"]["attach_points"] = document["payload"]["attach_points"][:2]
    team.write_text(yaml.safe_dump(document))
    with pytest.raises(ParameterError, match="not observable"):
        _coordinator(ros_context, robots=ROBOTS[:2], team_description=str(team))


def test_onboard_tensions_from_the_robots_give_the_wrench(ros_context):
    """tension_source onboard: the robots publish their own CableTensions (a hovering team's,
    0.278 kg on three cables) and the payload's mocap; the coordinator runs no UKF and reports
    no contact with a wrench of zero within 1e-9 N (the tensions balance the weight exactly)."""
    from geometry_msgs.msg import PoseStamped, TwistStamped

    from inertia_estimation_ros.core.aerial.allocation import E3, GRAVITY, CableAllocation
    from inertia_estimation_ros.core.spatial import transform
    from inertia_estimation_ros.ros.conversions import to_pose, to_time, to_vector3
    from inertia_estimation_ros.ros.interface import SENSOR_QOS

    document = yaml.safe_load(data_file("aerial_team_paper002.yaml", "config").read_text())
    rho = np.array(document["payload"]["attach_points"])
    weight = np.concatenate([0.278 * GRAVITY * E3, np.zeros(3)])
    vectors = CableAllocation(rho).solve(np.eye(3), weight).reshape(3, 3)
    coordinator = _coordinator(ros_context, tension_source="onboard", mocap_timeout=1.0)
    robots = Node("robots", context=ros_context)
    publishers = {
        "pose": robots.create_publisher(PoseStamped, "/payload/mocap/pose", SENSOR_QOS),
        "twist": robots.create_publisher(TwistStamped, "/payload/mocap/twist", SENSOR_QOS),
        **{
            rid: robots.create_publisher(CableTensions, f"/{rid}/cable_tension", SENSOR_QOS)
            for rid in ROBOTS
        },
    }
    received = []
    robots.create_subscription(
        ExternalWrench, "/human_wrench_estimate", received.append, RELIABLE_QOS
    )
    clock = {"t": 0.0}

    def publish() -> None:
        clock["t"] += 0.02
        stamp = to_time(clock["t"])
        pose = PoseStamped(pose=to_pose(transform(np.eye(3), [0.0, 0.0, 1.0])))
        pose.header.stamp = stamp
        publishers["pose"].publish(pose)
        twist = TwistStamped()
        twist.header.stamp = stamp
        publishers["twist"].publish(twist)
        for k, rid in enumerate(ROBOTS):
            msg = CableTensions(robot_ids=[rid], tensions=[float(np.linalg.norm(vectors[k]))])
            msg.header.stamp = stamp
            msg.directions = [to_vector3(vectors[k] / np.linalg.norm(vectors[k]))]
            msg.tension_variances, msg.direction_covariances = (
                [0.01],
                [1e-6, 0, 0, 0, 1e-6, 0, 0, 0, 1e-6],
            )
            publishers[rid].publish(msg)

    robots.create_timer(0.02, publish)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(coordinator)
    executor.add_node(robots)
    try:
        assert spin_until(executor, lambda: len(received) > 20, timeout=60)
    finally:
        executor.shutdown()
        coordinator.destroy_node()
        robots.destroy_node()
    last = received[-1]
    assert not last.contact and not last.degraded, last.degraded_reasons
    np.testing.assert_allclose(wrench_vector(last.wrench), 0.0, atol=1e-9)
    assert coordinator.estimator.robot_counters()["robot_1"]["onboard.accepted"] > 20
