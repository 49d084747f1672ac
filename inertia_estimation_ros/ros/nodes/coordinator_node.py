"""``coordinator_node``: the team's payload estimate from every robot's ``GraspState``.

A thin adapter around ``core.team_pipeline.TeamPipeline`` (checks, clock offsets, alignment,
``TeamEstimator``, robot liveness, diagnostics content), which ``inertia_estimation estimate``
runs on bags without ROS. Subscription callbacks enqueue each message with its arrival time;
while the external wrench output runs, they convert it (``ingest.convert``) and hand its
samples to it, and the worker reuses that conversion (one per message). A worker thread owns
the pipeline: it converts what is not converted yet, checks, aligns and updates every
``update_period``; every ``estimate_period`` it snapshots the statistics for a solve in a
process of its own (``core.solver_process``, started once with the node; ``solver: thread``
solves on a thread, ``core.solver_thread``) and goes on updating: a solve (tens of
milliseconds to a second at N = 16) never holds up the updates nor takes the interpreter from
the callbacks (issue 16). A solver process that dies is reported (log, /diagnostics) and
replaced; it ends with the node. The worker publishes each
estimate, TF and markers when its solve is done (the message's ``age`` says how old its newest
sample was then); every ``diagnostics_period`` it publishes /diagnostics. Both periods run on
the node's ROS clock (simulation time with ``use_sim_time``: a paused replay pauses them, a
replay at 5x runs them 5x faster), and solves take at most a quarter of the wall time. A service
request queues its command for the worker and returns at once; commands run one after the
other, the worker answering each once it and its solve have run (at shutdown, commands not run
yet are answered as failed); ``~/check_rest`` alone is answered at once, from the
external wrench output's last second (``ros.wrench_checks``, whose consistency shares and
rest check are a /diagnostics status of their own). The executable spins rclpy's events
executor (its wait loop in C++; ``--executor single`` for rclpy's single-threaded one).
Tuning parameters are writable at run time (``ros2 param set``), checked as at start-up.
Diagnostics follow ``diagnostic_updater``'s conventions: per robot a status whose hardware_id
is the robot id, STALE when its samples stop arriving on the ROS clock. Bad input is refused
and counted, never raised.
"""

from __future__ import annotations

import dataclasses
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
from rclpy.task import Future
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage
from threadpoolctl import threadpool_limits
from visualization_msgs.msg import MarkerArray

from ...core.cooperative import TeamEstimate
from ...core.cooperative.grasp_kinematics import ROBUST_LOSSES
from ...core.cooperative.settings import KINEMATICS_SOURCES
from ...core.solver_process import SolverProcess
from ...core.solver_thread import SolverThread
from ...core.team_pipeline import PipelineSettings, SolveJob, Status, TeamPipeline
from ...msg import PayloadEstimate
from ..conversions import to_payload_estimate
from ..external_wrench_output import PARAMETERS as EXTERNAL_WRENCH_PARAMETERS
from ..external_wrench_output import TOPICS as EXTERNAL_WRENCH_TOPICS
from ..external_wrench_output import ExternalWrenchOutput
from ..ingest import GRASP_TOPICS, RawReader, push_raw
from ..interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS, NodeInterface, Service, Topic
from ..parameters import Param, ParameterError, declare, unknown_parameters, watch
from ..payload_visualization import (
    PayloadFrames,
    payload_markers,
    payload_static_transforms,
    payload_transforms,
)
from ..runtime import LEVELS, run_executable
from ..wrench_checks import PARAMETERS as WRENCH_CHECK_PARAMETERS

