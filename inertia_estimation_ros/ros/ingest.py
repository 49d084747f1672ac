"""Grasp messages into a ``TeamPipeline``: the one path of the coordinator node and of
``inertia_estimation estimate`` (bags), for ``GraspState`` and ``GraspStateArray`` alike.
A message is converted by ``convert``, or ``convert_raw`` from its CDR bytes, and pushed by
``push_converted``. The coordinator's worker takes the messages of a cycle at once
(``push_raw``): each robot's messages read from their bytes as rows of one array, converted
by one ``grasp_samples`` call and pushed as one batch, a fixed number of numpy calls per
robot and cycle whatever the number of messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..core.samples import GraspSample
from ..core.team_pipeline import Runs, TeamPipeline
from ..msg import GraspState, GraspStateArray
from .conversions import grasp_sample, grasp_samples
from .grasp_layout import LAYOUTS, STRINGS, RawLayout

# The topics a robot's samples come on, relative to its namespace, and their messages.
GRASP_TOPICS = {"grasp_state": GraspState, "grasp_state_array": GraspStateArray}
# The layout of each robot topic's last message read by ``convert_raw`` (any thread).
_LAYOUTS: dict[tuple[str, str], RawLayout] = {}


@dataclass(frozen=True)
class GraspMessage:
    """A message from ``robot_id``'s topic, converted: its samples and header frame id, or
    ``refusal`` (reason, detail) when the pipeline refuses it whole (no samples then)."""

    robot_id: str
    frame_id: str
    samples: Sequence[GraspSample] = ()
    refusal: tuple[str, str] | None = None


def convert(robot_id: str, msg: GraspState | GraspStateArray) -> GraspMessage:
    """The samples of a message from ``robot_id``'s topic; a message naming another robot or
    malformed (arrays of the wrong length) is refused whole."""
    batch = isinstance(msg, GraspStateArray)
    frame_id = msg.header.frame_id
    if msg.robot_id != robot_id:
        topic = "grasp_state_array" if batch else "grasp_state"
        detail = f"robot id {msg.robot_id!r} on /{robot_id}/{topic}"
        return GraspMessage(robot_id, frame_id, refusal=("unknown robot id", detail))
    try:
        samples = grasp_samples(msg) if batch else [grasp_sample(msg)]
    except (ValueError, TypeError) as error:
        return GraspMessage(robot_id, frame_id, refusal=("malformed message", str(error)))
    return GraspMessage(robot_id, frame_id, samples)


def convert_raw(robot_id: str, topic: str, raw: bytes) -> GraspMessage:
    """``convert`` of a message's CDR bytes from ``robot_id``'s ``topic`` (a key of
    ``GRASP_TOPICS``): read straight from the bytes where the layout is the usual one (the
    same samples, bit for bit), else deserialized by rclpy and converted."""
    layout = _layout(robot_id, topic, raw)
    if layout is not None:
        return GraspMessage(robot_id, layout.frame_id, grasp_samples(layout.read(raw)))
    from rclpy.serialization import deserialize_message

    try:
        msg = deserialize_message(raw, GRASP_TOPICS[topic])
    except Exception as error:  # bytes no publisher of the type would send
        detail = f"{len(raw)} bytes on /{robot_id}/{topic} not deserializable: {error}"
        return GraspMessage(robot_id, "", refusal=("malformed message", detail))
    return convert(robot_id, msg)


def _layout(robot_id: str, topic: str, raw: bytes) -> RawLayout | None:
    """The layout of one message (``grasp_layout``), the last one's if it has it."""
    layout = _LAYOUTS.get((robot_id, topic))
    if layout is not None and layout.matches(raw):
        return layout
    layout = LAYOUTS[topic](raw, robot_id)
    if layout is not None and layout.matches(raw):
        _LAYOUTS[(robot_id, topic)] = layout
        return layout
    return None


def push_converted(
    pipeline: TeamPipeline, message: GraspMessage, received: float | None = None
) -> None:
    """Every sample of a converted message into the pipeline, each checked on its own
    (``TeamPipeline.push_batch``; refusals are counted by the pipeline, never raised)."""
    if message.refusal is not None:
        pipeline.reject(message.robot_id, *message.refusal)
        return
    pipeline.push_batch(message.samples, message.frame_id, received)


