"""coordinator_node in a real rclpy graph: exactly the topics and services of its interface,
parameters checked at start-up with a message that names the fix, its services over DDS, and
its estimate as TF and markers while samples stream in, TF coexisting with the robots' own
trees (robot_state_publisher's) under one root."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import rclpy
from coordinator_graph import (
    Listener,
    TeamPublisher,
    accepted_instants,
    start,
    team_messages,
    wait_for,
)
from geometry_msgs.msg import TransformStamped
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_srvs.srv import Trigger
from test_readme_nodes import assert_matches, introspect
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from inertia_estimation_ros.msg import GraspState, PayloadEstimate
from inertia_estimation_ros.ros.conversions import seconds
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS
from inertia_estimation_ros.ros.nodes.coordinator_node import CoordinatorNode
from inertia_estimation_ros.ros.parameters import ParameterError

ROBOTS = ["robot_1", "robot_2", "robot_3"]
SERVICES = {"reset", "freeze", "unfreeze", "estimate_now"}
# tf2's static listener: transient local with a deep history (one message per broadcaster).
TF_STATIC_LISTENER_QOS = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)


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
    assert services == SERVICES | {"check_rest"}  # check_rest: test_coordinator_wrench_checks


@pytest.mark.timeout(60)
def test_the_workers_cycles_start_at_a_fixed_rate_and_pause_after_a_long_one(context):
    """The next cycle starts update_period after the last one started (not after its work
    ended); after a cycle longer than that, half of update_period (the executor's time)."""
    coordinator = node(context, update_period=0.02, solver="thread")
    try:
        assert 0.01 <= coordinator._pause(time.monotonic() - 0.005) <= 0.015
        assert coordinator._pause(time.monotonic() - 0.05) == pytest.approx(0.01)
    finally:
        coordinator.destroy_node()


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"robots": []}, "robots' is rejected.*expected a string_array not empty"),
        ({"reference_robot": "robot_9"}, "reference robot 'robot_9' is not one of"),
        ({"robots": ["robot_1"]}, "at least two distinct ids"),
        ({"max_gap": -1.0}, r"max_gap.*expected a double in \[0.001, 10\]"),
        ({"grasp_frame": "grasp"}, "must contain {robot}"),
        ({"kinematics_source": "encoders"}, "must be one of poses, twists"),
        ({"solver": "fork"}, "must be one of process, thread"),
        ({"payload_grasp_frame": "{robot}/grasp"}, r"none a robot's own grasp frame"),
        ({"payload_frame": "payload/principal_axes"}, "must be distinct"),
        ({"payload_grasp_frame": "payload/grasp"}, "must contain {robot}"),
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


def robot_state_publisher(node: Node) -> None:
    """What robot_state_publisher and a world placement give on hardware: each robot's own tree,
    world -> robot_k/base -> robot_k/grasp (fixed joints, on /tf_static)."""
    edges = [("world", f"{r}/base") for r in ROBOTS] + [(f"{r}/base", f"{r}/grasp") for r in ROBOTS]
    static = node.create_publisher(TFMessage, "/tf_static", LATCHED_QOS)
    transforms = [TransformStamped(child_frame_id=child) for _, child in edges]
    for transform, (parent, _) in zip(transforms, edges, strict=True):
        transform.header.frame_id = parent
        transform.transform.rotation.w = 1.0
    static.publish(TFMessage(transforms=transforms))


def root_of(parents: dict[str, str], frame: str) -> str:
    while frame in parents:
        frame = parents[frame]
    return frame


