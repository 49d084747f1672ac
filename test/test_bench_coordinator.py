"""bench_coordinator's robot team: the stamps it patches into serialized messages are those
``to_time`` gives (every field else unchanged), its lateness and spread figures, and what it
says when it may not run at real-time priority."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message

from inertia_estimation_ros.msg import GraspState, GraspStateArray
from inertia_estimation_ros.ros.conversions import to_time

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_coordinator as bench


@pytest.mark.parametrize(("n", "rate", "batch"), [(3, 100.0, 1), (16, 1000.0, 10), (8, 500.0, 5)])
def test_patched_stamps_are_the_messages_restamped(n, rate, batch):
    """Robots robot_1 .. robot_16: names of two lengths, so two layouts of the bytes."""
    ids, instants = bench.team_messages(n, rate, 3 * batch / rate, batch)
    kind = GraspState if batch == 1 else GraspStateArray
    stamp = 1_764_241_234.987_654_3
    header, samples = bench.stamp_bytes(stamp, batch, rate)
    for robot, msg in instants[1]:
        data = bytearray(serialize_message(msg))
        offset = bench.samples_offset(data) if batch > 1 else 0
        patched = deserialize_message(bench.restamped(data, offset, header, samples), kind)
        times = [to_time(stamp - (batch - 1 - j) / rate) for j in range(batch)]
        assert patched.header.stamp == times[0]
        if batch > 1:
            assert list(patched.sec) == [t.sec for t in times]
            assert list(patched.nanosec) == [t.nanosec for t in times]
            assert patched.sec[-1] + patched.nanosec[-1] * 1e-9 == pytest.approx(stamp, abs=1e-9)
            msg.sec, msg.nanosec = patched.sec, patched.nanosec
        msg.header.stamp = times[0]
        assert patched == msg, robot


def test_lateness_is_publication_minus_stamp_and_spread_is_per_instant():
    scheduled = np.array([10.0, 10.01, 10.02])
    sent = np.array([[10.001, 10.002], [10.011, 10.019], [10.04, 10.041]])  # 2 robots
    late, spread = bench.sender_lateness(scheduled, sent)
    lateness = [0.001, 0.002, 0.001, 0.009, 0.02, 0.021]
    assert late == pytest.approx(np.percentile(lateness, 99))
    assert spread == pytest.approx(np.percentile([0.001, 0.008, 0.001], 99))


def test_a_team_refused_real_time_priority_says_why(monkeypatch):
    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(bench.os, "sched_setscheduler", refuse)
    assert bench.real_time() == "normal priority ([Errno 1] Operation not permitted)"
