"""The robots' drivers for ``bench_collaboration.py --latency --replay``: a process that plays
the raw driver topics of a simulated run (a bag written ahead of time: joint states, F/T,
IMU, the latched URDFs; never the ready-made ``grasp_state``, ``/clock`` or ground truth) in
real time, each message restamped on this machine's clock (``stamp + wall start - first log
time``), as hardware drivers publish them. The nodes run on the system clock, not
``use_sim_time``. Playing starts once every robot node subscribes to its joint states; the
process ends after the last message.

Run: .venv/bin/python bench/robot_replay.py BAG (``chrt -r 50`` before it for SCHED_RR)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DISCOVERY = 120.0  # [s] for the robot nodes to subscribe (a minute or more at a high load)


def played(topic: str) -> bool:
    """The drivers' topics: per robot, everything but the simulator's own grasp_state."""
    return not (
        topic == "/clock" or topic.startswith("/ground_truth") or topic.endswith("/grasp_state")
    )


def main(bag: Path) -> int:
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node

    from inertia_estimation_ros.bags import bag_topics, latched_topics, rclpy_class, read_bag
    from inertia_estimation_ros.ros.conversions import seconds, to_time
    from inertia_estimation_ros.ros.interface import LATCHED_QOS, SENSOR_QOS

    types = {t: k for t, k in bag_topics(bag).items() if played(t)}
    latched = latched_topics(bag)
    messages = list(read_bag(bag, types, deserialize="rclpy"))
    context = Context()
    rclpy.init(context=context)
    node = Node("robot_replay", context=context)
    publishers = {
        t: node.create_publisher(rclpy_class(k), t, LATCHED_QOS if t in latched else SENSOR_QOS)
        for t, k in types.items()
    }
    joint_states = [p for t, p in publishers.items() if t.endswith("/joint_states")]
    deadline = time.monotonic() + DISCOVERY
    while not all(p.get_subscription_count() for p in joint_states):
        if time.monotonic() > deadline:
            print("robot_replay: the robot nodes never subscribed", file=sys.stderr)
            return 1
        time.sleep(0.1)
    time.sleep(1.0)  # the other subscribers (the coordinator's discovery of the robot nodes)
    first = messages[0].timestamp * 1e-9
    start, wall = time.monotonic(), time.time()
    for m in messages:
        due = start + m.timestamp * 1e-9 - first
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        header = getattr(m.message, "header", None)
        if header is not None:
            header.stamp = to_time(seconds(header.stamp) + wall - first)
        publishers[m.topic].publish(m.message)
    time.sleep(0.5)  # the last samples leave before the publishers go
    node.destroy_node()
    rclpy.shutdown(context=context)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