def push_message(
    pipeline: TeamPipeline,
    robot_id: str,
    msg: GraspState | GraspStateArray,
    received: float | None = None,
) -> None:
    """``convert`` then ``push_converted``."""
    push_converted(pipeline, convert(robot_id, msg), received)


@dataclass(frozen=True)
class _Shape:
    """The messages of one cycle whose robots' layouts share one shape (``RawLayout.shape``):
    ``order`` their indices in the cycle, robot by robot; ``strings`` each one's robot's
    string bytes (the rest of what ``RawLayout.has`` checks), as rows."""

    layout: RawLayout  # the first robot's
    order: tuple[int, ...]
    strings: np.ndarray  # (M, string bytes) uint8


@dataclass(frozen=True)
class _Group:
    """The shapes of one group (``RawReader.runs``: robots whose layouts share their flags)
    and what its ``Runs`` keep from cycle to cycle."""

    shapes: tuple[_Shape, ...]
    robots: tuple[str, ...]
    frames: tuple[str, ...]
    order: tuple[int, ...]  # the group's messages, robot by robot
    per_message: np.ndarray  # samples of each message in ``order``
    bounds: np.ndarray  # each robot's rows: bounds[k]:bounds[k + 1]


class RawReader:
    """Reads the messages of one worker cycle (``push_raw``), keeping each robot topic's
    layout (``grasp_layout.RawLayout``) and how the last cycle's messages were grouped: a
    cycle with the same robots, topics and lengths in the same order is read with it, its
    messages checked as one array per shape."""

    def __init__(self) -> None:
        self._layouts: dict[tuple[str, str], RawLayout | None] = {}
        self._plan: tuple[tuple, list[_Group]] | None = None  # (key, groups) of the last cycle

    def runs(
        self, messages: Sequence[tuple[str, str, bytes, float]], clock: float = 0.0
    ) -> list[Runs] | None:
        """The messages (robot id, topic, CDR bytes, arrival time) as ``Runs``: per group of
        robots whose layouts have the same flags, every robot's messages one after the other
        as rows of one batch, with each sample's arrival time plus ``clock``. None unless
        every robot's messages are of one layout read from the bytes (one topic, one length,
        the same strings, array lengths and flags). The robots whose layouts have one shape
        (lengths, offsets) are read as rows of one byte array, and a group is converted by
        one ``grasp_samples`` call: the same samples bit for bit as ``convert_raw`` of each
        message."""
        key = tuple((m[0], m[1], len(m[2])) for m in messages)
        if self._plan is not None and self._plan[0] == key:
            runs = self._read(self._plan[1], messages, clock)
            if runs is not None:
                return runs
        groups = self._grouped(messages)
        self._plan = None if groups is None else (key, groups)
        return None if groups is None else self._read(groups, messages, clock)

    def _grouped(self, messages: Sequence[tuple[str, str, bytes, float]]) -> list[_Group] | None:
        """How a cycle's messages are read (``runs``), each robot's layout checked on every
        one of its messages but for ``RawLayout.same``; None if a robot's have none, or not
        all the same."""
        members: dict[str, list[int]] = {}
        for k, message in enumerate(messages):
            members.setdefault(message[0], []).append(k)
        shapes: dict[tuple, list[tuple[RawLayout, list[int]]]] = {}
        for robot, ks in members.items():
            layout = self._layout(robot, [messages[k] for k in ks])
            if layout is None or not _samples(layout):
                return None
            # one shape per length of the strings too: ``_Shape.strings`` are rows of one array
            shapes.setdefault((layout.shape, len(layout.strings)), []).append((layout, ks))
        groups: dict[tuple, list[tuple[_Shape, list[tuple[RawLayout, list[int]]]]]] = {}
        for members_of_shape in shapes.values():
            first = members_of_shape[0][0]
            strings = [
                np.frombuffer(layout.strings, np.uint8)
                for layout, ks in members_of_shape
                for _ in ks
            ]
            order = tuple(k for _, ks in members_of_shape for k in ks)
            shape = _Shape(first, order, np.stack(strings))
            groups.setdefault((first.flags, first.grasp_state), []).append(
                (shape, members_of_shape)
            )
        return [self._group(parts) for parts in groups.values()]

    @staticmethod
    def _group(parts: list[tuple[_Shape, list[tuple[RawLayout, list[int]]]]]) -> _Group:
        members = [member for _, shape_members in parts for member in shape_members]
        per_robot = [len(ks) for _, ks in members]
        return _Group(
            tuple(shape for shape, _ in parts),
            tuple(layout.robot_id for layout, _ in members),
            tuple(layout.frame_id for layout, _ in members),
            tuple(k for _, ks in members for k in ks),
            np.repeat([_samples(layout) for layout, _ in members], per_robot),
            np.cumsum([0] + [_samples(layout) * len(ks) for layout, ks in members]),
        )

    @staticmethod
    def _read(
        groups: list[_Group], messages: Sequence[tuple[str, str, bytes, float]], clock: float
    ) -> list[Runs] | None:
        """The ``Runs`` of a cycle's messages grouped as ``groups`` (``_grouped``), or None
        if a message's strings or other fixed bytes are not its layout's."""
        runs = []
        for group in groups:
            reads = []
            for shape in group.shapes:
                first = shape.layout
                raw = b"".join([messages[k][2] for k in shape.order])
                rows = np.frombuffer(raw, np.uint8).reshape(len(shape.order), first.length)
                strings = rows[:, STRINGS : STRINGS + shape.strings.shape[1]]
                if not (first.same(rows).all() and (strings == shape.strings).all()):
                    return None
                reads.append(first.read_rows(rows))
            read = reads[0] if len(reads) == 1 else _joined(reads)
            arrivals = np.array([messages[k][3] for k in group.order]) + clock
            runs.append(
                Runs(
                    grasp_samples(read),
                    group.robots,
                    group.frames,
                    group.bounds,
                    np.repeat(arrivals, group.per_message),
                )
            )
        return runs

    def _layout(
        self, robot: str, messages: Sequence[tuple[str, str, bytes, float]]
    ) -> RawLayout | None:
        """The layout of all of a robot's messages (the kept one, or the first message's,
        kept for the next cycles), checked but for ``RawLayout.same``; None if they have
        none, or not all the same."""
        topic = messages[0][1]
        layout = self._layouts.get((robot, topic))
        if layout is None or not layout.has(messages[0][2]):
            layout = self._layouts[(robot, topic)] = LAYOUTS[topic](messages[0][2], robot)
        if layout is None or any(m[1] != topic or not layout.has(m[2]) for m in messages):
            return None
        return layout


