"""An aerial run as ROS 2 topics and its rosbag2 (log times = simulation times).

Per robot ``<id>`` (``robot_1`` ...), what mocap and the flight controller publish:

* ``/<id>/mocap/pose`` (``geometry_msgs/PoseStamped``, ``world``) and ``/<id>/mocap/twist``
  (``geometry_msgs/TwistStamped``, ``world``: linear and angular velocity in the world frame);
* ``/<id>/rotor_speeds`` (``sensor_msgs/JointState``: ``rotor_1..4`` velocities in rad/s,
  from the ESCs, noisy and quantised);

the payload's ``/payload/mocap/pose`` and ``/payload/mocap/twist`` (same forms), the human's
head ``/human/head`` (``geometry_msgs/PointStamped``, if the scenario has one) and ``/clock``.
Ground truth, for evaluation only: ``/ground_truth/payload_pose``, ``/ground_truth/payload_twist``,
``/ground_truth/<id>/pose``, ``/ground_truth/<id>/cable_tension``
(``geometry_msgs/Vector3Stamped``, ``world``: the tension vector on the payload, mu_k =
-|mu_k| xi_k; zero when slack), ``/ground_truth/human_wrench`` (``WrenchStamped`` in
``payload``: force and moment about the payload's CoM, both in the payload frame, like the
ground scenarios' human wrench), ``/ground_truth/human_head`` and
``/ground_truth/aerial_markers`` (``visualization_msgs/MarkerArray`` at 10 Hz: cables grey
when taut and red when slack, tension arrows, the human's force and head; ``rviz/aerial.rviz``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from geometry_msgs.msg import (
    Point,
    PointStamped,
    PoseStamped,
    TwistStamped,
    Vector3Stamped,
    WrenchStamped,
)
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from ...bags import write_bag
from ...core.spatial import transform
from ...ros.aerial_visualization import aerial_markers
from ...ros.conversions import to_pose, to_time, to_twist, to_vector3, to_wrench
from .runner import AerialResult

Stream = Iterator[tuple[str, str, int, Any]]
POSE, TWIST = "geometry_msgs/msg/PoseStamped", "geometry_msgs/msg/TwistStamped"
RPM_TO_RAD_S = 2.0 * np.pi / 60.0
MARKERS = "/ground_truth/aerial_markers"
MARKER_EVERY = 10  # samples: 10 Hz at the 100 Hz control rate


def _ns(t: float) -> int:
    return int(round(t * 1e9))


def _header(t: float, frame: str) -> Header:
    return Header(stamp=to_time(t), frame_id=frame)


def _poses(topic: str, times: np.ndarray, x: np.ndarray, R: np.ndarray) -> Stream:
    for t, p, r in zip(times, x, R, strict=True):
        yield (
            topic,
            POSE,
            _ns(t),
            PoseStamped(header=_header(t, "world"), pose=to_pose(transform(r, p))),
        )


def _twists(
    topic: str, times: np.ndarray, v: np.ndarray, R: np.ndarray, Omega: np.ndarray
) -> Stream:
    for t, lin, r, w in zip(times, v, R, Omega, strict=True):
        twist = to_twist(np.concatenate([r @ w, lin]))  # angular first (core/spatial.py)
        yield topic, TWIST, _ns(t), TwistStamped(header=_header(t, "world"), twist=twist)


def _rotor_speeds(topic: str, times: np.ndarray, rpm: np.ndarray) -> Stream:
    names = [f"rotor_{i + 1}" for i in range(4)]
    for t, speeds in zip(times, rpm, strict=True):
        msg = JointState(
            header=_header(t, ""), name=names, velocity=(speeds * RPM_TO_RAD_S).tolist()
        )
        yield topic, "sensor_msgs/msg/JointState", _ns(t), msg


def _points(topic: str, times: np.ndarray, points: np.ndarray) -> Stream:
    for t, p in zip(times, points, strict=True):
        if np.all(np.isfinite(p)):
            msg = PointStamped(header=_header(t, "world"), point=Point(x=p[0], y=p[1], z=p[2]))
            yield topic, "geometry_msgs/msg/PointStamped", _ns(t), msg


def _tensions(topic: str, times: np.ndarray, mu: np.ndarray) -> Stream:
    for t, m in zip(times, mu, strict=True):
        msg = Vector3Stamped(header=_header(t, "world"), vector=to_vector3(m))
        yield topic, "geometry_msgs/msg/Vector3Stamped", _ns(t), msg


def _human(times: np.ndarray, result: AerialResult) -> Stream:
    for q, t in enumerate(times):
        F, M = result.human_wrench[q, :3], result.human_wrench[q, 3:]
        wrench = np.concatenate([M, result.payload_R[q].T @ F])  # moment first, in {payload}
        msg = WrenchStamped(header=_header(t, "payload"), wrench=to_wrench(wrench))
        yield "/ground_truth/human_wrench", "geometry_msgs/msg/WrenchStamped", _ns(t), msg


def _markers(result: AerialResult, mu: np.ndarray) -> Stream:
    """RViz markers (cables, tensions, human force, head) at every MARKER_EVERY-th sample."""
    attach = result.payload_x[:, None] + np.einsum(
        "qij,kj->qki", result.payload_R, result.attach_points
    )
    slack = result.slack()
    for q in range(0, len(result.time), MARKER_EVERY):
        t = float(result.time[q])
        msg = aerial_markers(
            t,
            attach[q],
            result.robot_x[q],
            mu[q],
            slack[q],
            result.human_wrench[q, :3],
            result.payload_x[q],
            result.head[q],
        )
        yield MARKERS, "visualization_msgs/msg/MarkerArray", _ns(t), msg


def aerial_streams(result: AerialResult, ground_truth: bool = True) -> list[Stream]:
    r, t = result, result.time
    mu = -r.tension[:, :, None] * r.xi()  # tension vectors on the payload
    streams: list[Stream] = [
        (("/clock", "rosgraph_msgs/msg/Clock", _ns(s), Clock(clock=to_time(s))) for s in t),
        _poses("/payload/mocap/pose", t, r.mocap_payload_x, r.mocap_payload_R),
        _twists(
            "/payload/mocap/twist", t, r.mocap_payload_v, r.mocap_payload_R, r.mocap_payload_Omega
        ),
        _points("/human/head", t, r.mocap_head),
    ]
    for k, rid in enumerate(r.robot_ids):
        streams += [
            _poses(f"/{rid}/mocap/pose", t, r.mocap_robot_x[:, k], r.mocap_robot_R[:, k]),
            _twists(
                f"/{rid}/mocap/twist",
                t,
                r.mocap_robot_v[:, k],
                r.mocap_robot_R[:, k],
                r.mocap_robot_Omega[:, k],
            ),
            _rotor_speeds(f"/{rid}/rotor_speeds", t, r.rotor_rpm[:, k]),
        ]
        if ground_truth:
            streams += [
                _poses(f"/ground_truth/{rid}/pose", t, r.robot_x[:, k], r.robot_R[:, k]),
                _tensions(f"/ground_truth/{rid}/cable_tension", t, mu[:, k]),
            ]
    if ground_truth:
        streams += [
            _poses("/ground_truth/payload_pose", t, r.payload_x, r.payload_R),
            _twists("/ground_truth/payload_twist", t, r.payload_v, r.payload_R, r.payload_Omega),
            _human(t, r),
            _points("/ground_truth/human_head", t, r.head),
            _markers(r, mu),
        ]
    return streams


def _everything(topic: str) -> bool:
    return True


def sample_streams(
    result: AerialResult, ground_truth: bool = True, include: Callable[[str], bool] = _everything
) -> list[Stream]:
    """The streams of a run or a chunk of one, restricted to the topics ``include`` accepts
    (the same interface as ``sim/topics.py``, for ``sim_node``)."""
    return [_only(stream, include) for stream in aerial_streams(result, ground_truth)]


def _only(stream: Stream, include: Callable[[str], bool]) -> Stream:
    for item in stream:
        if include(item[0]):
            yield item


def topic_types(result: AerialResult, ground_truth: bool = True) -> dict[str, str]:
    """Every topic a run publishes and its type (the head's only if the scenario has one)."""
    types = {
        "/clock": "rosgraph_msgs/msg/Clock",
        "/payload/mocap/pose": POSE,
        "/payload/mocap/twist": TWIST,
        "/human/head": "geometry_msgs/msg/PointStamped",
    }
    for rid in result.robot_ids:
        types |= {
            f"/{rid}/mocap/pose": POSE,
            f"/{rid}/mocap/twist": TWIST,
            f"/{rid}/rotor_speeds": "sensor_msgs/msg/JointState",
        }
        if ground_truth:
            types |= {
                f"/ground_truth/{rid}/pose": POSE,
                f"/ground_truth/{rid}/cable_tension": "geometry_msgs/msg/Vector3Stamped",
            }
    if ground_truth:
        types |= {
            "/ground_truth/payload_pose": POSE,
            "/ground_truth/payload_twist": TWIST,
            "/ground_truth/human_wrench": "geometry_msgs/msg/WrenchStamped",
            "/ground_truth/human_head": "geometry_msgs/msg/PointStamped",
            MARKERS: "visualization_msgs/msg/MarkerArray",
        }
    return types


def latched_topics(result: AerialResult) -> list[str]:
    """None: an aerial run has no latched topics."""
    return []


def latched_streams(result: AerialResult, ground_truth: bool = True) -> list[Stream]:
    return []


def message_count(result: AerialResult, ground_truth: bool = True) -> int:
    n, q = len(result.robot_ids), len(result.time)
    heads = int(np.all(np.isfinite(result.head), axis=1).sum())
    markers = len(range(0, q, MARKER_EVERY))
    return q * (3 + 3 * n) + heads + (q * (2 * n + 3) + heads + markers if ground_truth else 0)


def write_aerial_bag(
    result: AerialResult,
    path: str | Path,
    storage: str = "mcap",
    ground_truth: bool = True,
    progress: Any = None,
) -> Path:
    streams = aerial_streams(result, ground_truth)
    if progress is not None:
        streams = [_counted(s, progress) for s in streams]
    return write_bag(path, streams, storage)


def _counted(stream: Stream, progress: Any) -> Stream:
    for item in stream:
        progress(1)
        yield item
