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
[EXECUTOR]`` (a key of ``runtime.EXECUTORS`` or ``plain``; default: the real node's).

The platform's own floor, per hop count (``python bench/echo_chain.py --table [--hops 1 2 4]
[--executors plain single events multi single:fifo ...] [--repeats 3] [--seconds 10]``): a
straight chain of processes, the source stamping each message with the machine's monotonic
clock, the sink taking the difference, for each executor: ``plain`` is ``rclpy.spin``'s loop
(no project code), ``single``/``multi``/``events`` the nodes' ``NodeGroup`` on rclpy's
single-threaded, multi-threaded or (experimental, C++) events executor; ``:fifo`` runs every
process at SCHED_FIFO priority. The variants alternate run by run, the load is printed with
each; the table goes to docs/benchmarks/collaboration.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
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
EXECUTOR = {"source": "single", "coordinator": "single", "planner": "multi", "robot": "events"}
# The real executable in each role's place
EXECUTABLES = {
    "source": "sim_node",
    "robot": "robot_node",
    "coordinator": "coordinator_node",
    "planner": "planner_node",
}


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


# ----- the platform's floor: a straight chain of hops ----------------------------------------
# source -> /chain/0 -> hop 1 -> /chain/1 -> ... -> hop N-1 -> /chain/N-1 -> sink: N DDS hops.
# The source stamps each message with time.monotonic_ns() (CLOCK_MONOTONIC, one clock for every
# process of the machine) just before it publishes; the sink takes the difference on arrival.
WARM_UP = 2.0  # [s] after the sink's first message before it keeps delays (discovery, imports)
SPINNERS = ("plain", "single", "events", "multi")
VARIANTS = (*SPINNERS, *(f"{kind}:fifo" for kind in SPINNERS))
FIFO_PRIORITY = 50  # real-time priority (1-99) of ``:fifo`` variants and ``--rr`` floors


def chain_topic(hop: int) -> str:
    return f"/chain/h{hop}"


def chain_source(node: Node) -> None:
    publisher = node.create_publisher(PoseStamped, chain_topic(0), RELIABLE_QOS)

    def tick() -> None:
        msg = PoseStamped()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.monotonic_ns(), 10**9)
        publisher.publish(msg)

    steady_timer(node, PERIOD, tick)


def chain_hop(node: Node, hop: int) -> None:
    publisher = node.create_publisher(PoseStamped, chain_topic(hop), RELIABLE_QOS)
    node.create_subscription(PoseStamped, chain_topic(hop - 1), publisher.publish, RELIABLE_QOS)


def chain_sink(node: Node, hops: int, seconds: float) -> None:
    """Keeps the delays of ``seconds`` of messages after WARM_UP, prints them as one JSON line
    (ms) and sets ``node.finished``."""
    delays: list[float] = []
    first: list[float] = []
    node.finished = threading.Event()

    def on_message(msg: PoseStamped) -> None:
        arrival = time.monotonic_ns()
        now = arrival * 1e-9
        first or first.append(now)
        if node.finished.is_set() or now < first[0] + WARM_UP:
            return
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        delays.append((arrival - stamp) * 1e-6)
        if now > first[0] + WARM_UP + seconds:
            print(json.dumps(delays), flush=True)
            node.finished.set()

    node.create_subscription(PoseStamped, chain_topic(hops - 1), on_message, RELIABLE_QOS)


def spin(node: Node, context: Context, executor: str) -> int:
    """Spin until Ctrl-C, SIGTERM or ``node.finished``: ``plain`` is what ``rclpy.spin`` does
    (its SingleThreadedExecutor in the main thread, no project code), the others the nodes'
    ``NodeGroup`` (a thread spinning one of ``runtime.EXECUTORS``)."""
    if executor == "plain":
        finished = getattr(node, "finished", threading.Event())
        spinner = SingleThreadedExecutor(context=context)
        spinner.add_node(node)
        try:
            while context.ok() and not finished.is_set():
                spinner.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        return 0
    return run_until_interrupted(NodeGroup([node], context, executor).start())


def main(role: str, executor: str | None = None, *args: str) -> int:
    context = Context()
    rclpy.init(context=context)
    node = Node(f"echo_{role}", context=context)
    if role in ROBOTS:
        robot(node, role)
    elif role == "chain_source":
        chain_source(node)
    elif role == "chain_hop":
        chain_hop(node, int(args[0]))
    elif role == "chain_sink":
        chain_sink(node, int(args[0]), float(args[1]))
    else:
        {"source": source, "coordinator": coordinator, "planner": planner}[role](node)
    kind = "robot" if role in ROBOTS else role
    return spin(node, context, executor or EXECUTOR.get(kind, "single"))


