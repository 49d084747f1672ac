"""``robot_node``'s commands that follow the payload reference (issue 14 item 4).

From the planner's reference of {s} (``payload_reference/pose``, ``payload_reference/twist``)
and the team's estimate (``payload_estimate``: theta and every grasp frame T_s_i), this robot's
command (``core.collaboration.following``): the grasp pose T_w_i = T_w_s T_s_i as
``~/command/pose`` (PoseStamped in the reference's frame) and its feed-forward share of the
model's wrench (weight and inertia; minimum norm over the team's grasp map, forces only for
force-only robots) as ``~/command/wrench`` (WrenchStamped in this robot's grasp frame), for a
hardware driver. Nothing is published while the estimate has no valid grasps and mass, or the
robot is not in it.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from geometry_msgs.msg import Pose, PoseStamped, TwistStamped, WrenchStamped
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Header

from ..core.collaboration.following import ReferenceWrench, share_maps
from ..msg import PayloadEstimate
from .conversions import pose_matrix, to_pose, to_wrench, transform_matrix, twist_vector
from .interface import LATCHED_QOS, RELIABLE_QOS, Topic
from .parameters import Param
from .serialized import STAMP, PoseFields, StampedLayout, pose_values

PUBLISHES = [
    Topic(
        "~/command/pose",
        "geometry_msgs/msg/PoseStamped",
        "reliable",
        "the grasp pose that follows the payload reference, T_w_i = T_w_s T_s_i",
    ),
    Topic(
        "~/command/wrench",
        "geometry_msgs/msg/WrenchStamped",
        "reliable",
        "feed-forward wrench on the payload (this robot's share of the model's), in {i}",
    ),
]
SUBSCRIBES = [
    Topic(
        "/payload_estimate",
        "inertia_estimation_ros/msg/PayloadEstimate",
        "latched",
        "the team's estimate: theta and every grasp frame",
    ),
    Topic(
        "/planner_node/reference/pose",
        "geometry_msgs/msg/PoseStamped",
        "reliable",
        "the payload reference T_w_s (planner_node's admittance mode)",
    ),
    Topic(
        "/planner_node/reference/twist",
        "geometry_msgs/msg/TwistStamped",
        "reliable",
        "the payload reference's body twist",
    ),
]
PARAMETERS = [
    Param(
        "command_gravity",
        "double_array",
        [0.0, 0.0, -9.81],
        "gravity in the reference's frame (the reference robot's home frame) [m/s^2]",
        length=3,
        bounds=(-100.0, 100.0),
    ),
    Param(
        "command_force_only",
        "bool",
        True,
        "the team's grasps transmit no moment (gimbals): wrench shares are forces only",
    ),
]


class _Model(NamedTuple):
    """The estimate as this robot's commands use it: the model's wrench at a reference
    (``following.ReferenceWrench`` of theta in {s}), T_s_i, and the share map
    (``following.share_maps``: this robot's wrench = share @ the model's wrench F_s)."""

    wrench: ReferenceWrench
    T_s_i: np.ndarray
    share: np.ndarray


class FollowCommands:
    """This robot's commands (module docstring); ``robot_id`` and ``grasp_frame`` name it."""

    def __init__(self, node: Node, params: object, robot_id: str, grasp_frame: str) -> None:
        self.node, self.robot_id, self.grasp_frame = node, robot_id, grasp_frame
        self.gravity = np.asarray(params.command_gravity, dtype=float)
        self.force_only = bool(params.command_force_only)
        self.model: _Model | None = None
        self.V_s = np.zeros(6)
        self._pose = node.create_publisher(PoseStamped, "~/command/pose", RELIABLE_QOS)
        self._wrench = node.create_publisher(WrenchStamped, "~/command/wrench", RELIABLE_QOS)
        # The reference in and the commands out as serialized bytes (``serialized``): the
        # pose command is the reference's bytes with the grasp's pose written in.
        self._layouts = (
            StampedLayout(PoseStamped(), 7),
            StampedLayout(TwistStamped(), 6),
            StampedLayout(WrenchStamped(header=Header(frame_id=grasp_frame)), 6),
        )
        # A group of their own, reentrant: on the robot node's multi-threaded executor they
        # neither wait for its joint-state callbacks nor make it spin (holding the GIL) while
        # one of them runs. Each callback replaces one attribute; on_reference reads each once.
        group = ReentrantCallbackGroup()
        subscribe = functools.partial(node.create_subscription, callback_group=group)
        subscribe(PayloadEstimate, "/payload_estimate", self.on_estimate, LATCHED_QOS)
        reference, twist = "/planner_node/reference/pose", "/planner_node/reference/twist"
        subscribe(PoseStamped, reference, self.on_reference_bytes, RELIABLE_QOS, raw=True)
        subscribe(TwistStamped, twist, self.on_twist_bytes, RELIABLE_QOS, raw=True)

    def on_estimate(self, msg: PayloadEstimate) -> None:
        """The model and this robot's grasp and share map, once per estimate (not per
        reference: the reference's callback is on the loop's hot path)."""
        grasps = {g.robot_id: transform_matrix(g.transform) for g in msg.grasps}
        if not (msg.grasps_valid and msg.mass_valid and self.robot_id in grasps):
            self.model = None
            return
        maps, _ = share_maps(grasps, dict.fromkeys(grasps, not self.force_only))
        theta = np.asarray(msg.parameters, dtype=float)
        self.model = _Model(ReferenceWrench.of(theta), grasps[self.robot_id], maps[self.robot_id])

    def on_twist(self, msg: TwistStamped) -> None:
        V = twist_vector(msg.twist)
        if np.all(np.isfinite(V)):
            self.V_s = V

    def on_twist_bytes(self, raw: bytes) -> None:
        """``on_twist`` of a serialized TwistStamped (the subscription's callback)."""
        numbers = self._layouts[1].read(raw) if self._layouts[1].usable else None
        if numbers is None:  # not this RMW's encoding
            self.on_twist(deserialize_message(raw, TwistStamped))
            return
        V = np.array(numbers[3:] + numbers[:3])  # angular first, as twist_vector
        if np.all(np.isfinite(V)):
            self.V_s = V

    def on_reference(self, msg: PoseStamped) -> tuple[PoseStamped, WrenchStamped] | None:
        """Publish this robot's command for a reference pose; returns what was published."""
        T_w_s, model, V_s = _pose_matrix(msg.pose), self.model, self.V_s
        if model is None or T_w_s is None:
            return None
        F_s = model.wrench(T_w_s, V_s, self.gravity)
        pose = PoseStamped(header=msg.header, pose=to_pose(T_w_s @ model.T_s_i))
        self._pose.publish(pose)  # leaves before the wrench share is computed
        wrench = WrenchStamped(wrench=to_wrench(model.share @ F_s))
        wrench.header.stamp, wrench.header.frame_id = msg.header.stamp, self.grasp_frame
        self._wrench.publish(wrench)
        return pose, wrench

    def on_reference_bytes(self, raw: bytes) -> tuple[bytes, bytes] | None:
        """``on_reference`` of a serialized PoseStamped (the subscription's callback): the
        same commands, as serialized bytes; returns what was published."""
        reference, _, wrench_layout = self._layouts
        usable = reference.usable and wrench_layout.usable
        numbers = reference.read(raw) if usable else None
        if numbers is None:  # not this RMW's encoding: as messages
            published = self.on_reference(deserialize_message(raw, PoseStamped))
            return None if published is None else tuple(map(serialize_message, published))
        model, V_s = self.model, self.V_s
        T_w_s = _pose_matrix(PoseFields.of(numbers))
        if model is None or T_w_s is None:
            return None
        pose_bytes = reference.renumbered(raw, pose_values(T_w_s @ model.T_s_i))
        self._pose.publish(pose_bytes)  # leaves before the wrench share is computed
        F_s = model.wrench(T_w_s, V_s, self.gravity)
        F_i = (model.share @ F_s).tolist()
        wrench_bytes = wrench_layout.encode(raw[STAMP], F_i[3:] + F_i[:3])
        self._wrench.publish(wrench_bytes)
        return pose_bytes, wrench_bytes


def _pose_matrix(pose: Pose | PoseFields) -> np.ndarray | None:
    """T of a reference pose; None if it has non-finite values or a zero quaternion."""
    try:
        T = pose_matrix(pose)
    except ValueError:
        return None
    return T if np.all(np.isfinite(T)) else None
