"""``aerial_robot_node``: one aerial robot's onboard cable-tension UKF (paper 002, eqs. 31-37).

Runs in the robot's namespace (``/robot_2``: its id is the namespace's last part, or
``robot_id``), from its own mocap pose and twist, its ESC rotor speeds and the payload's mocap,
and publishes its tension as ``cable_tension`` (``CableTensions`` with its one entry): what an
``aerial_coordinator_node`` with ``tension_source: onboard`` takes instead of running the UKF
itself. The UKF is the coordinator's (``core.aerial.team_estimation``, fed only this robot's
messages), so both sources give the same estimate from the same data.
"""

from __future__ import annotations

import sys

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState

from ...core.aerial.team_estimation import AerialTeamEstimate, AerialTeamEstimator
from ...msg import CableTensions
from ..aerial_messages import to_cable_tensions
from ..conversions import pose_matrix, seconds, vector3
from ..interface import SENSOR_QOS, NodeInterface, Topic
from ..parameters import Param, ParameterError, declare, unknown_parameters
from ..runtime import run_executable
from .aerial_coordinator_node import read_team_description, warm_up_ukf

INTERFACE = NodeInterface(
    executable="aerial_robot_node",
    description=(
        "One aerial robot's onboard cable-tension UKF (paper 002, eqs. 31-37) from its mocap, "
        "its ESC rotor speeds and the payload's mocap; publishes its tension for an "
        "aerial_coordinator_node with `tension_source: onboard`. Runs in the robot's namespace."
    ),
    publishes=[
        Topic(
            "cable_tension",
            "inertia_estimation_ros/msg/CableTensions",
            "sensor",
            "this robot's tension and cable direction with their (co)variances (one entry)",
        ),
    ],
    subscribes=[
        Topic("mocap/pose", "geometry_msgs/msg/PoseStamped", "sensor", "the robot's mocap pose"),
        Topic(
            "mocap/twist",
            "geometry_msgs/msg/TwistStamped",
            "sensor",
            "the robot's velocities in the world frame",
        ),
        Topic("rotor_speeds", "sensor_msgs/msg/JointState", "sensor", "four ESC speeds [rad/s]"),
        Topic(
            "/payload/mocap/pose",
            "geometry_msgs/msg/PoseStamped",
            "sensor",
            "the payload's mocap pose (`payload_pose_topic`)",
        ),
        Topic(
            "/payload/mocap/twist",
            "geometry_msgs/msg/TwistStamped",
            "sensor",
            "the payload's velocities in the world frame (`payload_twist_topic`)",
        ),
    ],
    parameters=[
        Param("robot_id", "string", "", "this robot's id (default: the namespace's last part)"),
        Param("robots", "string_array", [], "ids of the team's robots", nonempty=True),
        Param(
            "team_description",
            "string",
            "",
            "YAML of the team (the aerial_coordinator_node's): this robot's mass, inertia, "
            "rotors and cable length, the payload's attach points",
            nonempty=True,
        ),
        Param(
            "publish_period",
            "double",
            0.02,
            "period of cable_tension [s, ROS clock]",
            bounds=(0.001, 10.0),
        ),
        Param(
            "world_frame", "string", "world", "frame of mocap and cable directions", nonempty=True
        ),
        Param(
            "payload_pose_topic",
            "string",
            "/payload/mocap/pose",
            "payload mocap pose",
            nonempty=True,
        ),
        Param(
            "payload_twist_topic",
            "string",
            "/payload/mocap/twist",
            "payload twist",
            nonempty=True,
        ),
    ],
)


class AerialRobotNode(Node):
    """The onboard UKF (see the module docstring); rclpy ``Node`` keyword arguments pass
    through."""

    def __init__(self, **kwargs: object):
        super().__init__("aerial_robot_node", **kwargs)
        self.params = p = declare(self, INTERFACE.parameters)
        self.robot_id = p.robot_id or self.get_namespace().rstrip("/").split("/")[-1]
        if self.robot_id not in p.robots:
            raise ParameterError(
                f"{self.get_fully_qualified_name()}: robot id {self.robot_id!r} (robot_id or the "
                f"namespace's last part) is not one of robots = {list(p.robots)}"
            )
        try:
            model = read_team_description(p.team_description, list(p.robots))
        except (ValueError, OSError) as error:
            raise ParameterError(f"{self.get_fully_qualified_name()}: {error}") from None
        self.estimator = AerialTeamEstimator(model)
        warm_up_ukf(self)
        self.track = self.estimator.tracks[self.robot_id]
        self._latest = -np.inf
        self._publisher = self.create_publisher(CableTensions, "cable_tension", SENSOR_QOS)
        self._subscribe(p)
        self.create_timer(p.publish_period, self._publish)
        unknown = unknown_parameters(self, INTERFACE.parameters)
        if unknown:
            self.get_logger().warning(f"unknown parameters ignored: {', '.join(unknown)}")

    def _subscribe(self, p) -> None:  # noqa: ANN001
        est, rid = self.estimator, self.robot_id

        def pose(msg: PoseStamped) -> None:
            T = pose_matrix(msg.pose)
            est.robot_pose(rid, self._stamp(msg), T[:3, 3], T[:3, :3])

        def twist(msg: TwistStamped) -> None:
            est.robot_twist(
                rid, self._stamp(msg), vector3(msg.twist.linear), vector3(msg.twist.angular)
            )

        def rotors(msg: JointState) -> None:
            est.rotor_speeds(rid, self._stamp(msg), np.asarray(msg.velocity, dtype=float))

        def payload_pose(msg: PoseStamped) -> None:
            T = pose_matrix(msg.pose)
            est.payload_pose(seconds(msg.header.stamp), T[:3, 3], T[:3, :3])

        def payload_twist(msg: TwistStamped) -> None:
            v, w = vector3(msg.twist.linear), vector3(msg.twist.angular)
            est.payload_twist(seconds(msg.header.stamp), v, w)

        # the payload's first: the executor serves ready subscriptions in creation order, and
        # the cable update (eq. 41) needs the payload's mocap of the robot's stamp
        self.create_subscription(PoseStamped, p.payload_pose_topic, payload_pose, SENSOR_QOS)
        self.create_subscription(TwistStamped, p.payload_twist_topic, payload_twist, SENSOR_QOS)
        self.create_subscription(PoseStamped, "mocap/pose", pose, SENSOR_QOS)
        self.create_subscription(TwistStamped, "mocap/twist", twist, SENSOR_QOS)
        self.create_subscription(JointState, "rotor_speeds", rotors, SENSOR_QOS)

    def _stamp(self, msg: PoseStamped | TwistStamped | JointState) -> float:
        t = seconds(msg.header.stamp)
        self._latest = max(self._latest, t)
        return t

    def _publish(self) -> None:
        ukf = self.track.ukf
        if ukf is None:
            return
        one = AerialTeamEstimate(
            self._latest, (self.robot_id,), np.array([ukf.tension]),
            np.array([ukf.tension_std]), ukf.cable_direction[None], ukf.cable_covariance[None],
            None, np.eye(3),
        )  # fmt: skip
        self._publisher.publish(to_cable_tensions(one, self.params.world_frame))


def main() -> int:
    return run_executable("aerial_robot_node", executor="single")


if __name__ == "__main__":
    sys.exit(main())
