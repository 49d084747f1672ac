"""``robot_node``: one robot's GraspState stream, from its joint states (or a grasp pose), F/T
sensor (or joint efforts) and optional IMU. One per robot, in the robot's namespace.

A thin adapter: messages become arrays (``ros.conversions``), ``core.grasp_signals`` does all
the processing, and its samples go out as ``GraspState`` (plus ``TwistStamped`` and
``WrenchStamped`` for plotting and RViz). The URDF comes from the ``robot_description``
parameter or, when that is empty, from the latched ``robot_description`` topic (as
``robot_state_publisher`` publishes it). Bad input is rejected and counted on /diagnostics;
the node never raises on input.
"""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.exceptions import InvalidTopicNameException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.validate_topic_name import validate_topic_name
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Header, String
from tf2_msgs.msg import TFMessage

from ...core.grasp_signals import (
    FT_MEASURES,
    GRAVITY_SOURCES,
    KINEMATICS_SOURCES,
    WRENCH_SOURCES,
    GraspSignals,
    GraspSignalSettings,
)
from ...core.robot_kinematics import RobotModelError
from ...core.samples import GraspSample
from ...msg import GraspState, GraspStateArray
from .. import follow_commands
from ..conversions import (
    pose_matrix,
    seconds,
    to_grasp_state,
    to_grasp_state_array,
    to_time,
    to_twist,
    to_wrench,
    transform_matrix,
    vector3,
    wrench_vector,
)
from ..interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS, NodeInterface, Topic
from ..parameters import Param, ParameterError, declare
from ..runtime import diagnostics, run_executable, steady_timer
from ..serialized import GraspStateLayout, JointStateReader, StampedLayout, stamp_bytes

# tf2_ros's static listener: reliable, transient local, a deep history.
TF_STATIC_QOS = QoSProfile(
    depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
)
STALE = 2.0  # [s] on the ROS clock without kinematic input (after some arrived): an error
BATCH_WAIT = 0.05  # [s] of wall time a batch waits for its K samples before it goes out

