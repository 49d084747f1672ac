"""The planner node's admittance stabilizer (issue 14, a late human wrench): the node steps the
admittance with each wrench's age on its ROS clock, declares the passivity parameters with
their ranges, and reports the stabilizer on /diagnostics (WARN while it acts, OK once idle)."""

from __future__ import annotations

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from inertia_estimation_ros.core.collaboration.supervisor import Stabilizer
from inertia_estimation_ros.msg import ExternalWrench, GraspState, PayloadEstimate
from inertia_estimation_ros.ros.conversions import to_inertia, to_pose, to_time, to_wrench
from inertia_estimation_ros.ros.interface import RELIABLE_QOS
from inertia_estimation_ros.ros.nodes.planner_node import PlannerNode
from inertia_estimation_ros.ros.spin import spin_until
from inertia_estimation_ros.sim import analytic as an


@pytest.mark.timeout(60)
def test_the_planner_steps_with_the_wrench_age_and_reports_its_stabilizer(ros_context) -> None:
    planner = PlannerNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("admittance_passivity_max_damping", value=5.0),
            Parameter("admittance_input_timeout", value=10.0),  # a loaded machine is slow
        ],
    )
    listener = Node("listener", context=ros_context)
    statuses = []
    listener.create_subscription(
        DiagnosticArray,
        "/diagnostics",
        lambda msg: statuses.extend(s for s in msg.status if "stabilizer" in s.message),
        RELIABLE_QOS,
    )
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(planner)
    executor.add_node(listener)
    mode = planner.admittance
    try:
        estimate = PayloadEstimate(
            grasps_valid=True, mass_valid=True, com_valid=True, inertia_valid=True
        )
        estimate.inertia = to_inertia(an.paper_payload())
        mode.on_estimate(estimate)
        now = planner.get_clock().now().nanoseconds * 1e-9
        pose = GraspState(robot_id="robot_1", home_frame_id="robot_1/home", has_pose=True)
        pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(np.eye(4))
        pose.header.stamp = to_time(now)
        mode._on_pose(pose)
        assert mode._on_start(Trigger.Request(), Trigger.Response()).success
        assert mode.supervisor.admittance.passivity.max_damping == 5.0
        late = ExternalWrench(wrench=to_wrench(np.r_[0, 0, 2.0, 0, 0, 0]))
        late.header.stamp = to_time(now - 0.15)
        mode._on_wrench(late)  # its reference leaves at once, the wrench 0.15 s old and more
        age = mode.supervisor.admittance.passivity.age
        assert 0.15 <= age < 10.0  # [s] the ROS clock has run on since `now`
        mode.supervisor.stabilizer = Stabilizer(since=now, age=0.15, damping=3.0, dissipated=0.2)
        mode._tick()
        assert spin_until(executor, lambda: statuses, 10.0)
        values = {kv.key: kv.value for kv in statuses[0].values}
        assert statuses[0].level == DiagnosticStatus.WARN and "acting" in statuses[0].message
        assert int(values["stabilizer wrench age [ms]"]) >= 150
        mode._on_stop(Trigger.Request(), Trigger.Response())  # no human input: idle
        mode.supervisor.stabilizer = Stabilizer()
        mode._tick()
        assert spin_until(executor, lambda: len(statuses) == 2, 10.0)
        assert statuses[1].level == DiagnosticStatus.OK and "idle" in statuses[1].message
    finally:
        executor.shutdown()
        listener.destroy_node()
        planner.destroy_node()


def test_an_absurd_passivity_parameter_is_refused_with_its_range(ros_context) -> None:
    with pytest.raises(Exception, match=r"admittance_passivity_max_damping.*1000"):
        PlannerNode(
            context=ros_context,
            parameter_overrides=[Parameter("admittance_passivity_max_damping", value=-1.0)],
        )
