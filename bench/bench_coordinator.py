"""coordinator_node under load: N = 3, 8, 16 robots publishing at 100, 500 and 1000 Hz.

For each case the coordinator runs as its own process (as in a deployment); this process
streams noisy exact team data (``sim.analytic``: a ring team, 6-DoF motion) over DDS for
DURATION seconds, every sample stamped with the wall-clock time of its instant, and reads the
coordinator's /diagnostics. Each robot sends K samples per message (``GraspStateArray``; K = 1:
one ``GraspState`` per sample); ``--batch auto`` (default) takes K = rate / 100 (messages at
100 Hz), ``--batch 1`` the single-sample message at every rate. Printed per case:

* CPU time per sample: the coordinator process's user + system time over the window (its
  solver process's included) divided by the samples published in it (every robot's;
  callbacks, alignment, estimator updates and the solves every ``estimate_period``
  included); and divided by the samples accepted (CPU/accepted: when DDS drops samples, a
  busy coordinator never pays for them);
* latency p50 / p99 from a sample's stamp to the estimator update that used it (the
  coordinator's own percentiles over its last 2000 updates);
* dropped samples: published but never accepted by the coordinator (transport losses and a
  full queue); and sets the aligner could not form.

* estimate age: the median over the window's published estimates, from each one's newest
  sample to its publication (a solve runs beside the updates; PayloadEstimate.age);
* the solver process (the coordinator's child, started with the node): its start-up CPU
  (imports and warm-up before it takes jobs; not in the window), its share of the window's
  CPU in cores (in the CPU columns too) and its CPU per published estimate.

The window is steady state: the coordinator starts, its solver process gets ready, then the
team streams ``--warmup`` seconds (the first solves from scratch; longer until the first
estimate is out, at most the window's first half) before the DURATION seconds measured
(``--warmup 0``: from the first sample on, as before).
Everything the coordinator and its child spend in the window is counted; samples dropped
are counted over the whole stream.

Run: .venv/bin/python bench/bench_coordinator.py [--duration 10] [--warmup 5]
[--batch auto|K] [--cases 100:3,1000:16]
"""

from __future__ import annotations

import argparse
import contextlib
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

from inertia_estimation_ros.msg import GraspState, GraspStateArray, PayloadEstimate
from inertia_estimation_ros.ros.conversions import (
    to_grasp_state,
    to_grasp_state_array,
    to_time,
)
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.runtime import NodeGroup
from inertia_estimation_ros.sim import analytic as an

ROOT = Path(__file__).resolve().parents[1]
CASES = [(rate, n) for rate in (100.0, 500.0, 1000.0) for n in (3, 8, 16)]


def team_messages(n: int, rate: float, duration: float, batch: int) -> tuple[tuple, list]:
    """(robot ids, per message instant the list of (robot, message, stamps)) of a ring team's
    motion: GraspState (batch 1) or GraspStateArray of ``batch`` samples."""
    rng = np.random.default_rng(n)
    team, T_s_p = an.ring_team(n, rng) if n != 3 else (an.paper_team(), None)
    payload = an.paper_payload()
    motion = an.paper_kinematics_motion(rng)
    t = np.arange(0.0, duration, 1.0 / rate)
    sim = an.simulate(team, payload, motion, t, noise=an.instrumented_noise(), rng=rng)
    ids = team.robot_ids
    if batch == 1:
        return ids, [
            [(r, to_grasp_state(sim.measured[r].sample(k), f"{r}/grasp", f"{r}/home")) for r in ids]
            for k in range(len(t))
        ]
    instants = []
    for start in range(0, len(t) - batch + 1, batch):
        instants.append(
            [
                (
                    r,
                    to_grasp_state_array(
                        [sim.measured[r].sample(k) for k in range(start, start + batch)],
                        f"{r}/grasp",
                        f"{r}/home",
                    ),
                )
                for r in ids
            ]
        )
    return ids, instants


def restamp(msg: GraspState | GraspStateArray, stamp: float, rate: float) -> int:
    """Stamp a message's samples from ``stamp`` (its newest sample) back; its sample count."""
    if isinstance(msg, GraspState):
        msg.header.stamp = to_time(stamp)
        return 1
    k = len(msg.sec)
    times = [to_time(stamp - (k - 1 - j) / rate) for j in range(k)]
    msg.header.stamp = times[0]
    msg.sec = [x.sec for x in times]
    msg.nanosec = [x.nanosec for x in times]
    return k


