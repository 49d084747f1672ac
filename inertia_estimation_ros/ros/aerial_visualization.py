"""RViz markers of an aerial team (paper 002), in ``world``: each cable as a line (grey
when taut, red when slack), each cable's tension on the payload as an arrow from its attach
point, the human's force as an arrow at the payload's centre and the head as a sphere."""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import Point, Pose, Vector3
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from .conversions import to_time

NEWTON = 0.25  # [m] of arrow per newton


def _point(x: np.ndarray) -> Point:
    return Point(x=float(x[0]), y=float(x[1]), z=float(x[2]))


def _color(r: float, g: float, b: float, a: float = 1.0) -> ColorRGBA:
    return ColorRGBA(r=r, g=g, b=b, a=a)


def aerial_markers(
    stamp: float,
    attach: np.ndarray,
    robots: np.ndarray,
    tension: np.ndarray,
    slack: np.ndarray,
    human_force: np.ndarray,
    payload_x: np.ndarray,
    head: np.ndarray | None,
) -> MarkerArray:
    """The markers of one instant: ``attach`` and ``robots`` (n, 3) positions, ``tension``
    (n, 3) tension vectors on the payload [N], ``slack`` (n,), the human's force [N] at the
    payload's position ``payload_x`` and the head (None: none)."""
    header = Header(stamp=to_time(stamp), frame_id="world")
    markers: list[Marker] = []

    def add(ns: str, kind: int, **fields: object) -> None:
        markers.append(
            Marker(header=header, ns=ns, id=len(markers), type=kind, action=Marker.ADD, **fields)
        )

    cables = [_point(p) for pair in zip(robots, attach, strict=True) for p in pair]
    colors = [_color(0.9, 0.1, 0.1) if s else _color(0.3, 0.3, 0.3) for s in slack for _ in (0, 1)]
    add("cables", Marker.LINE_LIST, points=cables, colors=colors, scale=Vector3(x=0.01))
    arrow = Vector3(x=0.015, y=0.03, z=0.04)
    for p, mu in zip(attach, tension, strict=True):
        tip = [_point(p), _point(p + NEWTON * mu)]
        add("tensions", Marker.ARROW, points=tip, scale=arrow, color=_color(1.0, 0.6, 0.0))
    if np.linalg.norm(human_force) > 1e-6:
        tip = [_point(payload_x), _point(payload_x + NEWTON * human_force)]
        add("human_force", Marker.ARROW, points=tip, scale=arrow, color=_color(0.1, 0.4, 1.0))
    if head is not None and np.all(np.isfinite(head)):
        add(
            "head",
            Marker.SPHERE,
            pose=Pose(position=_point(head)),
            scale=Vector3(x=0.2, y=0.2, z=0.25),
            color=_color(1.0, 0.8, 0.6, 0.8),
        )
    return MarkerArray(markers=markers)
