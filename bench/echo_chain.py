"""The floor of the collaboration loop's latency: the same processes, topics, QoS and executors
as ``config/sim_collaborate.yaml``, but nodes that do no work (``bench_collaboration.py
--floor``).

A source (the simulator's place) stamps a message at 100 Hz on ``/echo/tick``; each of three
"robots" republishes it as its sample (``/robot_k/echo/sample``, sensor QoS, as
``grasp_state``); the "coordinator" publishes ``/echo/wrench`` once all three samples of a
stamp arrived (reliable, as ``external_wrench``); the "planner" republishes it as
``/echo/reference`` (reliable); each robot republishes that as its command
(``/robot_k/echo/command``). Only the header is copied: what is left is DDS, rclpy's
executors and Python's interpreter at the machine's load.

Run a role as its own process: ``python bench/echo_chain.py source|robot_k|coordinator|planner
[single]`` (``single``: on rclpy's single-threaded executor whatever the real node's).
"""

from __future__ import annotations

import sys
from pathlib import Path

import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.context import Context
from rclpy.node import Node
from rclpy.qos import QoSProfile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inertia_estimation_ros.ros.interface import RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.runtime import NodeGroup, run_until_interrupted, steady_timer

ROBOTS = ("robot_1", "robot_2", "robot_3")
PERIOD = 0.01  # [s] 100 Hz, the robots' sample rate in the collaboration graph
# The coordinator's subscription QoS (coordinator_node.GRASP_QOS)
GRASP_QOS = QoSProfile(
    depth=1000, reliability=SENSOR_QOS.reliability, durability=SENSOR_QOS.durability
)
# The executor each real node runs on (run_executable's default is the multi-threaded one)
EXECUTOR = {"source": "single", "coordinator": "single", "planner": "multi", "robot": "multi"}


def sample_topic(robot: str) -> str:
    return f"/{robot}/echo/sample"


def command_topic(robot: str) -> str:
    return f"/{robot}/echo/command"


def source(node: Node) -> None:
    """Stamps 0.01 s apart (the samples' sim time), one per wall-clock period."""
    publisher = node.create_publisher(PoseStamped, "/echo/tick", SENSOR_QOS)
    count = [0]

    def tick() -> None:
        count[0] += 1
        msg = PoseStamped()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(count[0] * 10_000_000, 10**9)
        publisher.publish(msg)

    steady_timer(node, PERIOD, tick)


def robot(node: Node, name: str) -> None:
    """tick -> sample; reference -> command (robot_node's two paths)."""
    sample = node.create_publisher(PoseStamped, sample_topic(name), SENSOR_QOS)
    command = node.create_publisher(PoseStamped, command_topic(name), RELIABLE_QOS)
    node.create_subscription(PoseStamped, "/echo/tick", sample.publish, SENSOR_QOS)
    node.create_subscription(PoseStamped, "/echo/reference", command.publish, RELIABLE_QOS)


def coordinator(node: Node) -> None:
    """The wrench of a stamp once every robot's sample of it arrived."""
    wrench = node.create_publisher(PoseStamped, "/echo/wrench", RELIABLE_QOS)
    seen: dict[tuple[int, int], int] = {}

    def on_sample(msg: PoseStamped) -> None:
        key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == len(ROBOTS):
            del seen[key]
            wrench.publish(msg)

    for name in ROBOTS:
        node.create_subscription(PoseStamped, sample_topic(name), on_sample, GRASP_QOS)


def planner(node: Node) -> None:
    reference = node.create_publisher(PoseStamped, "/echo/reference", RELIABLE_QOS)
    node.create_subscription(PoseStamped, "/echo/wrench", reference.publish, RELIABLE_QOS)


def main(role: str, executor: str | None = None) -> int:
    context = Context()
    rclpy.init(context=context)
    node = Node(f"echo_{role}", context=context)
    if role in ROBOTS:
        robot(node, role)
    else:
        {"source": source, "coordinator": coordinator, "planner": planner}[role](node)
    kind = "robot" if role in ROBOTS else role
    group = NodeGroup([node], context, executor or EXECUTOR[kind])
    return run_until_interrupted(group.start())


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
