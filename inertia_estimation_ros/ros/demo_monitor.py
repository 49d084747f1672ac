"""``DemoMonitor``: what ``inertia_estimation demo`` watches while the graph runs.

It follows the simulation's progress (its ``/diagnostics``: simulated time and phase), keeps
every ``payload_estimate`` the coordinator publishes and the simulator's ground truth
(``/ground_truth/payload``, latched), and calls the coordinator's ``~/estimate_now`` and
(``demo --collaborate``) its ``~/freeze`` and the planner's ``~/enable``.
Callbacks only store; ``line()`` formats a progress line from what arrived.
"""

from __future__ import annotations

import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from std_srvs.srv import SetBool, Trigger

from ..msg import PayloadEstimate
from .interface import LATCHED_QOS, RELIABLE_QOS

STAGES = ("WAITING", "KINEMATICS", "STATICS", "DYNAMICS", "FROZEN")
# [s] of wall time to retry ~/enable while the planner refuses because the human wrench lags
# (the coordinator catches up for a few seconds after its last solves)
LAG_PATIENCE = 20.0
# [s] of wall time to wait for an estimate with every part valid before freezing it (the
# coordinator's last solves of the estimation data may come after the phase has ended)
VALID_PATIENCE = 60.0


class DemoMonitor(Node):
    """Progress of a simulation graph and its coordinator's estimates."""

    def __init__(self, coordinator: str = "/coordinator_node", **kwargs: object):
        super().__init__("demo_monitor", **kwargs)
        self.estimates: list[PayloadEstimate] = []
        self.truth: PayloadEstimate | None = None
        self.simulation: dict[str, str] = {}
        self.new_estimate = threading.Event()
        self.create_subscription(
            DiagnosticArray, "/diagnostics", self._on_diagnostics, RELIABLE_QOS
        )
        self.create_subscription(
            PayloadEstimate, "/payload_estimate", self._on_estimate, LATCHED_QOS
        )
        self.create_subscription(
            PayloadEstimate, "/ground_truth/payload", self._on_truth, LATCHED_QOS
        )
        self._estimate_now = self.create_client(Trigger, f"{coordinator}/estimate_now")
        self._enable = self.create_client(SetBool, "/planner_node/enable")
        self._freeze = self.create_client(Trigger, f"{coordinator}/freeze")

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name == "/sim_node":
                self.simulation = {kv.key: kv.value for kv in status.values}

    def _on_estimate(self, msg: PayloadEstimate) -> None:
        self.estimates.append(msg)
        self.new_estimate.set()

    def _on_truth(self, msg: PayloadEstimate) -> None:
        self.truth = msg

    @property
    def phase(self) -> str:
        return self.simulation.get("phase", "")

    def line(self) -> str:
        """One progress line: simulated time and phase, the estimate's stage and values."""
        sim = self.simulation.get("simulated time [s]", "starting")
        parts = [f"sim {sim} s, {self.phase or 'waiting for subscribers'}"]
        if self.estimates:
            e = self.estimates[-1]
            parts.append(f"stage {STAGES[e.stage]}")
            if e.mass_valid:
                parts.append(f"mass {e.inertia.m:.3f} kg")
            if e.com_valid:
                c = e.inertia.com
                parts.append(f"CoM ({c.x:.3f}, {c.y:.3f}, {c.z:.3f}) m")
            if e.inertia_valid:
                m = e.principal_moments
                parts.append(f"moments ({m.x:.3f}, {m.y:.3f}, {m.z:.3f}) kg m^2")
            if e.advice:
                parts.append(f"advice: {e.advice[0]}")
        return " | ".join(parts)

    def estimate_now(self, timeout: float) -> Trigger.Response | None:
        """Call the coordinator's ~/estimate_now (the node must be spinning elsewhere)."""
        return self._call(self._estimate_now, Trigger.Request(), timeout)

    @property
    def valid(self) -> bool:
        """Whether the newest estimate has its grasps, mass, CoM and inertia all valid."""
        e = self.estimates[-1] if self.estimates else None
        return e is not None and all((e.grasps_valid, e.mass_valid, e.com_valid, e.inertia_valid))

    def enable_admittance(self, timeout: float) -> SetBool.Response:
        """Once the estimate is valid (up to VALID_PATIENCE), freeze it (collaboration uses
        the model the estimation phase gave, and no solve holds up the human wrench), then
        call the planner's ~/enable with true: the admittance on, or why not (while the
        refusal says that the human wrench lags, again for up to LAG_PATIENCE). ``timeout``
        per service call."""
        deadline = time.monotonic() + VALID_PATIENCE
        while not self.valid and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._call(self._freeze, Trigger.Request(), timeout) is None:
            return SetBool.Response(message="no answer from the coordinator's ~/freeze")
        deadline = time.monotonic() + LAG_PATIENCE
        while True:
            answer = self._call(self._enable, SetBool.Request(data=True), timeout)
            if answer is None:
                return SetBool.Response(message="no answer from the planner's ~/enable")
            if answer.success or "lags" not in answer.message or time.monotonic() > deadline:
                return answer
            time.sleep(0.2)  # the coordinator still catches up after its solves

    @staticmethod
    def _call(client: object, request: object, timeout: float) -> object | None:
        if not client.wait_for_service(timeout_sec=timeout):
            return None
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        return future.result() if done.wait(timeout) else None
