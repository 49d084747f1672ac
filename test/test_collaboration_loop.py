"""Issue 14's closed loop over DDS: sim_node (config/scenarios/test_collaborate.yaml), three
robot nodes, the coordinator and the planner in admittance mode, the graph of
config/sim_collaborate.yaml, each node its own process (as ``bringup --processes`` and
``ros2 launch`` start them); this process watches on one thread. The team estimates the payload;
in the ``collaborate`` phase an operator freezes the estimate and enables the admittance
(``/coordinator_node/freeze``, ``/planner_node/enable``),
a person pulls a handle along a path and the payload goes with it; the coordinator dies and
the robots hold the payload where it is."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.context import Context
from rclpy.node import Node
from std_srvs.srv import SetBool, Trigger

from inertia_estimation_ros.commands.demo import start_children, stop_children
from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.msg import ExternalWrench, PayloadEstimate
from inertia_estimation_ros.ros.conversions import pose_matrix, seconds, twist_vector
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.runtime import NodeGroup
from inertia_estimation_ros.sim.ground_truth import site_pose_in_body
from inertia_estimation_ros.sim.person import smooth_path
from inertia_estimation_ros.sim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
SHIFT, YAW, PATH_TIME, SETTLE = np.array([0.25, 0.1, 0.0]), np.deg2rad(10.0), 3.0, 1.0
HANDLE_P = np.array([0.45, 0.0, 0.02])  # the collaborate program's default handle
# [s] for the payload to settle on the reference once it rests (the robots' impedance; the
# payload lags a moving reference by a few mm)
SETTLE_HOLD = 0.5


def graph_file(tmp_path: Path) -> Path:
    """config/sim_collaborate.yaml on the short test scenario (as the demo's tests run it)."""
    data = yaml.safe_load((ROOT / "config" / "sim_collaborate.yaml").read_text())
    sim = data["/sim_node"]["ros__parameters"]
    # Half of real time: at 1x a loaded 2-core machine loses the estimation (no valid grasps
    # in 1 of 2 runs). At 0.5x and load 13-18 the human wrench lags the pose by up to 0.1 s
    # of simulated time; without the admittance's passivity controller the yaw loop (the
    # person's arm, ~60 N m/rad, on the admittance's half inertia) swung about the target at
    # the speed limit (turned 2.5 and 4.9 of 10 deg, 2026-11-27).
    sim.update(scenario="test_collaborate.yaml", diagnostics_period=0.1, real_time_factor=0.5)
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


class Probe(Node):
    """The simulation's phase, the true payload pose (sim time), the latest estimate."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("probe", **kwargs)
        self.phase, self.estimate = "", None
        self.counts: dict[str, str] = {}  # the coordinator's external wrench counts
        self.poses: list[tuple[float, np.ndarray]] = []
        self.create_subscription(DiagnosticArray, "/diagnostics", self._diagnostics, RELIABLE_QOS)
        self.create_subscription(PayloadEstimate, "/payload_estimate", self._estimate, LATCHED_QOS)
        self.create_subscription(PoseStamped, "/ground_truth/payload_pose", self._pose, SENSOR_QOS)
        self.twists: list[tuple[float, np.ndarray]] = []
        self.create_subscription(
            TwistStamped, "/planner_node/reference/twist", self._twist, RELIABLE_QOS
        )
        self.wrenches: list[tuple[float, float]] = []  # (stamp, newest pose stamp then)
        self.create_subscription(ExternalWrench, "/external_wrench", self._wrench, RELIABLE_QOS)
        self.enable = self.create_client(SetBool, "/planner_node/enable")
        self.freeze = self.create_client(Trigger, "/coordinator_node/freeze")

    def _diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            for kv in status.values:
                if kv.key.startswith("external wrench"):
                    self.counts[kv.key] = kv.value
            if status.name.startswith("/sim_node"):
                values = {kv.key: kv.value for kv in status.values}
                self.phase = values.get("phase", self.phase)

    def _estimate(self, msg: PayloadEstimate) -> None:
        self.estimate = msg

    def _wrench(self, msg: ExternalWrench) -> None:
        self.wrenches.append((seconds(msg.header.stamp), self.now()))

    def _twist(self, msg: TwistStamped) -> None:
        self.twists.append((seconds(msg.header.stamp), twist_vector(msg.twist)))

    def _pose(self, msg: PoseStamped) -> None:
        self.poses.append((seconds(msg.header.stamp), pose_matrix(msg.pose)))

    def valid(self) -> bool:
        e = self.estimate
        return e is not None and e.grasps_valid and e.mass_valid and e.com_valid and e.inertia_valid

    def describe(self) -> str:
        e = self.estimate
        if e is None:
            return "none received"
        flags = [e.grasps_valid, e.mass_valid, e.com_valid, e.inertia_valid]
        return f"stage {e.stage}, grasps/mass/com/inertia valid {flags}, advice {list(e.advice)}"

    def rest_since(self) -> float | None:
        """Stamp of the first reference twist of the final run of exact zeros (None: moving)."""
        rest = None
        for t, V in self.twists:
            rest = (rest or t) if not np.any(V) else None
        return rest

    def now(self) -> float:
        return self.poses[-1][0] if self.poses else -np.inf


def wait_for(condition, timeout: float, what: str, children: dict | None = None) -> None:
    """Until ``condition()``; fails at ``timeout`` or when one of ``children`` has exited."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        failed = [f for f, c in (children or {}).items() if c.poll() is not None]
        assert not failed, f"{failed} exited while waiting for {what}"
        time.sleep(0.02)


def enable(probe: Probe) -> SetBool.Response:
    """~/enable true; again while the planner says the human wrench lags (the coordinator
    catches up for a few seconds after the estimation's solves) or that no estimate reached
    it yet (a loaded machine: the planner's latched subscription matched late, 1 of 6 runs)."""
    deadline = time.monotonic() + 30
    while True:
        future = probe.enable.call_async(SetBool.Request(data=True))
        wait_for(future.done, 30, "/planner_node/enable")
        answer = future.result()
        retry = "lags" in answer.message or "no estimate received" in answer.message
        if answer.success or not retry or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def stabilizer_events(log: Path) -> list[str]:
    """The planner's messages about its admittance stabilizer (the passivity controller)."""
    return [line.strip() for line in log.read_text().splitlines() if "stabilizer" in line]


def handle_in_world(T_w_s: np.ndarray, T_P_s: np.ndarray) -> np.ndarray:
    return (T_w_s @ sp.inverse(T_P_s) @ np.r_[HANDLE_P, 1.0])[:3]


@pytest.mark.closed_loop  # in `make test`; alone: `make test-loop`
@pytest.mark.timeout(900)
def test_a_person_moves_the_payload_through_the_nodes_and_the_robots_hold_without_them(
    tmp_path,
) -> None:
    scenario = load_scenario(ROOT / "config/scenarios/test_collaborate.yaml")
    T_P_s = site_pose_in_body(scenario.compile(), "payload/robot_1")
    context = Context()
    rclpy.init(context=context)
    probe = Probe(context=context)
    group = NodeGroup([probe], context, "single").start()
    children = start_children(graph_file(tmp_path), tmp_path / "graph.log")
    try:
        # Outcomes, not timings: the simulation runs as fast as a loaded machine lets it
        # (~5 CPU s per simulated second for the seven processes); a node that dies fails.
        wait_for(lambda: "collaborate" in probe.phase, 600, "the collaborate phase", children)
        wait_for(probe.valid, 60, f"a valid estimate ({probe.describe()})")
        lags = [now - stamp for stamp, now in probe.wrenches[-50:]]
        print(
            f"{len(probe.wrenches)} external wrenches, lag behind the pose {np.round(lags[-5:], 3)}"
        )
        frozen = probe.freeze.call_async(Trigger.Request())  # collaborate on that model
        wait_for(frozen.done, 30, "/coordinator_node/freeze")
        answer = enable(probe)
        assert answer.success, answer.message
        start = probe.poses[-1]
        wait_for(lambda: probe.now() > start[0] + SETTLE + PATH_TIME + 0.5, 60, "the path")
        # The person's target for the handle, from the payload's home pose: reached.
        end, _ = smooth_path(scenario.T_w_P0, HANDLE_P, SHIFT, YAW, PATH_TIME)(PATH_TIME)
        T_w_s = probe.poses[-1][1]
        reached = np.linalg.norm(handle_in_world(T_w_s, T_P_s) - end)
        turned = sp.log3(T_w_s[:3, :3] @ start[1][:3, :3].T)
        print(probe.counts)
        print(f"handle to the path's end {reached:.3f} m, turned {np.rad2deg(turned).round(2)} deg")
        yaws = [sp.log3(T[:3, :3] @ start[1][:3, :3].T)[2] for t, T in probe.poses if t > start[0]]
        print(f"yaw: max {np.rad2deg(max(yaws)):.2f} deg (target {np.rad2deg(YAW):.0f})")
        print(*stabilizer_events(tmp_path / "graph.log"), sep="\n")
        # Without ROS the handle ends within 0.02 m of the target (test_collaboration_sim); a
        # loaded 2-core machine delays the human wrench by up to 0.5 s here (the coordinator's
        # robots drift apart, safe stops), so this asks for most of the path and its sense.
        start_distance = np.linalg.norm(handle_in_world(start[1], T_P_s) - end)
        assert reached < 0.5 * start_distance
        assert turned[2] > 0.5 * YAW and np.linalg.norm(turned[:2]) < np.deg2rad(5)
        # No swing about the target: with the wrench late by 0.15 s and no passivity
        # controller the yaw reached 17.9 deg (10.9-13.9 with it in 5 runs at load 14-27,
        # 2026-11-27; the rest of the swing is the wrench estimate's error, not its delay).
        assert max(yaws) < YAW + np.deg2rad(6)
        # The coordinator dies: no human wrench, the planner's reference stops safely (within
        # its limits, once the input timeout has passed) and holds; the robots hold the
        # payload (the person still holds the handle).
        children["/coordinator_node"].kill()
        killed = probe.now()

        def holding() -> bool:
            rest = probe.rest_since()
            return rest is not None and probe.now() > max(rest, killed) + SETTLE_HOLD + 1.0

        wait_for(holding, 60, "the reference at rest and 1 s of the payload held")
        rest = max(probe.rest_since(), killed)
        held = [T for t, T in probe.poses if t > rest + SETTLE_HOLD]
        drift = max(np.linalg.norm(T[:3, 3] - held[0][:3, 3]) for T in held)
        print(f"at rest since {rest - killed:.2f} s after the kill; drift {drift * 1e3:.2f} mm")
        assert drift < 2e-3
    finally:
        stop_children(children)
        group.stop()
