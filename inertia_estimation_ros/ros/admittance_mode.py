"""The planner node's admittance mode (issue 14 item 3): a person moves the payload with the
team, through the estimated model (paper 002 eq. 40, ``core.collaboration``).

A thin adapter over ``core.collaboration.supervisor.AdmittanceSupervisor``: the human wrench
(``external_wrench``, msg/ExternalWrench about the CoM in {s}), the estimate
(``payload_estimate``) and the payload's pose (``reference_grasp_state``, remapped to the
reference robot's ``grasp_state``: {s} in its home frame, the world here) go in; the
reference of {s} goes out as ``~/reference/pose`` (PoseStamped in the reference robot's home
frame) and ``~/reference/twist`` (TwistStamped, body twist of {s}) in the callback of each
human wrench (``admittance_on_wrench``: no wait for a timer tick, at most twice
``admittance_rate``, two at once), and at ``admittance_rate`` while no wrench arrives (or
always, without ``admittance_on_wrench``). ``~/admittance/start`` (or ``~/enable`` true) refuses
with the reason (e.g. the mass is not valid yet); ``~/admittance/stop`` (or ``~/enable``
false), an estimate that goes invalid or stale (no ``payload_estimate`` for
``admittance_estimate_timeout``: the coordinator died) and a silent input stop the reference
safely: it decelerates within the limits and holds, and the robots hold with it. A human
wrench that arrives late (each wrench's stamp against the ROS clock) would make the loop
through a stiff arm oscillate: the admittance's passivity controller
(``admittance_passivity_*``) then adds damping, logged and on ``/diagnostics`` (WARN while
it acts).
``~/mode/admittance``, ``~/mode/balancing`` and ``~/mode/hold`` switch the same reference
bumplessly (``core.collaboration.modes``; balancing plans from the reference's state through
the node's ``plan_balancing``). The same admittance serves aerial teams: with
``admittance_wrench_topic`` the aerial coordinator's ``human_wrench_estimate`` (its payload
frame is at the CoM) and with ``admittance_pose_topic`` the payload's mocap pose replace the
ground team's inputs. Clocks: the
ROS clock and the robots' stamps must agree (one machine, PTP, or sim time).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.publisher import Publisher
from std_msgs.msg import Header
from std_srvs.srv import SetBool, Trigger

from ..core.collaboration.modes import PlanningStart, ReferenceModes
from ..core.collaboration.supervisor import AdmittanceSupervisor, ModelSummary, Reference
from ..core.planning.planner import TrayPlan
from ..msg import ExternalWrench, GraspState, PayloadEstimate
from .conversions import inertial_parameters, pose_matrix, to_pose, to_time, to_twist
from .interface import NEWEST_QOS, RELIABLE_QOS, Service, Topic
from .parameters import Param
from .runtime import diagnostics
from .serialized import (
    HeaderFields,
    PoseFields,
    StampedLayout,
    external_wrench_reader,
    grasp_state_reader,
    pose_stamped_reader,
    pose_values,
    stamp_bytes,
)

# References a wrench may send at once (credits, earned at twice admittance_rate): a wrench that
# comes just after a late one (the coordinator's tail bunches them) sends its reference now
# instead of waiting up to a control period for the timer; a burst after a stall sends two.
WRENCH_BURST = 2.0

PUBLISHES = [
    Topic(
        "~/reference/pose",
        "geometry_msgs/msg/PoseStamped",
        "reliable",
        "admittance mode: the payload reference T_w_s (the reference grasp frame {s} in the "
        "reference robot's home frame)",
    ),
    Topic(
        "~/reference/twist",
        "geometry_msgs/msg/TwistStamped",
        "reliable",
        "admittance mode: the reference body twist of {s}",
    ),
]
SUBSCRIBES = [
    Topic(
        "external_wrench",
        "inertia_estimation_ros/msg/ExternalWrench",
        "reliable",
        "the human's wrench about the CoM in {s} (coordinator_node; or the topic of "
        "`admittance_wrench_topic`, e.g. an aerial team's `human_wrench_estimate`)",
    ),
    Topic(
        "reference_grasp_state",
        "inertia_estimation_ros/msg/GraspState",
        "sensor",
        "the payload's pose: the reference robot's grasp frame {s} in its home frame (remap "
        "to the reference robot's grasp_state, e.g. /robot_1/grasp_state)",
    ),
]
SERVICES = [
    Service("~/admittance/start", "std_srvs/srv/Trigger", "admittance on; refused with the cause"),
    Service("~/admittance/stop", "std_srvs/srv/Trigger", "safe stop: decelerate and hold"),
    Service(
        "~/enable",
        "std_srvs/srv/SetBool",
        "mode switch: true = admittance (bumpless, refused with the cause), false = hold (safe "
        "stop)",
    ),
    Service("~/mode/admittance", "std_srvs/srv/Trigger", "mode admittance (= admittance/start)"),
    Service(
        "~/mode/balancing",
        "std_srvs/srv/Trigger",
        "mode balancing: plan from the reference's pose and velocity to the last goal, follow "
        "the certified plan (bumpless); refused with the cause",
    ),
    Service("~/mode/hold", "std_srvs/srv/Trigger", "mode hold: decelerate within the limits, hold"),
]
PARAMETERS = [
    Param("admittance_rate", "double", 100.0, "control rate [Hz]", bounds=(1.0, 1000.0)),
    Param(
        "admittance_mass_fraction",
        "double",
        0.3,
        "virtual mass and inertia as a fraction of the estimated ones",
        bounds=(0.01, 1.0),
    ),
    Param(
        "admittance_time_constant",
        "double",
        0.3,
        "virtual mass / damping: a push settles to force / damping in about this time [s]",
        bounds=(0.01, 10.0),
    ),
    Param("admittance_max_speed", "double", 0.3, "[m/s]", bounds=(0.001, 10.0)),
    Param("admittance_max_angular_speed", "double", 0.5, "[rad/s]", bounds=(0.001, 10.0)),
    Param("admittance_max_acceleration", "double", 1.0, "[m/s^2]", bounds=(0.001, 100.0)),
    Param("admittance_max_angular_acceleration", "double", 2.0, "[rad/s^2]", bounds=(0.001, 100.0)),
    Param("admittance_force_dead_band", "double", 1.0, "per component [N]", bounds=(0.0, 1e3)),
    Param("admittance_moment_dead_band", "double", 0.2, "per component [N m]", bounds=(0.0, 1e3)),
    Param(
        "admittance_cutoff_hz", "double", 5.0, "low-pass of the wrench; 0: none", bounds=(0, 1e3)
    ),
    Param(
        "admittance_walls",
        "double_array",
        [-1e3, -1e3, -1e3, 1e3, 1e3, 1e3],
        "virtual walls: the CoM stays in [x, y, z lower, x, y, z upper] of the home frame [m]",
        length=6,
    ),
    Param(
        "admittance_wall_margin", "double", 0.1, "walls push back within this [m]", bounds=(0, 10)
    ),
    Param("admittance_wall_stiffness", "double", 200.0, "[N/m]", bounds=(0.0, 1e6)),
    Param(
        "admittance_passivity_max_damping",
        "double",
        20.0,
        "the delay stabilizer (a passivity observer on the human wrench and the reference "
        "twist): extra damping at most this multiple of the admittance's; 0: off",
        bounds=(0.0, 1e3),
    ),
    Param(
        "admittance_passivity_energy_cap",
        "double",
        0.05,
        "the passivity observer's stored energy at most [J] (surplus cannot fund a later "
        "oscillation)",
        bounds=(0.0, 1e3),
    ),
    Param(
        "admittance_input_timeout",
        "double",
        0.5,
        "no pose or wrench for this long: safe stop [s]",
        bounds=(0.01, 10.0),
    ),
    Param(
        "admittance_on_wrench",
        "bool",
        True,
        "publish the reference as each human wrench arrives (at most twice admittance_rate); "
        "the control timer ticks only when no wrench came for a period. False: on the timer",
    ),
    Param(
        "admittance_wrench_topic",
        "string",
        "external_wrench",
        "the human wrench (msg/ExternalWrench about the CoM, axes of the pose's frame): a ground "
        "team's coordinator_node `external_wrench`, an aerial team's `human_wrench_estimate`",
        nonempty=True,
    ),
    Param(
        "admittance_pose_topic",
        "string",
        "",
        "the payload's pose as geometry_msgs/PoseStamped (an aerial team's mocap pose of its "
        "payload frame at the CoM); empty: `reference_grasp_state`",
    ),
    Param(
        "admittance_estimate_timeout",
        "double",
        5.0,
        "no payload_estimate for this long (ROS clock): the estimate is stale, safe stop [s]",
        bounds=(0.1, 600.0),
    ),
]


class AdmittanceMode:
    """The admittance mode of ``node`` (module docstring); ``params`` its declared values."""

    def __init__(
        self,
        node: Node,
        params: object,
        plan_balancing: Callable[[PlanningStart], Awaitable[tuple[TrayPlan | None, bool, str]]]
        | None = None,
        T_e_s: np.ndarray | None = None,
        *,
        diagnostics_out: Publisher,
    ) -> None:
        self.node, self.p = node, params
        p = params
        walls = np.asarray(p.admittance_walls, dtype=float)
        self.supervisor = AdmittanceSupervisor(
            input_timeout=p.admittance_input_timeout,
            fraction=p.admittance_mass_fraction,
            time_constant=p.admittance_time_constant,
            max_linear_speed=p.admittance_max_speed,
            max_angular_speed=p.admittance_max_angular_speed,
            max_linear_acceleration=p.admittance_max_acceleration,
            max_angular_acceleration=p.admittance_max_angular_acceleration,
            force_dead_band=p.admittance_force_dead_band,
            moment_dead_band=p.admittance_moment_dead_band,
            cutoff_hz=p.admittance_cutoff_hz,
            wall_lower=walls[:3],
            wall_upper=walls[3:],
            wall_margin=p.admittance_wall_margin,
            wall_stiffness=p.admittance_wall_stiffness,
            passivity_max_damping=p.admittance_passivity_max_damping,
            passivity_energy_cap=p.admittance_passivity_energy_cap,
        )
        self._period = 1.0 / p.admittance_rate
        self.modes = ReferenceModes(
            self.supervisor, np.eye(4) if T_e_s is None else T_e_s, self._period
        )
        self._plan_balancing = plan_balancing
        self.frames = ("", "")  # (home frame = world, grasp frame {s}) from the pose messages
        self._pose = node.create_publisher(PoseStamped, "~/reference/pose", RELIABLE_QOS)
        self._twist = node.create_publisher(TwistStamped, "~/reference/twist", RELIABLE_QOS)
        self._diagnostics = diagnostics_out  # the node's: one /diagnostics endpoint per node
        self._stabilizing = False  # the stabilizer's state last reported on /diagnostics
        # The inputs in and the reference out as serialized bytes (``serialized``): the
        # reference from templates of its frames, made again when the frames change.
        self._layouts: tuple[tuple[str, str], StampedLayout, StampedLayout] | None = None
        self._wrench_reader = external_wrench_reader()
        # One lock (for `--executor multi`; by default the node spins on one thread) instead
        # of a mutually exclusive group: on rclpy's multi-threaded executor a ready callback
        # of a busy exclusive group makes the executor spin, holding the GIL, until the
        # running one ends (100 Hz of wrenches, poses and ticks here).
        self._lock = threading.Lock()
        group = ReentrantCallbackGroup()
        subscribe = functools.partial(node.create_subscription, callback_group=group)
        serve = functools.partial(node.create_service, callback_group=group)
        wrench_topic = p.admittance_wrench_topic
        on_wrench = self._locked(self._on_wrench_bytes)
        subscribe(ExternalWrench, wrench_topic, on_wrench, RELIABLE_QOS, raw=True)
        if p.admittance_pose_topic:  # aerial teams: the payload's mocap pose
            self._pose_reader = pose_stamped_reader()
            pose = self._locked(self._on_pose_stamped_bytes)
            subscribe(PoseStamped, p.admittance_pose_topic, pose, NEWEST_QOS, raw=True)
        else:
            self._pose_reader = grasp_state_reader()
            pose = self._locked(self._on_pose_bytes)
            subscribe(GraspState, "reference_grasp_state", pose, NEWEST_QOS, raw=True)
        serve(Trigger, "~/admittance/start", self._locked(self._on_start))
        serve(Trigger, "~/admittance/stop", self._locked(self._on_stop))
        serve(SetBool, "~/enable", self._locked(self._on_enable))
        serve(Trigger, "~/mode/admittance", self._locked(self._on_start))
        serve(Trigger, "~/mode/balancing", self._on_balancing)
        serve(Trigger, "~/mode/hold", self._locked(self._on_stop))
        self._estimate_arrival: float | None = None
        self._last_tick: float | None = None  # ROS time of the last reference
        self._last_wrench_tick: float | None = None  # ... of the last one a wrench sent
        self._wrench_credits = WRENCH_BURST  # references wrenches may send, then
        self._timer = node.create_timer(self._period, self._on_timer, callback_group=group)

    def _locked(self, callback: Callable) -> Callable:
        """``callback`` holding the mode's lock (the callbacks share the supervisor)."""

        @functools.wraps(callback)
        def run(*args: object) -> object:
            with self._lock:
                return callback(*args)

        return run

    def _on_timer(self) -> None:
        """The control timer's tick (no argument: rclpy's events executor passes a timer
        callback that takes one its ``TimerInfo``)."""
        with self._lock:
            self._tick()

    def _now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def on_estimate(self, msg: PayloadEstimate) -> None:
        """The node's payload_estimate (the planner subscribes once and passes it on)."""
        with self._lock:
            self._on_estimate(msg)

    def _on_estimate(self, msg: PayloadEstimate) -> None:
        self._estimate_arrival = self._now()
        flags = {
            "grasps_valid": msg.grasps_valid,
            "mass_valid": msg.mass_valid,
            "com_valid": msg.com_valid,
            "inertia_valid": msg.inertia_valid,
        }
        missing = [name for name, ok in flags.items() if not ok]
        if missing:
            advice = f": {msg.advice[0]}" if msg.advice else ""
            reason = f"the estimate has {', '.join(missing)} = false{advice}"
            self.supervisor.on_estimate(ModelSummary(False, reason=reason))
        else:
            body = inertial_parameters(msg.inertia)
            model = ModelSummary(True, body.mass, body.com, body.inertia_about_com)
            self.supervisor.on_estimate(model)
        self._log_events()

    # The inputs arrive serialized (``*_bytes``, the subscriptions' callbacks) and are read
    # by ``serialized``'s readers; the message callbacks read the same fields of a message.
    def _on_pose(self, msg: GraspState) -> None:
        self._on_grasp_pose(self._pose_reader.fields(msg))

    def _on_pose_bytes(self, raw: bytes) -> None:
        self._on_grasp_pose(self._pose_reader.read(raw))

    def _on_grasp_pose(self, msg: HeaderFields) -> None:
        """The reference robot's GraspState (``grasp_state_reader``): the payload's pose."""
        if msg.numbers[7]:  # has_pose
            self.frames = (msg.strings[2], msg.strings[0])
            self.supervisor.on_pose(msg.stamp, pose_matrix(PoseFields.of(msg.numbers)))

    def _on_pose_stamped(self, msg: PoseStamped) -> None:
        self._on_mocap_pose(self._pose_reader.fields(msg))

    def _on_pose_stamped_bytes(self, raw: bytes) -> None:
        self._on_mocap_pose(self._pose_reader.read(raw))

    def _on_mocap_pose(self, msg: HeaderFields) -> None:
        """The payload's PoseStamped (``pose_stamped_reader``; aerial teams)."""
        self.frames = (msg.strings[0], self.frames[1] or "payload")
        self.supervisor.on_pose(msg.stamp, pose_matrix(PoseFields.of(msg.numbers)))

    def _on_wrench(self, msg: ExternalWrench) -> None:
        self._on_human_wrench(self._wrench_reader.fields(msg))

    def _on_wrench_bytes(self, raw: bytes) -> None:
        self._on_human_wrench(self._wrench_reader.read(raw))

    def _on_human_wrench(self, msg: HeaderFields) -> None:
        """The human's ExternalWrench (``external_wrench_reader``)."""
        wrench = np.array(msg.numbers[6:] + msg.numbers[3:6])  # (moment, force)
        accepted = self.supervisor.on_wrench(msg.stamp, wrench)
        if accepted and self.p.admittance_on_wrench:  # the reference leaves now
            self._tick(wrench=True)

    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.modes.admittance()
        return self._logged(response)

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.modes.hold("stop or hold requested")
        self._log_events()
        return response

    async def _on_balancing(
        self, request: Trigger.Request, response: Trigger.Response
    ) -> Trigger.Response:
        """Plan from the reference's state (awaiting the node's planning thread: the
        reference runs on and decelerates to rest meanwhile), then switch if the plan is
        certified and the reference has not moved away from its start."""
        with self._lock:
            start = self.modes.planning_start()
        if isinstance(start, PlanningStart) and self._plan_balancing is None:
            start = (False, "balancing refused: this node has no balancing planner")
        if isinstance(start, PlanningStart):
            plan, certified, why = await self._plan_balancing(start)
            with self._lock:
                start = self.modes.start_balancing(plan, start, certified, why)
        response.success, response.message = start
        return self._logged(response)

    def _logged(self, response: Trigger.Response) -> Trigger.Response:
        """``response``, its message logged as info if it succeeded, else as a warning."""
        if response.success:
            self.node.get_logger().info(response.message)
        else:
            self.node.get_logger().warning(response.message)
        return response

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        answer = (self._on_start if request.data else self._on_stop)(
            Trigger.Request(), Trigger.Response()
        )
        response.success, response.message = answer.success, answer.message
        return response

    def _check_estimate_age(self, now: float) -> None:
        """A stale estimate (the coordinator died or hangs) stops the admittance safely."""
        timeout = self.p.admittance_estimate_timeout
        if self._estimate_arrival is not None and now - self._estimate_arrival > timeout:
            reason = f"no payload_estimate for {timeout:g} s: the coordinator is silent"
            self.supervisor.on_estimate(ModelSummary(False, reason=reason))
            self._estimate_arrival = None

    def _tick(self, wrench: bool = False) -> None:
        """Advance and publish the reference; from a ``wrench`` if it has a credit
        (``_wrench_credit``: at most twice the rate, two at once; a timer tick just before a
        late wrench does not hold that wrench's reference back for a period). A step is the
        time since the last reference, at most a control period (a late tick does not jump),
        and restarts the control timer. Nothing is stepped or sent while ROS time stands
        still (a simulated /clock between its steps): a tick then would advance the
        reference by time that has not passed."""
        now = self._now()
        last = self._last_tick
        if now == last or (wrench and not self._wrench_credit(now)):
            return
        # the first reference, or ROS time jumped back (a restarted simulation or bag): a period
        dt = self._period if last is None or now < last else min(now - last, self._period)
        self._last_tick = now
        self._check_estimate_age(now)
        reference = self.modes.tick(now, dt)
        self._log_events()
        self._report_stabilizer()
        if reference is not None:
            self._publish(now, reference)
        # a period from now, after the work: the next wrench, due a period after this one
        # arrived, comes before the timer unless it is later than this tick took
        self._timer.reset()

    def _wrench_credit(self, now: float) -> bool:
        """Take a wrench's credit to send a reference at ``now`` (ROS time), if there is one:
        credits come at twice ``admittance_rate``, at most ``WRENCH_BURST`` kept (ROS time going
        back restores them). A wrench bunched behind a late one (arriving microseconds to
        milliseconds after it) sends its reference at once; a third within half a period
        waits for the timer, as does any beyond twice the rate."""
        last = self._last_wrench_tick
        if last is None or now < last:
            credits = WRENCH_BURST
        else:
            credits = min(WRENCH_BURST, self._wrench_credits + 2.0 * (now - last) / self._period)
        if credits < 1.0:
            return False
        self._wrench_credits, self._last_wrench_tick = credits - 1.0, now
        return True

    def _publish(self, now: float, reference: Reference) -> None:
        """The reference as ``reference_messages`` gives it, published as serialized bytes
        where this RMW's encoding has the templates' layout."""
        if self._layouts is None or self._layouts[0] != self.frames:
            home, grasp = (Header(frame_id=frame) for frame in self.frames)
            pose = StampedLayout(PoseStamped(header=home), 7)
            twist = StampedLayout(TwistStamped(header=grasp), 6)
            self._layouts = (self.frames, pose, twist)
        _, pose, twist = self._layouts
        if not (pose.usable and twist.usable):
            pose_msg, twist_msg = reference_messages(now, reference, self.frames)
            self._pose.publish(pose_msg)
            self._twist.publish(twist_msg)
            return
        stamp, V = stamp_bytes(max(now, 0.0)), reference.V_s.tolist()
        self._pose.publish(pose.encode(stamp, pose_values(reference.T_w_s)))
        self._twist.publish(twist.encode(stamp, V[3:] + V[:3]))

    def _report_stabilizer(self) -> None:
        """/diagnostics when the admittance's stabilizer starts acting (WARN: the human wrench
        arrives late enough to make the loop oscillate) and when it is idle again (OK)."""
        stabilizer = self.supervisor.stabilizer
        if stabilizer.acting == self._stabilizing:
            return
        self._stabilizing = stabilizer.acting
        if stabilizer.acting:
            level, message = "WARN", "admittance stabilizer acting: the human wrench arrives late"
        else:
            level, message = "OK", "admittance stabilizer idle"
        self._diagnostics.publish(diagnostics(self.node, level, message, stabilizer.values()))

    def _log_events(self) -> None:
        while self.supervisor.events:
            self.node.get_logger().warning(self.supervisor.events.pop(0))


def reference_messages(
    now: float, reference: Reference, frames: tuple[str, str]
) -> tuple[PoseStamped, TwistStamped]:
    """The reference at ``now`` as messages: the pose of {s} in the home frame
    (``frames[0]``) and its body twist in {s} (``frames[1]``)."""
    stamp = to_time(max(now, 0.0))
    pose = PoseStamped(pose=to_pose(reference.T_w_s))
    twist = TwistStamped(twist=to_twist(reference.V_s))
    pose.header.stamp, pose.header.frame_id = stamp, frames[0]
    twist.header.stamp, twist.header.frame_id = stamp, frames[1]
    return pose, twist
