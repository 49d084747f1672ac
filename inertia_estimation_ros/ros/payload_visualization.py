"""The coordinator's estimate as TF and RViz markers, everything in the reference frame {s}.

* ``payload_static_transforms`` and ``payload_transforms``: the estimate as TF under frames of
  its own (``PayloadFrames``), so that it coexists with ``robot_state_publisher``, which already
  gives every robot's grasp frame a parent in that robot's tree. The one rigid link, the
  reference robot's grasp frame {s} to ``payload`` (the identity: the payload frame is {s}),
  goes on /tf_static; ``payload`` to each robot's estimated grasp frame (``payload/grasp_<id>``)
  and to the principal axes at the CoM change with the estimate and go on /tf.
* ``payload_markers``: the CoM sphere, the equivalent uniform box (same mass and principal
  moments, on the principal axes), a triad per grasp frame, an arrow per robot's latest force
  on the payload, and a text with the 1-sigma bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, TransformStamped, Vector3
from std_msgs.msg import ColorRGBA, Header
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

from ..core import spatial as sp
from ..core.cooperative import TeamEstimate
from ..core.samples import GraspSample
from .conversions import to_pose, to_time, to_transform

TRIAD_LENGTH = 0.15  # [m]
MIN_BOX_SIDE = 0.005  # [m]
AXIS_COLORS = ((1.0, 0.1, 0.1), (0.1, 0.8, 0.1), (0.1, 0.3, 1.0))


@dataclass(frozen=True)
class PayloadFrames:
    """TF frame names of the estimate; ``grasp`` holds ``{robot}`` for each robot's id."""

    payload: str = "payload"
    grasp: str = "payload/grasp_{robot}"
    principal_axes: str = "payload/principal_axes"

    def grasp_of(self, robot_id: str) -> str:
        return self.grasp.format(robot=robot_id)


def payload_static_transforms(
    reference_frame: str, frames: PayloadFrames, stamp: Time
) -> TFMessage:
    """The rigid link {s} (``reference_frame``) -> ``frames.payload``: the identity."""
    link = TransformStamped(
        header=Header(stamp=stamp, frame_id=reference_frame),
        child_frame_id=frames.payload,
        transform=to_transform(np.eye(4)),
    )
    return TFMessage(transforms=[link])


def payload_transforms(estimate: TeamEstimate, frames: PayloadFrames) -> TFMessage:
    """``frames.payload`` -> each robot's estimated grasp frame (grasps valid) and -> the
    principal axes at the CoM (inertia valid), stamped with the estimate."""
    header = Header(stamp=to_time(max(estimate.stamp, 0.0)), frame_id=frames.payload)
    transforms = []
    if estimate.grasps_valid:
        transforms += [
            TransformStamped(
                header=header,
                child_frame_id=frames.grasp_of(g.robot_id),
                transform=to_transform(g.T_s_i),
            )
            for g in estimate.grasps
        ]
    if estimate.inertia_valid:
        T_s_c = sp.transform(estimate.R_s_c, estimate.p_s_c)
        transforms.append(
            TransformStamped(
                header=header, child_frame_id=frames.principal_axes, transform=to_transform(T_s_c)
            )
        )
    return TFMessage(transforms=transforms)


def equivalent_box(mass: float, principal_moments: np.ndarray) -> np.ndarray:
    """Sides of the uniform box with this mass and these principal moments: for side a along
    the first axis, I_1 = m (b^2 + c^2) / 12, so a^2 = 6 (I_2 + I_3 - I_1) / m."""
    total = np.sum(principal_moments)
    squares = 6.0 * (total - 2.0 * np.asarray(principal_moments)) / mass
    return np.maximum(np.sqrt(np.clip(squares, 0.0, None)), MIN_BOX_SIDE)


def _color(rgb: tuple[float, float, float], alpha: float = 1.0) -> ColorRGBA:
    return ColorRGBA(r=rgb[0], g=rgb[1], b=rgb[2], a=alpha)


def _point(x: np.ndarray) -> Point:
    return Point(x=float(x[0]), y=float(x[1]), z=float(x[2]))


def _std(variance: float) -> float:
    return float(np.sqrt(max(variance, 0.0)))


