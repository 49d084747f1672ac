"""planner_node over a real rclpy graph: it has exactly its declared interface, refuses
without a valid estimate or with a non-finite one (message and diagnostics, no trajectory),
and publishes a certified trajectory from an estimate and a goal."""

from __future__ import annotations

import json

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from std_srvs.srv import Trigger
from test_launch import ROOT, check_node_parameters, installed_executables, launch
from test_readme_nodes import assert_matches, introspect
from trajectory_msgs.msg import MultiDOFJointTrajectory

from inertia_estimation_ros.msg import PayloadEstimate
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS
from inertia_estimation_ros.ros.nodes.planner_node import PlannerNode
from inertia_estimation_ros.ros.parameters import ParameterError
from inertia_estimation_ros.ros.spin import spin_until

PARAMETERS = {
    "object_size": [0.15, 0.15, 0.3],
    "duration": 3.0,
    "max_solves": 60,
    "start_pose": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
}


@pytest.mark.timeout(60)
def test_planner_node_has_the_topics_of_its_interface(ros_context):
    expected, found, services = introspect(ros_context, "planner_node", "/", PARAMETERS, [])
    assert_matches(expected, found)
    assert services == {"plan", "start", "stop"}  # ~/plan, ~/admittance/start and stop


def test_an_object_too_narrow_for_the_inset_is_a_parameter_error(ros_context):
    with pytest.raises(ParameterError, match="object_size.*narrower"):
        PlannerNode(
            context=ros_context,
            parameter_overrides=[Parameter("object_size", value=[0.02, 0.02, 0.3])],
            use_global_arguments=False,
        )


def _estimate(com_valid: bool, covariance_scale: float = 1e-6) -> PayloadEstimate:
    msg = PayloadEstimate()
    msg.com_valid = com_valid
    msg.parameters = [1.0, 0.01, -0.01, 0.12, 0, 0, 0, 0, 0, 0]
    msg.parameter_covariance = list((covariance_scale * np.eye(10)).ravel())
    return msg


@pytest.mark.timeout(240)
def test_refusals_then_a_certified_trajectory(ros_context):
    node = PlannerNode(
        context=ros_context,
        parameter_overrides=[Parameter(k, value=v) for k, v in PARAMETERS.items()],
        use_global_arguments=False,
    )
    peer = Node("peer", context=ros_context)
    got = {"trajectory": [], "verification": [], "diagnostics": []}
    peer.create_subscription(
        MultiDOFJointTrajectory, "/planner_node/trajectory", got["trajectory"].append, LATCHED_QOS
    )
    peer.create_subscription(
        String, "/planner_node/verification", got["verification"].append, LATCHED_QOS
    )
    peer.create_subscription(DiagnosticArray, "/diagnostics", got["diagnostics"].append, 10)
    estimates = peer.create_publisher(PayloadEstimate, "/payload_estimate", LATCHED_QOS)
    goals = peer.create_publisher(PoseStamped, "/planner_node/goal", RELIABLE_QOS)
    client = peer.create_client(Trigger, "/planner_node/plan")
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(peer)

    def call_plan() -> Trigger.Response:
        future = client.call_async(Trigger.Request())
        assert spin_until(executor, future.done, 120.0)
        return future.result()

    def goal(x: float) -> PoseStamped:
        msg = PoseStamped()
        msg.header.frame_id = "world"
        msg.pose.position.x, msg.pose.position.z = x, 1.0
        msg.pose.orientation.w = 1.0
        return msg

    try:
        assert spin_until(executor, client.service_is_ready, 10.0)
        assert "no goal" in call_plan().message
        estimates.publish(_estimate(com_valid=False))
        assert spin_until(executor, lambda: node.estimate is not None, 10.0)
        goals.publish(goal(1.0))
        assert spin_until(executor, lambda: len(got["verification"]) >= 1, 60.0)
        assert "valid CoM" in json.loads(got["verification"][-1].data)["refused"]
        estimates.publish(_estimate(com_valid=True, covariance_scale=np.nan))
        response = call_plan()
        assert not response.success and "non-finite" in response.message
        assert any(
            s.level == s.ERROR and "non-finite" in s.message
            for d in got["diagnostics"]
            for s in d.status
        )
        goals.publish(goal(30.0))  # outside the workspace
        estimates.publish(_estimate(com_valid=True))
        spin_until(executor, lambda: False, 1.0)
        response = call_plan()
        assert not response.success and "outside the workspace" in response.message
        assert not got["trajectory"]
        goals.publish(goal(1.0))
        assert spin_until(executor, lambda: len(got["trajectory"]) == 1, 120.0)
        assert spin_until(executor, lambda: "refused" not in got["verification"][-1].data, 5.0)
        verdict = json.loads(got["verification"][-1].data)
        assert verdict["certified"] and verdict["max_violation"] < 0
        assert "informed" in verdict["polytope"] and "uninformed" not in verdict["polytope"]
        points = got["trajectory"][0].points
        assert points[-1].transforms[0].translation.x == pytest.approx(1.0, abs=1e-3)
        assert len(points) == 31
        # the estimated CoM moves by 2 cm (> replan_com_change): a new plan from the goal
        moved = _estimate(com_valid=True)
        moved.parameters[1] = 0.03
        estimates.publish(moved)
        assert spin_until(executor, lambda: len(got["trajectory"]) == 2, 120.0)
        first = got["trajectory"][1].points[0].transforms[0].translation
        assert first.x == pytest.approx(1.0, abs=1e-3)  # starts where the last plan ended
    finally:
        executor.shutdown()
        peer.destroy_node()
        node.destroy_node()


def test_the_launch_file_starts_the_planner_with_declared_parameters(monkeypatch):
    started = launch(ROOT / "launch" / "balancing_planner.launch.py", monkeypatch)
    (node,) = [a for a in started if type(a).__name__ == "Node"]
    assert node.kwargs["executable"] == "planner_node" in installed_executables()
    check_node_parameters(node)
