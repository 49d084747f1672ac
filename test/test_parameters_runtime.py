"""coordinator_node's parameters as a ROS 2 user handles them, over DDS: tuning ones set at run
time (``ros2 param set``'s service) and checked by their descriptors' rules, structural ones
read-only and saying so; an integer accepted for a double; an unknown name (a typo) warned
about; one start-up line with the team, the reference and the rates."""

from __future__ import annotations

import pytest
from coordinator_graph import start, wait_for
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

from inertia_estimation_ros.ros.nodes.coordinator_node import CoordinatorNode

ROBOTS = ["robot_1", "robot_2", "robot_3"]


def coordinator(context: Context, **parameters: object) -> CoordinatorNode:
    overrides = {"robots": ROBOTS} | parameters
    return CoordinatorNode(
        context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()]
    )


def done(future) -> object:
    assert wait_for(future.done, 30.0)
    return future.result()


@pytest.mark.timeout(60)
def test_tuning_parameters_are_set_at_run_time_and_checked(ros_context):
    node = coordinator(ros_context)
    client_node = Node("param_client", context=ros_context)
    group = start(ros_context, node, client_node)
    client = AsyncParameterClient(client_node, "/coordinator_node")
    try:
        assert client.wait_for_services(timeout_sec=30.0)

        def set_one(name: str, value: object):
            (result,) = done(client.set_parameters([Parameter(name, value=value)])).results
            return result

        assert set_one("estimate_period", 2).successful  # an integer for a double
        assert node.params.estimate_period == 2.0 and isinstance(node.params.estimate_period, float)
        assert set_one("robot_timeout", 2.5).successful
        assert wait_for(lambda: node.pipeline.settings.robot_timeout == 2.5, 10.0)
        bad = set_one("estimate_period", -1.0)
        assert not bad.successful
        assert "estimate_period out of range Min: 0.01, Max: 60.0" in bad.reason  # descriptor
        assert node.params.estimate_period == 2.0
        assert (
            "diagnostics_period' = 'often' must be a number"
            in set_one("diagnostics_period", "often").reason
        )
        structural = set_one("robots", ["robot_1", "robot_2"])
        assert not structural.successful and "read-only" in structural.reason
        (robots, period) = done(
            client.describe_parameters(["robots", "estimate_period"])
        ).descriptors
        assert robots.read_only and "read-only: set it at start-up" in robots.additional_constraints
        assert not period.read_only and "writable at run time" in period.additional_constraints
    finally:
        group.stop()


def test_a_typo_is_warned_about_and_the_start_is_logged_in_one_line(ros_context, capfd):
    node = coordinator(ros_context, estimate_perod=1.0, sample_rate_hz=200)
    assert node.params.sample_rate_hz == 200.0
    assert node.settings.estimator.sample_rate_hz == 200.0
    node.destroy_node()
    log = capfd.readouterr().err
    assert "unknown parameters ignored: estimate_perod (did you mean estimate_period?)" in log
    (line,) = [row for row in log.splitlines() if "team robot_1, robot_2, robot_3" in row]
    assert "reference robot_1 (robot_1/grasp -> payload)" in line
    assert "samples at 200 Hz" in line and "estimate every 0.5 s" in line
