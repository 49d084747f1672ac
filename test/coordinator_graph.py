"""A real rclpy graph for the coordinator's node tests: the coordinator as its own process
(``coordinator_node`` with a parameter file), and in the test's process a listener and a team
publisher streaming exact GraspState samples (sim.analytic) over DDS from its own thread,
faster than real time, stamped on the robots' clocks; with ``consumed`` the stream waits for
its receiver (flow control), so that a starved process slows the stream, never cuts it."""

from __future__ import annotations

import bisect
import copy
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from builtin_interfaces.msg import Time
from coordinator_data import ROBOTS, team_session
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node

from inertia_estimation_ros.msg import GraspState, PayloadEstimate
from inertia_estimation_ros.ros.conversions import seconds, to_grasp_state
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.runtime import NodeGroup

ROOT = Path(__file__).resolve().parents[1]

SPEED = 4.0  # simulated seconds per wall-clock second
# Instants a flow-controlled stream runs ahead of its receiver: 0.5 s of the robots' stamps,
# so no robot falls robot_timeout (1 s) behind the others however the executor orders their
# callbacks (400 let robot_3 be reported silent), and well within the coordinator's DDS history
# (GRASP_QOS, 1000 samples per robot): none is ever dropped.
WINDOW = 50
PARAMETERS = {
    "robots": list(ROBOTS),
    "reference_robot": "robot_1",
    "estimate_period": 0.2,
    "diagnostics_period": 0.2,
}


def team_messages() -> list[dict[str, GraspState]]:
    """Per instant, every robot's GraspState (noisy exact data, synchronized clocks)."""
    _, _, series = team_session(noise=True, offsets=False)
    n = len(series["robot_1"])
    return [
        {r: to_grasp_state(series[r].sample(k), f"{r}/grasp", f"{r}/home") for r in ROBOTS}
        for k in range(n)
    ]


class Listener(Node):
    """Keeps the coordinator's estimates and its latest diagnostic status per name."""

    def __init__(self, **kwargs: object):
        super().__init__("listener", **kwargs)
        self.estimates: list[PayloadEstimate] = []
        self.statuses: dict[str, object] = {}
        self.create_subscription(PayloadEstimate, "/payload_estimate", self._estimate, LATCHED_QOS)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._diagnostics, RELIABLE_QOS)

    def _estimate(self, msg: PayloadEstimate) -> None:
        self.estimates.append(msg)

    def _diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            self.statuses[status.name] = status

    def status(self, name: str) -> object:
        return self.statuses.get(f"/coordinator_node: {name}")

    def level(self, name: str) -> str:
        """ "OK", "WARN", "ERROR" (or "" before any status of that name)."""
        status = self.status(name)
        levels = {b"\x00": "OK", b"\x01": "WARN", b"\x02": "ERROR"}
        return levels.get(status.level, "STALE") if status else ""

    def values(self, name: str) -> dict[str, str]:
        status = self.status(name)
        return {kv.key: kv.value for kv in status.values} if status else {}

    def value(self, name: str, key: str, default: str = "0") -> str:
        return self.values(name).get(key, default)


