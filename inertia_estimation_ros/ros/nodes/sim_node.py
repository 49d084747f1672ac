"""``sim_node``: a MuJoCo scenario run live, publishing what robot drivers would.

The node steps the scenario incrementally (``Scenario.stepper``; the batch ``run_scenario``
is the same stepper run to the end) on a wall-clock timer: in real time, ``real_time_factor``
times faster, or as fast as it can (0), publishing ``/clock`` so that nodes with
``use_sim_time`` follow it. Each sample goes out as ``sim/topics.py`` defines it, the topics
of a hardware driver or the Gazebo bridge, stamped on each robot's own clock. Ground truth
goes to ``/ground_truth/...``, for evaluation only. TF as on hardware: ``world`` (REP-105) to
each robot's home frame on /tf_static, and each robot's links as ``robot_state_publisher``
publishes them from its URDF and joint states (``robot_tf.LinkTree``), so that RViz shows the
robots and the coordinator's ``payload`` frames in one tree. Ground robots follow the
commands their robot nodes publish (``~/command/pose`` and ``~/command/wrench``, issue 14):
the simulated drivers take them as impedance targets, so that a planner closes the loop.
"""

from __future__ import annotations

import heapq
import math
import sys
import threading
import time
from functools import partial

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TransformStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.qos import QoSProfile
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from ...bags import rclpy_class
from ...core.aerial.payload_controller import PayloadReference
from ...sim import topics as ground_topics
from ...sim.aerial import topics as aerial_topics
from ...sim.scenario import ScenarioError, SimulationResult, load_scenario
from ..conversions import pose_matrix, to_time, to_transform, twist_vector, wrench_vector
from ..graph import data_file
from ..interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS, NodeInterface, Topic
from ..parameters import Param, ParameterError, declare
from ..robot_tf import LinkTree
from ..runtime import diagnostics, run_executable, steady_timer

# The stepping timer: every TICK seconds of wall-clock time, the simulation advances to where
# the wall clock says it should be, by one recording instant at most. It never catches up in
# bursts: when the executor is busy (other nodes in the process), the simulation slows down
# instead of flooding their queues, which would drop samples.
TICK = 0.001  # [s]
LINGER = 2.0  # [s] of wall-clock time between the scenario's end and ``finished``
TF_PERIOD = 0.02  # [s] of wall-clock time at least between two /tf messages (for viewers)

