"""CPU per 100-Hz cycle of one ``robot_node`` without DDS (issue 14): robot_1's driver messages
of ``bench_collaboration.py --latency --replay`` (its cached bag: joint states with efforts,
the latched URDF) fed to the node's callbacks in-process, with the planner's reference pose
and twist and a valid estimate, as in the replayed loop. Per cycle: the JointState callback
(the grasp sample and its publishes), the reference twist and the reference pose (the
command's two publishes); each message is deserialized from its CDR bytes first, as the
executor does, unless the node's callback takes the bytes (``raw`` subscriptions). Nothing
spins and no one subscribes: the figures leave out the executor's own wait and take (measure
those on the live bench). ``--profile``: cProfile's top entries by cumulative time.

Run: PYTHONPATH=$PWD .venv/bin/python bench/bench_robot_node.py [--cycles N] [--repeat R]
[--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CYCLES = 2000  # 20 s at 100 Hz


def driver_messages(robot: str = "robot_1") -> tuple[str, list[bytes]]:
    """The robot's URDF and its JointState messages (CDR bytes) from the replay's bag."""
    from bench_collaboration import replay_inputs

    from inertia_estimation_ros.bags import read_bag

    bag, _ = replay_inputs()
    urdf, joints = "", []
    topics = [f"/{robot}/robot_description", f"/{robot}/joint_states"]
    for m in read_bag(bag, topics, deserialize="raw"):
        if m.topic.endswith("robot_description"):
            from rclpy.serialization import deserialize_message
            from std_msgs.msg import String

            urdf = deserialize_message(m.message, String).data
        else:
            joints.append(m.message)
    return urdf, joints


def estimate_message() -> bytes:
    """A valid estimate of a 3-gimbal team (32 kg box, grasps on a 0.4-m triangle)."""
    from geometry_msgs.msg import Transform
    from rclpy.serialization import serialize_message

    from inertia_estimation_ros.msg import GraspFrame, PayloadEstimate

    msg = PayloadEstimate(grasps_valid=True, mass_valid=True, reference_robot_id="robot_1")
    msg.parameters = [32.0, 0.32, 0.0, 0.64, 1.2, 0.0, 1.4, 0.1, 0.0, 2.1]
    for k, angle in enumerate((0.0, 2.1, 4.2)):
        transform = Transform()
        transform.translation.x = 0.4 * (np.cos(angle) - 1.0)
        transform.translation.y = 0.4 * np.sin(angle)
        transform.rotation.z, transform.rotation.w = np.sin(angle / 2), np.cos(angle / 2)
        grasp = GraspFrame(robot_id=f"robot_{k + 1}", child_frame_id=f"robot_{k + 1}/grasp")
        grasp.transform = transform
        msg.grasps.append(grasp)
    return serialize_message(msg)


def reference_messages(count: int) -> list[tuple[bytes, bytes]]:
    """The planner's reference (pose, twist) at 100 Hz: a slow walk and yaw."""
    from geometry_msgs.msg import PoseStamped, TwistStamped
    from rclpy.serialization import serialize_message

    from inertia_estimation_ros.ros.conversions import to_time

    out = []
    for k in range(count):
        t = 1000.0 + 0.01 * k
        pose, twist = PoseStamped(), TwistStamped()
        pose.header.stamp = twist.header.stamp = to_time(t)
        pose.header.frame_id = twist.header.frame_id = "robot_1/home"
        pose.pose.position.x, pose.pose.position.z = 0.1 * np.sin(0.5 * t), 0.8
        yaw = 0.2 * np.sin(0.3 * t)
        pose.pose.orientation.z, pose.pose.orientation.w = np.sin(yaw / 2), np.cos(yaw / 2)
        twist.twist.linear.x, twist.twist.angular.z = 0.05 * np.cos(0.5 * t), 0.06
        out.append((serialize_message(pose), serialize_message(twist)))
    return out


def make_node(urdf: str) -> tuple[object, object]:
    """robot_1's node as the replay graph configures it, in a context of its own:
    (node, context)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.parameter import Parameter

    from inertia_estimation_ros.ros.nodes.robot_node import RobotNode

    context = Context()
    rclpy.init(context=context, domain_id=231)
    overrides = [
        Parameter("robot_description", value=urdf),
        Parameter("wrench_source", value="joint_efforts"),
        Parameter("has_torque", value=False),
        Parameter("cutoff_hz", value=5.0),
    ]
    node = RobotNode(context=context, namespace="/robot_1", parameter_overrides=overrides)
    return node, context


def run(node: object, joints: list[bytes], references: list, estimate: bytes) -> dict:
    """CPU seconds of each callback (deserialization included) over the cycles."""
    from geometry_msgs.msg import PoseStamped, TwistStamped
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState

    from inertia_estimation_ros.msg import PayloadEstimate

    commands = node.commands
    commands.on_estimate(deserialize_message(estimate, PayloadEstimate))
    # the callbacks the node's subscriptions call: serialized bytes where it takes them
    on_twist = getattr(commands, "on_twist_bytes", None) or (
        lambda raw: commands.on_twist(deserialize_message(raw, TwistStamped))
    )
    on_reference = getattr(commands, "on_reference_bytes", None) or (
        lambda raw: commands.on_reference(deserialize_message(raw, PoseStamped))
    )
    on_joints = getattr(node, "_on_joint_bytes", None) or (
        lambda raw: node._on_joints(deserialize_message(raw, JointState))
    )
    spent = dict.fromkeys(("joint_states", "reference twist", "reference pose"), 0.0)
    clock = time.thread_time
    for raw, (pose, twist) in zip(joints, references, strict=False):
        start = clock()
        on_joints(raw)
        middle = clock()
        on_twist(twist)
        after_twist = clock()
        on_reference(pose)
        end = clock()
        spent["joint_states"] += middle - start
        spent["reference twist"] += after_twist - middle
        spent["reference pose"] += end - after_twist
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=CYCLES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import rclpy

    urdf, joints = driver_messages()
    joints = joints[: args.cycles]
    references, estimate = reference_messages(len(joints)), estimate_message()
    for r in range(args.repeat):
        node, context = make_node(urdf)
        profiler = cProfile.Profile() if args.profile and r == args.repeat - 1 else None
        if profiler:
            profiler.enable()
        spent = run(node, joints, references, estimate)
        if profiler:
            profiler.disable()
        emitted = node.signals.emitted
        node.destroy_node()
        rclpy.shutdown(context=context)
        n = len(joints)
        per = {k: 1e6 * v / n for k, v in spent.items()}
        total = sum(per.values())
        print(
            f"run {r + 1}: {n} cycles, {emitted} samples published; CPU per cycle [us]: "
            + ", ".join(f"{k} {v:.0f}" for k, v in per.items())
            + f"; total {total:.0f} ({total * 1e-4:.3f} of a core at 100 Hz)"
        )
    if args.profile:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    return 0


if __name__ == "__main__":
    from doc_page import benchmark_page  # the figures into docs/benchmarks/robot_node.md

    with benchmark_page("robot_node"):
        status = main()
    sys.exit(status)
