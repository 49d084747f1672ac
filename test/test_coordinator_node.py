"""coordinator_node in a real rclpy graph: exactly the topics and services of its interface,
parameters checked at start-up with a message that names the fix, its services over DDS, and
its estimate as TF and markers while samples stream in."""

from __future__ import annotations

import pytest
import rclpy
from coordinator_graph import Listener, TeamPublisher, start, team_messages, wait_for
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
from test_readme_nodes import assert_matches, introspect
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from inertia_estimation_ros.msg import PayloadEstimate
from inertia_estimation_ros.ros.interface import RELIABLE_QOS
from inertia_estimation_ros.ros.nodes.coordinator_node import CoordinatorNode
from inertia_estimation_ros.ros.parameters import ParameterError

ROBOTS = ["robot_1", "robot_2", "robot_3"]
SERVICES = {"reset", "freeze", "unfreeze", "estimate_now"}


@pytest.fixture
def context():
    context = Context()
    rclpy.init(context=context)
    yield context
    if context.ok():
        rclpy.shutdown(context=context)


def node(context: Context, **parameters: object) -> CoordinatorNode:
    overrides = {"robots": ROBOTS, "estimate_period": 0.2} | parameters
    return CoordinatorNode(
        context=context, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()]
    )


@pytest.mark.timeout(60)
def test_the_coordinator_has_the_topics_and_services_of_its_interface(ros_context):
    expected, found, services = introspect(
        ros_context, "coordinator_node", "/", {"robots": ROBOTS}, ROBOTS
    )
    assert_matches(expected, found)
    assert services == SERVICES


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"robots": []}, "robots' is rejected.*expected a string_array not empty"),
        ({"reference_robot": "robot_9"}, "reference robot 'robot_9' is not one of"),
        ({"robots": ["robot_1"]}, "at least two distinct ids"),
        ({"max_gap": -1.0}, r"max_gap.*expected a double in \[0.001, 10\]"),
        ({"grasp_frame": "grasp"}, "must contain {robot}"),
        ({"kinematics_source": "encoders"}, "must be one of poses, twists"),
    ],
)
def test_bad_parameters_are_refused_at_start_up_with_the_fix(context, parameters, message):
    with pytest.raises(ParameterError, match=message):
        node(context, **parameters)


def call(client, timeout: float = 30.0) -> Trigger.Response:
    assert client.wait_for_service(timeout_sec=timeout)
    future = client.call_async(Trigger.Request())
    assert wait_for(future.done, timeout)
    return future.result()


@pytest.mark.timeout(120)
def test_services_tf_and_markers_over_dds(context):
    coordinator, listener = node(context), Listener(context=context)
    client_node = Node("client", context=context)
    frames, markers = {}, []

    def on_tf(msg: TFMessage) -> None:
        frames.update({t.child_frame_id: t.header.frame_id for t in msg.transforms})

    client_node.create_subscription(TFMessage, "/tf", on_tf, RELIABLE_QOS)
    client_node.create_subscription(
        MarkerArray, "/coordinator_node/markers", markers.append, RELIABLE_QOS
    )
    clients = {
        name: client_node.create_client(Trigger, f"/coordinator_node/{name}") for name in SERVICES
    }
    group = start(context, coordinator, listener, client_node)
    publisher = TeamPublisher(Node("team", context=context), team_messages(), loop=True)
    try:
        empty = call(clients["estimate_now"])
        assert not empty.success and "stage WAITING" in empty.message
        publisher.start()
        assert wait_for(lambda: listener.estimates and listener.estimates[-1].inertia_valid, 60)
        assert wait_for(lambda: "payload/principal_axes" in frames, 30)
        assert frames == dict.fromkeys(
            ("robot_2/grasp", "robot_3/grasp", "payload/principal_axes"), "robot_1/grasp"
        )
        assert wait_for(lambda: any(m.ns == "inertia box" for m in markers[-1].markers), 30)
        assert call(clients["freeze"]).success
        assert wait_for(lambda: listener.estimates[-1].stage == PayloadEstimate.STAGE_FROZEN, 30)
        now = call(clients["estimate_now"])
        assert now.success and "mass" in now.message
        assert call(clients["unfreeze"]).success
        assert call(clients["reset"]).success
        assert wait_for(lambda: listener.estimates[-1].samples_kinematics < 100, 30)
    finally:
        publisher.join()
        group.stop()
