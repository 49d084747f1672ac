"""``aerial_coordinator_node``: the coordinator of an aerial team on cables (paper 002).

A thin adapter around ``core.aerial.team_estimation.AerialTeamEstimator``: it subscribes to
each robot's mocap pose and twist and its ESC rotor speeds and to the payload's mocap, runs
one cable-tension UKF per robot, and publishes the cable tensions, the human's wrench (the
full estimate with covariance, dead band and degraded flag, and the dead-banded wrench as a
plain ``WrenchStamped``) and per-robot diagnostics. The robots, cables and payload are
described by ``team_description`` (the schema of ``simulate``'s ground_truth.yaml). A robot
whose mocap stops keeps a coasting UKF (its covariance grows) and the wrench says it is
degraded and why; NaN rotor speeds hold the last valid thrust; a team of fewer than three
robots is refused at start-up (the wrench is not observable).

In-flight identification (``core.aerial.identification``): while nobody touches the payload
(the operator says so with ``~/hands_off``; with ``identification: no_contact`` also while the
wrench reports no contact) every published
estimate is a sample; every ``identification_period`` the node identifies the payload's
mass, CoM and inertia, publishes them as a ``PayloadEstimate`` (frame ``payload_frame``, the
frame of the payload's mocap pose) and gives the human-wrench estimator the identified values
that are valid (the description's elsewhere); none are valid, and the advice says why, where
more than ``identification_max_degraded_share`` of the estimates were degraded or the UKFs
gated more than ``identification_max_gated_share`` of their mocap updates meanwhile (their
tensions biased, docs/aerial-teams.md). With ``identification: off`` it publishes the
description's payload instead, declared valid with a weak prior's covariance (the model a
planner's admittance then uses).

Inputs are kept in queues of ``NEWEST_QOS``, five samples deep (REP-2003's sensor-data depth),
not the 50 of ``SENSOR_QOS``: the wrench is stamped with the newest input, and a callback
takes one message per queue and executor turn, so when the executor is saturated (the
one-process graph of ``bringup config/sim_aerial_collaborate.yaml``: sim_node, this node and
the planner on one single-threaded executor) a backlog, once formed, stays; its depth is the
lag. With 50 at 100 Hz the wrench ran 0.53 s behind ``/clock``, with 5 at most 0.1 s, taking
0.4 % fewer inputs (docs/aerial-teams.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool

from ...core.aerial.identification import OnlinePayloadIdentification
from ...core.aerial.team_estimation import (
    METHODS,
    AerialEstimatorSettings,
    AerialTeamEstimator,
    AerialTeamModel,
)
from ...core.aerial.ukf import warm_up
from ...core.consistency import ConsistencyError
from ...msg import CableTensions, ExternalWrench, PayloadEstimate
from ..aerial_messages import onboard_cables, robot_statuses, to_cable_tensions, to_human_wrench
from ..conversions import pose_matrix, seconds, to_payload_estimate, vector3
from ..graph import data_file
from ..interface import LATCHED_QOS, NEWEST_QOS, RELIABLE_QOS, NodeInterface, Service, Topic
from ..parameters import Param, ParameterError, declare, unknown_parameters
from ..runtime import run_executable

_DEFAULTS = AerialEstimatorSettings()
TENSION_SOURCES = ("coordinator", "onboard")
IDENTIFICATION = ("no_contact", "on_request", "off")

INTERFACE = NodeInterface(
    executable="aerial_coordinator_node",
    description=(
        "The coordinator of an aerial team carrying a payload on cables (paper 002): one "
        "cable-tension UKF per robot from its mocap and ESC rotor speeds (eqs. 31-37), the "
        "payload's motion from its mocap, and the human's wrench on the payload from the "
        "tensions (eq. 38 dynamic, or eq. 39 quasi-static) with its covariance, a dead band and "
        "a degraded flag with the reasons (a robot's mocap silent, NaN rotor speeds, a slack "
        "cable). Topic names are parameters (hardware: your mocap's and ESCs'). Fewer than "
        "three robots are refused: the wrench is not observable."
    ),
    publishes=[
        Topic(
            "cable_tensions",
            "inertia_estimation_ros/msg/CableTensions",
            "reliable",
            "per robot the UKF's tension and cable direction with their (co)variances",
        ),
        Topic(
            "human_wrench_estimate",
            "inertia_estimation_ros/msg/ExternalWrench",
            "reliable",
            "the human's wrench in `payload_frame` with its 6x6 covariance, dead band, contact, "
            "degraded flag and reasons",
        ),
        Topic(
            "human_wrench",
            "geometry_msgs/msg/WrenchStamped",
            "reliable",
            "the dead-banded human wrench in `payload_frame` (zero with no contact), for an "
            "admittance controller",
        ),
        Topic(
            "payload_estimate",
            "inertia_estimation_ros/msg/PayloadEstimate",
            "latched",
            "the payload identified in flight (mass, CoM, inertia in `payload_frame` with "
            "covariance, validity flags, advice naming what the motion did not excite); "
            "robots' grasps are their attach points",
        ),
        Topic(
            "/diagnostics",
            "diagnostic_msgs/msg/DiagnosticArray",
            "reliable",
            "per robot (hardware_id: its id): tension, sigma, UKF update/gating/NaN counts, "
            "degraded reasons",
        ),
    ],
    subscribes=[
        Topic(
            "{robot}/mocap/pose",
            "geometry_msgs/msg/PoseStamped",
            "sensor",
            "each robot's mocap pose in the world frame (`robot_pose_topic`)",
        ),
        Topic(
            "{robot}/mocap/twist",
            "geometry_msgs/msg/TwistStamped",
            "sensor",
            "each robot's linear and angular velocity in the world frame (`robot_twist_topic`)",
        ),
        Topic(
            "{robot}/rotor_speeds",
            "sensor_msgs/msg/JointState",
            "sensor",
            "each robot's four ESC speeds [rad/s] in `velocity` (`rotor_speeds_topic`)",
        ),
        Topic(
            "{robot}/cable_tension",
            "inertia_estimation_ros/msg/CableTensions",
            "sensor",
            "with `tension_source` onboard, instead of the three above: each robot's own "
            "tension estimate (its entry of robot_ids)",
        ),
        Topic(
            "payload/mocap/pose",
            "geometry_msgs/msg/PoseStamped",
            "sensor",
            "the payload's mocap pose (`payload_pose_topic`)",
        ),
        Topic(
            "payload/mocap/twist",
            "geometry_msgs/msg/TwistStamped",
            "sensor",
            "the payload's velocities in the world frame (`payload_twist_topic`)",
        ),
    ],
    services=[
        Service(
            "~/hands_off",
            "std_srvs/srv/SetBool",
            "true: nobody touches the payload, identify it from every sample (also with a "
            "contact reported, e.g. a wrong description); false: back to `identification`",
        ),
    ],
    parameters=[
        Param("robots", "string_array", [], "ids of the team's robots (3 or more)", nonempty=True),
        Param(
            "team_description",
            "string",
            "",
            "YAML of the robots (mass, inertia_diagonal, k_f, k_m, arm), cable_length and "
            "payload (mass, inertia_diagonal, attach_points): the schema of simulate's "
            "ground_truth.yaml; a path or a file in the package's config/",
            nonempty=True,
        ),
        Param(
            "tension_source",
            "string",
            "coordinator",
            "coordinator: one UKF per robot here, from its mocap and rotor speeds; onboard: "
            "each robot runs its own and publishes `{robot}/cable_tension` (CableTensions)",
            choices=TENSION_SOURCES,
        ),
        Param(
            "method",
            "string",
            _DEFAULTS.method,
            "human wrench: dynamic (eq. 38, with the payload's acceleration) or quasi_static",
            choices=METHODS,
        ),
        Param(
            "dead_band_force",
            "double",
            _DEFAULTS.dead_band_force,
            "per-axis force dead band [N]",
            bounds=(0.0, 100.0),
        ),
        Param(
            "dead_band_moment",
            "double",
            _DEFAULTS.dead_band_moment,
            "per-axis moment dead band [N m]",
            bounds=(0.0, 100.0),
        ),
        Param(
            "mocap_timeout",
            "double",
            _DEFAULTS.mocap_timeout,
            "silence of a mocap or ESC stream after which the estimate is degraded [s]",
            bounds=(0.001, 10.0),
        ),
        Param(
            "reacquire_after",
            "double",
            _DEFAULTS.reacquire_after,
            "a robot's UKF inflates its covariance to accept a kind of mocap update refused or "
            "missing this long (a gap its prediction drifted through) [s]",
            bounds=(0.01, 60.0),
        ),
        Param(
            "publish_period",
            "double",
            0.02,
            "period of the tension and wrench publications [s, ROS clock]",
            bounds=(0.001, 10.0),
        ),
        Param(
            "diagnostics_period",
            "double",
            1.0,
            "period of /diagnostics [s, ROS clock]",
            bounds=(0.05, 60.0),
        ),
        Param(
            "identification",
            "string",
            "on_request",
            "in-flight payload identification: on_request (samples only while ~/hands_off), "
            "no_contact (also while the wrench reports no contact: trust the description), off "
            "(publish the description's payload as the estimate)",
            choices=IDENTIFICATION,
        ),
        Param(
            "hands_off",
            "bool",
            False,
            "start with ~/hands_off set: nobody will touch the payload (a test flight)",
        ),
        Param(
            "identification_period",
            "double",
            1.0,
            "period of the identification's solve and PayloadEstimate [s, ROS clock]",
            bounds=(0.05, 600.0),
        ),
        Param(
            "identification_max_degraded_share",
            "double",
            0.5,
            "refuse the identification beyond this share of degraded estimates without "
            "contact (MuJoCo: 0-16 % clean, a mocap gap or a gust; 54-91 % with ESC noise x3)",
            bounds=(0.0, 1.0),
        ),
        Param(
            "identification_max_gated_share",
            "double",
            0.2,
            "refuse the identification beyond this share of UKF mocap updates gated while "
            "sampling (MuJoCo: 0-7 % clean, a mocap gap or a gust; 50-65 % with ESC noise x3)",
            bounds=(0.0, 1.0),
        ),
        Param(
            "world_frame", "string", "world", "frame of mocap and cable directions", nonempty=True
        ),
        Param(
            "payload_frame", "string", "payload", "the payload's frame at its CoM", nonempty=True
        ),
        Param(
            "robot_pose_topic", "string", "{robot}/mocap/pose", "{robot}: each id", nonempty=True
        ),
        Param(
            "robot_twist_topic", "string", "{robot}/mocap/twist", "{robot}: each id", nonempty=True
        ),
        Param(
            "rotor_speeds_topic",
            "string",
            "{robot}/rotor_speeds",
            "{robot}: each id",
            nonempty=True,
        ),
        Param(
            "payload_pose_topic",
            "string",
            "payload/mocap/pose",
            "payload mocap pose",
            nonempty=True,
        ),
        Param(
            "payload_twist_topic", "string", "payload/mocap/twist", "payload twist", nonempty=True
        ),
    ],
)


def warm_up_ukf(node: Node) -> None:
    """The cable UKF's compiled kernels ready before the first message (numba compiles them
    on a machine's first start, ~20 s of CPU, and loads them from its cache after)."""
    seconds = warm_up()
    if seconds > 5.0:  # a cache load takes under 3 s on a loaded machine
        node.get_logger().info(f"cable UKF compiled in {seconds:.0f} s (cached for next starts)")