@dataclass
class TeamPublisher:
    """Streams instants of ``messages`` (every robot not in ``silent``) in a thread; ``edit``
    may replace or add messages per instant: edit(k, robot, msg) -> list of messages. With
    ``loop`` it starts again at the end: the clock jumps back, or with ``continuous`` the stamps
    of each new pass go on after the last one (a stream that never ends). With ``consumed``
    (instants the receiver has taken, e.g. ``accepted_instants(coordinator)``) it stays at most
    ``window`` instants ahead: the pace of the slower of SPEED and the receiver."""

    node: Node
    messages: list
    silent: set = field(default_factory=set)
    edit: Callable | None = None
    loop: bool = False
    continuous: bool = False
    consumed: Callable[[], int] | None = None
    window: int = WINDOW
    prefix: str = ""  # a team's namespace, e.g. "/team_a"

    def __post_init__(self) -> None:
        self.publishers = {
            r: self.node.create_publisher(GraspState, f"{self.prefix}/{r}/grasp_state", SENSOR_QOS)
            for r in ROBOTS
        }
        self.published = 0
        self.sent = 0  # instants published over every pass
        self.passes = 0  # complete passes through ``messages`` (each one a clock jump back)
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> TeamPublisher:
        self._thread.start()
        return self

    def _run(self) -> None:
        start = time.monotonic()
        k = 0
        while not self.stop.is_set():
            if k == len(self.messages):
                if not self.loop:
                    return
                k, start, self.passes = 0, time.monotonic(), self.passes + 1
            delay = start + k / (100.0 * SPEED) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if not self._receiver_caught_up():
                continue
            for rid, msg in self.messages[k].items():
                if rid in self.silent:
                    continue
                msg = self._restamped(msg)
                for out in self.edit(k, rid, msg) if self.edit else [msg]:
                    self.publishers[rid].publish(out)
            self.published = k = k + 1
            self.sent += 1

    def _receiver_caught_up(self) -> bool:
        """Wait (up to 0.1 s) until the receiver is within ``window`` instants."""
        deadline = time.monotonic() + 0.1
        while self.consumed is not None and self.consumed() + self.window <= self.sent:
            if time.monotonic() > deadline or self.stop.is_set():
                return False
            time.sleep(0.02)
        return True

    def _restamped(self, msg: GraspState) -> GraspState:
        """``msg`` on the continuous clock: each pass shifted by the stream's span plus one
        sample period."""
        if not (self.continuous and self.passes):
            return msg
        first, last = (next(iter(m.values())) for m in (self.messages[0], self.messages[-1]))
        span = stamp_ns(last) - stamp_ns(first) + 10_000_000
        t = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec + self.passes * span
        out = copy.copy(msg)
        out.header = copy.copy(msg.header)
        out.header.stamp = Time(sec=t // 1_000_000_000, nanosec=t % 1_000_000_000)
        return out

    def join(self) -> None:
        self.stop.set()
        self._thread.join(10.0)


def accepted_instants(coordinator: Node, messages: list) -> Callable[[], int]:
    """Instants of ``messages`` an in-process coordinator has taken: for the robot furthest
    behind, how many are stamped at or before its newest accepted sample. Progress by stamp,
    not by a count of accepted samples: best-effort messages lost before discovery or to a
    full queue would otherwise hold the stream back for good."""
    pipeline = coordinator.pipeline
    stamps = {r: [seconds(instant[r].header.stamp) for instant in messages] for r in ROBOTS}

    def taken() -> int:
        latest = dict(pipeline.latest)
        return min(
            bisect.bisect_right(stamps[r], latest[r].stamp + 1e-6) if r in latest else 0
            for r in ROBOTS
        )

    return taken


def stamp_ns(msg: GraspState) -> int:
    """A message's stamp [ns], exact (the restamped passes add integers)."""
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


class CoordinatorProcess:
    """``coordinator_node`` as its own process with PARAMETERS (and overrides); its log is
    kept in ``folder``."""

    def __init__(self, folder: Path, **parameters: object):
        params = folder / "coordinator.yaml"
        params.write_text(
            yaml.safe_dump({"/coordinator_node": {"ros__parameters": PARAMETERS | parameters}})
        )
        self.log = folder / f"coordinator-{time.monotonic_ns()}.log"
        command = [sys.executable, "-m", "inertia_estimation_ros.ros.nodes.coordinator_node"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.process = subprocess.Popen(
            [*command, "--ros-args", "--params-file", str(params)],
            env=env,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )

    def kill(self) -> None:
        """A crash: SIGKILL, no clean-up."""
        self.process.kill()
        self.process.wait(10.0)

    def stop(self) -> int:
        """SIGTERM (as a launcher stops a node); the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def start(context: object, *nodes: Node) -> NodeGroup:
    """The nodes on one thread, as ``coordinator_node`` runs (a multi-threaded executor's
    spinning thread holds the GIL against its workers while a timer is due)."""
    return NodeGroup(list(nodes), context, "single").start()


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll until condition() or timeout [s]; no timing is asserted, only the outcome."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