INTERFACE = NodeInterface(
    executable="sim_node",
    description=(
        "Runs a MuJoCo scenario (`config/scenarios/*.yaml`) live, in real time or faster on "
        "`/clock`, and publishes for every robot `{robot}` of the scenario what its driver or "
        "the Gazebo bridge would (`sim/topics.py`, stamped on the robot's own clock), its "
        "latched URDF, and ground truth on `/ground_truth/...` for evaluation only."
    ),
    publishes=[
        Topic("/clock", "rosgraph_msgs/msg/Clock", "reliable", "simulation time (`publish_clock`)"),
        Topic(
            "/{robot}/joint_states",
            "sensor_msgs/msg/JointState",
            "sensor",
            "measured joint positions, velocities and efforts",
        ),
        Topic(
            "/{robot}/ft_sensor",
            "geometry_msgs/msg/WrenchStamped",
            "sensor",
            "F/T in `{robot}/grasp`: the wrench the payload exerts on the robot (robots with "
            "an F/T sensor)",
        ),
        Topic(
            "/{robot}/imu",
            "sensor_msgs/msg/Imu",
            "sensor",
            "gyro and specific force in `{robot}/grasp` (robots with an IMU)",
        ),
        Topic(
            "/{robot}/robot_description",
            "std_msgs/msg/String",
            "latched",
            "the robot's URDF, joint names as in its joint states",
        ),
        Topic(
            "/{robot}/grasp_state",
            "inertia_estimation_ros/msg/GraspState",
            "sensor",
            "ready-made measured samples (`publish_grasp_state`; not with robot nodes)",
        ),
        Topic(
            "/ground_truth/payload",
            "inertia_estimation_ros/msg/PayloadEstimate",
            "latched",
            "true payload and grasp frames in {s} (`publish_ground_truth`)",
        ),
        Topic(
            "/ground_truth/payload_pose",
            "geometry_msgs/msg/PoseStamped",
            "sensor",
            "{s} in `world` (`publish_ground_truth`)",
        ),
        Topic(
            "/ground_truth/human_wrench",
            "geometry_msgs/msg/WrenchStamped",
            "sensor",
            "the human's wrench on the payload, about {s}, in {s} (`publish_ground_truth`)",
        ),
        Topic(
            "/ground_truth/{robot}/grasp_state",
            "inertia_estimation_ros/msg/GraspState",
            "sensor",
            "noise-free grasp samples (`publish_true_grasps`)",
        ),
        Topic(
            "/diagnostics",
            "diagnostic_msgs/msg/DiagnosticArray",
            "reliable",
            "simulated time, phase, target and achieved real-time factor",
        ),
        Topic(
            "/tf",
            "tf2_msgs/msg/TFMessage",
            "reliable",
            "each robot's moving URDF joints, parent link to child link, as "
            "`robot_state_publisher` publishes them (`publish_tf`)",
        ),
        Topic(
            "/tf_static",
            "tf2_msgs/msg/TFMessage",
            "latched",
            "`world_frame` to each robot's home frame (its URDF root) and the URDFs' fixed joints "
            "(`publish_tf`)",
        ),
    ],
    subscribes=[
        Topic(
            "/payload/reference/pose",
            "geometry_msgs/msg/PoseStamped",
            "reliable",
            "aerial scenarios: the payload's reference pose in `world`, replacing the "
            "scenario's waypoints (a planner steering the team)",
        ),
        Topic(
            "/payload/reference/twist",
            "geometry_msgs/msg/TwistStamped",
            "reliable",
            "aerial scenarios: the reference's twist in `world` (frame_id empty or "
            "`world_frame`), else its body twist (a planner's `~/reference/twist` of the "
            "payload frame); zero until one arrives",
        ),
        Topic(
            "/{robot}/robot_node/command/pose",
            "geometry_msgs/msg/PoseStamped",
            "reliable",
            "ground scenarios: the grasp pose the robot follows from then on, in `world_frame` "
            "or a robot's home frame (`follow_commands`, `command_prefix`)",
        ),
        Topic(
            "/{robot}/robot_node/command/wrench",
            "geometry_msgs/msg/WrenchStamped",
            "reliable",
            "ground scenarios: the feed-forward wrench the robot applies on the payload, in "
            "its grasp frame",
        ),
    ],
    parameters=[
        Param(
            "scenario",
            "string",
            "paper000_mocobots.yaml",
            "scenario YAML: a path, or a file in the package's config/scenarios/",
            nonempty=True,
        ),
        Param("seed", "int", -1, "random seed; -1: the scenario's", bounds=(-1, 1_000_000_000)),
        Param(
            "real_time_factor",
            "double",
            1.0,
            "simulated seconds per wall-clock second; 0: as fast as possible",
            bounds=(0.0, 1000.0),
        ),
        Param("publish_clock", "bool", True, "publish /clock (other nodes use_sim_time)"),
        Param(
            "publish_grasp_state",
            "bool",
            False,
            "publish the simulator's ready-made `/<robot>/grasp_state` (only without robot nodes)",
        ),
        Param(
            "publish_ground_truth",
            "bool",
            True,
            "publish the true payload, its pose and the human's wrench on /ground_truth/...",
        ),
        Param(
            "publish_true_grasps",
            "bool",
            False,
            "also publish the noise-free `/ground_truth/<robot>/grasp_state` (costly)",
        ),
        Param(
            "publish_tf",
            "bool",
            True,
            "publish the robots' TF under `world_frame`, at most every 20 ms (off where "
            "robot_state_publisher runs)",
        ),
        Param("world_frame", "string", "world", "TF root of the simulation", nonempty=True),
        Param(
            "follow_commands",
            "bool",
            True,
            "ground robots follow the grasp pose and wrench commands of their robot nodes",
        ),
        Param(
            "command_prefix",
            "string",
            "/{robot}/robot_node/command",
            "each robot's command topics: <prefix>/pose and <prefix>/wrench ({robot}: its id)",
            nonempty=True,
        ),
        Param(
            "wait_for_subscribers",
            "bool",
            False,
            "start once every robot's joint_states (and published grasp_state) has a subscriber",
        ),
        Param(
            "exit_when_done",
            "bool",
            False,
            f"end the node, and a bringup graph it runs in, {LINGER:g} s after the scenario",
        ),
        Param(
            "diagnostics_period", "double", 1.0, "period of /diagnostics [s]", bounds=(0.05, 60.0)
        ),
    ],
)