class Diagnostics(Node):
    def __init__(self, **kwargs: object):
        super().__init__("bench_listener", **kwargs)
        self.values: dict[str, dict[str, str]] = {}
        self.reported = 0.0  # monotonic time of the last report
        self.ages: list[float] = []
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on, RELIABLE_QOS)
        self.create_subscription(
            PayloadEstimate, "/payload_estimate", self._on_estimate, LATCHED_QOS
        )

    def _on_estimate(self, msg: PayloadEstimate) -> None:
        if msg.header.stamp.sec > 0:  # not the empty estimate before any sample
            self.ages.append(msg.age)

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


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system, s) of process ``pid`` and of its children: those running (the
    coordinator's solver process, recursively) and those it has waited for (/proc); 0 for
    no process."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime .. cstime
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(FileNotFoundError):  # it ended meanwhile
                total += cpu_seconds(int(child))
    return total


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


def solver_pid(listener: Diagnostics) -> int | None:
    """The coordinator's solver process once it is ready (its /diagnostics), else None."""
    pid = listener.values.get("worker", {}).get("solver process", "")
    return int(pid) if pid else None


class Window:
    """The measured window's start: CPU of the coordinator (with its child) and of the child
    alone, wall time, samples published and estimates received before it."""

    def __init__(self, process: int, child: int | None, published: int, estimates: int) -> None:
        self.process, self.child = process, child
        self.cpu, self.child_cpu = cpu_seconds(process), cpu_seconds(child)
        self.wall, self.published, self.estimates = time.monotonic(), published, estimates


def run_case(
    context: Context,
    folder: Path,
    rate: float,
    n: int,
    duration: float,
    batch: int,
    warmup: float,
) -> dict:
    ids, instants = team_messages(n, rate, warmup + duration, batch)
    warm = round(warmup * rate / batch)  # instants before the window (at least)
    latest = warm + (len(instants) - warm) // 2  # the window starts by then
    listener = Diagnostics(context=context)
    team = Node("bench_team", context=context)
    kind, topic = (
        (GraspState, "grasp_state") if batch == 1 else (GraspStateArray, "grasp_state_array")
    )
    publishers = {r: team.create_publisher(kind, f"/{r}/{topic}", SENSOR_QOS) for r in ids}
    group = NodeGroup([listener], context).start()
    process = start_coordinator(folder, ids, rate)
    try:
        assert wait(lambda: "estimate" in listener.values, 60), "the coordinator did not start"
        assert wait(lambda: all(p.get_subscription_count() for p in publishers.values()), 30)
        wait(lambda: solver_pid(listener) is not None, 120)  # none with ``solver: thread``
        child = solver_pid(listener)
        startup = cpu_seconds(child)
        start, published, window = time.time(), 0, None
        for k, instant in enumerate(instants):
            if window is None and k >= warm and (not warm or listener.ages or k >= latest):
                window = Window(process.pid, child, published, len(listener.ages))
            stamp = start + ((k + 1) * batch - 1) / rate  # its newest sample's instant
            delay = stamp - time.time()
            if delay > 0:
                time.sleep(delay)
            for rid, msg in instant:
                published += restamp(msg, stamp, rate)
                publishers[rid].publish(msg)
        sent = time.monotonic()
        assert wait(lambda: listener.caught_up(ids, published, sent), 300), "no catching up"
        return _figures(listener, ids, window, published) | {"startup_s": startup}
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


def _figures(listener: Diagnostics, ids: tuple, window: Window, published: int) -> dict:
    """The window's figures (``run_case``); drops over the whole stream."""
    cpu = cpu_seconds(window.process) - window.cpu
    child_cpu = cpu_seconds(window.child) - window.child_cpu
    wall = time.monotonic() - window.wall
    samples = published - window.published
    ages = listener.ages[window.estimates :]
    estimate = listener.values.get("estimate", {})
    dropped_sets = sum(int(v) for k, v in estimate.items() if k.startswith("sets dropped"))
    accepted = listener.accepted(ids)
    return {
        "cpu_per_sample_us": 1e6 * cpu / samples,
        "p50_ms": float(estimate.get("update latency p50 [ms]", "nan")),
        "p99_ms": float(estimate.get("update latency p99 [ms]", "nan")),
        "dropped": published - accepted,
        "published": published,
        "dropped_sets": dropped_sets,
        "age_ms": 1e3 * float(np.median(ages or [np.nan])),
        "cpu_share": cpu / wall,
        "cpu_per_accepted_us": 1e6 * cpu / max(samples - (published - accepted), 1),
        "solver_share": child_cpu / wall,
        "solver_per_estimate_ms": 1e3 * child_cpu / len(ages) if ages else np.nan,
        "estimates": len(ages),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds measured per case")
    parser.add_argument(
        "--warmup", type=float, default=5.0, help="seconds streamed before (default 5)"
    )
    parser.add_argument(
        "--batch", default="auto", help="samples per message, or auto: rate / 100 (default)"
    )
    parser.add_argument("--cases", default="", help="rate:N,... (default: all nine)")
    args = parser.parse_args()
    cases = CASES
    if args.cases:
        cases = [(float(c.split(":")[0]), int(c.split(":")[1])) for c in args.cases.split(",")]
    context = Context()
    rclpy.init(context=context)
    print(
        f"coordinator_node, {args.duration:g} s per case after {args.warmup:g} s of warm-up, "
        "stamps = wall-clock time of publishing"
    )
    header = (
        f"{'rate [Hz]':>9} {'N':>3} {'K':>3} {'CPU/sample [us]':>16} {'CPU [cores]':>11} "
        f"{'latency p50 [ms]':>17} {'p99 [ms]':>9} {'dropped samples':>16} {'of':>7} "
        f"{'sets not formed':>16} {'estimate age [ms]':>18} {'CPU/accepted [us]':>18} "
        f"{'solver start-up CPU [s]':>24} {'solver [cores]':>15} {'solver CPU/estimate [ms]':>25}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as folder:
        for rate, n in cases:
            batch = max(1, round(rate / 100)) if args.batch == "auto" else int(args.batch)
            r = run_case(context, Path(folder), rate, n, args.duration, batch, args.warmup)
            print(
                f"{rate:9.0f} {n:3d} {batch:3d} {r['cpu_per_sample_us']:16.0f} "
                f"{r['cpu_share']:11.2f} {r['p50_ms']:17.1f} {r['p99_ms']:9.1f} "
                f"{r['dropped']:16d} {r['published']:7d} {r['dropped_sets']:16d} "
                f"{r['age_ms']:18.0f} {r['cpu_per_accepted_us']:18.0f} "
                f"{r['startup_s']:24.2f} {r['solver_share']:15.2f} "
                f"{r['solver_per_estimate_ms']:25.0f}",
                flush=True,
            )
    rclpy.shutdown(context=context)


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/coordinator.md

    with benchmark_page("coordinator"):
        main()
