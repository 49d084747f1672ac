"""``coordinator_node``: the team's payload estimate from every robot's ``GraspState``.

A thin adapter around ``core.team_pipeline.TeamPipeline`` (checks, clock offsets, alignment,
``TeamEstimator``, robot liveness, diagnostics content), which ``inertia_estimation estimate``
runs on bags without ROS. Subscription callbacks only enqueue the message with its arrival
time. A worker thread owns the pipeline: it converts and checks what arrived, aligns and
updates every ``update_period``, solves every ``estimate_period`` (wall clock; longer when a
solve takes more than a quarter of that) and publishes the estimate, TF and markers; every
``diagnostics_period`` it publishes /diagnostics. A solve takes tens of milliseconds to
seconds (N = 16): outside the executor, it leaves the subscriptions served meanwhile, whatever
executor spins the node, and their deep sensor-data history holds seconds of samples while
Python's GIL keeps the executor waiting. Services post their
command to the worker and wait for it. Bad input is refused and counted, never raised.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from collections import deque
from types import SimpleNamespace

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import QoSProfile
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage
from threadpoolctl import threadpool_limits
from visualization_msgs.msg import MarkerArray

from ...core.cooperative import TeamEstimate
from ...core.cooperative.grasp_kinematics import ROBUST_LOSSES
from ...core.cooperative.settings import KINEMATICS_SOURCES
from ...core.team_pipeline import PipelineSettings, Status, TeamPipeline
from ...msg import GraspState, PayloadEstimate
from ..conversions import grasp_sample, to_payload_estimate
from ..interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS, NodeInterface, Service, Topic
from ..parameters import Param, ParameterError, declare
from ..payload_visualization import payload_markers, payload_transforms
from ..runtime import LEVELS, run_executable

INBOX_LIMIT = 100_000  # messages waiting for the worker; more are dropped and counted
SERVICE_TIMEOUT = 30.0  # [s] a service call waits this long for the worker
# Sensor-data QoS with a deep history: DDS keeps up to 10 s of a 100 Hz robot's samples while
# the executor is busy (the GIL), instead of dropping them.
GRASP_QOS = QoSProfile(
    depth=1000, reliability=SENSOR_QOS.reliability, durability=SENSOR_QOS.durability
)
SOLVE_SHARE = 0.25  # solves take at most this share of the worker's time
_DEFAULTS = PipelineSettings()

INTERFACE = NodeInterface(
    executable="coordinator_node",
    description=(
        "The team's payload estimate (paper 000, made online): subscribes to every robot's "
        "`GraspState`, refuses and counts bad samples, estimates the clock offsets, aligns "
        "the samples on the reference robot's time base, runs the team estimator "
        "(`core/team_pipeline.py`, `core/cooperative/`), and publishes the estimate "
        "(latched), TF from the reference grasp frame {s} to every other grasp frame and to "
        "the principal axes, RViz markers and diagnostics. A robot that stops publishing is "
        "an ERROR; grasp kinematics goes on among the others. Phases are detected from the "
        "signals."
    ),
    publishes=[
        Topic(
            "payload_estimate",
            "inertia_estimation_ros/msg/PayloadEstimate",
            "latched",
            "grasp frames, mass, CoM, inertia in {s}, with covariances, validity and advice",
        ),
        Topic(
            "/tf",
            "tf2_msgs/msg/TFMessage",
            "reliable",
            "{s} to every other grasp frame and to `principal_axes_frame` at the CoM",
        ),
        Topic(
            "~/markers",
            "visualization_msgs/msg/MarkerArray",
            "reliable",
            "CoM sphere, equivalent inertia box, grasp triads, force arrows, text with 1-sigma",
        ),
        Topic(
            "/diagnostics",
            "diagnostic_msgs/msg/DiagnosticArray",
            "reliable",
            "per robot: rate, latency, clock offset, refused samples, silence (ERROR); the "
            "estimate: stage, excitation and advice, consistency, dropped sets, latency",
        ),
    ],
    subscribes=[
        Topic(
            "{robot}/grasp_state",
            "inertia_estimation_ros/msg/GraspState",
            "sensor",
            "each robot's grasp samples (robot_node), for every robot of `robots`",
        ),
    ],
    services=[
        Service("~/reset", "std_srvs/srv/Trigger", "forget all data and estimates"),
        Service("~/freeze", "std_srvs/srv/Trigger", "stop accumulating; keep the estimate"),
        Service("~/unfreeze", "std_srvs/srv/Trigger", "resume accumulating"),
        Service(
            "~/estimate_now",
            "std_srvs/srv/Trigger",
            "solve from scratch now and publish; the response summarizes the estimate",
        ),
    ],
    parameters=[
        Param("robots", "string_array", [], "ids of the team's robots", nonempty=True),
        Param(
            "reference_robot",
            "string",
            "",
            "robot whose grasp frame is {s}; empty: the first of `robots`",
        ),
        Param(
            "grasp_frame",
            "string",
            _DEFAULTS.grasp_frame,
            "frame id every robot's GraspState must carry; {robot} stands for its id",
            nonempty=True,
        ),
        Param(
            "principal_axes_frame",
            "string",
            "payload/principal_axes",
            "TF frame of the principal axes at the CoM",
            nonempty=True,
        ),
        Param(
            "estimate_period",
            "double",
            0.5,
            "wall-clock seconds between solves and publications of the estimate (longer when "
            "a solve takes more than a quarter of it, so that updates keep up)",
            bounds=(0.01, 60.0),
        ),
        Param(
            "update_period",
            "double",
            0.01,
            "wall-clock seconds between alignment and estimator updates",
            bounds=(0.001, 1.0),
        ),
        Param(
            "sample_rate_hz",
            "double",
            _DEFAULTS.estimator.sample_rate_hz,
            "rate of the reference robot's samples [Hz] (phase detection filters)",
            bounds=(1.0, 10000.0),
        ),
        Param(
            "input_cutoff_hz",
            "double",
            0.0,
            "causal low-pass on twists, wrenches and gravity [Hz]; 0: none (robot nodes filter)",
            bounds=(0.0, 5000.0),
        ),
        Param(
            "kinematics_source",
            "string",
            _DEFAULTS.estimator.kinematics_source,
            "grasp fit on poses (fixed home frames) or twists (moving bases)",
            choices=KINEMATICS_SOURCES,
        ),
        Param(
            "robust_loss",
            "string",
            _DEFAULTS.estimator.robust_loss,
            "per-sample robust loss of the grasp fit",
            choices=ROBUST_LOSSES,
        ),
        Param(
            "min_kinematics_samples",
            "int",
            _DEFAULTS.estimator.min_kinematics_samples,
            "moving samples needed before grasps are solved",
            bounds=(10, 1_000_000),
        ),
        Param(
            "max_gap",
            "double",
            _DEFAULTS.max_gap,
            "a longer gap in a robot's samples is not interpolated over [s]",
            bounds=(1e-3, 10.0),
        ),
        Param(
            "max_delay",
            "double",
            _DEFAULTS.max_delay,
            "a set still incomplete this long after its time is dropped [s]",
            bounds=(1e-3, 10.0),
        ),
        Param(
            "robot_timeout",
            "double",
            _DEFAULTS.robot_timeout,
            "a robot this far behind the team's newest sample is silent (ERROR) [s]",
            bounds=(0.01, 60.0),
        ),
        Param(
            "clock_jump",
            "double",
            _DEFAULTS.clock_jump,
            "a stamp this far before a robot's last one (a looping bag) restarts everything [s]",
            bounds=(1e-3, 1e6),
        ),
        Param(
            "estimate_clock_offsets",
            "bool",
            _DEFAULTS.estimate_clock_offsets,
            "estimate the robots' clock offsets from their angular speeds",
        ),
        Param(
            "max_clock_offset",
            "double",
            _DEFAULTS.max_clock_offset,
            "largest clock offset searched [s]",
            bounds=(1e-3, 10.0),
        ),
        Param(
            "clock_offset_window",
            "double",
            _DEFAULTS.clock_offset_window,
            "seconds of angular speed cross-correlated for clock offsets",
            bounds=(1.0, 600.0),
        ),
        Param(
            "clock_offset_period",
            "double",
            _DEFAULTS.clock_offset_period,
            "seconds of samples between clock offset estimates",
            bounds=(0.1, 600.0),
        ),
        Param(
            "marker_force_scale",
            "double",
            0.01,
            "length of the force arrows per newton [m/N]",
            bounds=(0.0, 1.0),
        ),
        Param(
            "diagnostics_period", "double", 1.0, "period of /diagnostics [s]", bounds=(0.05, 60.0)
        ),
    ],
)


class CoordinatorNode(Node):
    """The coordinator (see the module docstring); rclpy ``Node`` keyword arguments pass
    through. ``pipeline`` belongs to the worker thread."""

    def __init__(self, **kwargs: object):
        super().__init__("coordinator_node", **kwargs)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self.params = p = declare(self, INTERFACE.parameters)
        self.pipeline = self._pipeline(p)
        self.settings = self.pipeline.settings
        self._estimates = self.create_publisher(PayloadEstimate, "payload_estimate", LATCHED_QOS)
        self._tf = self.create_publisher(TFMessage, "/tf", RELIABLE_QOS)
        self._markers = self.create_publisher(MarkerArray, "~/markers", RELIABLE_QOS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
        self._inbox: deque = deque()
        self.overflow = 0
        for rid in self.pipeline.robot_ids:
            self.create_subscription(
                GraspState, f"{rid}/grasp_state", self._enqueue(rid), GRASP_QOS
            )
        self._commands: queue.Queue = queue.Queue()
        for name in ("reset", "freeze", "unfreeze", "estimate_now"):
            self.create_service(Trigger, f"~/{name}", self._service(name))
        self.internal_errors = 0
        self._last_error = ""
        self._worker = threading.Thread(target=self._work, name="coordinator", daemon=True)
        self._worker.start()

    def _pipeline(self, p: SimpleNamespace) -> TeamPipeline:
        robots = list(p.robots)
        reference = p.reference_robot or robots[0]
        try:
            settings = PipelineSettings.from_parameters(vars(p))
            return TeamPipeline(robots, reference, settings, clock=self._now)
        except ValueError as error:
            raise ParameterError(
                f"{self.get_fully_qualified_name()}: {error} (parameters robots = {robots}, "
                f"reference_robot = {p.reference_robot!r})"
            ) from None

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # ----- executor side: callbacks only enqueue ---------------------------------------------
    def _enqueue(self, robot_id: str):  # noqa: ANN202 (an rclpy callback)
        inbox = self._inbox

        def callback(msg: GraspState) -> None:
            if len(inbox) < INBOX_LIMIT:
                inbox.append((robot_id, msg, self._now()))
            else:
                self.overflow += 1

        return callback

    def _service(self, command: str):  # noqa: ANN202 (an rclpy callback)
        def handle(request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
            done, result = threading.Event(), {}
            self._commands.put((command, done, result))
            if done.wait(SERVICE_TIMEOUT):
                response.success, response.message = result["success"], result["message"]
            else:
                response.success = False
                response.message = f"{command}: the coordinator is busy; try again"
            return response

        return handle

    def destroy_node(self) -> None:
        """Stop the worker (it publishes) before the node goes."""
        self._stop.set()
        if self._worker is not None:
            self._worker.join(SERVICE_TIMEOUT)
        super().destroy_node()

    # ----- worker side: owns the pipeline ----------------------------------------------------
    def _work(self) -> None:
        # One BLAS thread (process-wide, while the node runs): for the small matrices of the
        # estimator, threads only cost (solves 2-3x faster on 2 cores).
        with threadpool_limits(limits=1, user_api="blas"):
            self._work_loop()

    def _work_loop(self) -> None:
        p = self.params
        next_estimate = next_diagnostics = time.monotonic()
        while not self._stop.wait(p.update_period):
            try:
                self._step()
                now = time.monotonic()
                if now >= next_estimate:
                    self._publish(self.pipeline.estimate())
                    solve = time.monotonic() - now
                    next_estimate = now + max(p.estimate_period, solve / SOLVE_SHARE)
                if now >= next_diagnostics:
                    next_diagnostics = now + p.diagnostics_period
                    self._publish_diagnostics()
            except Exception as error:  # never let the worker die: report and go on
                self.internal_errors += 1
                self._last_error = f"{type(error).__name__}: {error}"
                self.get_logger().error(traceback.format_exc())

    def _step(self) -> None:
        pipeline, inbox = self.pipeline, self._inbox
        while inbox:
            self._push(*inbox.popleft())
        while not self._commands.empty():
            self._run_command(*self._commands.get())
        pipeline.process()
        while pipeline.events:
            self.get_logger().warning(pipeline.events.popleft())

    def _push(self, robot_id: str, msg: GraspState, received: float) -> None:
        pipeline = self.pipeline
        if msg.robot_id != robot_id:
            pipeline.reject(
                robot_id,
                "unknown robot id",
                f"robot id {msg.robot_id!r} on /{robot_id}/grasp_state",
            )
            return
        try:
            sample = grasp_sample(msg)
        except (ValueError, TypeError) as error:
            pipeline.reject(robot_id, "malformed message", str(error))
            return
        pipeline.push(sample, msg.header.frame_id, received)

    def _run_command(self, command: str, done: threading.Event, result: dict) -> None:
        pipeline = self.pipeline
        success, message = True, ""
        if command == "reset":
            pipeline.reset("~/reset called")
            message = "estimation restarted"
        elif command == "freeze":
            pipeline.freeze()
            message = "frozen: the estimate stays until ~/unfreeze"
        elif command == "unfreeze":
            pipeline.unfreeze()
            message = "accumulating again"
        estimate = pipeline.estimate(full=command == "estimate_now")
        self._publish(estimate)
        if command == "estimate_now":
            message = summary(estimate)
            success = estimate.grasps_valid
        result.update(success=success, message=message)
        done.set()

    def _publish(self, estimate: TeamEstimate) -> None:
        frame_of = self.settings.frame_of
        self._estimates.publish(to_payload_estimate(estimate, frame_of))
        transforms = payload_transforms(estimate, frame_of, self.params.principal_axes_frame)
        if transforms.transforms:
            self._tf.publish(transforms)
        self._markers.publish(
            payload_markers(
                estimate, frame_of, dict(self.pipeline.latest), self.params.marker_force_scale
            )
        )

    def _publish_diagnostics(self) -> None:
        statuses = [self._status(s) for s in self.pipeline.status()]
        statuses.append(self._status(self._worker_status()))
        array = DiagnosticArray(status=statuses)
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _worker_status(self) -> Status:
        values = {
            "queued messages": str(len(self._inbox)),
            "messages dropped (queue full)": str(self.overflow),
            "internal errors": str(self.internal_errors),
            "frozen": str(self.pipeline.frozen),
        }
        if self._last_error:
            return Status("worker", "ERROR", f"internal error: {self._last_error}", values)
        if self.overflow:
            return Status("worker", "WARN", f"{self.overflow} messages dropped", values)
        return Status("worker", "OK", "running", values)

    def _status(self, status: Status) -> DiagnosticStatus:
        return DiagnosticStatus(
            level=LEVELS[status.level],
            name=f"{self.get_fully_qualified_name()}: {status.name}",
            message=status.message,
            hardware_id=status.name,
            values=[KeyValue(key=k, value=v) for k, v in status.values.items()],
        )


def summary(estimate: TeamEstimate) -> str:
    """One line: the stage and the valid quantities."""
    parts = [f"stage {estimate.stage.name}"]
    if estimate.mass_valid:
        parts.append(f"mass {estimate.mass:.4f} kg")
    if estimate.com_valid:
        parts.append("CoM (" + ", ".join(f"{x:.4f}" for x in estimate.p_s_c) + ") m")
    if estimate.inertia_valid:
        moments = ", ".join(f"{x:.4f}" for x in estimate.principal_moments)
        parts.append(f"principal moments ({moments}) kg m^2")
    if estimate.advice:
        parts.append(f"advice: {estimate.advice[0]}")
    return "; ".join(parts)


def main() -> int:
    # Single-threaded: the worker thread does the heavy work, and rclpy's multi-threaded
    # executor costs several times the CPU per message (bench/bench_coordinator.py).
    return run_executable("coordinator_node", executor="single")


if __name__ == "__main__":
    sys.exit(main())
