"""coordinator_node under load: N = 3, 8, 16 robots publishing GraspState at 100 and 500 Hz.

For each case the coordinator runs as its own process (as in a deployment); this process
streams noisy exact team data (``sim.analytic``: a ring team, 6-DoF motion) over DDS for
DURATION seconds, every sample stamped with the wall-clock time of its instant, and reads the
coordinator's /diagnostics. Printed per case:

* CPU time per sample: the coordinator process's user + system time over the run divided by
  the samples published (every robot's; callbacks, alignment, estimator updates and the solves
  every ``estimate_period`` included);
* latency p50 / p99 from a sample's stamp to the estimator update that used it (the
  coordinator's own percentiles over its last 2000 updates);
* dropped samples: published but never accepted by the coordinator (transport losses and a
  full queue); and sets the aligner could not form.

Run: .venv/bin/python bench/bench_coordinator.py [--duration 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.context import Context
from rclpy.node import Node

from inertia_estimation_ros.msg import GraspState
from inertia_estimation_ros.ros.conversions import to_grasp_state, to_time
from inertia_estimation_ros.ros.interface import RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.runtime import NodeGroup
from inertia_estimation_ros.sim import analytic as an

ROOT = Path(__file__).resolve().parents[1]
CASES = [(100.0, 3), (100.0, 8), (100.0, 16), (500.0, 3), (500.0, 8), (500.0, 16)]


def team_messages(n: int, rate: float, duration: float) -> tuple[tuple, list]:
    """(robot ids, per instant the list of (robot, GraspState)) of a ring team's motion."""
    rng = np.random.default_rng(n)
    team, T_s_p = an.ring_team(n, rng) if n != 3 else (an.paper_team(), None)
    payload = an.paper_payload()
    motion = an.paper_kinematics_motion(rng)
    t = np.arange(0.0, duration, 1.0 / rate)
    sim = an.simulate(team, payload, motion, t, noise=an.instrumented_noise(), rng=rng)
    ids = team.robot_ids
    instants = [
        [(r, to_grasp_state(sim.measured[r].sample(k), f"{r}/grasp", f"{r}/home")) for r in ids]
        for k in range(len(t))
    ]
    return ids, instants


class Diagnostics(Node):
    def __init__(self, **kwargs: object):
        super().__init__("bench_listener", **kwargs)
        self.values: dict[str, dict[str, str]] = {}
        self.reported = 0.0  # monotonic time of the last report
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on, RELIABLE_QOS)

    def _on(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith("/coordinator_node: "):
                name = status.name.split(": ", 1)[1]
                self.values[name] = {kv.key: kv.value for kv in status.values}
                self.reported = time.monotonic()

    def accepted(self, ids: tuple) -> int:
        return sum(int(self.values.get(r, {}).get("accepted", 0)) for r in ids)

    def caught_up(self, ids: tuple, published: int, sent: float) -> bool:
        """Every sample accepted, or the queue empty in a report made 2 s after the last one
        was sent (later samples are lost)."""
        if self.accepted(ids) == published:
            return True
        worker = self.values.get("worker", {})
        return worker.get("queued messages") == "0" and self.reported > sent + 2.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_coordinator(folder: Path, ids: tuple, rate: float) -> subprocess.Popen:
    params = folder / "coordinator.yaml"
    parameters = {"robots": list(ids), "reference_robot": ids[0], "sample_rate_hz": rate}
    params.write_text(yaml.safe_dump({"/coordinator_node": {"ros__parameters": parameters}}))
    command = [sys.executable, "-m", "inertia_estimation_ros.ros.nodes.coordinator_node"]
    return subprocess.Popen(
        [*command, "--ros-args", "--params-file", str(params)],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=(folder / "coordinator.log").open("w"),
        stderr=subprocess.STDOUT,
    )


def wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def run_case(context: Context, folder: Path, rate: float, n: int, duration: float) -> dict:
    ids, instants = team_messages(n, rate, duration)
    listener = Diagnostics(context=context)
    team = Node("bench_team", context=context)
    publishers = {
        r: team.create_publisher(GraspState, f"/{r}/grasp_state", SENSOR_QOS) for r in ids
    }
    group = NodeGroup([listener], context).start()
    process = start_coordinator(folder, ids, rate)
    try:
        assert wait(lambda: "estimate" in listener.values, 60), "the coordinator did not start"
        assert wait(lambda: all(p.get_subscription_count() for p in publishers.values()), 30)
        cpu_before = cpu_seconds(process.pid)
        start = time.time()
        for k, instant in enumerate(instants):
            stamp = start + k / rate
            delay = stamp - time.time()
            if delay > 0:
                time.sleep(delay)
            for rid, msg in instant:
                msg.header.stamp = to_time(stamp)
                publishers[rid].publish(msg)
        published = len(instants) * n
        sent = time.monotonic()
        assert wait(lambda: listener.caught_up(ids, published, sent), 300), "no catching up"
        cpu = cpu_seconds(process.pid) - cpu_before
        estimate = listener.values.get("estimate", {})
        dropped_sets = sum(int(v) for k, v in estimate.items() if k.startswith("sets dropped"))
        return {
            "cpu_per_sample_us": 1e6 * cpu / published,
            "p50_ms": float(estimate.get("update latency p50 [ms]", "nan")),
            "p99_ms": float(estimate.get("update latency p99 [ms]", "nan")),
            "dropped": published - listener.accepted(ids),
            "published": published,
            "dropped_sets": dropped_sets,
        }
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        group.executor.remove_node(listener)
        group.executor.shutdown()
        listener.destroy_node()
        team.destroy_node()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per case")
    args = parser.parse_args()
    context = Context()
    rclpy.init(context=context)
    print(f"coordinator_node, {args.duration:g} s per case, stamps = wall-clock time of publishing")
    header = (
        f"{'rate [Hz]':>9} {'N':>3} {'CPU/sample [us]':>16} {'latency p50 [ms]':>17} "
        f"{'p99 [ms]':>9} {'dropped samples':>16} {'of':>7} {'sets not formed':>16}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as folder:
        for rate, n in CASES:
            r = run_case(context, Path(folder), rate, n, args.duration)
            print(
                f"{rate:9.0f} {n:3d} {r['cpu_per_sample_us']:16.0f} {r['p50_ms']:17.1f} "
                f"{r['p99_ms']:9.1f} {r['dropped']:16d} {r['published']:7d} "
                f"{r['dropped_sets']:16d}",
                flush=True,
            )
    rclpy.shutdown(context=context)


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/coordinator.md

    with benchmark_page("coordinator"):
        main()