@pytest.mark.timeout(120)
def test_services_tf_and_markers_over_dds(context):
    """Every frame keeps one parent: the estimate hangs under ``payload`` (a child of the
    reference robot's grasp frame, on /tf_static), beside the robots' own trees."""
    coordinator, listener = node(context), Listener(context=context)
    client_node = Node("client", context=context)
    robot_state_publisher(client_node)
    parents, markers, second_parents = {}, [], []

    def on_tf(msg: TFMessage) -> None:
        for t in msg.transforms:
            if parents.setdefault(t.child_frame_id, t.header.frame_id) != t.header.frame_id:
                second_parents.append((t.child_frame_id, t.header.frame_id))

    client_node.create_subscription(TFMessage, "/tf", on_tf, RELIABLE_QOS)
    client_node.create_subscription(TFMessage, "/tf_static", on_tf, TF_STATIC_LISTENER_QOS)
    client_node.create_subscription(
        MarkerArray, "/coordinator_node/markers", markers.append, RELIABLE_QOS
    )
    clients = {
        name: client_node.create_client(Trigger, f"/coordinator_node/{name}") for name in SERVICES
    }
    group = start(context, coordinator, listener, client_node)
    # One pass, as fast as the coordinator takes it: a starved process slows it, never cuts it.
    team = Node("team", context=context)
    messages = team_messages()
    publisher = TeamPublisher(team, messages, consumed=accepted_instants(coordinator, messages))
    try:
        empty = call(clients["estimate_now"])
        assert not empty.success and "stage WAITING" in empty.message
        publisher.start()
        assert wait_for(lambda: publisher.published == len(publisher.messages), 120)
        assert wait_for(lambda: listener.estimates and listener.estimates[-1].inertia_valid, 30)
        assert wait_for(lambda: "payload/principal_axes" in parents, 30)
        assert parents["payload"] == "robot_1/grasp"
        estimated = {f"payload/grasp_{r}" for r in ROBOTS} | {"payload/principal_axes"}
        assert {child for child, parent in parents.items() if parent == "payload"} == estimated
        assert {parents[f"{r}/grasp"] for r in ROBOTS} == {f"{r}/base" for r in ROBOTS}
        assert {root_of(parents, frame) for frame in parents} == {"world"}
        assert not second_parents
        grasp = listener.estimates[-1].grasps[2]
        assert grasp.child_frame_id == "robot_3/grasp"
        assert wait_for(lambda: any(m.ns == "inertia box" for m in markers[-1].markers), 30)
        assert call(clients["freeze"]).success
        assert wait_for(lambda: listener.estimates[-1].stage == PayloadEstimate.STAGE_FROZEN, 30)
        now = call(clients["estimate_now"])  # a solve from scratch: an estimate, or why not
        assert ("mass" in now.message) if now.success else ("not excited" in now.message)
        assert call(clients["unfreeze"]).success
        assert call(clients["reset"]).success
        assert wait_for(lambda: listener.estimates[-1].samples_kinematics < 100, 30)
    finally:
        publisher.join()
        group.stop()


def test_the_receivers_progress_is_by_stamp_so_lost_messages_never_stall_a_stream():
    """Best-effort messages lost before discovery are never accepted: progress counts the
    instants up to each robot's newest accepted stamp, not the samples accepted."""
    messages = team_messages()[:200]
    pipeline = SimpleNamespace(latest={})
    taken = accepted_instants(SimpleNamespace(pipeline=pipeline), messages)
    assert taken() == 0

    def newest(k: int, robot: str) -> SimpleNamespace:
        return SimpleNamespace(stamp=seconds(messages[k][robot].header.stamp))

    pipeline.latest = {r: newest(150, r) for r in ROBOTS}  # however many were lost before
    assert taken() == 151
    pipeline.latest["robot_3"] = newest(120, "robot_3")
    assert taken() == 121


def test_a_flow_controlled_stream_stays_within_its_window_of_the_receiver(context):
    """The live tests' stream waits for its receiver: never more than ``window`` instants
    ahead of what it has taken, and on as soon as it takes more (no sample lost to a starved
    receiver, no pass cut short)."""
    taken, ahead = [0], []

    def consumed() -> int:
        ahead.append(publisher.sent - taken[0])
        return taken[0]

    instants = [{r: GraspState() for r in ROBOTS}] * 60
    publisher = TeamPublisher(Node("team", context=context), instants, consumed=consumed, window=20)
    publisher.start()
    try:
        assert wait_for(lambda: publisher.published == 20, 30)
        assert wait_for(lambda: len(ahead) > 25, 30)  # it has asked again and again: it waits
        assert publisher.published == 20
        taken[0] = 40
        assert wait_for(lambda: publisher.published == 60, 30)
        assert max(ahead) == 20
    finally:
        publisher.join()