INTERFACE = NodeInterface(
    executable="robot_node",
    description=(
        "One robot's grasp-frame signals (one node per robot, in its namespace, e.g. "
        "`/robot_1`): pose, body twist, twist derivative, the wrench applied on the payload "
        "and gravity, causally filtered, as `GraspState` at `rate_hz`, stamped with the "
        "robot's sample time (one sample period late: central differences). Processing: "
        "`core/grasp_signals.py`. Subscriptions depend on `kinematics_source`, "
        "`wrench_source`, `gravity_source` and `robot_description`."
    ),
    publishes=[
        Topic(
            "grasp_state",
            "inertia_estimation_ros/msg/GraspState",
            "sensor",
            "the robot's synchronized grasp samples, for the coordinator (`batch_size` 1)",
        ),
        Topic(
            "grasp_state_array",
            "inertia_estimation_ros/msg/GraspStateArray",
            "sensor",
            "the same samples `batch_size` at a time (`batch_size` > 1; docs/throughput.md)",
        ),
        Topic(
            "grasp_twist",
            "geometry_msgs/msg/TwistStamped",
            "sensor",
            "body twist V_i in the grasp frame (plots, RViz; published while subscribed)",
        ),
        Topic(
            "grasp_wrench",
            "geometry_msgs/msg/WrenchStamped",
            "sensor",
            "wrench F_i applied on the payload, in the grasp frame (plots, RViz; published "
            "while subscribed)",
        ),
        Topic(
            "/diagnostics",
            "diagnostic_msgs/msg/DiagnosticArray",
            "reliable",
            "input and output rates, rejected messages by reason, restarts, last error",
        ),
        *follow_commands.PUBLISHES,
    ],
    subscribes=[
        Topic(
            "joint_states",
            "sensor_msgs/msg/JointState",
            "sensor",
            "joint positions, velocities (and efforts); `kinematics_source: joint_states`; "
            "each topic of `joint_state_topics` (their JointStates are merged)",
        ),
        Topic(
            "grasp_pose",
            "geometry_msgs/msg/PoseStamped",
            "sensor",
            "T_i0_i in the home frame; `kinematics_source: grasp_pose`",
        ),
        Topic(
            "ft_sensor",
            "geometry_msgs/msg/WrenchStamped",
            "sensor",
            "F/T reading in a frame on the grasp link; `wrench_source: ft_sensor`",
        ),
        Topic(
            "imu",
            "sensor_msgs/msg/Imu",
            "sensor",
            "wrist IMU (specific force) in a frame on the grasp link; `gravity_source: imu`",
        ),
        Topic(
            "robot_description",
            "std_msgs/msg/String",
            "latched",
            "the URDF, when the `robot_description` parameter is empty and joint states are used",
        ),
        Topic(
            "/tf_static",
            "tf2_msgs/msg/TFMessage",
            "latched",
            "fixed offsets of sensor frames the URDF lacks (tf2 static transforms, chained to "
            "the grasp frame or a URDF frame on its link)",
        ),
        *follow_commands.SUBSCRIBES,
    ],
    parameters=[
        Param(
            "robot_id",
            "string",
            "",
            "team-unique robot id; empty: the last part of the node's namespace (robot_1 in "
            "/team_a/robot_1)",
        ),
        Param(
            "grasp_frame", "string", "", "grasp frame {i} (a URDF frame); empty: `<robot_id>/grasp`"
        ),
        Param(
            "home_frame", "string", "", "home frame {i0} (the URDF root); empty: `<robot_id>/home`"
        ),
        Param(
            "frame_prefix",
            "string",
            "",
            "prepended to URDF link names in frame ids, as robot_state_publisher's "
            "frame_prefix (e.g. `robot_1/`); grasp_frame and home_frame stay link names",
        ),
        Param(
            "kinematics_source",
            "string",
            "joint_states",
            "joint_states (with the URDF) or grasp_pose (a PoseStamped of {i} in {i0})",
            choices=KINEMATICS_SOURCES,
        ),
        Param(
            "joint_state_topics",
            "string_array",
            ["joint_states"],
            "JointState topics merged into one state (e.g. [arm/joint_states, "
            "gripper/joint_states], as joint_state_publisher's source_list); the one with the "
            "joint nearest the grasp makes the samples, the others' joints are held",
            nonempty=True,
        ),
        Param("robot_description", "string", "", "the URDF; empty: the robot_description topic"),
        Param(
            "wrench_source",
            "string",
            "ft_sensor",
            "ft_sensor, joint_efforts (through the Jacobian, robot dynamics removed) or none",
            choices=WRENCH_SOURCES,
        ),
        Param(
            "ft_measures",
            "string",
            "wrench_on_robot",
            "what the F/T reads: the wrench the payload exerts on the robot (Gazebo's "
            "child_to_parent, F_i = -reading) or the wrench on the payload",
            choices=FT_MEASURES,
        ),
        Param("has_torque", "bool", True, "false: the grasp transmits no moment (passive gimbal)"),
        Param(
            "gravity_source",
            "string",
            "home_frame",
            "home_frame (R_i0_i^T gravity), imu (wrist accelerometer) or none",
            choices=GRAVITY_SOURCES,
        ),
        Param(
            "gravity",
            "double_array",
            [0.0, 0.0, -9.81],
            "gravity in the home frame {i0} [m/s^2]",
            bounds=(-20.0, 20.0),
            length=3,
        ),
        Param(
            "cutoff_hz",
            "double",
            5.0,
            "causal Butterworth cutoff for every signal [Hz]; 0: no filter",
            bounds=(0.0, 1000.0),
        ),
        Param("filter_order", "int", 4, "Butterworth order", bounds=(1, 8)),
        Param(
            "rate_hz",
            "double",
            100.0,
            "GraspState rate [Hz]: every n-th sample, n = round(input rate / rate_hz); 0: all",
            bounds=(0.0, 10000.0),
        ),
        Param(
            "batch_size",
            "int",
            1,
            "samples per message: 1 publishes GraspState; K > 1 publishes GraspStateArray "
            "every K samples (and grasp_twist / grasp_wrench once per batch), a batch "
            "waiting at most 0.05 s of wall time; choose rate_hz / K <= 100 Hz",
            bounds=(1, 1000),
        ),
        Param(
            "compensate_robot_dynamics",
            "bool",
            True,
            "joint_efforts: subtract the robot's own dynamics (RNEA on the URDF)",
        ),
        Param(
            "max_gap",
            "double",
            0.1,
            "a longer gap between samples restarts the filters [s]",
            bounds=(1e-3, 60.0),
        ),
        Param(
            "clock_jump",
            "double",
            0.5,
            "a stamp this much before the last one (a looping bag) restarts everything [s]",
            bounds=(1e-3, 1e6),
        ),
        Param(
            "sync_timeout",
            "double",
            0.05,
            "how long a sample waits for its F/T and IMU data before it goes without [s]",
            bounds=(0.0, 10.0),
        ),
        Param(
            "diagnostics_period", "double", 1.0, "period of /diagnostics [s]", bounds=(0.05, 60.0)
        ),
        *follow_commands.PARAMETERS,
    ],
)


