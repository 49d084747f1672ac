"""Hot-path messages as serialized bytes: ``robot_node``'s 100-Hz outputs, the planner's
reference and the coordinator's external wrench without rclpy's Python message objects
(issue 14).

rclpy builds a message as Python objects (a GraspState is two dozen of them, every field
checked as it is set) and converts them to C to serialize them: about 0.5 ms of CPU per
GraspState on the loaded test machine, more than computing the sample. A publisher also takes
serialized bytes (``Publisher.publish(bytes)``) and a subscription made with ``raw=True``
hands them over. A message whose strings do not change (a robot's frames) has a fixed layout
(CDR): rclpy serializes it once as a template, and each message is that template with its
stamp and its numbers written in with ``struct``. Every layout checks itself against rclpy's
serialization of the same message (``conversions``) when it is made; where they differ
(another RMW's encoding) it is not usable (``usable`` false) and callers publish messages.
``HeaderReader`` reads received messages that begin with a header (``planner_node``'s
ExternalWrench, GraspState and PoseStamped inputs) the same way, checked against the message
path likewise, with rclpy's deserialization for bytes of another encoding.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from rclpy.serialization import deserialize_message, serialize_message
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState

from ..core.collaboration.human_wrench import ExternalWrenchEstimate
from ..core.samples import GraspSample
from ..core.spatial import quaternion
from ..msg import ExternalWrench, GraspState
from .conversions import SWAP_AXES, sec_nanosec, seconds, to_external_wrench, to_grasp_state
from .grasp_layout import (
    CDR_LITTLE_ENDIAN,
    DOUBLES,
    ENCAPSULATION,
    FLAGS,
    GraspStateOffsets,
    aligned,
    strings,
)

_STAMP = struct.Struct("=iI")  # header.stamp (sec, nanosec): a stamped message's first field
STAMP = slice(ENCAPSULATION, ENCAPSULATION + _STAMP.size)


def pose_values(T: np.ndarray) -> tuple[float, ...]:
    """A geometry_msgs/Pose's seven numbers (position, orientation x y z w) of T, as
    ``conversions.to_pose`` gives them."""
    p = T[:3, 3].tolist()
    return (*p, *quaternion(T[:3, :3]))


class _Point(NamedTuple):
    x: float
    y: float
    z: float


class _Quaternion(NamedTuple):
    x: float
    y: float
    z: float
    w: float


class PoseFields(NamedTuple):
    """A geometry_msgs/Pose read from its seven numbers, with the message's field names (for
    ``conversions.pose_matrix``) and no message object."""

    position: _Point
    orientation: _Quaternion

    @classmethod
    def of(cls, numbers: Sequence[float]) -> PoseFields:
        return cls(_Point(*numbers[:3]), _Quaternion(*numbers[3:7]))


def stamp_bytes(t: float) -> bytes:
    """header.stamp of t seconds as CDR bytes: ``conversions.to_time``'s sec and nanosec,
    without its message object (~10 us of a hot path's ~50)."""
    return _STAMP.pack(*sec_nanosec(t))


class StampedLayout:
    """A stamped message of one frame id whose last fields are ``count`` float64: PoseStamped
    (7: position, orientation), TwistStamped (6: linear, angular), WrenchStamped (6: force,
    torque). ``prototype``: the message with its frame id (numbers and stamp are written in)."""

    def __init__(self, prototype: object, count: int) -> None:
        self.template = serialize_message(prototype)
        self.numbers = struct.Struct(f"={count}d")
        self.offset = len(self.template) - self.numbers.size
        self.usable = self._checks(prototype)

    def encode(self, stamp: bytes, numbers: Sequence[float]) -> bytes:
        """The message at ``stamp`` (``stamp_bytes``, or a received message's ``STAMP``)."""
        t = self.template
        return t[: STAMP.start] + stamp + t[STAMP.stop : self.offset] + self.numbers.pack(*numbers)

    def read(self, raw: bytes) -> tuple[float, ...] | None:
        """The numbers of a received message of this type (any frame id); None if it is not
        encoded as this layout's template (another representation or byte order)."""
        if raw[:2] != self.template[:2] or (len(raw) - ENCAPSULATION) % 8:
            return None
        return self.numbers.unpack_from(raw, len(raw) - self.numbers.size)

    def renumbered(self, raw: bytes, numbers: Sequence[float]) -> bytes:
        """A received message (``read`` not None) with other numbers: its header as it came."""
        return raw[: len(raw) - self.numbers.size] + self.numbers.pack(*numbers)

    def _checks(self, prototype: object) -> bool:
        numbers = [0.5 + k for k in range(self.numbers.size // 8)]
        message = type(prototype)()
        message.header.frame_id = prototype.header.frame_id
        message.header.stamp = Time(sec=1234, nanosec=5678)
        fields = operator.attrgetter(*_TAIL_FIELDS[type(prototype).__name__])(message)
        values = iter(numbers)
        for field in fields:
            for axis in ("x", "y", "z", "w")[: 4 if hasattr(field, "w") else 3]:
                setattr(field, axis, next(values))
        encoded = self.encode(_STAMP.pack(1234, 5678), numbers)
        return deserialize_message(encoded, type(message)) == message and self.read(
            serialize_message(message)
        ) == tuple(numbers)


# The trailing fields of each stamped type, in order (the layout's numbers).
_TAIL_FIELDS = {
    "PoseStamped": ("pose.position", "pose.orientation"),
    "TwistStamped": ("twist.linear", "twist.angular"),
    "WrenchStamped": ("wrench.force", "wrench.torque"),
}


class ExternalWrenchLayout:
    """The coordinator's ExternalWrench of one frame id (``method`` "model", not degraded,
    no dead band: what ``conversions.to_external_wrench`` makes of a ground team's estimate),
    its stamp and fixed fields written into a template: the message rclpy would serialize
    (its padding zeros), without its ~20 Python message objects. ``usable`` is false where
    the two differ (another encoding); ``encode`` is then rclpy's serialization."""

    # center, wrench (force, torque), covariance (36), observable (6), padding to 8,
    # dead_banded (force, torque), dead_band_force, dead_band_moment, contact
    _FIELDS = struct.Struct("=45d6?2x8d?")
    # the covariance's 36 entries in ROS order (linear first) of a core (angular first) 6x6
    _COVARIANCE = (SWAP_AXES[:, None] * 6 + SWAP_AXES).ravel()

    def __init__(self, frame_id: str) -> None:
        self.frame_id = frame_id
        checks = _check_wrenches()
        self.template = serialize_message(to_external_wrench(checks[0], frame_id))
        (length,) = struct.unpack_from("=I", self.template, STAMP.stop)
        self.offset = aligned(STAMP.stop + 4 + length, 8)
        self.usable = self.template[:2] == CDR_LITTLE_ENDIAN and all(
            deserialize_message(self._encode(e), ExternalWrench) == to_external_wrench(e, frame_id)
            for e in checks
        )

    def encode(self, estimate: ExternalWrenchEstimate) -> bytes:
        """``serialize_message(to_external_wrench(estimate, frame_id))``."""
        if not self.usable:
            return serialize_message(to_external_wrench(estimate, self.frame_id))
        return self._encode(estimate)

    def _encode(self, estimate: ExternalWrenchEstimate) -> bytes:
        m, f = estimate.wrench[:3].tolist(), estimate.wrench[3:].tolist()
        wrench = (*f, *m)
        fields = self._FIELDS.pack(
            *estimate.p_s_c.tolist(),
            *wrench,
            *np.asarray(estimate.covariance, dtype=float).ravel()[self._COVARIANCE].tolist(),
            *np.asarray(estimate.observable)[SWAP_AXES].tolist(),
            *wrench,
            0.0,
            0.0,
            estimate.contact(),
        )
        t, end = self.template, self.offset + self._FIELDS.size
        return (
            t[: STAMP.start]
            + stamp_bytes(max(estimate.stamp, 0.0))
            + t[STAMP.stop : self.offset]
            + fields
            + t[end:]
        )


def _check_wrenches() -> list[ExternalWrenchEstimate]:
    """Estimates whose every field differs from a message's defaults: no contact, some
    components unobservable and a stamp of 1e9 s, none observable and a negative stamp (0
    in the message, as ``to_external_wrench`` writes it)."""
    rng = np.random.default_rng(0)
    checks = []
    for stamp, observable, scale in (
        (12.25, [True] * 6, 1e-3),
        (1e9 + 0.999999999, [True, False, True, True, True, False], 100.0),
        (-3.0, [False] * 6, 5.0),
    ):
        A = rng.normal(size=(6, 6))
        checks.append(
            ExternalWrenchEstimate(
                stamp,
                scale * rng.normal(size=6),
                A @ A.T + 1e-3 * np.eye(6),
                rng.normal(size=3),
                np.array(observable),
                np.empty((0, 6)),
            )
        )
    return checks


class GraspStateLayout:
    """One robot's GraspState (its robot id, grasp and home frame ids) without covariances."""

    # ``grasp_layout.GRASP_STATE_NUMBERS`` (pose, twist, twist derivative, wrench, gravity),
    # then ``GRASP_STATE_FLAGS``: the layout the coordinator and the bag reader read
    _NUMBERS = struct.Struct(f"<{DOUBLES}d{FLAGS}?")

    def __init__(self, robot_id: str, frame_id: str, home_frame_id: str) -> None:
        self.frames = frame_id, home_frame_id
        prototype = GraspState(robot_id=robot_id, home_frame_id=home_frame_id)
        prototype.header.frame_id = frame_id
        self.template = serialize_message(prototype)
        self.offset = GraspStateOffsets.after_strings(strings(self.template)[0]).numbers
        self.usable = self.template[:2] == CDR_LITTLE_ENDIAN and all(
            deserialize_message(self.encode(sample), GraspState)
            == to_grasp_state(sample, *self.frames)
            for sample in _check_samples(robot_id)
        )

    def encode(self, sample: GraspSample) -> bytes | None:
        """The sample as ``conversions.to_grasp_state`` gives it, serialized; None for a sample
        with covariances (not this layout)."""
        if sample.V_cov is not None or sample.dV_cov is not None or sample.F_cov is not None:
            return None
        T, V, dV = sample.T_i0_i, sample.V_i.tolist(), sample.dV_i.tolist()
        F, g = sample.F_i.tolist(), None if sample.g_i is None else sample.g_i.tolist()
        has_pose = bool(np.isfinite(T).all())
        has_twist, has_derivative = _finite(V), _finite(dV)
        has_gravity = g is not None and _finite(g)
        flags = (
            has_pose,
            has_twist,
            has_derivative,
            bool(sample.has_force) and _finite(F[3:]),
            bool(sample.has_torque) and _finite(F[:3]),
            has_gravity,
        )
        wrench = [x if math.isfinite(x) else 0.0 for x in F]
        numbers = (
            *(pose_values(T) if has_pose else _NO_POSE),
            *(V[3:] + V[:3] if has_twist else _ZEROS6),
            *(dV[3:] + dV[:3] if has_derivative else _ZEROS6),
            *wrench[3:],
            *wrench[:3],
            *(g if has_gravity else _ZEROS3),
        )
        t = self.template
        end = self.offset + self._NUMBERS.size
        return (
            t[: STAMP.start]
            + stamp_bytes(sample.stamp)
            + t[STAMP.stop : self.offset]
            + self._NUMBERS.pack(*numbers, *flags)
            + t[end:]
        )


_NO_POSE = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)  # geometry_msgs/Pose's defaults
_ZEROS6, _ZEROS3 = (0.0,) * 6, (0.0,) * 3


def _finite(values: list[float]) -> bool:
    return all(math.isfinite(x) for x in values)


def _check_samples(robot_id: str) -> list[GraspSample]:
    """Samples that set every field and flag of GraspState one way or the other."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec([0.3, -0.2, 0.1]).as_matrix()
    T[:3, 3] = [0.1, 0.2, 0.3]
    values = np.linspace(-1.0, 1.0, 6)
    nan = np.full(6, np.nan)
    full = GraspSample(robot_id, 12.5, T, values, 2 * values, 3 * values, values[:3])
    partial = GraspSample(
        robot_id,
        13.000000001,
        np.full((4, 4), np.nan),
        nan,
        nan,
        np.r_[np.nan, np.nan, np.nan, 1.0, 2.0, 3.0],
        None,
        has_torque=False,
    )
    return [full, partial]


class JointStateFields(NamedTuple):
    """What robot_node takes of a sensor_msgs/JointState."""

    sec: int
    nanosec: int
    names: list[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class JointStateReader:
    """Reads serialized sensor_msgs/JointState (a ``raw`` subscription's bytes) without a
    message object; the names list is reused while the names stay the same."""

    _COUNT = struct.Struct("=I")

    def __init__(self) -> None:
        self._names_bytes, self._names = b"", []
        self.encoding = serialize_message(JointState())[:2]
        check = JointState(name=["a", "bc", "joint_3"], position=[1.0, 2.0, 3.0])
        check.velocity, check.effort = [4.0, 5.0, 6.0], [7.0]
        check.header.stamp, check.header.frame_id = Time(sec=3, nanosec=4), "base"
        self.usable = _same_joint_state(self.read(serialize_message(check)), check)

    def read(self, raw: bytes) -> JointStateFields | None:
        """The fields of a message in this RMW's encoding with positions and velocities (CDR
        aligns an empty float64 sequence differently across implementations); else None."""
        if raw[:2] != self.encoding:
            return None
        sec, nanosec = _STAMP.unpack_from(raw, ENCAPSULATION)
        at = self._string_end(raw, STAMP.stop)  # header.frame_id
        names_start, count = aligned(at, 4), self._COUNT.unpack_from(raw, aligned(at, 4))[0]
        at = names_start + 4
        for _ in range(count):
            at = self._string_end(raw, aligned(at, 4))
        if raw[names_start:at] != self._names_bytes:
            self._names_bytes = raw[names_start:at]
            self._names = self._string_list(raw, names_start + 4, count)
        arrays = []
        for field in range(3):
            at = aligned(at, 4)
            (length,) = self._COUNT.unpack_from(raw, at)
            at += 4
            if length == 0 and field < 2:
                return None
            if length:
                at = aligned(at, 8)
            arrays.append(np.frombuffer(raw, dtype=np.float64, count=length, offset=at))
            at += 8 * length
        return JointStateFields(sec, nanosec, self._names, *arrays)

    def _string_end(self, raw: bytes, at: int) -> int:
        (length,) = self._COUNT.unpack_from(raw, at)
        return at + 4 + length

    def _string_list(self, raw: bytes, at: int, count: int) -> list[str]:
        names = []
        for _ in range(count):
            at = aligned(at, 4)
            (length,) = self._COUNT.unpack_from(raw, at)
            names.append(raw[at + 4 : at + 3 + length].decode())
            at += 4 + length
        return names


def _same_joint_state(fields: JointStateFields | None, msg: JointState) -> bool:
    return fields is not None and (
        (fields.sec, fields.nanosec, fields.names)
        == (msg.header.stamp.sec, msg.header.stamp.nanosec, list(msg.name))
        and all(
            np.array_equal(a, b)
            for a, b in zip(fields[3:], (msg.position, msg.velocity, msg.effort), strict=True)
        )
    )


class HeaderFields(NamedTuple):
    """What ``HeaderReader`` reads of a message: its stamp, its leading strings and the fixed
    fields after them."""

    stamp: float  # header.stamp [s], as ``conversions.seconds``
    strings: tuple[str, ...]  # header.frame_id, then the message's next strings
    numbers: tuple  # the fixed fields after the strings (the reader's ``layout``)


class HeaderReader:
    """Reads serialized messages (a ``raw`` subscription's bytes) that begin with a
    std_msgs/Header, ``strings`` more strings and fixed fields (``layout``, a struct format
    of float64 and bool, aligned as its first float64), without a message object: the
    planner's inputs (ExternalWrench, GraspState, PoseStamped). ``fields`` reads the same of
    a message: the reader checks itself against it on ``checks`` (messages whose strings
    differ in length, so in alignment) and falls back to it, through rclpy's deserialization,
    for bytes of another encoding. The strings are decoded again only when their bytes
    change."""

    _COUNT = struct.Struct("=I")

    def __init__(
        self,
        message_type: type,
        strings: int,
        layout: str,
        fields: Callable[[object], HeaderFields],
        checks: Sequence[object],
    ) -> None:
        self.type, self.count, self.fields = message_type, strings + 1, fields
        self.layout = struct.Struct("=" + layout)
        self.encoding = serialize_message(message_type())[:2]
        self._strings_bytes, self._strings = b"", ()
        self.usable = all(self._read(serialize_message(m)) == fields(m) for m in checks)

    def read(self, raw: bytes) -> HeaderFields:
        """The fields of a received message (of any encoding)."""
        fields = self._read(raw) if self.usable else None
        return self.fields(deserialize_message(raw, self.type)) if fields is None else fields

    def _read(self, raw: bytes) -> HeaderFields | None:
        """The fields of a message in this RMW's encoding; else None."""
        if raw[:2] != self.encoding:
            return None
        sec, nanosec = _STAMP.unpack_from(raw, ENCAPSULATION)
        at = STAMP.stop
        for _ in range(self.count):
            at = aligned(at, 4)
            at += 4 + self._COUNT.unpack_from(raw, at)[0]
        if raw[STAMP.stop : at] != self._strings_bytes:
            self._strings_bytes = raw[STAMP.stop : at]
            self._strings = self._decoded(raw, self.count)
        numbers = self.layout.unpack_from(raw, aligned(at, 8))
        return HeaderFields(sec + 1e-9 * nanosec, self._strings, numbers)

    def _decoded(self, raw: bytes, count: int) -> tuple[str, ...]:
        strings, at = [], STAMP.stop
        for _ in range(count):
            at = aligned(at, 4)
            (length,) = self._COUNT.unpack_from(raw, at)
            strings.append(raw[at + 4 : at + 3 + length].decode())
            at += 4 + length
        return tuple(strings)


def _vectors(*vectors: object) -> tuple[float, ...]:
    """The numbers of geometry_msgs Points, Vector3s and Quaternions, in order."""
    return tuple(
        getattr(v, axis)
        for v in vectors
        for axis in ("x", "y", "z", "w")[: 4 if hasattr(v, "w") else 3]
    )


def _external_wrench_fields(msg: ExternalWrench) -> HeaderFields:
    w = msg.wrench
    numbers = _vectors(msg.center, w.force, w.torque)
    return HeaderFields(seconds(msg.header.stamp), (msg.header.frame_id,), numbers)


def _grasp_state_fields(msg: GraspState) -> HeaderFields:
    strings = (msg.header.frame_id, msg.robot_id, msg.home_frame_id)
    numbers = (*_vectors(msg.pose.position, msg.pose.orientation), msg.has_pose)
    return HeaderFields(seconds(msg.header.stamp), strings, numbers)


def _pose_stamped_fields(msg: PoseStamped) -> HeaderFields:
    numbers = _vectors(msg.pose.position, msg.pose.orientation)
    return HeaderFields(seconds(msg.header.stamp), (msg.header.frame_id,), numbers)


def external_wrench_reader() -> HeaderReader:
    """ExternalWrench: numbers center (3), force (3), torque (3)."""
    checks = []
    for k, frame in enumerate(("", "s", "robot_1/grasp", "abcdefg")):
        msg = ExternalWrench()
        msg.header.stamp, msg.header.frame_id = Time(sec=100 + k, nanosec=7 * k + 1), frame
        msg.center.x, msg.center.y, msg.center.z = 0.1 * k, -0.2, 0.3
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = 1.0, -2.0 * k, 3.5
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = 0.25, 0.5, -0.75 * k
        msg.method, msg.degraded_reasons = "model", ["a reason"] * k
        checks.append(msg)
    return HeaderReader(ExternalWrench, 0, "9d", _external_wrench_fields, checks)


def grasp_state_reader() -> HeaderReader:
    """GraspState's pose: strings frame id, robot id, home frame id; numbers the pose (7:
    position, orientation x y z w) and has_pose."""
    checks = []
    for k, (robot, home) in enumerate((("r", ""), ("robot_1", "robot_1/home"), ("ab", "xyz"))):
        msg = GraspState(robot_id=robot, home_frame_id=home, has_pose=k != 1)
        msg.header.stamp, msg.header.frame_id = Time(sec=5, nanosec=999_999_999 - k), robot * k
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = 0.5, -1.5 * k, 2.0
        msg.pose.orientation.x, msg.pose.orientation.w = 0.6, 0.8
        msg.twist.linear.x, msg.wrench_covariance = 3.0, [1.0] * 36 * (k % 2)
        checks.append(msg)
    return HeaderReader(GraspState, 2, "7d168x?", _grasp_state_fields, checks)


def pose_stamped_reader() -> HeaderReader:
    """PoseStamped: numbers the pose (7: position, orientation x y z w)."""
    checks = []
    for k, frame in enumerate(("", "mocap", "payload_frame")):
        msg = PoseStamped()
        msg.header.stamp, msg.header.frame_id = Time(sec=k, nanosec=123 * k), frame
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = 1.5, -0.5 * k, 0.25
        msg.pose.orientation.y, msg.pose.orientation.w = -0.6, 0.8
        checks.append(msg)
    return HeaderReader(PoseStamped, 0, "7d", _pose_stamped_fields, checks)