def read_team_description(name: str, robots: list[str]) -> AerialTeamModel:
    """The team model from a YAML path or a file of the package's config/."""
    path = Path(name)
    path = path if path.exists() else data_file(name, "config")
    return AerialTeamModel.from_document(yaml.safe_load(path.read_text()), robots)


class AerialCoordinatorNode(Node):
    """The aerial coordinator (see the module docstring); rclpy ``Node`` keyword arguments
    pass through. Callbacks run the UKFs (single-threaded executor)."""

    def __init__(self, **kwargs: object):
        super().__init__("aerial_coordinator_node", **kwargs)
        self.params = p = declare(self, INTERFACE.parameters)
        self.estimator = self._estimator(p)
        if p.tension_source != "onboard":
            warm_up_ukf(self)
        self._tensions = self.create_publisher(CableTensions, "cable_tensions", RELIABLE_QOS)
        self._full = self.create_publisher(ExternalWrench, "human_wrench_estimate", RELIABLE_QOS)
        self._wrench = self.create_publisher(WrenchStamped, "human_wrench", RELIABLE_QOS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
        self._payload = self.create_publisher(PayloadEstimate, "payload_estimate", LATCHED_QOS)
        self._subscribe(p)
        self._latest = -np.inf  # newest stamp received
        self.identification = OnlinePayloadIdentification(
            self.estimator.model,
            max_degraded_share=p.identification_max_degraded_share,
            max_gated_share=p.identification_max_gated_share,
        )
        self.hands_off = bool(p.hands_off)
        self._solved: tuple = (0, None)  # (samples, refusal) of the last solve
        self.create_service(SetBool, "~/hands_off", self._set_hands_off)
        self.create_timer(p.publish_period, self._publish)
        if p.identification != "off":
            self.create_timer(p.identification_period, self._identify)
        else:
            self.create_timer(p.identification_period, self._publish_description)
        self.create_timer(p.diagnostics_period, self._publish_diagnostics)
        unknown = unknown_parameters(self, INTERFACE.parameters)
        if unknown:
            self.get_logger().warning(f"unknown parameters ignored: {', '.join(unknown)}")
        self.get_logger().info(
            f"aerial team {', '.join(p.robots)}: {p.method} human wrench, dead band "
            f"{p.dead_band_force:g} N / {p.dead_band_moment:g} N m"
        )

    def _estimator(self, p) -> AerialTeamEstimator:  # noqa: ANN001
        where = self.get_fully_qualified_name()
        try:
            model = read_team_description(p.team_description, list(p.robots))
            settings = AerialEstimatorSettings(
                method=p.method,
                dead_band_force=p.dead_band_force,
                dead_band_moment=p.dead_band_moment,
                mocap_timeout=p.mocap_timeout,
                reacquire_after=p.reacquire_after,
            )
            return AerialTeamEstimator(model, settings)
        except (ValueError, OSError) as error:
            raise ParameterError(
                f"{where}: {error} (parameters robots = {p.robots}, team_description = "
                f"{p.team_description!r})"
            ) from None

    def _subscribe(self, p) -> None:  # noqa: ANN001
        est = self.estimator
        self.create_subscription(PoseStamped, p.payload_pose_topic, self._payload_pose, NEWEST_QOS)
        self.create_subscription(
            TwistStamped, p.payload_twist_topic, self._payload_twist, NEWEST_QOS
        )
        for rid in p.robots:
            if p.tension_source == "onboard":
                self.create_subscription(
                    CableTensions, f"{rid}/cable_tension", self._onboard, NEWEST_QOS
                )
                continue

            def pose(msg: PoseStamped, rid: str = rid) -> None:
                T = pose_matrix(msg.pose)
                est.robot_pose(rid, self._stamp(msg), T[:3, 3], T[:3, :3])

            def twist(msg: TwistStamped, rid: str = rid) -> None:
                v, w = vector3(msg.twist.linear), vector3(msg.twist.angular)
                est.robot_twist(rid, self._stamp(msg), v, w)

            def rotors(msg: JointState, rid: str = rid) -> None:
                est.rotor_speeds(rid, self._stamp(msg), np.asarray(msg.velocity, dtype=float))

            topic = p.robot_pose_topic.replace("{robot}", rid)
            self.create_subscription(PoseStamped, topic, pose, NEWEST_QOS)
            topic = p.robot_twist_topic.replace("{robot}", rid)
            self.create_subscription(TwistStamped, topic, twist, NEWEST_QOS)
            topic = p.rotor_speeds_topic.replace("{robot}", rid)
            self.create_subscription(JointState, topic, rotors, NEWEST_QOS)

    def _stamp(self, msg: PoseStamped | TwistStamped | JointState | CableTensions) -> float:
        t = seconds(msg.header.stamp)
        self._latest = max(self._latest, t)
        return t

    def _onboard(self, msg: CableTensions) -> None:
        try:
            cables = onboard_cables(msg)
        except ValueError as error:
            self.get_logger().warning(f"cable_tension refused: {error}", throttle_duration_sec=5.0)
            return
        t = self._stamp(msg)
        for rid, cable in cables.items():
            if rid in self.estimator.tracks:
                self.estimator.onboard_cable(rid, t, cable)

    def _payload_pose(self, msg: PoseStamped) -> None:
        T = pose_matrix(msg.pose)
        self.estimator.payload_pose(self._stamp(msg), T[:3, 3], T[:3, :3])

    def _payload_twist(self, msg: TwistStamped) -> None:
        v, w = vector3(msg.twist.linear), vector3(msg.twist.angular)
        self.estimator.payload_twist(self._stamp(msg), v, w)

    def _publish(self) -> None:
        if not np.isfinite(self._latest):
            return
        estimate = self.estimator.estimate(self._latest)
        if not estimate.valid:
            return
        p = self.params
        self._tensions.publish(to_cable_tensions(estimate, p.world_frame))
        full, plain = to_human_wrench(
            estimate, p.payload_frame, (p.dead_band_force, p.dead_band_moment), p.method
        )
        self._full.publish(full)
        self._wrench.publish(plain)
        self._sample(estimate)

    def _sample(self, estimate) -> None:  # noqa: ANN001
        """An identification sample, if nobody touches the payload (by the estimate or the
        operator's word) and every source is fresh; a degraded estimate is only counted
        (with the UKFs' counters: the identification refuses if most were degraded)."""
        mode = self.params.identification
        hands_off = self.hands_off or (mode == "no_contact" and not estimate.contact)
        if mode != "off" and hands_off:
            counters = self.estimator.robot_counters()
            self.identification.add(estimate, self.estimator.motion, counters)

    def _identify(self) -> None:
        """Solve with the samples so far, publish the PayloadEstimate, feed the wrench."""
        samples = self.identification.samples
        solved = (samples, self.identification.damage_refusal())
        if solved in (self._solved, (0, None)):  # nothing new, or nothing to solve yet
            return
        self._solved = solved
        try:
            team_estimate, params = self.identification.solve()
        except (ValueError, ConsistencyError, np.linalg.LinAlgError) as error:
            self.get_logger().warning(
                f"in-flight identification failed on {samples} samples: {error}",
                throttle_duration_sec=10.0,
            )
            return
        self.estimator.use_payload(params)
        frame = self.params.payload_frame
        self._payload.publish(
            to_payload_estimate(team_estimate, lambda r: f"{r}/attach_point" if r else frame)
        )

    def _publish_description(self) -> None:
        """``identification: off``: the description's payload, declared valid."""
        frame = self.params.payload_frame
        estimate = self.identification.description_estimate()
        self._payload.publish(
            to_payload_estimate(estimate, lambda r: f"{r}/attach_point" if r else frame)
        )

    def _set_hands_off(
        self, request: SetBool.Request, response: SetBool.Response
    ) -> SetBool.Response:
        self.hands_off = bool(request.data)
        response.success = True
        response.message = (
            f"hands off: identifying from every sample ({self.identification.samples} so far)"
            if self.hands_off
            else f"identification back to {self.params.identification!r}"
        )
        return response

    def _publish_diagnostics(self) -> None:
        if not np.isfinite(self._latest):
            return
        estimate = self.estimator.estimate(self._latest)
        array = DiagnosticArray(
            status=robot_statuses(
                self.get_fully_qualified_name(), estimate, self.estimator.robot_counters()
            )
        )
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)


def main() -> int:
    return run_executable("aerial_coordinator_node", executor="single")


if __name__ == "__main__":
    sys.exit(main())
