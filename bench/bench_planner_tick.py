"""CPU of the planner node's admittance path per reference, without DDS delivery (issue 14).

What `planner_node` does 100 times a second in issue 14's loop (``bench_collaboration.py
--latency --replay``), called directly on a real node (its publishers real, nobody listening):
the reference robot's ``GraspState`` (the payload pose) and a human ``ExternalWrench`` (a push
above the dead band, turning), whose callback advances the admittance and publishes the
reference. The node's clock is replaced by one that advances one control period per instant,
so that every wrench publishes; a ``PayloadEstimate`` every ``ESTIMATE_EVERY`` instants (the
coordinator's default 0.5 s). Prints the CPU time (``time.process_time``) per instant, best
of ``--repeat`` rounds; ``--profile`` prints cProfile's top entries of one round. The
messages arrive serialized, as from DDS: to the node's bytes callbacks where it has them
(``_on_pose_bytes``, ``_on_wrench_bytes``), else deserialized by rclpy for its message
callbacks (what its subscriptions did before), so that the figure compares across versions.

Run: PYTHONPATH=$PWD .venv/bin/python bench/bench_planner_tick.py [--instants 2000]
[--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import rclpy
from rclpy.serialization import deserialize_message, serialize_message
from std_srvs.srv import Trigger

from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.msg import ExternalWrench, GraspState, PayloadEstimate
from inertia_estimation_ros.ros.conversions import (
    to_inertia,
    to_pose,
    to_time,
    to_wrench,
)
from inertia_estimation_ros.ros.nodes.planner_node import PlannerNode

PERIOD = 0.01  # [s] 100 Hz
ESTIMATE_EVERY = 50  # instants between estimates


def estimate_message() -> PayloadEstimate:
    body = InertialParameters.from_mass_com_inertia(
        32.0, np.array([0.05, 0.02, 0.1]), np.diag([1.4, 1.7, 2.5])
    )
    msg = PayloadEstimate(grasps_valid=True, mass_valid=True, com_valid=True, inertia_valid=True)
    msg.inertia = to_inertia(body)
    return msg


def inputs(count: int) -> list[tuple[GraspState, ExternalWrench]]:
    """(pose, wrench) messages of ``count`` instants, a push that turns."""
    out = []
    for k in range(count):
        t = 100.0 + k * PERIOD
        pose = GraspState(robot_id="robot_1", home_frame_id="robot_1/home", has_pose=True)
        pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(np.eye(4))
        pose.header.stamp = to_time(t)
        push = np.r_[2.0 * np.sin(t), 1.5, 0.5, 20 * np.cos(0.5 * t), 8.0, 1.0]
        wrench = ExternalWrench(wrench=to_wrench(push))
        wrench.header.stamp = to_time(t)
        out.append((pose, wrench))
    return out


def callbacks(mode: object) -> tuple:
    """The pose and wrench subscriptions' callbacks, of serialized messages."""
    if hasattr(mode, "_on_wrench_bytes"):
        return mode._locked(mode._on_pose_bytes), mode._locked(mode._on_wrench_bytes)
    on_pose, on_wrench = mode._locked(mode._on_pose), mode._locked(mode._on_wrench)
    return (
        lambda raw: on_pose(deserialize_message(raw, GraspState)),
        lambda raw: on_wrench(deserialize_message(raw, ExternalWrench)),
    )


def serialized(messages: list, start: float) -> list[tuple[bytes, bytes]]:
    """The (pose, wrench) messages stamped on from ``start``, serialized."""
    out = []
    for k, (pose, wrench) in enumerate(messages):
        pose.header.stamp = wrench.header.stamp = to_time(start + (k + 1) * PERIOD)
        out.append((serialize_message(pose), serialize_message(wrench)))
    return out


def run(planner: PlannerNode, messages: list, clock: list[float]) -> float:
    """CPU seconds per instant of the pose and wrench callbacks."""
    on_pose, on_wrench = callbacks(planner.admittance)
    estimate = estimate_message()
    start = time.process_time()
    for k, (pose, wrench) in enumerate(messages):
        clock[0] += PERIOD
        if k % ESTIMATE_EVERY == 0:
            planner._on_estimate(estimate)
        on_pose(pose)
        on_wrench(wrench)
    return (time.process_time() - start) / len(messages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instants", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    context = rclpy.Context()
    rclpy.init(context=context)
    planner = PlannerNode(context=context)
    clock = [100.0]
    mode = planner.admittance
    mode._now = lambda: clock[0]
    planner._on_estimate(estimate_message())
    messages = inputs(args.instants)
    on_pose, on_wrench = callbacks(mode)
    on_pose(serialize_message(messages[0][0]))
    on_wrench(serialize_message(messages[0][1]))
    assert mode._on_start(Trigger.Request(), Trigger.Response()).success
    published = []
    publish = mode._pose.publish
    mode._pose.publish = lambda msg: (published.append(msg), publish(msg))
    try:
        costs = []
        for _ in range(args.repeat):
            rounds = serialized(messages, clock[0])  # stamps on: the clock runs on
            costs.append(run(planner, rounds, clock))
        assert len(published) == args.repeat * args.instants, len(published)
        assert mode.supervisor.active, mode.supervisor.events
        print(
            f"planner admittance path: {1e6 * min(costs):.0f} us CPU per instant (best of "
            f"{args.repeat}, rounds {', '.join(f'{1e6 * c:.0f}' for c in costs)}); load "
            f"{os.getloadavg()[0]:.1f}"
        )
        if args.profile:
            rounds = serialized(messages, clock[0])
            profiler = cProfile.Profile()
            profiler.runcall(run, planner, rounds, clock)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    finally:
        planner.destroy_node()
        rclpy.shutdown(context=context)
    return 0


if __name__ == "__main__":
    from doc_page import benchmark_page  # the figures into docs/benchmarks/planner_tick.md

    with benchmark_page("planner_tick"):
        status = main()
    raise SystemExit(status)
