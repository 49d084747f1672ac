"""A two-process exchange of the package's messages over DDS (the foundation demo).

The *team* process publishes one ``GraspState`` stream per robot: robots holding a
payload of known mass still, each carrying an equal share of its weight. The
*coordinator* process (the caller) receives them, estimates the mass from the
static force balance (paper 000, Eq. 9, gravity taken per sample from the
messages) and answers with a ``PayloadEstimate`` that the team process prints.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ..core.samples import GraspSample
from ..core.spatial import transform
from ..msg import GraspState, PayloadEstimate
from .conversions import grasp_sample, to_grasp_state
from .spin import spin_until

DEMO_MASS = 11.412  # kg, the aluminium frame of paper 000, Table I
GRAVITY = 9.81
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(
    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
)
ESTIMATE_TOPIC = "/coordinator/payload_estimate"


def grasp_topic(robot: int) -> str:
    return f"/robot_{robot}/grasp_state"


def run_team(robots: int, samples: int, timeout: float = 60.0) -> int:
    """Publish the robots' GraspState streams, then print the coordinator's answer."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node("demo_team", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    publishers = [
        node.create_publisher(GraspState, grasp_topic(k), RELIABLE) for k in range(1, robots + 1)
    ]
    answers: list[PayloadEstimate] = []
    node.create_subscription(PayloadEstimate, ESTIMATE_TOPIC, answers.append, LATCHED)
    try:
        if not spin_until(
            executor, lambda: all(p.get_subscription_count() > 0 for p in publishers), timeout
        ):
            print("team: no coordinator subscribed", file=sys.stderr)
            return 1
        g_i = np.array([0.0, 0.0, -GRAVITY])
        share = np.array([0.0, 0.0, 0.0, 0.0, 0.0, DEMO_MASS * GRAVITY / robots])
        for q in range(samples):
            for k, publisher in enumerate(publishers, start=1):
                sample = GraspSample(
                    robot_id=f"robot_{k}",
                    stamp=q * 0.01,
                    T_i0_i=transform(np.eye(3), [0.0, 0.0, 0.0]),
                    V_i=np.zeros(6),
                    dV_i=np.zeros(6),
                    F_i=share,
                    g_i=g_i,
                    has_torque=False,
                )
                publisher.publish(to_grasp_state(sample, f"robot_{k}/grasp", f"robot_{k}/home"))
        if not spin_until(executor, lambda: bool(answers), timeout):
            print("team: no PayloadEstimate received", file=sys.stderr)
            return 1
        estimate = answers[0]
        print(
            f"team: received PayloadEstimate: mass {estimate.inertia.m:.3f} kg from "
            f"{estimate.samples_static} static samples (true {DEMO_MASS} kg)"
        )
        return 0
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def run_demo(robots: int = 3, samples: int = 100, timeout: float = 60.0) -> int:
    """Start the team process, receive its samples, answer with the static mass estimate."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node("demo_coordinator", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    received: dict[int, list] = {k: [] for k in range(1, robots + 1)}
    for k in received:
        node.create_subscription(
            GraspState,
            grasp_topic(k),
            lambda msg, k=k: received[k].append(grasp_sample(msg)),
            RELIABLE,
        )
    estimate_pub = node.create_publisher(PayloadEstimate, ESTIMATE_TOPIC, LATCHED)
    team = subprocess.Popen(
        [sys.executable, "-m", __name__, "--robots", str(robots), "--samples", str(samples)]
    )
    try:
        start = time.monotonic()
        complete = spin_until(
            executor, lambda: all(len(v) == samples for v in received.values()), timeout
        )
        total = sum(len(v) for v in received.values())
        print(
            f"coordinator: received {total} GraspState messages from {robots} robots "
            f"in {time.monotonic() - start:.2f} s"
        )
        if not complete:
            print("coordinator: samples missing", file=sys.stderr)
            return 1
        # Paper 000, Eq. 9: m |g| = -sum_i f_i . g_i / |g_i| at each instant.
        masses = [
            -sum(s[q].F_i[3:] @ s[q].g_i for s in received.values()) / GRAVITY**2
            for q in range(samples)
        ]
        estimate = PayloadEstimate(stage=PayloadEstimate.STAGE_STATICS, mass_valid=True)
        estimate.header.stamp = node.get_clock().now().to_msg()
        estimate.header.frame_id = "robot_1/grasp"
        estimate.reference_robot_id = "robot_1"
        estimate.inertia.m = float(np.mean(masses))
        estimate.samples_static = samples
        estimate_pub.publish(estimate)
        print(f"coordinator: published PayloadEstimate, mass {estimate.inertia.m:.3f} kg")
        return team.wait(timeout=timeout)
    finally:
        if team.poll() is None:
            team.kill()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def main() -> int:
    parser = argparse.ArgumentParser(description="team side of the foundation demo")
    parser.add_argument("--robots", type=int, default=3)
    parser.add_argument("--samples", type=int, default=100)
    args = parser.parse_args()
    return run_team(args.robots, args.samples)


if __name__ == "__main__":
    sys.exit(main())