def _samples(layout: RawLayout) -> int:
    """Samples per message of a layout (its stamps' count)."""
    return layout.fields[0][2]


def _joined(reads: Sequence[SimpleNamespace]) -> SimpleNamespace:
    """Values read from messages of one group's several shapes (``RawLayout.read_rows``),
    one after the other: each array field concatenated."""
    fields = vars(reads[0])
    joined = {
        name: np.concatenate([getattr(read, name) for read in reads])
        for name, value in fields.items()
        if isinstance(value, np.ndarray)
    }
    return SimpleNamespace(**{**fields, **joined})


def push_raw(
    pipeline: TeamPipeline,
    messages: Sequence[tuple[str, str, bytes, float]],
    reader: RawReader,
    clock: float = 0.0,
) -> None:
    """The messages of one cycle (robot id, topic, CDR bytes, arrival time), in the order
    they arrived, into the pipeline: every robot's at once (``RawReader.runs``,
    ``TeamPipeline.push_runs``) when they are all read from the bytes and all accepted as
    they come, else one by one (``convert_raw``, ``push_converted``) in their order, with
    the same samples, refusals and counts either way. ``clock`` is added to the arrival
    times (e.g. the pipeline's clock minus the one they were read on)."""
    runs = reader.runs(messages, clock) if messages else None
    if runs is not None and pipeline.push_runs(runs):
        return
    for robot, topic, raw, received in messages:
        push_converted(pipeline, convert_raw(robot, topic, raw), received + clock)