INBOX_LIMIT = 100_000  # messages waiting for the worker; more are dropped and counted
WORKER_JOIN_TIMEOUT = 30.0  # [s] for the worker to finish its cycle at shutdown
ERROR_LOG_PERIOD = 10.0  # [s] of wall time between two reports of one repeating worker error
# [s] on the ROS clock without a message from any robot: the team is STALE. Longer than
# robot_timeout: a loaded machine can hold the executor's callbacks back for a second or two.
TEAM_QUIET = 5.0
# Sensor-data QoS with a deep history: DDS keeps up to 10 s of a 100 Hz robot's samples while
# the executor is busy (the GIL), instead of dropping them.
GRASP_QOS = QoSProfile(
    depth=1000, reliability=SENSOR_QOS.reliability, durability=SENSOR_QOS.durability
)
SOLVERS = ("process", "thread")
SOLVE_SHARE = 0.25  # solves take at most this share of the worker's time
# The worker's pause after a cycle's work, at least, as a share of update_period: the executor's
# time to take the messages in (a worker behind its stream that never paused would leave it the
# interpreter for one message per switch interval, docs/throughput.md).
MIN_PAUSE_SHARE = 0.5
# [s] Python's GIL switch interval in the coordinator process (default 0.005): at most this
# long does a message (the external wrench) wait while the worker runs Python code. The
# worker's pieces are short (a cycle 1-3 ms; a snapshot's changed segments pickled one by
# one, ``SolverProcess``), so 2 ms costs few handovers (docs/collaboration.md, latency; was
# 20 ms while solves ran on a thread of this process: with 5 ms the worker then fell seconds
# behind).
SWITCH_INTERVAL = 0.002
_DEFAULTS = PipelineSettings()
_FRAMES = PayloadFrames()

INTERFACE = NodeInterface(
    executable="coordinator_node",
    description=(
        "The team's payload estimate (paper 000, made online): subscribes to every robot's "
        "`GraspState`, refuses and counts bad samples, estimates the clock offsets, aligns "
        "the samples on the reference robot's time base, runs the team estimator "
        "(`core/team_pipeline.py`, `core/cooperative/`), and publishes the estimate "
        "(latched), TF under frames of its own (`payload` on the reference grasp frame {s}, "
        "the estimated grasp frames and the principal axes under it), RViz markers and "
        "diagnostics. A robot that stops publishing is "
        "STALE (the estimate an ERROR); grasp kinematics goes on among the others. Phases are "
        "detected from the signals. Periods and staleness run on the ROS clock (sim time with "
        "`use_sim_time`); tuning parameters are writable at run time; services never block "
        "the executor."
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
            "`payload_frame` to every robot's estimated grasp frame (`payload_grasp_frame`) and "
            "to `principal_axes_frame` at the CoM",
        ),
        Topic(
            "/tf_static",
            "tf2_msgs/msg/TFMessage",
            "latched",
            "the reference robot's grasp frame {s} to `payload_frame` (the identity)",
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
            "per robot (hardware_id: its id): rate, latency, clock offset, refused samples, "
            "silence (STALE); the estimate: stage, excitation and advice, consistency, dropped "
            "sets, latency; the worker: internal errors (config/diagnostic_aggregator.yaml "
            "groups them)",
        ),
        *EXTERNAL_WRENCH_TOPICS,
    ],
    subscribes=[
        Topic(
            "{robot}/grasp_state",
            "inertia_estimation_ros/msg/GraspState",
            "sensor",
            "each robot's grasp samples (robot_node), for every robot of `robots`",
        ),
        Topic(
            "{robot}/grasp_state_array",
            "inertia_estimation_ros/msg/GraspStateArray",
            "sensor",
            "the same samples K at a time (robot_node with `batch_size` > 1: 500 Hz to 1 kHz); "
            "a robot may publish both",
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
        Service(
            "~/check_rest",
            "std_srvs/srv/Trigger",
            "call while the payload rests and nobody touches it: the external wrenches of the "
            "last second must be zero within their sigma; fails naming a suspected F/T bias "
            "(its size) or noise larger than stated (the factor); the result goes to "
            "/diagnostics",
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
            "payload_frame",
            "string",
            _FRAMES.payload,
            "TF frame of the payload, child of the reference grasp frame {s} and equal to it",
            nonempty=True,
        ),
        Param(
            "payload_grasp_frame",
            "string",
            _FRAMES.grasp,
            "TF frame of each robot's grasp as estimated, child of `payload_frame`; {robot} "
            "stands for its id (not the robots' own grasp frames: those have their parents)",
            nonempty=True,
        ),
        Param(
            "principal_axes_frame",
            "string",
            _FRAMES.principal_axes,
            "TF frame of the principal axes at the CoM, child of `payload_frame`",
            nonempty=True,
        ),
        Param(
            "estimate_period",
            "double",
            0.5,
            "seconds between solves and publications of the estimate, on the ROS clock (sim "
            "time with use_sim_time; longer when a solve takes more than a quarter of the "
            "worker's wall time, so that updates keep up)",
            read_only=False,
            bounds=(0.01, 60.0),
        ),
        Param(
            "update_period",
            "double",
            0.01,
            "wall-clock seconds between alignment and estimator updates (the worker's cycle)",
            read_only=False,
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
            "pose_angle_resolution",
            "double",
            _DEFAULTS.estimator.pose_angle_resolution,
            "step of each robot's grasp-pose rotation about each axis [rad]: its encoder steps "
            "through its kinematics (a 14-bit gimbal: 3.835e-4); 0: not quantized. Puts the "
            "bias of quantized poses in the grasps' covariance",
            bounds=(0.0, 0.1),
        ),
        Param(
            "pose_position_resolution",
            "double",
            _DEFAULTS.estimator.pose_position_resolution,
            "step of each robot's grasp-pose position along each axis [m]; 0: not quantized",
            bounds=(0.0, 0.01),
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
            "a robot this far behind the team's newest sample is silent (STALE); so is a team "
            "without any message for this long, 5 s at least, on the ROS clock [s]",
            read_only=False,
            bounds=(0.01, 60.0),
        ),
        Param(
            "clock_jump",
            "double",
            _DEFAULTS.clock_jump,
            "a stamp this far before a robot's last one (a looping bag) restarts everything [s]",
            read_only=False,
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
            read_only=False,
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
            read_only=False,
            bounds=(0.1, 600.0),
        ),
        Param(
            "marker_force_scale",
            "double",
            0.01,
            "length of the force arrows per newton [m/N]",
            read_only=False,
            bounds=(0.0, 1.0),
        ),
        Param(
            "diagnostics_period",
            "double",
            1.0,
            "period of /diagnostics [s, ROS clock]",
            bounds=(0.05, 60.0),
            read_only=False,
        ),
        Param(
            "solver",
            "string",
            "process",
            "where solves run: a child process started with the node (the callbacks and "
            "updates keep Python's interpreter while it solves), or a thread of this process "
            "(no child; solves share the interpreter)",
            choices=SOLVERS,
        ),
        *EXTERNAL_WRENCH_PARAMETERS,
        *WRENCH_CHECK_PARAMETERS,
    ],
)


