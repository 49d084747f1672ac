"""planner_node over a real rclpy graph: it has exactly its declared interface, refuses
without a valid estimate or with a non-finite one (message and diagnostics, no trajectory),
and publishes a certified trajectory from an estimate and a goal."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from std_srvs.srv import Trigger
from test_launch import ROOT, check_node_parameters, installed_executables, launch
from test_readme_nodes import assert_matches, introspect
from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory
from visualization_msgs.msg import MarkerArray

from inertia_estimation_ros.action import PlanBalancing
from inertia_estimation_ros.core.planning.planner import TrayPlanner
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
    # + ~/admittance/start and stop; ~/enable turns the admittance on and off; ~/mode/*
    assert services == {"plan", "plan_balancing", "start", "stop", "enable"} | {
        "admittance",
        "balancing",
        "hold",
    }


def test_an_object_too_narrow_for_the_inset_is_a_parameter_error(ros_context):
    with pytest.raises(ParameterError, match="object_size.*narrower"):
        PlannerNode(
            context=ros_context,
            parameter_overrides=[Parameter("object_size", value=[0.02, 0.02, 0.3])],
            use_global_arguments=False,
        )


def _planner_node(context: object, parameters: dict = PARAMETERS) -> PlannerNode:
    return PlannerNode(
        context=context,
        parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()],
        use_global_arguments=False,
    )


def _estimate(com_valid: bool, covariance_scale: float = 1e-6) -> PayloadEstimate:
    msg = PayloadEstimate()
    msg.com_valid = com_valid
    msg.parameters = [1.0, 0.01, -0.01, 0.12, 0, 0, 0, 0, 0, 0]
    msg.parameter_covariance = list((covariance_scale * np.eye(10)).ravel())
    return msg


def _error_diagnostic(arrays: list[DiagnosticArray], words: str) -> bool:
    return any(s.level == s.ERROR and words in s.message for d in arrays for s in d.status)


def _check_markers(array: MarkerArray, start: list[float], goal: list[float]) -> None:
    """The RViz markers of a certified plan: the CoM polytope and the contact polygon (closed,
    the box's four corners) in the tray frame, the planned path from start to goal and the
    worst case (green: certified) in the world frame."""
    by_ns = {m.ns: m for m in array.markers}
    assert set(by_ns) == {"com_polytope", "contact_polygon", "planned_path", "worst_case"}
    polytope, polygon = by_ns["com_polytope"], by_ns["contact_polygon"]
    assert polytope.header.frame_id == polygon.header.frame_id == "tray"
    assert polytope.type == polytope.CUBE and polytope.scale.z > 0
    corners = [(p.x, p.y, p.z) for p in polygon.points]
    assert len(corners) == 5 and corners[0] == corners[-1]
    np.testing.assert_allclose(np.abs(corners), [[0.075, 0.075, 0.0]] * 5, atol=1e-9)
    path, worst = by_ns["planned_path"], by_ns["worst_case"]
    assert path.header.frame_id == worst.header.frame_id == "world"
    ends = [[p.x, p.y, p.z] for p in (path.points[0], path.points[-1])]
    np.testing.assert_allclose(ends, [start, goal], atol=2e-3)
    assert worst.color.g > worst.color.r  # green: the worst case does not violate


def _listen(peer: Node) -> dict[str, list]:
    """Subscribe ``peer`` to the planner's trajectory, verdict and /diagnostics."""
    got: dict[str, list] = {"trajectory": [], "verification": [], "diagnostics": []}
    peer.create_subscription(
        MultiDOFJointTrajectory, "/planner_node/trajectory", got["trajectory"].append, LATCHED_QOS
    )
    peer.create_subscription(
        String, "/planner_node/verification", got["verification"].append, LATCHED_QOS
    )
    peer.create_subscription(DiagnosticArray, "/diagnostics", got["diagnostics"].append, 10)
    return got


@pytest.mark.timeout(240)
def test_refusals_then_a_certified_trajectory(ros_context):
    node = _planner_node(ros_context)
    peer = Node("peer", context=ros_context)
    got = _listen(peer)
    markers: list[MarkerArray] = []
    peer.create_subscription(MarkerArray, "/planner_node/markers", markers.append, LATCHED_QOS)
    estimates = peer.create_publisher(PayloadEstimate, "/payload_estimate", LATCHED_QOS)
    goals = peer.create_publisher(PoseStamped, "/planner_node/goal", RELIABLE_QOS)
    client = peer.create_client(Trigger, "/planner_node/plan")
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(peer)

    def diagnosed(words: str) -> bool:
        """An ERROR diagnostic of the planner's that names ``words`` has arrived."""
        return spin_until(executor, lambda: _error_diagnostic(got["diagnostics"], words), 10.0)

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
        assert diagnosed("valid CoM")
        estimates.publish(_estimate(com_valid=True, covariance_scale=np.nan))
        response = call_plan()
        assert not response.success and "non-finite" in response.message
        assert diagnosed("non-finite")
        goals.publish(goal(30.0))  # outside the workspace
        estimates.publish(_estimate(com_valid=True))
        spin_until(executor, lambda: False, 1.0)
        response = call_plan()
        assert not response.success and "outside the workspace" in response.message
        assert diagnosed("outside the workspace")
        assert not got["trajectory"] and not markers
        goals.publish(goal(1.0))
        assert spin_until(executor, lambda: len(got["trajectory"]) == 1, 120.0)
        assert spin_until(executor, lambda: "refused" not in got["verification"][-1].data, 5.0)
        verdict = json.loads(got["verification"][-1].data)
        assert verdict["certified"] and verdict["max_violation"] < 0
        assert verdict["rounds"] and verdict["rounds"][-1].startswith("w_s ")  # re-plan rounds
        assert "informed" in verdict["polytope"] and "uninformed" not in verdict["polytope"]
        points = got["trajectory"][0].points
        assert points[-1].transforms[0].translation.x == pytest.approx(1.0, abs=1e-3)
        assert len(points) == 31
        assert spin_until(executor, lambda: len(markers) == 1, 10.0)
        _check_markers(markers[0], start=[0.0, 0.0, 1.0], goal=[1.0, 0.0, 1.0])
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


@pytest.mark.timeout(120)
def test_a_goal_the_limits_cannot_reach_in_time_is_refused_with_diagnostics(ros_context):
    """An infeasible planning QP (1 m in T = 0.5 s under the limits): the verdict and an ERROR
    diagnostic say why, and no trajectory is published."""
    node = _planner_node(ros_context, PARAMETERS | {"duration": 0.5})
    peer = Node("infeasible_peer", context=ros_context)
    got = _listen(peer)
    estimates = peer.create_publisher(PayloadEstimate, "/payload_estimate", LATCHED_QOS)
    goals = peer.create_publisher(PoseStamped, "/planner_node/goal", RELIABLE_QOS)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(peer)
    goal = PoseStamped()
    goal.header.frame_id = "world"
    goal.pose.position.x, goal.pose.position.z, goal.pose.orientation.w = 1.0, 1.0, 1.0
    try:
        estimates.publish(_estimate(com_valid=True))
        assert spin_until(executor, lambda: node.estimate is not None, 10.0)
        spin_until(executor, lambda: peer.count_subscribers("/planner_node/goal") > 0, 5.0)
        goals.publish(goal)
        assert spin_until(executor, lambda: got["verification"], 60.0)
        refused = json.loads(got["verification"][-1].data)["refused"]
        assert "infeasible" in refused and "increase the duration" in refused
        assert spin_until(
            executor, lambda: _error_diagnostic(got["diagnostics"], "infeasible"), 10.0
        )
        assert not got["trajectory"]
    finally:
        executor.shutdown()
        peer.destroy_node()
        node.destroy_node()


@pytest.mark.timeout(240)
def test_the_plan_action_sends_feedback_per_iteration_and_a_certified_result(ros_context):
    """``~/plan_balancing``: a refusal is an aborted goal with the reason; a plan sends one
    feedback per SQP iteration (1..3, residual and goal distance), then "verifying", and
    its result carries the certificate."""
    node = _planner_node(ros_context)
    peer = Node("action_peer", context=ros_context)
    estimates = peer.create_publisher(PayloadEstimate, "/payload_estimate", LATCHED_QOS)
    client = ActionClient(peer, PlanBalancing, "/planner_node/plan_balancing")
    executor = MultiThreadedExecutor(num_threads=2, context=ros_context)  # feedback flows
    #   while the node plans
    executor.add_node(node)
    executor.add_node(peer)

    def send(x: float) -> tuple[list, PlanBalancing.Result, int]:
        feedback = []
        goal = PlanBalancing.Goal()
        goal.goal.header.frame_id = "world"
        goal.goal.point.x, goal.goal.point.z = x, 1.0
        sent = client.send_goal_async(goal, feedback_callback=lambda f: feedback.append(f))
        assert spin_until(executor, sent.done, 30.0) and sent.result().accepted
        result = sent.result().get_result_async()
        assert spin_until(executor, result.done, 120.0)
        spin_until(executor, lambda: False, 0.5)  # feedback and result travel separately
        return feedback, result.result().result, result.result().status

    try:
        assert spin_until(executor, client.server_is_ready, 10.0)
        feedback, result, status = send(1.0)
        assert status == GoalStatus.STATUS_ABORTED and not result.certified
        assert "valid CoM" in result.message and np.isnan(result.max_violation)
        estimates.publish(_estimate(com_valid=True))
        assert spin_until(executor, lambda: node.estimate is not None, 10.0)
        feedback, result, status = send(1.0)
        assert status == GoalStatus.STATUS_SUCCEEDED and result.certified
        assert result.max_violation < 0 and result.duration == pytest.approx(3.0)
        stages = [(f.feedback.stage, f.feedback.iteration) for f in feedback]
        assert stages == [("planning", 1), ("planning", 2), ("planning", 3), ("verifying", 3)]
        last = feedback[2].feedback
        assert last.iterations == 3 and last.qp_status == "solved"
        assert last.goal_distance < 1e-3 and 0 < last.balancing_rms < 0.01
        assert feedback[0].feedback.balancing_rms > last.balancing_rms  # the SQP converges
    finally:
        executor.shutdown()
        client.destroy()
        peer.destroy_node()
        node.destroy_node()


@pytest.mark.timeout(240)
def test_a_goal_canceled_mid_plan_ends_canceled_and_the_node_stays_usable(ros_context, monkeypatch):
    """A cancel over DDS while the SQP runs: the goal ends CANCELED with the reason, nothing
    is published, and the next goal is planned and certified. The planner waits in its
    first iteration until the server has accepted the cancel (so the cancel lands mid-plan
    on any machine, without timed sleeps)."""
    cancel_accepted = threading.Event()
    progress = TrayPlanner._progress

    def first_iteration_waits(self, *args):
        assert cancel_accepted.wait(120.0), "the cancel request never arrived"
        return progress(self, *args)

    monkeypatch.setattr(TrayPlanner, "_progress", first_iteration_waits)
    node = _planner_node(ros_context)
    peer = Node("cancel_peer", context=ros_context)
    estimates = peer.create_publisher(PayloadEstimate, "/payload_estimate", LATCHED_QOS)
    trajectories = []
    peer.create_subscription(
        MultiDOFJointTrajectory, "/planner_node/trajectory", trajectories.append, LATCHED_QOS
    )
    client = ActionClient(peer, PlanBalancing, "/planner_node/plan_balancing")
    executor = MultiThreadedExecutor(num_threads=2, context=ros_context)  # one thread plans
    executor.add_node(node)
    executor.add_node(peer)
    goal = PlanBalancing.Goal()
    goal.goal.header.frame_id = "world"
    goal.goal.point.x, goal.goal.point.z = 1.0, 1.0

    def result_of(handle) -> tuple[PlanBalancing.Result, int]:
        future = handle.get_result_async()
        assert spin_until(executor, future.done, 120.0)
        return future.result().result, future.result().status

    try:
        assert spin_until(executor, client.server_is_ready, 10.0)
        estimates.publish(_estimate(com_valid=True))
        assert spin_until(executor, lambda: node.estimate is not None, 10.0)
        sent = client.send_goal_async(goal)
        assert spin_until(executor, sent.done, 30.0) and sent.result().accepted
        cancel = sent.result().cancel_goal_async()
        assert spin_until(executor, cancel.done, 30.0)
        assert len(cancel.result().goals_canceling) == 1  # the server accepted it
        cancel_accepted.set()
        result, status = result_of(sent.result())
        assert status == GoalStatus.STATUS_CANCELED
        assert not result.certified and "canceled" in result.message
        assert np.isnan(result.max_violation)
        spin_until(executor, lambda: False, 0.5)
        assert not trajectories and node.last_outcome is None
        sent = client.send_goal_async(goal)  # the node is not stuck: the next goal plans
        assert spin_until(executor, sent.done, 30.0) and sent.result().accepted
        result, status = result_of(sent.result())
        assert status == GoalStatus.STATUS_SUCCEEDED and result.certified
        assert spin_until(executor, lambda: len(trajectories) == 1, 10.0)
    finally:
        cancel_accepted.set()
        executor.shutdown()
        client.destroy()
        peer.destroy_node()
        node.destroy_node()


@pytest.mark.timeout(240)
def test_the_papers_robot_gets_a_certified_joint_trajectory(ros_context):
    """robot: ridgeback_ur10 plans the 9 joints from the home pose; the JointTrajectory ends
    at rest with the tray at the goal (forward kinematics)."""
    from inertia_estimation_ros.core.planning.robot import HOME, MobileManipulator

    robot = MobileManipulator()
    overrides = PARAMETERS | {"robot": "ridgeback_ur10", "require_valid_estimate": False}
    node = _planner_node(ros_context, overrides)
    peer = Node("robot_peer", context=ros_context)
    got = []
    peer.create_subscription(
        JointTrajectory, "/planner_node/joint_trajectory", got.append, LATCHED_QOS
    )
    goals = peer.create_publisher(PoseStamped, "/planner_node/goal", RELIABLE_QOS)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(peer)
    goal = robot.positions(HOME)[0][0] + [0.5, 0.0, 0.0]
    msg = PoseStamped()
    msg.header.frame_id = "world"
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = goal
    msg.pose.orientation.w = 1.0
    try:
        spin_until(executor, lambda: peer.count_subscribers("/planner_node/goal") > 0, 5.0)
        goals.publish(msg)
        assert spin_until(executor, lambda: len(got) == 1, 120.0)
        trajectory = got[0]
        assert trajectory.joint_names[0] == "x_to_world_joint" and len(trajectory.joint_names) == 9
        last = trajectory.points[-1]
        np.testing.assert_allclose(robot.positions(np.array(last.positions))[0][0], goal, atol=2e-3)
        np.testing.assert_allclose(last.velocities, 0.0, atol=1e-3)
        np.testing.assert_allclose(trajectory.points[0].positions, HOME, atol=1e-12)
    finally:
        executor.shutdown()
        peer.destroy_node()
        node.destroy_node()


def test_the_launch_file_starts_the_planner_with_declared_parameters(monkeypatch):
    started = launch(ROOT / "launch" / "balancing_planner.launch.py", monkeypatch)
    (node,) = [a for a in started if type(a).__name__ == "Node"]
    assert node.kwargs["executable"] == "planner_node" in installed_executables()
    check_node_parameters(node)