def realtime_prefix(policy: str) -> list[str]:
    """The command prefix that runs a process at real-time priority FIFO_PRIORITY (as a
    control loop is deployed on Linux: other processes' load no longer delays it): ``fifo``
    (SCHED_FIFO), ``rr`` (SCHED_RR: equal priorities share a core in turns, so a process
    that spins, as rclpy's multi-threaded executor does, cannot hold it), ``""``: none."""
    return {"": [], "fifo": ["chrt", "-f"], "rr": ["chrt", "-r"]}[policy] + (
        [str(FIFO_PRIORITY)] if policy else []
    )


def run_chain(hops: int, variant: str, seconds: float) -> tuple[list[float], float, float]:
    """One chain of ``hops`` hops, every process on the variant's executor (``kind`` or
    ``kind:fifo``, at SCHED_FIFO priority): the delays (ms) and the load average (1 min)
    before and after."""
    executor, _, realtime = variant.partition(":")
    script = [*realtime_prefix(realtime), sys.executable, str(Path(__file__).resolve())]
    load = os.getloadavg()[0]
    sink = subprocess.Popen(
        [*script, "chain_sink", executor, str(hops), str(seconds)], stdout=subprocess.PIPE
    )
    others = [subprocess.Popen([*script, "chain_hop", executor, str(k)]) for k in range(1, hops)]
    others.append(subprocess.Popen([*script, "chain_source", executor]))  # last: all listen
    try:
        output, _ = sink.communicate(timeout=120 + seconds)
        delays = json.loads(output.decode().strip().splitlines()[-1]) if output.strip() else []
    except subprocess.TimeoutExpired:
        delays = []
    finally:
        for child in [sink, *others]:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in [sink, *others]:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    return delays, load, os.getloadavg()[0]


def chain_table(hop_counts: list[int], executors: list[str], repeats: int, seconds: float) -> None:
    """Every (hops, executor variant) ``repeats`` times, interleaved (one of each per round,
    so that a change of the machine's load falls on all alike); a row per run, then the
    medians."""
    print(f"chain of processes at 100 Hz, {seconds:g} s per run, reliable QoS depth 10")
    print(f"{'round':>5s} {'hops':>4s} {'executor':>8s} {'n':>5s} {'p50':>8s} {'p99':>8s} load")
    runs: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for round_ in range(1, repeats + 1):
        for hops in hop_counts:
            for executor in executors:
                delays, before, after = run_chain(hops, executor, seconds)
                if len(delays) < 10:
                    print(f"{round_:5d} {hops:4d} {executor:>8s} no messages (load {before:.1f})")
                    continue
                p50, p99 = np.percentile(delays, [50, 99])
                runs.setdefault((hops, executor), []).append((p50, p99))
                print(
                    f"{round_:5d} {hops:4d} {executor:>8s} {len(delays):5d} {p50:6.2f}ms "
                    f"{p99:6.1f}ms {before:.1f}-{after:.1f}",
                    flush=True,
                )
    print("\nmedian over the rounds (p50, p99) [ms]")
    for (hops, executor), values in sorted(runs.items()):
        p50, p99 = np.median(values, axis=0)
        runs_ = len(values)
        print(f"{hops:4d} hops {executor:>8s}: p50 {p50:6.2f} ms, p99 {p99:6.1f} ms ({runs_} runs)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--table":
        parser = argparse.ArgumentParser(description="the chain's floor per hop count")
        parser.add_argument("--table", action="store_true")
        parser.add_argument("--hops", type=int, nargs="+", default=[1, 2, 4])
        parser.add_argument("--executors", nargs="+", default=list(SPINNERS), choices=VARIANTS)
        parser.add_argument("--repeats", type=int, default=3)
        parser.add_argument("--seconds", type=float, default=10.0)
        a = parser.parse_args()
        from doc_page import benchmark_page  # the table into docs/benchmarks/collaboration.md

        with benchmark_page("collaboration"):
            chain_table(a.hops, a.executors, a.repeats, a.seconds)
    else:
        sys.exit(main(*sys.argv[1:]))
