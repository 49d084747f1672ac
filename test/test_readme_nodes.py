"""The node tables (docs/nodes.md) are generated from the NodeInterfaces and current, and each
running node has exactly the topics, QoS and services its NodeInterface declares (graph
introspection over a real rclpy graph)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from inertia_estimation_ros.ros.graph import NodeSpec, resolve_topic
from inertia_estimation_ros.ros.interface import QOS_NAMES, NodeInterface
from inertia_estimation_ros.ros.nodes import (
    README_MARKERS,
    node_class,
    node_interface,
    readme_tables,
)
from inertia_estimation_ros.ros.spin import spin_until

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = README_MARKERS
# Every rclpy node has these; NodeInterfaces list the node's own.
STANDARD_TOPICS = {"/rosout", "/parameter_events"}
STANDARD_SERVICES = {
    "describe_parameters",
    "get_parameter_types",
    "get_parameters",
    "get_type_description",
    "list_parameters",
    "set_parameters",
    "set_parameters_atomically",
}


def test_readme_node_tables_are_current():
    text = (ROOT / "docs" / "nodes.md").read_text()
    current = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    expected = readme_tables().strip()
    assert current == expected, "docs/nodes.md's node tables are out of date: run `make readme`"


def declared(interface: NodeInterface, spec: NodeSpec, entries: str) -> dict[str, str]:
    """topic -> QoS key of a NodeInterface's publishes or subscribes, for one running node."""
    return {
        topic: entry.qos
        for entry in getattr(interface, entries)
        for topic in resolve_topic(entry.name, spec)
    }


def introspect(
    context,
    executable: str,
    namespace: str,
    parameters: dict,
    robots: list[str],
    subscribes: set[str] | None = None,
):
    """Start the node. Returns what its interface declares (topic -> QoS key; only the
    ``subscribes`` topics if given: those its parameters choose) and what it has (topic ->
    QoS profile), and its own services."""
    node = node_class(executable)(
        context=context,
        namespace=namespace,
        parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()],
        use_global_arguments=False,
    )
    observer = Node("observer", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(observer)
    spec = NodeSpec(executable, namespace, parameters | {"robots": robots})
    interface = node_interface(executable)
    expected = {d: declared(interface, spec, d) for d in ("publishes", "subscribes")}
    if subscribes is not None:
        assert subscribes <= set(expected["subscribes"])
        expected["subscribes"] = {t: expected["subscribes"][t] for t in subscribes}
    name, ns = node.get_name(), node.get_namespace()
    queries = {
        "publishes": (
            observer.get_publisher_names_and_types_by_node,
            observer.get_publishers_info_by_topic,
        ),
        "subscribes": (
            observer.get_subscriber_names_and_types_by_node,
            observer.get_subscriptions_info_by_topic,
        ),
    }

    def topics(direction: str) -> set[str]:  # an action's hidden topics count as the action
        return {t for t, _ in queries[direction][0](name, ns) if "/_action/" not in t} - (
            STANDARD_TOPICS
        )

    try:
        # graph discovery, even within one process, can take seconds on a loaded machine
        spin_until(executor, lambda: all(topics(d) == set(expected[d]) for d in expected), 30.0)
        found = {}
        for direction, (_, info) in queries.items():
            found[direction] = {}
            for topic in topics(direction):
                (endpoint,) = [
                    e for e in info(topic) if e.node_name == name and e.node_namespace == ns
                ]
                found[direction][topic] = endpoint.qos_profile
        services = {
            s.rsplit("/", 1)[-1] if s.startswith(node.get_fully_qualified_name() + "/") else s
            for s, _ in observer.get_service_names_and_types_by_node(name, ns)
            for s in [s.split("/_action/")[0]]  # an action's services: the action's name
        } - STANDARD_SERVICES
        return expected, found, services
    finally:
        executor.shutdown()
        observer.destroy_node()
        node.destroy_node()


def assert_matches(expected: dict, found: dict) -> None:
    for direction in ("publishes", "subscribes"):
        assert set(found[direction]) == set(expected[direction]), direction
        for topic, qos in found[direction].items():
            wanted = QOS_NAMES[expected[direction][topic]]
            assert (qos.reliability, qos.durability) == (wanted.reliability, wanted.durability), (
                topic
            )


@pytest.mark.timeout(60)
def test_robot_node_has_the_topics_of_its_interface(ros_context):
    """Its subscriptions depend on its sources: together, two configurations have them all."""
    follow = {"/payload_estimate", "/planner_node/reference/pose", "/planner_node/reference/twist"}
    configurations = [
        (
            {"gravity_source": "imu"},
            {"joint_states", "ft_sensor", "imu", "robot_description", "/tf_static"} | follow,
        ),
        (
            {"kinematics_source": "grasp_pose", "wrench_source": "none"},
            {"grasp_pose", "/tf_static"} | follow,
        ),
    ]
    subscribed = set()
    for parameters, topics in configurations:
        chosen = {t if t.startswith("/") else f"/robot_7/{t}" for t in topics}
        expected, found, services = introspect(
            ros_context, "robot_node", "/robot_7", parameters, [], chosen
        )
        assert_matches(expected, found)
        assert not services
        subscribed |= chosen
    everything = {entry.name for entry in node_interface("robot_node").subscribes}
    assert subscribed == {t if t.startswith("/") else f"/robot_7/{t}" for t in everything}


@pytest.mark.timeout(60)
def test_sim_node_has_the_topics_of_its_interface(ros_context):
    parameters = {
        "scenario": "test_two_wrists.yaml",  # F/T sensors and IMUs
        "publish_grasp_state": True,
        "publish_true_grasps": True,
    }
    expected, found, services = introspect(
        ros_context, "sim_node", "/", parameters, ["robot_1", "robot_2"]
    )
    assert_matches(expected, found)
    assert "/robot_2/imu" in found["publishes"] and not services
    commands = {
        f"/{r}/robot_node/command/{k}" for r in ("robot_1", "robot_2") for k in ("pose", "wrench")
    }
    references = {"/payload/reference/pose", "/payload/reference/twist"}
    assert set(found["subscribes"]) == references | commands
