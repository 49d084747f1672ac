"""The one home of the grasp messages' CDR layouts (little-endian CDR, as FastDDS and rclpy
write it): where ``GraspState``'s and ``GraspStateArray``'s fields lie in their bytes.
``serialized.GraspStateLayout`` writes GraspState with it (robot_node), ``bag_grasps`` and
``ingest`` read both messages with it (bags, the coordinator's raw subscriptions), so the
writer and the readers cannot drift apart.

A ``RawLayout`` is what one message's bytes say about every message of the same length and
the same *fixed* bytes (encapsulation, strings, array lengths, flags): the offsets of its
fields. Messages of one layout are read together as rows of one (M, length) byte array
(``read_rows``): one numpy operation per field whatever M.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property
from types import SimpleNamespace

import numpy as np

CDR_LITTLE_ENDIAN = b"\x00\x01"
ENCAPSULATION = 4  # bytes before the CDR payload: representation and options
SEC, NANOSEC = 4, 8  # header.stamp's offsets (a stamped message's first field)
STRINGS = 12  # where the header's frame id begins

# GraspState after its three strings (frame id, robot id, home frame id): the float64 of
# pose, twist, twist derivative, wrench (linear parts first, as geometry_msgs) and gravity,
# then the six has_* flags, then four covariance sequences (lengths 0 in this layout).
GRASP_STATE_NUMBERS = (
    ("position", 3),
    ("orientation", 4),
    ("twist", 6),
    ("twist_derivative", 6),
    ("wrench", 6),
    ("gravity", 3),
)
DOUBLES = sum(width for _, width in GRASP_STATE_NUMBERS)  # 28
GRASP_STATE_FLAGS = (
    "has_pose",
    "has_twist",
    "has_twist_derivative",
    "has_force",
    "has_torque",
    "has_gravity",
)
FLAGS = len(GRASP_STATE_FLAGS)
COVARIANCES = 4  # twist, twist derivative, wrench covariance sequences: their lengths

# GraspStateArray's sequences after its strings: (name, dtype, values per sample), in
# order; then has_force, has_torque, has_gravity.
ARRAY_FIELDS = (
    ("sec", np.dtype("<i4"), 1),
    ("nanosec", np.dtype("<u4"), 1),
    ("position", np.dtype("<f8"), 3),
    ("orientation", np.dtype("<f8"), 4),
    ("twist", np.dtype("<f8"), 6),
    ("twist_derivative", np.dtype("<f8"), 6),
    ("wrench", np.dtype("<f8"), 6),
    ("gravity", np.dtype("<f8"), 3),
)
ARRAY_FLAGS = ("has_force", "has_torque", "has_gravity")


def aligned(at: int, size: int) -> int:
    """The offset of a CDR field of ``size`` bytes at or after ``at`` (aligned in the
    payload, which begins after the encapsulation)."""
    return at + (-(at - ENCAPSULATION) % size)


def strings(raw: bytes, count: int = 3) -> tuple[int, list[str] | None]:
    """(the position after them, the header's frame id and the next ``count - 1`` strings) of
    a stamped message's CDR bytes; None for strings that are not UTF-8 or run past the end."""
    position, found = STRINGS, []
    for _ in range(count):
        position = aligned(position, 4)
        size = int.from_bytes(raw[position : position + 4], "little")
        if size == 0 or position + 4 + size > len(raw):
            return position, None
        try:
            found.append(raw[position + 4 : position + 3 + size].decode())
        except UnicodeDecodeError:
            return position, None
        position += 4 + size
    return position, found


@dataclass(frozen=True)
class GraspStateOffsets:
    """Where a GraspState's numbers, flags and covariance lengths begin."""

    numbers: int
    flags: int
    covariances: int

    @classmethod
    def after_strings(cls, position: int) -> GraspStateOffsets:
        numbers = aligned(position, 8)
        flags = numbers + 8 * DOUBLES
        return cls(numbers, flags, aligned(flags + FLAGS, 4))


@dataclass(frozen=True)
class RawLayout:
    """The fields of messages of one length, the same strings and the same other fixed
    bytes: ``fields`` (name, dtype, count, offset) of the samples' values (``count`` values
    for the one sample of a GraspState, ``width * K`` of a GraspStateArray), ``strings`` the
    bytes of the strings, ``fixed`` the other byte offsets that every message of the layout
    shares with ``template`` (its first message: encapsulation, array lengths, flags)."""

    robot_id: str
    frame_id: str
    length: int
    fields: tuple[tuple[str, np.dtype, int, int], ...]
    flags: tuple[bool, bool, bool]  # has_force, has_torque, has_gravity
    strings: bytes
    spans: tuple[tuple[int, int], ...]  # (start, stop) of the fixed bytes but the strings
    raw: bytes  # the first message's
    grasp_state: bool  # one sample per message, its quaternion checked per message

    @cached_property
    def fixed(self) -> np.ndarray:
        """The offsets of the fixed bytes but the strings."""
        return np.concatenate([np.arange(a, min(b, self.length)) for a, b in self.spans])

    @cached_property
    def template(self) -> np.ndarray:
        return np.frombuffer(self.raw, np.uint8)

    @property
    def shape(self) -> tuple:
        """What messages of several robots must share to be read as rows of one array."""
        return self.length, self.fields, self.flags, self.grasp_state

    def has(self, raw: bytes) -> bool:
        """Whether a message has this layout's length and strings (``same`` checks the rest)."""
        return len(raw) == self.length and raw[STRINGS : STRINGS + len(self.strings)] == (
            self.strings
        )

    def matches(self, raw: bytes) -> bool:
        """``has`` and ``same`` of one message, on its bytes."""
        if not self.has(raw) or any(raw[a:b] != self.raw[a:b] for a, b in self.spans):
            return False
        return not self.grasp_state or any(_QUATERNION.unpack_from(raw, self.fields[3][3]))

    def same(self, rows: np.ndarray) -> np.ndarray:
        """Per row of message bytes (M, length) with this layout's shape: whether its fixed
        bytes but the strings are this layout's (and, for a GraspState, its quaternion
        nonzero: a zero one is refused by name on the other path)."""
        ok = (rows[:, self.fixed] == self.template[self.fixed]).all(axis=1)
        if self.grasp_state:
            at = self.fields[3][3]  # the orientation
            ok &= np.ascontiguousarray(rows[:, at : at + 32]).view("<f8").any(axis=1)
        return ok

    def read_rows(self, rows: np.ndarray) -> SimpleNamespace:
        """What ``conversions.grasp_samples`` reads of a GraspStateArray, from M messages of
        this layout (rows of bytes): their samples one after the other."""
        return self._namespace(
            {
                name: np.ascontiguousarray(rows[:, at : at + count * dtype.itemsize])
                .view(dtype)
                .reshape(-1)
                for name, dtype, count, at in self.fields
            }
        )

    def read(self, raw: bytes) -> SimpleNamespace:
        """``read_rows`` of one message (views of its bytes)."""
        return self._namespace(
            {name: np.frombuffer(raw, dtype, count, at) for name, dtype, count, at in self.fields}
        )

    def _namespace(self, arrays: dict[str, np.ndarray]) -> SimpleNamespace:
        has_force, has_torque, has_gravity = self.flags
        return SimpleNamespace(
            robot_id=self.robot_id,
            has_force=has_force,
            has_torque=has_torque,
            has_gravity=has_gravity,
            **{**arrays, "gravity": arrays["gravity"] if has_gravity else []},
        )


_QUATERNION = struct.Struct("<4d")


def grasp_state_layout(raw: bytes, robot: str) -> RawLayout | None:
    """The layout of one GraspState's bytes from ``robot``'s topic; None for anything but
    little-endian CDR, ``robot``'s id, no covariances, pose, twist and twist derivative
    present and flags of 0 or 1 (rclpy's deserialization takes those, and names their
    refusals)."""
    position, found = strings(raw)
    if raw[:2] != CDR_LITTLE_ENDIAN or found is None or found[1] != robot:
        return None
    at = GraspStateOffsets.after_strings(position)
    covariances = at.covariances + 4 * COVARIANCES
    if len(raw) < covariances or any(raw[at.covariances : covariances]):
        return None  # (bytes after the covariances' lengths are padding, as rclpy reads)
    flags = raw[at.flags : at.flags + FLAGS]
    if not all(flags[:3]) or max(flags) > 1:
        return None
    fields = [("sec", np.dtype("<i4"), 1, SEC), ("nanosec", np.dtype("<u4"), 1, NANOSEC)]
    offset = at.numbers
    for name, width in GRASP_STATE_NUMBERS:
        fields.append((name, np.dtype("<f8"), width, offset))
        offset += 8 * width
    spans = ((0, ENCAPSULATION), (at.flags, covariances))
    return RawLayout(
        robot,
        found[0],
        len(raw),
        tuple(fields),
        (bool(flags[3]), bool(flags[4]), bool(flags[5])),
        raw[STRINGS:position],
        spans,
        raw,
        grasp_state=True,
    )


def grasp_state_array_layout(raw: bytes, robot: str) -> RawLayout | None:
    """The layout of one GraspStateArray's bytes from ``robot``'s topic; None for anything
    unusual (big-endian CDR, another robot's id, an array whose length is not its values per
    sample times len(sec), flags not 0 or 1, bytes missing): rclpy's deserialization and
    ``grasp_samples`` take those, and name their refusals."""
    if raw[:2] != CDR_LITTLE_ENDIAN:
        return None
    position, found = strings(raw)
    if found is None or found[1] != robot:
        return None
    fields, spans, k, after_strings = [], [(0, ENCAPSULATION)], None, position
    for name, dtype, width in ARRAY_FIELDS:
        position = aligned(position, 4)
        count = int.from_bytes(raw[position : position + 4], "little")
        spans.append((position, position + 4))
        position += 4
        if count:
            position = aligned(position, dtype.itemsize)
        k = count if k is None else k
        sized = count == width * k or (name == "gravity" and count == 0)
        if position + count * dtype.itemsize > len(raw) or not sized:
            return None
        fields.append((name, dtype, count, position))
        position += count * dtype.itemsize
    flags = raw[position : position + 3]
    if len(flags) != 3 or max(flags) > 1 or fields[-1][2] != (3 * k if flags[2] else 0):
        return None
    spans.append((position, position + 3))
    return RawLayout(
        robot,
        found[0],
        len(raw),
        tuple(fields),
        (bool(flags[0]), bool(flags[1]), bool(flags[2])),
        raw[STRINGS:after_strings],
        tuple(spans),
        raw,
        grasp_state=False,
    )


LAYOUTS = {"grasp_state": grasp_state_layout, "grasp_state_array": grasp_state_array_layout}
