"""Grasp messages' CDR bytes decoded as numpy arrays: a bag's, for ``inertia_estimation
estimate``, and the coordinator's raw subscriptions (``ingest.convert_raw``). One home for the
messages' CDR layouts.

``GraspState`` has a fixed CDR layout but for its three strings and its four covariance
sequences: the messages of one topic with the same strings and no covariances (all that
robot_node publishes) are decoded together as numpy arrays, straight from their bytes, and
turned into samples by ``conversions.grasp_samples`` (the ``GraspStateArray`` path, the same
bits as ``grasp_sample`` one by one). Any other message (covariances filled, a pose, twist or
twist derivative flagged missing, big-endian CDR) is deserialized by rclpy and goes through
``ingest.push_message`` as the node's would. ``GraspStateArray`` is read at the offsets its
arrays' lengths give (``decode_grasp_state_array``), one message at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..bag_index import rclpy_class, read_topic_records
from ..core.samples import GraspBatch, GraspSample
from .conversions import grasp_samples
from .grasp_layout import (
    CDR_LITTLE_ENDIAN,
    COVARIANCES,
    DOUBLES,
    FLAGS,
    GraspStateOffsets,
    grasp_state_array_layout,
    grasp_state_layout,
    strings,
)

GRASP_STATE = "inertia_estimation_ros/msg/GraspState"


@dataclass
class GraspEntry:
    """What a bag holds at one log time [ns] for one robot: its samples and the frame id
    they came with (decoded in bulk), or a message for ``ingest.push_message``."""

    timestamp: int
    robot_id: str
    frame_id: str = ""
    samples: list[GraspSample] | None = None
    message: Any = None


@dataclass
class RobotStream:
    """Every sample of one robot's ``grasp_state`` in a bag, decoded as one batch, with the
    log time [ns] of each."""

    timestamps: np.ndarray
    batch: GraspBatch
    frame_id: str


def _fields(
    robot: str, sec: np.ndarray, nanosec: np.ndarray, values: np.ndarray, flags: np.ndarray
) -> SimpleNamespace:
    """What ``grasp_samples`` reads of a GraspStateArray, from Q GraspStates' stamps and
    (Q, DOUBLES) values, all with pose, twist and twist derivative and the same last three
    flags (has_force, has_torque, has_gravity)."""
    has_force, has_torque, has_gravity = (bool(f) for f in flags[3:])
    return SimpleNamespace(
        robot_id=robot,
        sec=sec,
        nanosec=nanosec,
        position=values[:, 0:3].ravel(),
        orientation=values[:, 3:7].ravel(),
        twist=values[:, 7:13].ravel(),
        twist_derivative=values[:, 13:19].ravel(),
        wrench=values[:, 19:25].ravel(),
        gravity=values[:, 25:28].ravel() if has_gravity else [],
        has_force=has_force,
        has_torque=has_torque,
        has_gravity=has_gravity,
    )


def read_plain_streams(
    path: str | Path, topics: dict[str, str], frame_of: Callable[[str], str]
) -> dict[str, RobotStream] | None:
    """Every robot's samples, read and decoded as arrays, when the whole bag is *plain*:
    one indexed mcap file, one GraspState topic per robot (``topics``: robot -> topic),
    every message of one CDR layout with the robot's id and grasp frame ``frame_of(robot)``
    and no covariances, every value finite, the flags the same throughout and the stamps
    increasing. Such samples are accepted by the pipeline as they come, whatever the order
    of the robots. None for any other bag (``read_grasp_entries`` then reads it message by
    message, as the coordinator would receive it)."""
    records = read_topic_records(path, topics.values())
    if records is None:
        return None
    streams = {}
    for robot, topic in topics.items():
        found = records[topic]
        rows = found.rows() if found.msgtype == GRASP_STATE else None
        batch = _plain_batch(robot, frame_of(robot), rows) if rows is not None else None
        if batch is None:
            return None
        streams[robot] = RobotStream(found.timestamps, batch, frame_of(robot))
    return streams


def _plain_batch(robot: str, frame_id: str, rows: np.ndarray) -> GraspBatch | None:
    """The samples of a robot's GraspState messages (bytes, one row each) when they are
    plain (``read_plain_streams``), else None."""
    layout = _layout(rows[0].tobytes())
    if layout is None or layout[0] != robot or layout[1] != frame_id:
        return None
    _, _, _, length, pose = layout
    ends = pose + 8 * DOUBLES + FLAGS
    if np.any(rows[:, :4] != rows[0, :4]) or np.any(rows[:, 12:pose] != rows[0, 12:pose]):
        return None  # another encoding or other strings further on
    lengths = GraspStateOffsets.after_strings(pose).covariances
    if np.any(rows[:, lengths : lengths + 4 * COVARIANCES]):
        return None  # covariances
    flags = rows[:, ends - FLAGS : ends].astype(bool)
    values = rows[:, pose : ends - FLAGS].copy().view("<f8")
    if not (flags[:, :3].all() and (flags == flags[0]).all() and values[:, 3:7].any(axis=1).all()):
        return None
    sec = rows[:, 4:8].copy().view("<i4")[:, 0]
    nanosec = rows[:, 8:12].copy().view("<u4")[:, 0]
    batch = grasp_samples(_fields(robot, sec, nanosec, values, flags[0]))
    increasing = np.all(np.diff(batch.stamps) > 0)
    return batch if increasing and batch.finite().all() else None


def read_grasp_entries(path: str | Path, topics: Iterable[str]) -> list[GraspEntry]:
    """Every message of the grasp ``topics`` (``/<robot>/grasp_state[_array]``) as entries in
    log-time order (stable); GraspState decoded in bulk where its layout allows."""
    raw: dict[str, list[tuple[int, bytes]]] = {}
    types: dict[str, str] = {}
    from ..bags import read_bag  # rosbags: any bag the index does not read

    for message in read_bag(path, topics, deserialize="raw"):
        raw.setdefault(message.topic, []).append((message.timestamp, message.message))
        types[message.topic] = message.msgtype
    entries = []
    for topic, messages in raw.items():
        robot = topic.split("/")[1]
        if types[topic] == GRASP_STATE:
            entries += _grasp_state_entries(robot, messages)
        else:
            entries += [_deserialized(robot, types[topic], t, b) for t, b in messages]
    entries.sort(key=lambda e: e.timestamp)
    return entries


def _deserialized(robot: str, msgtype: str, timestamp: int, raw: bytes) -> GraspEntry:
    from rclpy.serialization import deserialize_message

    return GraspEntry(timestamp, robot, message=deserialize_message(raw, rclpy_class(msgtype)))


def _grasp_state_entries(robot: str, messages: list[tuple[int, bytes]]) -> Iterator[GraspEntry]:
    """Messages of one GraspState topic: groups of one layout decoded as arrays, the rest
    deserialized one by one."""
    groups: dict[tuple, list[int]] = {}
    for k, (_, raw) in enumerate(messages):
        layout = _layout(raw)
        groups.setdefault(layout or (None, k), []).append(k)
    for layout, members in groups.items():
        if layout[0] != robot:  # not decodable (None), or another robot's id
            for k in members:
                yield _deserialized(robot, GRASP_STATE, *messages[k])
            continue
        yield from _decoded(robot, layout, [messages[k] for k in members])


def _layout(raw: bytes) -> tuple | None:
    """(robot id, frame id, strings' bytes, length) of a message the arrays can decode, or
    None: little-endian CDR, no covariances."""
    position, found = strings(raw)
    if raw[:2] != CDR_LITTLE_ENDIAN or found is None:
        return None
    at = GraspStateOffsets.after_strings(position)
    lengths = slice(at.covariances, at.covariances + 4 * COVARIANCES)
    if len(raw) < lengths.stop or any(raw[lengths]):
        return None  # (bytes after the covariances' four lengths are padding, as rclpy reads)
    return (found[1], found[0], raw[12 : at.numbers], len(raw), at.numbers)


def _decoded(robot: str, layout: tuple, messages: list[tuple[int, bytes]]) -> Iterator[GraspEntry]:
    """Entries of messages of one layout: their fields read as arrays from the bytes."""
    _, frame_id, _, length, pose = layout
    data = np.frombuffer(b"".join(raw for _, raw in messages), dtype=np.uint8)
    data = data.reshape(len(messages), length)
    sec = data[:, 4:8].copy().view("<i4")[:, 0]
    nanosec = data[:, 8:12].copy().view("<u4")[:, 0]
    values = data[:, pose : pose + 8 * DOUBLES].copy().view("<f8")
    flags = data[:, pose + 8 * DOUBLES : pose + 8 * DOUBLES + FLAGS].astype(bool)
    complete = flags[:, :3].all(axis=1)  # pose, twist and twist derivative present
    complete &= values[:, 3:7].any(axis=1)  # a zero quaternion is refused one by one, by name
    kinds = np.where(complete[:, None], flags[:, 3:], True).astype(int) @ [1, 2, 4]
    kinds = np.where(complete, kinds, -1)
    starts = np.flatnonzero(np.r_[True, kinds[1:] != kinds[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(kinds)], strict=True):
        if kinds[start] < 0:
            for k in range(start, stop):
                yield _deserialized(robot, GRASP_STATE, *messages[k])
            continue
        rows = slice(start, stop)
        batch = _fields(robot, sec[rows], nanosec[rows], values[rows], flags[start])
        for k, sample in enumerate(grasp_samples(batch), start):
            yield GraspEntry(messages[k][0], robot, frame_id, [sample])


def decode_grasp_state(raw: bytes, robot: str) -> tuple[str, SimpleNamespace] | None:
    """(frame id, fields for ``grasp_samples``) of one GraspState's CDR bytes from ``robot``'s
    topic, read at its layout's offsets; None for anything else than what ``_decoded``
    reads in bulk (``grasp_layout.grasp_state_layout``; a zero quaternion too): rclpy's
    deserialization and ``grasp_sample`` take those, and name their refusals."""
    layout = grasp_state_layout(raw, robot)
    if layout is None or not layout.matches(raw):
        return None
    return layout.frame_id, layout.read(raw)


def decode_grasp_state_array(raw: bytes, robot: str) -> tuple[str, SimpleNamespace] | None:
    """(frame id, fields for ``grasp_samples``: numpy arrays of the bytes) of one
    GraspStateArray's CDR bytes from ``robot``'s topic; None for anything unusual
    (``grasp_layout.grasp_state_array_layout``): rclpy's deserialization and
    ``grasp_samples`` take those, and name their refusals."""
    layout = grasp_state_array_layout(raw, robot)
    return None if layout is None else (layout.frame_id, layout.read(raw))
