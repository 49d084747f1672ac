"""ros.parameters: declared with descriptors, validated at start-up with messages that name them."""

from __future__ import annotations

import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter

from inertia_estimation_ros.ros.parameters import Param, ParameterError, declare

PARAMS = [
    Param("rate", "double", 100.0, "publish rate [Hz]", bounds=(1.0, 2000.0)),
    Param("robots", "string_array", [], "robot ids", nonempty=True),
    Param("wrench_source", "string", "ft", "where wrenches come from", choices=("ft", "efforts")),
    Param(
        "cutoff", "double_array", [5.0, 5.0], "filter cutoffs [Hz]", bounds=(0.1, 100.0), length=2
    ),
]


def make_node(context, **overrides) -> Node:
    return Node(
        "under_test",
        context=context,
        parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()],
    )


def test_values_come_from_overrides_and_defaults(ros_context):
    node = make_node(ros_context, robots=["robot_1", "robot_2"])
    values = declare(node, PARAMS)
    assert values.robots == ["robot_1", "robot_2"] and values.rate == 100.0
    assert values.cutoff == [5.0, 5.0]
    descriptor = node.describe_parameter("rate")
    assert descriptor.description == "publish rate [Hz]" and descriptor.read_only
    assert descriptor.floating_point_range[0].to_value == 2000.0
    node.destroy_node()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"robots": []}, "'/under_test.robots' is rejected"),
        ({"robots": ["a"], "rate": 5000.0}, "'/under_test.rate' is rejected"),
        ({"robots": ["a"], "rate": "fast"}, "'/under_test.rate' = 'fast' must be a number"),
        ({"robots": ["a"], "wrench_source": "imu"}, "must be one of ft, efforts"),
        ({"robots": ["a"], "cutoff": [5.0]}, "must have 2 elements, has 1"),
        ({"robots": ["a"], "cutoff": [5.0, 500.0]}, "must be in [0.1, 100]"),
        ({"robots": ["a"], "cutoff": [5.0, float("nan")]}, "must be finite"),
        ({"robots": ["a"], "rate": True}, "'/under_test.rate' = True must be a number"),
        ({"robots": ["a"], "cutoff": [True, False]}, "must be a list of numbers"),
        ({"robots": ["a"], "cutoff": [5, 500]}, "must be in [0.1, 100]"),
    ],
)
def test_bad_values_fail_with_a_message_that_names_them(ros_context, overrides, message):
    node = make_node(ros_context, **overrides)
    with pytest.raises(ParameterError) as error:
        declare(node, PARAMS)
    assert message in str(error.value)
    node.destroy_node()


def test_integers_are_taken_for_doubles_as_floats(ros_context):
    """Users write ``rate: 50`` and ``cutoff: [5, 10]``: ROS parses integers, the node gets
    floats."""
    node = make_node(ros_context, robots=["a"], rate=50, cutoff=[5, 10])
    values = declare(node, PARAMS)
    assert values.rate == 50.0 and isinstance(values.rate, float)
    assert values.cutoff == [5.0, 10.0] and all(isinstance(v, float) for v in values.cutoff)
    node.destroy_node()