def estimate_text(estimate: TeamEstimate) -> str:
    """Mass, CoM and principal moments with their 1-sigma bounds, or what is still missing."""
    lines = [f"stage {estimate.stage.name}"]
    if estimate.mass_valid:
        lines.append(f"m = {estimate.mass:.3f} +- {_std(estimate.mass_variance):.3f} kg")
    if estimate.com_valid:
        c, sigma = estimate.p_s_c, np.sqrt(np.clip(np.diag(estimate.p_s_c_covariance), 0, None))
        lines.append(
            "CoM = ("
            + ", ".join(f"{x:.3f} +- {s:.3f}" for x, s in zip(c, sigma, strict=True))
            + ") m"
        )
    if estimate.inertia_valid:
        moments = estimate.principal_moments
        sigma = np.sqrt(np.clip(np.diag(estimate.principal_moments_covariance), 0, None))
        lines.append(
            "I = ("
            + ", ".join(f"{x:.3f} +- {s:.3f}" for x, s in zip(moments, sigma, strict=True))
            + ") kg m^2"
        )
    if estimate.advice:
        lines.append(estimate.advice[0])
    return "\n".join(lines)


def payload_markers(
    estimate: TeamEstimate,
    frame_of: Callable[[str], str],
    latest: Mapping[str, GraspSample],
    force_scale: float,
) -> MarkerArray:
    """Markers of the estimate in {s}; ``latest`` holds each robot's newest sample (forces)."""
    header = Header(
        stamp=to_time(max(estimate.stamp, 0.0)), frame_id=frame_of(estimate.reference_robot_id)
    )
    markers = [Marker(header=header, action=Marker.DELETEALL)]

    def add(ns: str, kind: int, **fields: object) -> Marker:
        marker = Marker(header=header, ns=ns, id=len(markers), type=kind, action=Marker.ADD)
        for name, value in fields.items():
            setattr(marker, name, value)
        marker.pose.orientation.w = marker.pose.orientation.w or 1.0
        markers.append(marker)
        return marker

    if estimate.com_valid:
        add(
            "com",
            Marker.SPHERE,
            pose=to_pose(sp.transform(np.eye(3), estimate.p_s_c)),
            scale=Vector3(x=0.05, y=0.05, z=0.05),
            color=_color((1.0, 0.6, 0.0)),
        )
    if estimate.inertia_valid:
        sides = equivalent_box(estimate.mass, estimate.principal_moments)
        add(
            "inertia box",
            Marker.CUBE,
            pose=to_pose(sp.transform(estimate.R_s_c, estimate.p_s_c)),
            scale=Vector3(x=float(sides[0]), y=float(sides[1]), z=float(sides[2])),
            color=_color((0.3, 0.6, 1.0), 0.35),
        )
    if estimate.grasps_valid:
        for grasp in estimate.grasps:
            _grasp_markers(
                add, grasp.robot_id, grasp.T_s_i, latest.get(grasp.robot_id), force_scale
            )
    anchor = estimate.p_s_c if estimate.com_valid else np.zeros(3)
    add(
        "text",
        Marker.TEXT_VIEW_FACING,
        pose=to_pose(sp.transform(np.eye(3), anchor + [0.0, 0.0, 0.3])),
        scale=Vector3(z=0.05),
        color=_color((1.0, 1.0, 1.0)),
        text=estimate_text(estimate),
    )
    return MarkerArray(markers=markers)


def _grasp_markers(
    add: Callable[..., Marker],
    robot_id: str,
    T_s_i: np.ndarray,
    sample: GraspSample | None,
    force_scale: float,
) -> None:
    """A triad at the grasp frame and an arrow of the robot's latest force on the payload."""
    origin = T_s_i[:3, 3]
    points, colors = [], []
    for axis, rgb in zip(T_s_i[:3, :3].T, AXIS_COLORS, strict=True):
        points += [_point(origin), _point(origin + TRIAD_LENGTH * axis)]
        colors += [_color(rgb), _color(rgb)]
    add(f"grasp {robot_id}", Marker.LINE_LIST, scale=Vector3(x=0.01), points=points, colors=colors)
    if sample is None or not sample.has_force or not np.all(np.isfinite(sample.F_i[3:])):
        return
    f_s = T_s_i[:3, :3] @ sample.F_i[3:]
    add(
        f"force {robot_id}",
        Marker.ARROW,
        points=[_point(origin), _point(origin + force_scale * f_s)],
        scale=Vector3(x=0.015, y=0.03, z=0.04),
        color=_color((1.0, 0.9, 0.1)),
    )