class CoordinatorNode(Node):
    """The coordinator (see the module docstring); rclpy ``Node`` keyword arguments pass
    through. ``pipeline`` belongs to the worker thread."""

    def __init__(self, **kwargs: object):
        super().__init__("coordinator_node", **kwargs)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._solver: SolverProcess | SolverThread | None = None
        self._commands: queue.Queue = queue.Queue()  # (command, Future of its answer)
        self.params = p = declare(self, INTERFACE.parameters)
        self.pipeline = self._pipeline(p)
        self.settings = self.pipeline.settings
        self.frames = self._frames(p)
        self._setting_changes: queue.Queue = queue.Queue()
        watch(self, INTERFACE.parameters, p, self._setting_changes.put)
        self._estimates = self.create_publisher(PayloadEstimate, "payload_estimate", LATCHED_QOS)
        self._tf = self.create_publisher(TFMessage, "/tf", RELIABLE_QOS)
        self._tf_static = self.create_publisher(TFMessage, "/tf_static", LATCHED_QOS)
        self._tf_static.publish(
            payload_static_transforms(
                self.settings.frame_of(self.pipeline.reference_id),
                self.frames,
                self.get_clock().now().to_msg(),
            )
        )
        self._markers = self.create_publisher(MarkerArray, "~/markers", RELIABLE_QOS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
        self.external_wrench = ExternalWrenchOutput(
            self,
            self.settings.frame_of,
            self.pipeline.robot_ids,
            self.pipeline.reference_id,
            self.settings.clock_jump,
        )
        self._inbox: deque = deque()  # (robot id, topic, CDR bytes, monotonic arrival)
        self._reader = RawReader()  # the worker's
        self._callback_errors: deque = deque(maxlen=10)
        self.overflow = 0
        for rid in self.pipeline.robot_ids:
            for topic, kind in GRASP_TOPICS.items():  # CDR bytes: ``ingest.convert_raw``
                callback = self._enqueue(rid, topic)
                self.create_subscription(kind, f"{rid}/{topic}", callback, GRASP_QOS, raw=True)
        for name in ("reset", "freeze", "unfreeze", "estimate_now"):
            self._serve(name)
        self.create_service(Trigger, "~/check_rest", self._check_rest)
        self._arrival: dict[str, float] = {}  # ROS time of each robot's newest message
        self.internal_errors = 0
        self._last_error = ""
        self._error_log = ("", 0.0, 0)  # last error logged, when (monotonic), repeats since
        self._log_start(p)
        solver = SolverProcess if p.solver == "process" else SolverThread
        self._solver = solver("coordinator solver")
        self._solving_command: tuple[str, Future] | None = None  # waits for the solve under way
        self._worker = threading.Thread(target=self._work, name="coordinator", daemon=True)
        self._worker.start()

    def _log_start(self, p: SimpleNamespace) -> None:
        """One line with the team, the reference and the rates; a warning per unknown name."""
        unknown = unknown_parameters(self, INTERFACE.parameters)
        if unknown:
            self.get_logger().warning(
                f"unknown parameters ignored: {', '.join(unknown)} (`coordinator_node --help` "
                "lists the parameters)"
            )
        clock = "simulation" if self.get_parameter("use_sim_time").value else "system"
        offsets = "estimated" if p.estimate_clock_offsets else "assumed zero"
        self.get_logger().info(
            f"team {', '.join(self.pipeline.robot_ids)}, reference "
            f"{self.pipeline.reference_id} ({self.settings.frame_of(self.pipeline.reference_id)}"
            f" -> {self.frames.payload}); samples at {p.sample_rate_hz:g} Hz, clock offsets "
            f"{offsets}; estimate every {p.estimate_period:g} s, diagnostics every "
            f"{p.diagnostics_period:g} s on the {clock} clock, updates every "
            f"{p.update_period:g} s"
        )

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

    def _frames(self, p: SimpleNamespace) -> PayloadFrames:
        """The estimate's TF frames; refused if one would give a robot's frame a second parent."""
        frames = PayloadFrames(p.payload_frame, p.payload_grasp_frame, p.principal_axes_frame)
        where = f"{self.get_fully_qualified_name()}: parameter"
        if "{robot}" not in frames.grasp:
            raise ParameterError(
                f"{where} payload_grasp_frame = {frames.grasp!r} must contain {{robot}}, "
                f"e.g. {_FRAMES.grasp!r}"
            )
        robot_frames = {self.settings.frame_of(r) for r in self.pipeline.robot_ids}
        ours = [frames.payload, frames.principal_axes]
        ours += [frames.grasp_of(r) for r in self.pipeline.robot_ids]
        taken = sorted(robot_frames & set(ours))
        if taken or len(set(ours)) < len(ours):
            raise ParameterError(
                f"{where}s payload_frame, payload_grasp_frame and principal_axes_frame name "
                f"{ours}: they must be distinct and none a robot's own grasp frame {taken} "
                "(robot_state_publisher gives those their parents)"
            )
        return frames

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # ----- executor side: callbacks enqueue (and feed the human wrench) ---------------------
    def _enqueue(self, robot_id: str, topic: str):  # noqa: ANN202 (an rclpy callback)
        inbox = self._inbox

        def callback(raw: bytes) -> None:
            # O(1) for the pipeline: the bytes and the arrival (monotonic; the worker maps it
            # to the ROS clock) wait for the worker, which reads a cycle's messages at once.
            if len(inbox) < INBOX_LIMIT:
                inbox.append((robot_id, topic, raw, time.monotonic()))
            else:
                self.overflow += 1
            if not self.external_wrench.active:
                return
            # The human wrench leaves now, not at the next cycle (its stamps read now, the
            # sample it uses when the wrench is computed).
            try:
                self.external_wrench.on_raw(robot_id, topic, raw)
            except Exception as error:  # counted and reported by the worker
                self._callback_errors.append(error)

        return callback

    def _serve(self, command: str) -> None:
        """``~/<command>``: a request queues the command for the worker, which sends the answer
        once the command and its solve have run. The executor's callback returns at once
        and the executor's "send the response" (``Service.send_response``, which every rclpy
        executor calls after the callback) queues the command with the request's header
        instead: nothing awaits on the executor, so any executor serves it (rclpy's events
        executor resumes no coroutine woken from another thread and has no guard conditions)."""
        service = self.create_service(Trigger, f"~/{command}", lambda request, response: response)
        send = service.send_response

        def queue(response: Trigger.Response, header: object) -> None:
            answer: Future = Future()  # its result (success, message): set by the worker

            def reply(done: Future) -> None:
                response.success, response.message = done.result()
                send(response, header)

            answer.add_done_callback(reply)
            self._commands.put((command, answer))

        service.send_response = queue

    def _check_rest(self, request: Trigger.Request, response: Trigger.Response) -> object:
        """``~/check_rest``: the rest check of the last second's external wrenches."""
        response.success, response.message = self.external_wrench.checks.check_rest()
        if response.success:
            self.get_logger().info(f"~/check_rest: {response.message}")
        else:
            self.get_logger().warning(f"~/check_rest: {response.message}")
        return response

    def destroy_node(self) -> None:
        """Stop the worker (it publishes) before the node goes; commands it has not run are
        answered as failed, and never run."""
        self._stop.set()
        if self._worker is not None:
            self._worker.join(WORKER_JOIN_TIMEOUT)
        if self._solver is not None:
            self._solver.close(WORKER_JOIN_TIMEOUT)
        while not self._commands.empty():
            command, result = self._commands.get()
            result.set_result((False, f"{command}: not run, the coordinator is shutting down"))
        super().destroy_node()

    # ----- worker side: owns the pipeline ----------------------------------------------------
    def _work(self) -> None:
        # One BLAS thread (process-wide, while the node runs): for the small matrices of the
        # estimator, threads only cost (solves 2-3x faster on 2 cores).
        with threadpool_limits(limits=1, user_api="blas"):
            self._work_loop()

    def _work_loop(self) -> None:
        """Periods on the ROS clock (``_now``); a solve's wall time delays the next scheduled
        one so that solves take at most SOLVE_SHARE of the wall time. A clock that goes back
        (a looping bag) restarts the schedule. At the end, the command whose solve is under
        way is answered when it is done."""
        p = self.params
        next_estimate = next_diagnostics = last = -float("inf")
        self._solve_allowed = started = time.monotonic()
        while not self._stop.wait(self._pause(started)):
            started = time.monotonic()
            try:
                self._step()
                self._collect_solve()
                self._report_solver_restarts()
                now = self._now()
                if now < last:
                    next_estimate = next_diagnostics = -float("inf")
                last = now
                if self._start_command_or_solve(now >= next_estimate):
                    next_estimate = now + p.estimate_period
                if now >= next_diagnostics:
                    next_diagnostics = now + p.diagnostics_period
                    self._publish_diagnostics()
            except Exception as error:  # never let the worker die: report and go on
                self._report_error(error)
        if self._solving_command is not None and self._solver.wait(WORKER_JOIN_TIMEOUT):
            self._collect_solve()

    def _pause(self, started: float) -> float:
        """Seconds to wait for the next cycle, the last one having started at ``started``
        (monotonic): cycles start every update_period (a fixed rate, as a timer's), and never
        sooner than MIN_PAUSE_SHARE of it after the last one's work."""
        period = self.params.update_period
        return max(started + period - time.monotonic(), MIN_PAUSE_SHARE * period)

    def _start_command_or_solve(self, due: bool) -> bool:
        """With the solver free: run the next command and start its solve, or start the
        scheduled solve if ``due`` (and allowed); True if the scheduled one started."""
        if self._solver.busy:
            return False
        if not self._commands.empty():
            command, result = self._commands.get()
            self._run_command(command, result)
            return False
        if due and time.monotonic() >= self._solve_allowed:
            self._solver.submit(self._start_solve_job(full=False))
            return True
        return False

    def _collect_solve(self) -> None:
        """Publish the solve that is done (if any), answer the command that waited for it."""
        done = self._solver.take()
        if done is None:
            return
        job, _ = done
        self._solve_allowed = time.monotonic() + job.seconds * (1 / SOLVE_SHARE - 1)
        command, self._solving_command = self._solving_command, None
        try:
            estimate = self.pipeline.finish_solve(job)
        except Exception as error:
            if command is not None:
                self._answer(command, (False, f"{command[0]} failed: {error}"))
            raise
        if estimate is None:  # the pipeline restarted meanwhile (a clock jump): solve again
            if command is not None:
                self._start_solve(command)
            return
        self._publish(estimate)
        if command is not None:
            self._answer(command, self._command_answer(command[0], estimate))

    def _report_solver_restarts(self) -> None:
        """Log each death of the solver process (it is restarted; /diagnostics counts them)."""
        while self._solver.events:
            self.get_logger().error(self._solver.events.popleft())

    def _answer(self, command: tuple[str, Future], answer: tuple[bool, str]) -> None:
        command[1].set_result(answer)  # sends the service's response (``_serve``)

    def _report_error(self, error: Exception) -> None:
        """Count an internal error; log it with its traceback, once per ERROR_LOG_PERIOD while
        the same error repeats, with what to do."""
        self.internal_errors += 1
        self._last_error = text = f"{type(error).__name__}: {error}"
        logged, when, repeats = self._error_log
        now = time.monotonic()
        if text == logged and now < when + ERROR_LOG_PERIOD:
            self._error_log = (logged, when, repeats + 1)
            return
        again = f" ({repeats} more times since the last report)" if text == logged else ""
        self.get_logger().error(
            f"internal error in the coordinator's worker{again}: {text}. This cycle's "
            "estimate is skipped; samples are kept. Call ~/reset if it repeats, and report it "
            "with the traceback below (reported at most every "
            f"{ERROR_LOG_PERIOD:g} s):\n{traceback.format_exc()}"
        )
        self._error_log = (text, now, 0)

    def _step(self) -> None:
        pipeline, inbox = self.pipeline, self._inbox
        # What has arrived (later messages wait for the next cycle), at once: arrival times
        # on the ROS clock are the clock's time now minus the monotonic time since arrival.
        messages = [inbox.popleft() for _ in range(len(inbox))]
        clock = self._now() - time.monotonic()
        self._arrival.update({m[0]: m[3] + clock for m in messages})  # each robot's newest
        push_raw(pipeline, messages, self._reader, clock)
        while not self._setting_changes.empty():
            self._apply_settings(self._setting_changes.get())
        pipeline.process()
        self.external_wrench.follow(pipeline)
        while self._callback_errors:
            error = self._callback_errors.popleft()
            raise RuntimeError(f"external wrench output: {type(error).__name__}: {error}")
        while pipeline.events:
            self.get_logger().warning(pipeline.events.popleft())

    def _apply_settings(self, changes: dict[str, object]) -> None:
        """Parameters set at run time (already in ``params``); the pipeline's take effect now."""
        names = {f.name for f in dataclasses.fields(PipelineSettings)}
        ours = {k: v for k, v in changes.items() if k in names}
        if ours:
            self.pipeline.settings = dataclasses.replace(self.pipeline.settings, **ours)
            self.settings = self.pipeline.settings
        self.get_logger().info(
            "parameters set: " + ", ".join(f"{k} = {v!r}" for k, v in changes.items())
        )

    def _run_command(self, command: str, result: Future) -> None:
        """Run a service's command and start its solve (from scratch for ``estimate_now``);
        it is answered when the solve is done (an error is answered, then reported)."""
        try:
            self._execute(command)
        except Exception as error:
            self._answer((command, result), (False, f"{command} failed: {error}"))
            raise
        self._start_solve((command, result))

    def _start_solve(self, command: tuple[str, Future]) -> None:
        """Start the solve of a command (from scratch for ``estimate_now``)."""
        self._solving_command = command
        self._solver.submit(self._start_solve_job(full=command[0] == "estimate_now"))

    def _start_solve_job(self, full: bool) -> SolveJob:
        """The pipeline's job, its estimators copied unless the solver copies them itself."""
        return self.pipeline.start_solve(full, copy=not self._solver.copies_on_submit)

    def _execute(self, command: str) -> None:
        pipeline = self.pipeline
        if command == "reset":
            pipeline.reset("~/reset called")
        elif command == "freeze":
            pipeline.freeze()
        elif command == "unfreeze":
            pipeline.unfreeze()

    @staticmethod
    def _command_answer(command: str, estimate: TeamEstimate) -> tuple[bool, str]:
        if command == "estimate_now":
            return estimate.grasps_valid, summary(estimate)
        return True, COMMAND_ANSWERS[command]

    def _publish(self, estimate: TeamEstimate) -> None:
        frame_of = self.settings.frame_of
        message = to_payload_estimate(estimate, frame_of)
        message.age = self.pipeline.estimate_age()
        self._estimates.publish(message)
        transforms = payload_transforms(estimate, self.frames)
        if transforms.transforms:
            self._tf.publish(transforms)
        self._markers.publish(
            payload_markers(
                estimate, frame_of, dict(self.pipeline.latest), self.params.marker_force_scale
            )
        )

    def _publish_diagnostics(self) -> None:
        statuses = [self._status(self._staleness(s)) for s in self.pipeline.status()]
        statuses.append(self._status(self._worker_status()))
        statuses.append(self._status(self.external_wrench.checks.status()))
        array = DiagnosticArray(status=statuses)
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _staleness(self, status: Status) -> Status:
        """A robot's status is STALE when it is silent: behind the others (the pipeline's
        check, on the robots' stamps), or, when the whole team is quiet, without a message
        for TEAM_QUIET (at least ``robot_timeout``) on the ROS clock (a paused replay stops
        that clock: nothing goes stale then)."""
        rid = status.name
        if rid not in self.pipeline.robot_ids:
            return status
        if rid in self.pipeline.silent:
            return dataclasses.replace(status, level="STALE")
        now = self._now()
        quiet = now - max(self._arrival.values(), default=now)
        if rid in self._arrival and quiet > max(TEAM_QUIET, self.settings.robot_timeout):
            message = (
                f"{rid}: no message from any robot for {quiet:.1f} s (ROS clock): check that "
                "the robot nodes run and publish their grasp_state"
            )
            return dataclasses.replace(status, level="STALE", message=message)
        return status

    def _worker_status(self) -> Status:
        values = {
            "queued messages": str(len(self._inbox)),
            "messages dropped (queue full)": str(self.overflow),
            "internal errors": str(self.internal_errors),
            "frozen": str(self.pipeline.frozen),
            "solver": self.params.solver,
            "solver process": str(self._solver.pid if self._solver.ready else ""),
            "solver restarts": str(self._solver.restarts),
            **{f"external wrench: {k}": str(n) for k, n in self.external_wrench.counts().items()},
        }
        if self._solver.problem:
            return Status("worker", "ERROR", self._solver.problem, values)
        if self._last_error:
            message = f"internal error: {self._last_error} (see the log; ~/reset may recover)"
            return Status("worker", "ERROR", message, values)
        if self.overflow:
            return Status("worker", "WARN", f"{self.overflow} messages dropped", values)
        if self._solver.restarts:
            message = (
                f"the solver process died {self._solver.restarts} times and was restarted "
                "(see the log)"
            )
            return Status("worker", "WARN", message, values)
        return Status("worker", "OK", "running", values)

    def _status(self, status: Status) -> DiagnosticStatus:
        """diagnostic_updater's naming: "<node>: <item>"; hardware_id the robot's id for a
        robot's status, the node's name for the others."""
        robot = status.name in self.pipeline.robot_ids
        return DiagnosticStatus(
            level=LEVELS[status.level],
            name=f"{self.get_fully_qualified_name()}: {status.name}",
            message=status.message,
            hardware_id=status.name if robot else self.get_fully_qualified_name(),
            values=[KeyValue(key=k, value=v) for k, v in status.values.items()],
        )


COMMAND_ANSWERS = {
    "reset": "estimation restarted",
    "freeze": "frozen: the estimate stays until ~/unfreeze",
    "unfreeze": "accumulating again",
}


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
    # One executor thread: the worker thread does the heavy work, and rclpy's multi-threaded
    # executor costs several times the CPU per message (bench/bench_coordinator.py); the events
    # executor takes each message without rebuilding a wait set (docs/throughput.md).
    sys.setswitchinterval(SWITCH_INTERVAL)
    return run_executable("coordinator_node", executor="events")


if __name__ == "__main__":
    sys.exit(main())