class RobotNode(Node):
    """The robot node (see the module docstring); rclpy ``Node`` keyword arguments pass through."""

    def __init__(self, **kwargs: object):
        super().__init__("robot_node", **kwargs)
        p = declare(self, INTERFACE.parameters)
        self.settings = self._settings(p)
        self.signals = GraspSignals(self.settings)
        self.model_error = ""
        if p.robot_description:
            try:
                self.signals.set_urdf(p.robot_description)
            except RobotModelError as error:
                raise ParameterError(
                    f"parameter '{self.get_fully_qualified_name()}.robot_description' cannot be "
                    f"used: {error}"
                ) from None
        self._outputs = {
            "grasp_state": self.create_publisher(GraspState, "grasp_state", SENSOR_QOS),
            "grasp_state_array": self.create_publisher(
                GraspStateArray, "grasp_state_array", SENSOR_QOS
            ),
            "grasp_twist": self.create_publisher(TwistStamped, "grasp_twist", SENSOR_QOS),
            "grasp_wrench": self.create_publisher(WrenchStamped, "grasp_wrench", SENSOR_QOS),
        }
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
        s = self.settings
        self._frames = s.frame_id(s.grasp_frame), s.frame_id(s.home_frame)
        grasp = Header(frame_id=self._frames[0])
        self._layouts = {  # the outputs as serialized bytes (ros/serialized.py)
            "grasp_state": GraspStateLayout(s.robot_id, *self._frames),
            "grasp_twist": StampedLayout(TwistStamped(header=grasp), 6),
            "grasp_wrench": StampedLayout(WrenchStamped(header=grasp), 6),
        }
        self._serialized = all(layout.usable for layout in self._layouts.values())
        if s.kinematics_source == "joint_states":
            if not p.robot_description:  # first: executors serve subscriptions in this order
                self.create_subscription(String, "robot_description", self._on_urdf, LATCHED_QOS)
            self._subscribe_joint_states(p.joint_state_topics)
        else:
            self.create_subscription(PoseStamped, "grasp_pose", self._on_pose, SENSOR_QOS)
        if s.wrench_source == "ft_sensor":
            self.create_subscription(WrenchStamped, "ft_sensor", self._on_wrench, SENSOR_QOS)
        if s.gravity_source == "imu":
            self.create_subscription(Imu, "imu", self._on_imu, SENSOR_QOS)
        self.create_subscription(TFMessage, "/tf_static", self._on_tf_static, TF_STATIC_QOS)
        self.commands = follow_commands.FollowCommands(
            self, p, s.robot_id, s.frame_id(s.grasp_frame)
        )
        self._urdf = p.robot_description
        self._last_input: float | None = None  # ROS time of the last kinematic message [s]
        self._report = {"time": time.monotonic(), "accepted": 0, "emitted": 0}
        self._report |= {"rejected": 0, "missing": 0}
        steady_timer(self, p.diagnostics_period, self._publish_diagnostics)
        self._batch_size, self._batch, self._batch_started = p.batch_size, [], 0.0
        if p.batch_size > 1:
            steady_timer(self, BATCH_WAIT, self._flush_old_batch)

    def _settings(self, p: SimpleNamespace) -> GraspSignalSettings:
        robot_id = p.robot_id or self.get_namespace().rpartition("/")[2]
        if not robot_id:
            raise ParameterError(
                f"parameter '{self.get_fully_qualified_name()}.robot_id' is empty and the node "
                "has no namespace: set robot_id or run the node in the robot's namespace"
            )
        try:
            return GraspSignalSettings(
                robot_id=robot_id,
                grasp_frame=p.grasp_frame or f"{robot_id}/grasp",
                home_frame=p.home_frame or f"{robot_id}/home",
                frame_prefix=p.frame_prefix,
                kinematics_source=p.kinematics_source,
                wrench_source=p.wrench_source,
                ft_measures=p.ft_measures,
                has_torque=p.has_torque,
                gravity_source=p.gravity_source,
                gravity_i0=tuple(p.gravity),
                cutoff_hz=p.cutoff_hz,
                filter_order=p.filter_order,
                output_rate_hz=p.rate_hz,
                compensate_robot_dynamics=p.compensate_robot_dynamics,
                max_gap=p.max_gap,
                clock_jump=p.clock_jump,
                sync_timeout=p.sync_timeout,
            )
        except ValueError as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None

    def _subscribe_joint_states(self, topics: list[str]) -> None:
        """One subscription per JointState topic; a duplicate or an invalid name is refused."""
        resolved = []
        for topic in topics:
            try:
                validate_topic_name(topic)
            except InvalidTopicNameException as error:
                raise ParameterError(
                    f"parameter '{self.get_fully_qualified_name()}.joint_state_topics': "
                    f"{topic!r} is not a topic name: {error}"
                ) from None
            resolved.append(self.resolve_topic_name(topic))
        if len(set(resolved)) < len(resolved):
            raise ParameterError(
                f"parameter '{self.get_fully_qualified_name()}.joint_state_topics' = {topics} "
                f"names a topic twice ({resolved}): list each JointState topic once"
            )
        self._joint_states = JointStateReader()
        for topic in topics:  # as serialized bytes: no message object per sample
            self.create_subscription(JointState, topic, self._on_joint_bytes, SENSOR_QOS, raw=True)

    # ----- inputs ---------------------------------------------------------------------------
    def _on_tf_static(self, msg: TFMessage) -> None:
        for tf in msg.transforms:
            parent, child = tf.header.frame_id.lstrip("/"), tf.child_frame_id.lstrip("/")
            self.signals.add_static_transform(parent, child, transform_matrix(tf.transform))

    def _on_urdf(self, msg: String) -> None:
        if msg.data == self._urdf and not self.model_error:
            return
        self._urdf = msg.data
        try:
            held = self.signals.set_urdf(msg.data)
            self.model_error = ""
            self.get_logger().info(f"robot_description received ({len(msg.data)} characters)")
            self._publish(held)
        except RobotModelError as error:
            self.model_error = f"robot_description cannot be used: {error}"
            self.get_logger().error(self.model_error)

    def _now(self) -> float:
        """The node's ROS time [s]: simulated time under use_sim_time (bags, simulators)."""
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_joints(self, msg: JointState) -> None:
        self._last_input = self._now()
        self._publish(
            self.signals.add_joint_state(
                seconds(msg.header.stamp),
                list(msg.name),
                np.asarray(msg.position, dtype=float),
                np.asarray(msg.velocity, dtype=float),
                np.asarray(msg.effort, dtype=float),
            )
        )

    def _on_joint_bytes(self, raw: bytes) -> None:
        """``_on_joints`` of a serialized JointState (the subscriptions' callback)."""
        reader = self._joint_states
        fields = reader.read(raw) if reader.usable else None
        if fields is None:  # another encoding, or without positions or velocities
            self._on_joints(deserialize_message(raw, JointState))
            return
        self._last_input = self._now()
        self._publish(
            self.signals.add_joint_state(
                seconds(fields), fields.names, fields.position, fields.velocity, fields.effort
            )
        )

    def _on_pose(self, msg: PoseStamped) -> None:
        self._last_input = self._now()
        samples = self.signals.add_pose(
            seconds(msg.header.stamp), msg.header.frame_id, pose_matrix(msg.pose)
        )
        self._publish(samples)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        samples = self.signals.add_wrench(
            seconds(msg.header.stamp), msg.header.frame_id, wrench_vector(msg.wrench)
        )
        self._publish(samples)

    def _on_imu(self, msg: Imu) -> None:
        samples = self.signals.add_imu(
            seconds(msg.header.stamp),
            msg.header.frame_id,
            vector3(msg.angular_velocity),
            vector3(msg.linear_acceleration),
        )
        self._publish(samples)

    # ----- outputs --------------------------------------------------------------------------
    def _publish(self, samples: list[GraspSample]) -> None:
        if self._batch_size > 1:
            self._add_to_batch(samples)
            return
        for sample in samples:
            state = self._layouts["grasp_state"].encode(sample) if self._serialized else None
            if state is None:  # a layout this RMW does not share, or covariances
                state = to_grasp_state(sample, *self._frames)
            self._outputs["grasp_state"].publish(state)
            self._publish_plots(sample)

    def _publish_plots(self, sample: GraspSample) -> None:
        """grasp_twist and grasp_wrench of a sample, if anyone listens (plots, RViz)."""
        twist, wrench = self._outputs["grasp_twist"], self._outputs["grasp_wrench"]
        send_twist = twist.get_subscription_count() > 0
        send_wrench = sample.has_force and wrench.get_subscription_count() > 0
        if not (send_twist or send_wrench):
            return
        F = np.nan_to_num(sample.F_i)
        if self._serialized:
            stamp, V, F = stamp_bytes(sample.stamp), sample.V_i.tolist(), F.tolist()
            if send_twist:
                twist.publish(self._layouts["grasp_twist"].encode(stamp, V[3:] + V[:3]))
            if send_wrench:
                wrench.publish(self._layouts["grasp_wrench"].encode(stamp, F[3:] + F[:3]))
            return
        header = Header(stamp=to_time(sample.stamp), frame_id=self._frames[0])
        if send_twist:
            twist.publish(TwistStamped(header=header, twist=to_twist(sample.V_i)))
        if send_wrench:
            wrench.publish(WrenchStamped(header=header, wrench=to_wrench(F)))

    def _add_to_batch(self, samples: list[GraspSample]) -> None:
        for sample in samples:
            if not self._batch:
                self._batch_started = time.monotonic()
            self._batch.append(sample)
            if len(self._batch) >= self._batch_size:
                self._publish_batch()

    def _flush_old_batch(self) -> None:
        if self._batch and time.monotonic() - self._batch_started >= BATCH_WAIT:
            self._publish_batch()

    def _publish_batch(self) -> None:
        """The waiting samples as one GraspStateArray; twist and wrench of the newest."""
        batch, self._batch = self._batch, []
        self._outputs["grasp_state_array"].publish(to_grasp_state_array(batch, *self._frames))
        self._publish_plots(batch[-1])

    def _publish_diagnostics(self) -> None:
        signals = self.signals
        now, last = time.monotonic(), self._report
        accepted = sum(signals.accepted.values())
        rejected, missing = sum(signals.rejected.values()), sum(signals.missing.values())
        level, message = self._status(rejected - last["rejected"], missing - last["missing"])
        elapsed = max(now - last["time"], 1e-9)
        values = {
            "input rate [Hz]": f"{(accepted - last['accepted']) / elapsed:.1f}",
            "output rate [Hz]": f"{(signals.emitted - last['emitted']) / elapsed:.1f}",
            "published": signals.emitted,
            "decimation": signals.decimation,
            "last error": signals.last_error or self.model_error,
        }
        values |= {f"measured rate {k} [Hz]": f"{v:.1f}" for k, v in signals.rates_hz.items()}
        values |= {f"accepted {k}": v for k, v in sorted(signals.accepted.items())}
        values |= {f"rejected {k}": v for k, v in sorted(signals.rejected.items())}
        values |= {f"restarts {k}": v for k, v in sorted(signals.restarts.items())}
        values |= {f"missing {k}": v for k, v in sorted(signals.missing.items())}
        self._report = {"time": now, "accepted": accepted, "emitted": signals.emitted}
        self._report |= {"rejected": rejected, "missing": missing}
        self._diagnostics.publish(diagnostics(self, level, message, values))

    def _status(self, rejected: int, missing: int) -> tuple[str, str]:
        """Level and message; ``rejected`` and ``missing``: counts since the last report."""
        s, signals = self.settings, self.signals
        if self.model_error:
            return "ERROR", self.model_error
        if s.kinematics_source == "joint_states" and signals.kinematics is None:
            return "WARN", "waiting for the URDF on robot_description"
        if self._last_input is None:
            return "WARN", f"waiting for {s.kinematics_source}"
        silence = self._now() - self._last_input
        if silence > STALE:
            return "ERROR", f"no {s.kinematics_source} for {silence:.1f} s"
        problems = signals.notes
        if rejected:
            problems.append(f"{rejected} messages rejected ({signals.last_error})")
        if missing:
            problems.append(f"{missing} samples without " + ", ".join(sorted(signals.missing)))
        return ("WARN", "; ".join(problems)) if problems else ("OK", "publishing grasp_state")


def main() -> int:
    return run_executable("robot_node", executor="events")


if __name__ == "__main__":
    sys.exit(main())
