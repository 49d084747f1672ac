"""ros.bag_grasps.read_plain_streams (what ``inertia_estimation estimate`` reads a plain bag
with): every robot's GraspState decoded as one batch from the bag's bytes gives the samples
that rclpy's deserialization and ``grasp_sample`` give message by message, bit for bit,
whether the bag stores them in log-time order or not; and the aligner's rows made once for a
whole stream are those of each slice. Any odd message (NaN, wrong frame, another layout, a
truncated message) makes the bag not plain: it is then read message by message."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from test_bag_grasps import same

from inertia_estimation_ros.bags import BagWriter, serialize
from inertia_estimation_ros.core.cooperative.clock import row_matrix
from inertia_estimation_ros.core.samples import BATCH_COLUMNS, GraspBatch
from inertia_estimation_ros.msg import GraspState
from inertia_estimation_ros.ros.bag_grasps import read_grasp_entries, read_plain_streams
from inertia_estimation_ros.ros.conversions import grasp_sample, to_grasp_state
from inertia_estimation_ros.sim import analytic as an

TYPE = "inertia_estimation_ros/msg/GraspState"
ROBOTS = ("robot_1", "robot_2", "robot_3")
TOPICS = {r: f"/{r}/grasp_state" for r in ROBOTS}


def frame_of(robot: str) -> str:
    return f"{robot}/grasp"


def messages() -> dict[str, list[GraspState]]:
    """Three robots' GraspState as robot_node publishes them (0.4 s at 100 Hz)."""
    rng = np.random.default_rng(3)
    team = an.paper_team()
    t = np.arange(0.0, 0.4, 0.01)
    sim = an.simulate(team, an.paper_payload(), an.paper_kinematics_motion(rng), t, rng=rng)
    return {
        r: [
            to_grasp_state(sim.measured[r].sample(k), frame_of(r), f"{r}/home")
            for k in range(len(t))
        ]
        for r in ROBOTS
    }


def write(path, sent: dict[str, list], order=None) -> None:
    """The messages at log times 1 s + 10 ms k (+ the robot's index in ns), written in
    ``order`` of k (default: log-time order); a message may be given as raw bytes."""
    count = len(sent[ROBOTS[0]])
    with BagWriter(path) as writer:
        for k in order if order is not None else range(count):
            for j, (rid, msgs) in enumerate(sent.items()):
                writer.write(TOPICS[rid], TYPE, 10**9 + 10**7 * k + j, msgs[k])


@pytest.mark.parametrize("order", ["log time", "shuffled"])
def test_plain_streams_are_rclpys_samples_bit_for_bit(tmp_path, order):
    sent = messages()
    count = len(sent[ROBOTS[0]])
    shuffled = np.random.default_rng(1).permutation(count) if order == "shuffled" else None
    write(tmp_path / "bag", sent, shuffled)
    streams = read_plain_streams(tmp_path / "bag", TOPICS, frame_of)
    assert streams is not None and set(streams) == set(ROBOTS)
    for j, rid in enumerate(ROBOTS):
        stream = streams[rid]
        assert stream.frame_id == frame_of(rid)
        np.testing.assert_array_equal(stream.timestamps, 10**9 + 10**7 * np.arange(count) + j)
        assert len(stream.batch) == count
        for k, msg in enumerate(sent[rid]):  # as the message's own bytes decode one by one
            raw = serialize(msg, TYPE)
            same(stream.batch[k], grasp_sample(deserialize_message(raw, GraspState)))


def test_a_streams_aligner_rows_are_those_of_each_slice(tmp_path):
    write(tmp_path / "bag", messages())
    batch = read_plain_streams(tmp_path / "bag", TOPICS, frame_of)["robot_2"].batch
    whole = row_matrix(batch)
    for part in (slice(0, 7), slice(7, 31), slice(31, None)):
        sliced = batch.rows(part)
        fresh = GraspBatch(batch.robot_id, **{n: getattr(sliced, n) for n in BATCH_COLUMNS})
        assert sliced.aligner_rows is not None and fresh.aligner_rows is None
        np.testing.assert_array_equal(row_matrix(sliced), row_matrix(fresh))
        np.testing.assert_array_equal(row_matrix(sliced), whole[part])


def _nan_twist(msg: GraspState) -> GraspState:
    msg.twist.linear.x = math.nan
    return msg


def _wrong_frame(msg: GraspState) -> GraspState:
    msg.header.frame_id = "world"
    return msg


def _covariance(msg: GraspState) -> GraspState:
    msg.twist_covariance = list(np.eye(6).ravel())
    return msg


def _no_gravity(msg: GraspState) -> GraspState:
    msg.has_gravity = False  # the same layout, other flags than the stream's
    return msg


def _truncated(msg: GraspState) -> bytes:
    return serialize(msg, TYPE)[:-40]


ODD = {
    "NaN": _nan_twist,
    "wrong frame": _wrong_frame,
    "covariances (another layout)": _covariance,
    "other flags": _no_gravity,
    "truncated": _truncated,
}


@pytest.mark.parametrize("odd", ODD)
def test_one_odd_message_makes_the_bag_read_message_by_message(tmp_path, odd):
    sent = messages()
    sent["robot_3"][11] = ODD[odd](sent["robot_3"][11])
    write(tmp_path / "bag", sent)
    assert read_plain_streams(tmp_path / "bag", TOPICS, frame_of) is None
    if odd == "truncated":
        return  # rclpy's deserialization takes it (and names its refusal) in the pipeline
    entries = read_grasp_entries(tmp_path / "bag", list(TOPICS.values()))
    mine = [e for e in entries if e.robot_id == "robot_3"]
    for entry, msg in zip(mine, sent["robot_3"], strict=True):
        if entry.message is not None:  # not decodable in bulk: rclpy's message as the node's
            assert entry.message == msg
            continue
        assert entry.frame_id == msg.header.frame_id
        same(entry.samples[0], grasp_sample(msg))