class SimNode(Node):
    """The simulation node (see the module docstring); rclpy ``Node`` keyword arguments pass
    through. ``finished`` is set when the scenario is over and ``exit_when_done`` is true."""

    def __init__(self, **kwargs: object):
        super().__init__("sim_node", **kwargs)
        self.params = p = declare(self, INTERFACE.parameters)
        where = f"parameter '{self.get_fully_qualified_name()}.scenario' = {p.scenario!r}"
        try:
            scenario = load_scenario(data_file(p.scenario, "config/scenarios"))
            self.stepper = scenario.stepper(None if p.seed < 0 else p.seed)
        except (FileNotFoundError, ScenarioError) as error:
            raise ParameterError(f"{where}: {error}") from None
        self.duration = scenario.duration
        first = self.stepper.advance(self.stepper.start_time)
        aerial = first.scenario_type == "aerial_cable_team"
        self._topics = aerial_topics if aerial else ground_topics
        self._outputs = {
            topic: self.create_publisher(rclpy_class(kind), topic, self._qos(topic, first))
            for topic, kind in self._topics.topic_types(first, p.publish_ground_truth).items()
            if self._publishes(topic)
        }
        self._subscribe_reference()
        self._subscribe_commands(first)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
        self._trees: dict[str, LinkTree] = {}
        # Aerial scenarios have no URDF robots: their frames are drawn by the aerial markers.
        self._publishes_tf = p.publish_tf and not aerial
        self._last_tf, self._tf_pending = -math.inf, {}
        if self._publishes_tf:
            self._start_tf(first)
        self.published = 0
        self._publish(self._topics.latched_streams(first, p.publish_ground_truth))
        self._first: SimulationResult | None = first
        self._phase = first.phases[-1].name
        self._wall_start: float | None = None
        self.finished = threading.Event()
        self.get_logger().info(
            f"{scenario.name}: {len(scenario.robots)} robots, {self.duration:.1f} s simulated at "
            + (f"{p.real_time_factor:g}x real time" if p.real_time_factor else "full speed")
        )
        self._timer = steady_timer(self, TICK, self._tick)
        steady_timer(self, p.diagnostics_period, self._publish_diagnostics)

    def _start_tf(self, first: SimulationResult) -> None:
        """World to every home frame and the URDFs' fixed joints, once, on /tf_static."""
        self._tf = self.create_publisher(TFMessage, "/tf", RELIABLE_QOS)
        self._tf_static = self.create_publisher(TFMessage, "/tf_static", LATCHED_QOS)
        stamp = to_time(self.stepper.start_time)
        static = [
            TransformStamped(
                header=Header(stamp=stamp, frame_id=self.params.world_frame),
                child_frame_id=record.home_frame_id,
                transform=to_transform(first.ground_truth.T_w_i0[rid]),
            )
            for rid, record in first.robots.items()
        ]
        for rid, record in first.robots.items():
            if record.urdf and record.joints is not None:
                self._trees[rid] = tree = LinkTree(record.urdf)
                static += tree.transforms(stamp, [], [], fixed=True)
        self._tf_static.publish(TFMessage(transforms=static))

    def _throttled_tf(self, chunk: SimulationResult) -> None:
        """Each robot's newest state on /tf, at most every TF_PERIOD and at the end."""
        for rid, record in chunk.robots.items():
            drawn = record.stamp if rid in self._trees else record.grasp.t  # see _publish_tf
            if len(drawn):
                self._tf_pending[rid] = record
        if self.stepper.done or time.monotonic() - self._last_tf >= TF_PERIOD:
            self._last_tf = time.monotonic()
            self._publish_tf(self._tf_pending)
            self._tf_pending = {}

    def _publish_tf(self, records: dict) -> None:
        """Each robot's moving joints at its newest joint state in its record (or, without a
        URDF, its home frame to its grasp frame at its newest grasp sample)."""
        transforms = []
        for rid, record in records.items():
            tree = self._trees.get(rid)
            if tree is not None and len(record.stamp):
                joints = record.joints
                transforms += tree.transforms(
                    to_time(record.stamp[-1]), joints.names, joints.position[-1], fixed=False
                )
            elif tree is None and len(record.grasp.t):
                transforms.append(
                    TransformStamped(
                        header=Header(
                            stamp=to_time(record.grasp.t[-1]), frame_id=record.home_frame_id
                        ),
                        child_frame_id=record.grasp_frame_id,
                        transform=to_transform(record.grasp.T_i0_i[-1]),
                    )
                )
        if transforms:
            self._tf.publish(TFMessage(transforms=transforms))

    def _publishes(self, topic: str) -> bool:
        if topic == "/clock":
            return self.params.publish_clock
        if topic.endswith("/grasp_state"):
            truth = topic.startswith("/ground_truth/")
            return self.params.publish_true_grasps if truth else self.params.publish_grasp_state
        return True

    def _subscribe_reference(self) -> None:
        """The payload reference (aerial scenarios): a pose, and optionally its twist. Aerial
        runs publish the topics of ``sim/aerial/topics.py`` instead of the ground ones."""
        self._reference_twist = (False, np.zeros(6))
        self.create_subscription(
            PoseStamped, "/payload/reference/pose", self._on_reference_pose, RELIABLE_QOS
        )
        self.create_subscription(
            TwistStamped, "/payload/reference/twist", self._on_reference_twist, RELIABLE_QOS
        )

    def _on_reference_twist(self, msg: TwistStamped) -> None:
        """(omega, v) in `world_frame` (frame_id empty or the world), else the reference's
        body twist (a planner's `~/reference/twist` of the payload frame)."""
        body = msg.header.frame_id not in ("", self.params.world_frame)
        self._reference_twist = (body, twist_vector(msg.twist))

    def _on_reference_pose(self, msg: PoseStamped) -> None:
        if not hasattr(self.stepper, "set_reference"):
            self.get_logger().warning(
                "/payload/reference/pose ignored: only aerial scenarios take a payload reference",
                once=True,
            )
            return
        T = pose_matrix(msg.pose)
        R = T[:3, :3]
        body, (omega, v) = self._reference_twist[0], np.split(self._reference_twist[1], 2)
        if body:
            omega, v = R @ omega, R @ v
        reference = PayloadReference(x=T[:3, 3], v=v, R=R, Omega=R.T @ omega)
        self.stepper.set_reference(reference)

    def _subscribe_commands(self, first: SimulationResult) -> None:
        """Ground robots: each robot's commanded grasp pose and feed-forward wrench."""
        self.commands_followed = 0
        self._commands: dict[str, list] = {}  # robot -> [T_w_i or None, F_i]
        ground = first.scenario_type != "aerial_cable_team"  # aerial teams take a reference
        if not (self.params.follow_commands and ground and hasattr(self.stepper, "command")):
            return
        truth = first.ground_truth
        self._command_frames = {self.params.world_frame: np.eye(4)} | {
            record.home_frame_id: truth.T_w_i0[rid] for rid, record in first.robots.items()
        }
        for rid, record in first.robots.items():
            self._commands[rid] = [None, np.zeros(6), record.grasp_frame_id]
            prefix = self.params.command_prefix.replace("{robot}", rid)
            self.create_subscription(
                PoseStamped, f"{prefix}/pose", partial(self._on_command_pose, rid), RELIABLE_QOS
            )
            self.create_subscription(
                WrenchStamped,
                f"{prefix}/wrench",
                partial(self._on_command_wrench, rid),
                RELIABLE_QOS,
            )

    def _on_command_pose(self, robot_id: str, msg: PoseStamped) -> None:
        T_f_i = pose_matrix(msg.pose)
        T_w_f = self._command_frames.get(msg.header.frame_id)
        if T_w_f is None or not np.all(np.isfinite(T_f_i)):
            self.get_logger().warning(
                f"{robot_id}'s command pose ignored: frame {msg.header.frame_id!r} is none of "
                f"{sorted(self._command_frames)}, or the pose is not finite",
                throttle_duration_sec=5.0,
            )
            return
        self._commands[robot_id][0] = T_w_f @ T_f_i
        self._follow(robot_id)

    def _on_command_wrench(self, robot_id: str, msg: WrenchStamped) -> None:
        F_i, grasp_frame = wrench_vector(msg.wrench), self._commands[robot_id][2]
        if msg.header.frame_id != grasp_frame or not np.all(np.isfinite(F_i)):
            self.get_logger().warning(
                f"{robot_id}'s command wrench ignored: it must be finite and in {grasp_frame!r} "
                f"(got {msg.header.frame_id!r})",
                throttle_duration_sec=5.0,
            )
            return
        self._commands[robot_id][1] = F_i
        self._follow(robot_id)

    def _follow(self, robot_id: str) -> None:
        T_w_i, F_i, _ = self._commands[robot_id]
        if T_w_i is not None:
            self.stepper.command(robot_id, T_w_i, F_i)
            self.commands_followed += 1

    def _qos(self, topic: str, result: SimulationResult) -> QoSProfile:
        if topic in self._topics.latched_topics(result):
            return LATCHED_QOS
        return RELIABLE_QOS if topic == "/clock" else SENSOR_QOS

    def _started(self) -> bool:
        """Whether the run may start: at once, or once every robot's samples have a subscriber."""
        awaited = [
            publisher
            for topic, publisher in self._outputs.items()
            if topic.endswith(("/joint_states", "/grasp_state")) and not topic.startswith("/ground")
        ]
        return not self.params.wait_for_subscribers or all(
            publisher.get_subscription_count() > 0 for publisher in awaited
        )

    def _tick(self) -> None:
        """Advance the simulation by a recording instant when one is due; publish the chunk."""
        rtf = self.params.real_time_factor
        if self._first is not None:
            if not self._started():
                return
            chunk, self._first = self._first, None
            self._wall_start = time.monotonic()
        else:
            step = self.stepper.sample_period
            due = self.stepper.start_time + rtf * (time.monotonic() - self._wall_start)
            if rtf and due < self.stepper.time + step:
                return  # no sample due yet
            chunk = self.stepper.advance(self.stepper.time + step)
        self._phase = chunk.phases[-1].name
        self._publish(
            self._topics.sample_streams(
                chunk, self.params.publish_ground_truth, self._outputs.__contains__
            )
        )
        if self._publishes_tf:
            self._throttled_tf(chunk)
        if self.stepper.done:
            self._timer.cancel()
            wall = time.monotonic() - self._wall_start
            self.get_logger().info(
                f"scenario over: {self.duration:.1f} s simulated in {wall:.1f} s "
                f"({self.duration / max(wall, 1e-9):.1f}x real time), {self.published} messages"
            )
            if self.params.exit_when_done:  # once the other nodes have taken the last samples
                self._linger = steady_timer(self, LINGER, self._finish)

    def _finish(self) -> None:
        self._linger.cancel()
        self.finished.set()

    def _publish(self, streams: list) -> None:
        for topic, _, _, msg in heapq.merge(*streams, key=lambda item: item[2]):
            publisher = self._outputs.get(topic)
            if publisher is not None:
                publisher.publish(msg)
                self.published += 1

    def _publish_diagnostics(self) -> None:
        if self._wall_start is None:
            waiting = "waiting for subscribers" if self.params.wait_for_subscribers else "starting"
            self._diagnostics.publish(diagnostics(self, "OK", waiting, {}))
            return
        wall = time.monotonic() - self._wall_start
        simulated = self.stepper.time - self.stepper.start_time
        values = {
            "simulated time [s]": f"{simulated:.3f} of {self.duration:.3f}",
            "phase": self._phase,
            "target real-time factor": self.params.real_time_factor or "as fast as possible",
            "achieved real-time factor": f"{simulated / max(wall, 1e-9):.2f}",
            "messages published": self.published,
            "robot commands followed": self.commands_followed,
        }
        message = "scenario over" if self.stepper.done else f"running phase {self._phase}"
        self._diagnostics.publish(diagnostics(self, "OK", message, values))


def main() -> int:
    # One thread: while a callback of the default (mutually exclusive) group runs, rclpy's
    # multi-threaded executor finds it ready again and spins, holding the GIL against the
    # worker that runs it (a 1 ms tick slowed the run to ~0.05x real time).
    return run_executable("sim_node", executor="single")


if __name__ == "__main__":
    sys.exit(main())
