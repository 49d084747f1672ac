"""coordinator_node under load: N = 3, 8, 16 robots publishing at 100, 500 and 1000 Hz.

For each case the coordinator runs as its own process (as in a deployment); a team process
streams noisy exact team data (``sim.analytic``: a ring team, 6-DoF motion) over DDS for
DURATION seconds, every sample stamped with the wall-clock time of its instant; this process
reads the coordinator's /diagnostics and estimates. The team's messages are serialized
before the start and only their stamps are written into the bytes before each
``publish()``, with its garbage collector's objects frozen, at real-time priority
(``SCHED_FIFO``, where the system allows it; a line under the case says when not) as if
each robot had its own CPU: it publishes on time without sharing an interpreter with the
listener or, mostly, waiting for the machine's other processes (until 2026-11-27 one loop here
restamped the message objects while the listener's executor ran: at 1 kHz, N = 16 it fell
up to 1.2 s behind its schedule; in a process of its own at normal priority, up to 1 s at a
load of 10). A message published late keeps its scheduled stamp, so the latency
counts the lateness. Each robot sends K samples per message (``GraspStateArray``; K = 1:
one ``GraspState`` per sample); ``--batch auto`` (default) takes K = rate / 100 (messages at
100 Hz), ``--batch 1`` the single-sample message at every rate. Printed per case:

* CPU time per sample: the coordinator process's user + system time over the window (its
  solver process's included) divided by the samples published in it (every robot's;
  callbacks, alignment, estimator updates and the solves every ``estimate_period``
  included); and divided by the samples accepted (CPU/accepted: when DDS drops samples, a
  busy coordinator never pays for them);
* latency p50 / p99 from a sample's stamp to the estimator update that used it (the
  coordinator's own percentiles over the sets it updated in its last 10 s, its final
  /diagnostics: the window's; until 2026-11-27 over its last 2000 sets, i.e. the last 2 s
  at 1 kHz and, at 100 Hz, the warm-up's first solves too);
* dropped samples: published but never accepted by the coordinator (transport losses and a
  full queue); and sets the aligner could not form.

* estimate age: the median over the window's published estimates, from each one's newest
  sample to its publication (a solve runs beside the updates; PayloadEstimate.age);
* the solver process (the coordinator's child, started with the node): its start-up CPU
  (imports and warm-up before it takes jobs; not in the window), its share of the window's
  CPU in cores (in the CPU columns too) and its CPU per published estimate;
* what the sender added, over the window's messages: the team's lateness p99 (the wall time
  just after a message's ``publish()`` minus its newest sample's stamp; part of the latency)
  and the spread p99 of an instant's messages (its last robot's ``publish()`` minus its
  first's: the coordinator forms a set once the last one is in).

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
import ctypes
import gc
import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.context import Context
from rclpy.node import Node
from rclpy.serialization import serialize_message

from inertia_estimation_ros.msg import GraspState, GraspStateArray, PayloadEstimate
from inertia_estimation_ros.ros.conversions import (
    to_grasp_state,
    to_grasp_state_array,
)
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.runtime import NodeGroup
from inertia_estimation_ros.sim import analytic as an

ROOT = Path(__file__).resolve().parents[1]
START_MARGIN = 0.5  # s from sending the team its start instant to that instant
SPAWN = multiprocessing.get_context("spawn")  # the team's process: no copy of this one's state
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


HEADER_STAMP = 4  # CDR: 4 bytes of encapsulation, then header.stamp (int32 sec, uint32 nanosec)


def samples_offset(data: bytes | bytearray) -> int:
    """Where a serialized GraspStateArray's sample times begin: its ``sec`` array's K int32,
    then ``nanosec``'s length and K uint32 (after the header's stamp and three strings)."""
    assert data[1] == 1, "little-endian CDR expected"
    offset = HEADER_STAMP + 8
    for _ in range(3):  # header.frame_id, robot_id, home_frame_id: uint32 length, then bytes
        offset += -offset % 4
        offset += 4 + struct.unpack_from("<I", data, offset)[0]
    return offset + -offset % 4 + 4  # after sec's length


def stamp_bytes(stamp: float, batch: int, rate: float) -> tuple[bytes, bytes]:
    """The CDR bytes of a message's stamps, its newest sample at ``stamp`` and the others
    1 / ``rate`` apart before it (``to_time``'s rounding): the header's (its first sample) and,
    for a GraspStateArray (``batch`` > 1), the samples' from ``samples_offset`` on."""
    ns = [round((stamp - (batch - 1 - j) / rate) * 1e9) for j in range(batch)]
    sec, nanosec = [t // 1_000_000_000 for t in ns], [t % 1_000_000_000 for t in ns]
    header = struct.pack("<iI", sec[0], nanosec[0])
    if batch == 1:
        return header, b""
    return header, struct.pack(f"<{batch}iI{batch}I", *sec, batch, *nanosec)


def restamped(data: bytearray, offset: int, header: bytes, samples: bytes) -> bytes:
    """The serialized message ``data`` with the stamps of ``stamp_bytes`` (``data`` changed
    in place; ``offset``: its ``samples_offset``, any for a GraspState)."""
    data[HEADER_STAMP : HEADER_STAMP + 8] = header
    data[offset : offset + len(samples)] = samples
    return bytes(data)


def sender_lateness(scheduled: np.ndarray, sent: np.ndarray) -> tuple[float, float]:
    """The team's publication figures (s): the p99 of each message's lateness (its
    ``publish()``'s wall time, just after, minus its newest sample's stamp: ``scheduled`` per
    instant) and of each instant's spread (its last robot's publication minus its first's;
    ``sent`` per instant and robot)."""
    late = sent - scheduled[:, None]
    spread = sent.max(axis=1) - sent.min(axis=1)
    return float(np.percentile(late, 99)), float(np.percentile(spread, 99))


def real_time() -> str:
    """Run this thread (and the threads it starts) first-in-first-out above every ordinary
    one, as if on a CPU of its own (a robot's); ``""`` if it does, else why not (then the
    machine's load delays it)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (AttributeError, OSError) as error:  # no such policy here, or no permission
        return f"normal priority ({error})"
    return ""


def stream_team(
    conn: Connection, progress: ctypes.c_longlong, n: int, rate: float, duration: float, batch: int
) -> None:
    """The robot team's process: its messages serialized before the start, then published on
    schedule, each instant's stamps patched into their bytes just before (a message
    published late keeps its stamp), at real-time priority if it may. Tells ``conn`` the
    robot ids and message count, then whether the coordinator subscribed and ``real_time``'s
    answer; takes the start instant (wall clock); counts the instants published in
    ``progress``; answers the wall time after each ``publish()`` (per instant and robot),
    then waits until ``conn`` ends."""
    ids, instants = team_messages(n, rate, duration, batch)
    rounds = [[bytearray(serialize_message(m)) for _, m in instant] for instant in instants]
    offsets = [samples_offset(data) if batch > 1 else 0 for data in rounds[0]]
    del instants
    conn.send((ids, len(rounds)))
    sent = np.zeros((len(rounds), n))
    gc.collect()
    gc.freeze()  # nothing of the above is ever scanned again
    priority = real_time()  # before DDS starts its threads: they inherit it, none of them
    # then waits for a CPU while publish() waits for it
    context = Context()
    rclpy.init(context=context)
    node = Node("bench_team", context=context)
    try:
        kind, topic = (
            (GraspState, "grasp_state") if batch == 1 else (GraspStateArray, "grasp_state_array")
        )
        publishers = [node.create_publisher(kind, f"/{r}/{topic}", SENSOR_QOS) for r in ids]
        matched = wait(lambda: all(p.get_subscription_count() for p in publishers), 120)
        conn.send((matched, priority))
        start = conn.recv()
        for k, messages in enumerate(rounds):
            stamp = start + ((k + 1) * batch - 1) / rate  # its newest sample's instant
            header, samples = stamp_bytes(stamp, batch, rate)
            delay = stamp - time.time()
            if delay > 0:
                time.sleep(delay)
            for j, data in enumerate(messages):
                publishers[j].publish(restamped(data, offsets[j], header, samples))
                sent[k, j] = time.time()
            progress.value = k + 1
        conn.send(sent)
        with contextlib.suppress(EOFError):  # until the coordinator has taken every message:
            conn.recv()  # a writer's end loses those still in its pool (the last instant's)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


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
    folder: Path,
    rate: float,
    n: int,
    duration: float,
    batch: int,
    warmup: float,
) -> dict:
    progress = SPAWN.RawValue("q", 0)  # instants the team has published
    conn, team_end = SPAWN.Pipe()
    team = SPAWN.Process(
        target=stream_team, args=(team_end, progress, n, rate, warmup + duration, batch)
    )
    team.start()
    team_end.close()  # the team's end: its exit ends ``conn``
    context = Context()  # the case's own: ``group.stop`` ends its thread, nodes and context
    rclpy.init(context=context)
    listener = Diagnostics(context=context)
    group = NodeGroup([listener], context).start()
    process = None
    try:
        ids, count = conn.recv()
        warm = round(warmup * rate / batch)  # instants before the window (at least)
        latest = warm + (count - warm) // 2  # the window starts by then
        process = start_coordinator(folder, ids, rate)
        assert wait(lambda: "estimate" in listener.values, 60), "the coordinator did not start"
        matched, priority = conn.recv()
        assert matched, "the coordinator did not subscribe to the team"
        wait(lambda: solver_pid(listener) is not None, 120)  # none with ``solver: thread``
        child = solver_pid(listener)
        startup = cpu_seconds(child)
        start, window, first = time.time() + START_MARGIN, None, 0
        conn.send(start)
        while not conn.poll(0.002):
            k = progress.value
            if window is None and k >= warm and (not warm or listener.ages or k >= latest):
                window, first = Window(process.pid, child, k * n * batch, len(listener.ages)), k
        sent, published = conn.recv(), count * n * batch
        done = time.monotonic()
        assert wait(lambda: listener.caught_up(ids, published, done), 300), "no catching up"
        scheduled = start + ((np.arange(count) + 1) * batch - 1) / rate
        late, spread = sender_lateness(scheduled[first:], sent[first:])
        return _figures(listener, ids, window, published) | {
            "startup_s": startup,
            "team_late_ms": 1e3 * late,
            "team_spread_ms": 1e3 * spread,
            "team_priority": priority,
        }
    finally:
        conn.close()  # a team still waiting for its start ends
        if process is not None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        team.join(20)
        if team.is_alive():
            team.kill()
        group.stop()  # an executor shut down under a spinning group made its thread spin
        # on at full speed: until 2026-11-27 a core of this process's, from the second case on


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
    print(
        f"coordinator_node, {args.duration:g} s per case after {args.warmup:g} s of warm-up, "
        "stamps = wall-clock time of publishing"
    )
    header = (
        f"{'rate [Hz]':>9} {'N':>3} {'K':>3} {'CPU/sample [us]':>16} {'CPU [cores]':>11} "
        f"{'latency p50 [ms]':>17} {'p99 [ms]':>9} {'dropped samples':>16} {'of':>7} "
        f"{'sets not formed':>16} {'estimate age [ms]':>18} {'CPU/accepted [us]':>18} "
        f"{'solver start-up CPU [s]':>24} {'solver [cores]':>15} {'solver CPU/estimate [ms]':>25} "
        f"{'team late p99 [ms]':>19} {'team spread p99 [ms]':>21}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as folder:
        for rate, n in cases:
            batch = max(1, round(rate / 100)) if args.batch == "auto" else int(args.batch)
            r = run_case(Path(folder), rate, n, args.duration, batch, args.warmup)
            print(
                f"{rate:9.0f} {n:3d} {batch:3d} {r['cpu_per_sample_us']:16.0f} "
                f"{r['cpu_share']:11.2f} {r['p50_ms']:17.1f} {r['p99_ms']:9.1f} "
                f"{r['dropped']:16d} {r['published']:7d} {r['dropped_sets']:16d} "
                f"{r['age_ms']:18.0f} {r['cpu_per_accepted_us']:18.0f} "
                f"{r['startup_s']:24.2f} {r['solver_share']:15.2f} "
                f"{r['solver_per_estimate_ms']:25.0f} {r['team_late_ms']:19.1f} "
                f"{r['team_spread_ms']:21.1f}",
                flush=True,
            )
            if r["team_priority"]:
                print(f"  the team at {r['team_priority']}: its lateness includes the load")


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/coordinator.md

    with benchmark_page("coordinator"):
        main()
