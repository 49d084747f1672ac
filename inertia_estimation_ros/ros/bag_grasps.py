"""A bag's grasp messages read in bulk, for ``inertia_estimation estimate``.

``GraspState`` has a fixed CDR layout but for its three strings and its four covariance
sequences: the messages of one topic with the same strings and no covariances (all that
robot_node publishes) are decoded together as numpy arrays, straight from their bytes, and
turned into samples by ``conversions.grasp_samples`` (the ``GraspStateArray`` path, the same
bits as ``grasp_sample`` one by one). Any other message (covariances filled, a pose, twist or
twist derivative flagged missing, big-endian CDR, ``GraspStateArray``) is deserialized by
rclpy and goes through ``ingest.push_message`` as the node's would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..bags import rclpy_class, read_bag, read_topic_records
from ..core.samples import GraspBatch, GraspSample
from .conversions import grasp_samples

GRASP_STATE = "inertia_estimation_ros/msg/GraspState"
DOUBLES = 28  # pose (7), twist (6), twist derivative (6), wrench (6), gravity (3)
FLAGS = 6  # has_pose, has_twist, has_twist_derivative, has_force, has_torque, has_gravity
CDR_LITTLE_ENDIAN = b"\x00\x01"


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
    if np.any(rows[:, length - 16 :]):
        return None  # covariances
    flags = rows[:, ends - FLAGS : ends].astype(bool)
    values = rows[:, pose : ends - FLAGS].copy().view("<f8")
    if not (flags[:, :3].all() and (flags == flags[0]).all() and values[:, 3:7].any(axis=1).all()):
        return None
    has_force, has_torque, has_gravity = (bool(f) for f in flags[0, 3:])
    batch = grasp_samples(
        SimpleNamespace(
            robot_id=robot,
            sec=rows[:, 4:8].copy().view("<i4")[:, 0],
            nanosec=rows[:, 8:12].copy().view("<u4")[:, 0],
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
    )
    increasing = np.all(np.diff(batch.stamps) > 0)
    return batch if increasing and batch.finite().all() else None


def read_grasp_entries(path: str | Path, topics: Iterable[str]) -> list[GraspEntry]:
    """Every message of the grasp ``topics`` (``/<robot>/grasp_state[_array]``) as entries in
    log-time order (stable); GraspState decoded in bulk where its layout allows."""
    raw: dict[str, list[tuple[int, bytes]]] = {}
    types: dict[str, str] = {}
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
    if raw[:2] != CDR_LITTLE_ENDIAN:
        return None
    position, strings = 12, []  # after the encapsulation header and the stamp
    for _ in range(3):  # frame_id, robot_id, home_frame_id
        position += -(position - 4) % 4
        size = int.from_bytes(raw[position : position + 4], "little")
        strings.append(raw[position + 4 : position + 3 + size].decode(errors="replace"))
        position += 4 + size
    pose = position + (-(position - 4) % 8)
    flags_end = pose + 8 * DOUBLES + FLAGS
    sequences = flags_end + (-(flags_end - 4) % 4)
    if len(raw) != sequences + 16 or any(raw[sequences:]):
        return None
    return (strings[1], strings[0], raw[12:pose], len(raw), pose)


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
        has_force, has_torque, has_gravity = (bool(f) for f in flags[start, 3:])
        batch = SimpleNamespace(
            robot_id=robot,
            sec=sec[rows],
            nanosec=nanosec[rows],
            position=values[rows, 0:3].ravel(),
            orientation=values[rows, 3:7].ravel(),
            twist=values[rows, 7:13].ravel(),
            twist_derivative=values[rows, 13:19].ravel(),
            wrench=values[rows, 19:25].ravel(),
            gravity=values[rows, 25:28].ravel() if has_gravity else [],
            has_force=has_force,
            has_torque=has_torque,
            has_gravity=has_gravity,
        )
        for k, sample in enumerate(grasp_samples(batch), start):
            yield GraspEntry(messages[k][0], robot, frame_id, [sample])
