"""Batched input (``GraspStateArray``, issue 16) on the coordinator's message path
(``ros.ingest.push_message``, which the node and ``estimate`` run) and its pipeline:

* the same samples sent one per ``GraspState`` or K per ``GraspStateArray`` give bit-identical
  statistics and the same estimate, bit for bit;
* a batched stream with a gap, a batch sent twice, a batch out of order and a batch with one
  NaN sample keeps every good sample and refuses the bad ones, counted by reason;
* a solve on a snapshot (``start_solve``, as the node's solver thread runs it) while samples
  go on arriving gives the estimate of the statistics at the snapshot, and its maps are
  adopted by the live estimator."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
from coordinator_data import ROBOTS, team_session
from rclpy.serialization import serialize_message

from inertia_estimation_ros.core.team_pipeline import PipelineSettings, TeamPipeline
from inertia_estimation_ros.ros.conversions import to_grasp_state, to_grasp_state_array
from inertia_estimation_ros.ros.ingest import (
    RawReader,
    convert,
    convert_raw,
    push_converted,
    push_message,
    push_raw,
)

K = 10  # samples per batch
N = 400  # samples per robot: 4 s of guided motion
SETTINGS = PipelineSettings(estimate_clock_offsets=False)


def single_messages(series: dict, k_range: range) -> list:
    return [
        (rid, to_grasp_state(series[rid].sample(k), f"{rid}/grasp", f"{rid}/home"))
        for k in k_range
        for rid in ROBOTS
    ]


def batches(series: dict, rid: str, n: int) -> list:
    """Robot ``rid``'s first n samples as GraspStateArray messages of K samples."""
    return [
        to_grasp_state_array(
            [series[rid].sample(k) for k in range(start, min(start + K, n))],
            f"{rid}/grasp",
            f"{rid}/home",
        )
        for start in range(0, n, K)
    ]


def feed(pipeline: TeamPipeline, messages: list, every: int) -> None:
    """Messages in order, aligning and updating after every ``every`` (the worker's cycle)."""
    for k, (rid, msg) in enumerate(messages):
        push_message(pipeline, rid, msg)
        if k % every == every - 1:
            pipeline.process()
    pipeline.process()


def interleaved(per_robot: dict[str, list]) -> list:
    """Batches of every robot, batch j of each before batch j + 1 of any."""
    count = max(len(b) for b in per_robot.values())
    return [(r, per_robot[r][j]) for j in range(count) for r in ROBOTS if j < len(per_robot[r])]


def statistics(pipeline: TeamPipeline) -> list[np.ndarray]:
    estimator = pipeline.full.estimator
    return [
        estimator._twists.S,
        estimator._poses.S,
        *(m.S for m in estimator._dtwists.values()),
        *(s.moments.YY for s in estimator._segments.segments),
        *(s.moments.K for s in estimator._segments.segments),
    ]


def test_batched_and_single_messages_give_bit_identical_statistics_and_estimate():
    _, _, series = team_session(noise=True, offsets=False)
    single, batched = (
        TeamPipeline(ROBOTS, "robot_1", SETTINGS),
        TeamPipeline(ROBOTS, "robot_1", SETTINGS),
    )
    feed(single, single_messages(series, range(N)), every=K * len(ROBOTS))
    feed(batched, interleaved({r: batches(series, r, N) for r in ROBOTS}), every=len(ROBOTS))
    assert single.accepted == batched.accepted == dict.fromkeys(ROBOTS, N)
    assert single.updates == batched.updates == N
    for a, b in zip(statistics(single), statistics(batched), strict=True):
        assert np.array_equal(a, b)
    one, other = single.estimate(full=True), batched.estimate(full=True)
    assert one.grasps_valid and np.array_equal(one.theta, other.theta)
    assert all(
        np.array_equal(a.T_s_i, b.T_s_i) for a, b in zip(one.grasps, other.grasps, strict=True)
    )
    assert np.array_equal(one.theta_covariance, other.theta_covariance)


def damaged_stream(series: dict) -> list:
    """Every robot's batches interleaved, robot_2's with a NaN sample, a gap, a batch sent
    twice and two batches swapped."""
    per_robot = {r: batches(series, r, N) for r in ROBOTS}
    damaged = per_robot["robot_2"]
    nan = dataclasses.replace(series["robot_2"].sample(103), V_i=np.full(6, np.nan))
    samples = [series["robot_2"].sample(k) for k in range(100, 110)]
    damaged[10] = to_grasp_state_array(
        samples[:3] + [nan] + samples[4:], "robot_2/grasp", "robot_2/home"
    )  # batch 10 with one NaN sample
    del damaged[15]  # a gap: batch 15 never arrives
    damaged.insert(21, damaged[20])  # batch 21 sent twice
    damaged[30], damaged[31] = damaged[31], damaged[30]  # batch 31 before batch 30
    return interleaved(per_robot)


def test_a_damaged_batched_stream_keeps_the_good_samples_and_counts_the_bad_by_reason():
    _, _, series = team_session(noise=True, offsets=False)
    n = N
    pipeline = TeamPipeline(ROBOTS, "robot_1", SETTINGS)
    feed(pipeline, damaged_stream(series), every=len(ROBOTS))
    refused = {reason: count for (rid, reason), count in pipeline.rejected.items()}
    assert set(pipeline.rejected) <= {("robot_2", reason) for reason in refused}
    assert refused == {  # a sample stamped before the robot's last one is out of order
        "non-finite or missing values": 1,
        "duplicate stamp": 1,  # batch 21's last sample again
        "out-of-order stamp": K - 1 + K,  # the rest of batch 21 again, and batch 30 late
    }
    assert pipeline.accepted["robot_2"] == n - K - 1 - K  # lost: the gap, NaN, late batch
    assert pipeline.accepted["robot_1"] == pipeline.accepted["robot_3"] == n
    # no set spans a missing sample: the gap, the NaN and the late batch cost theirs only
    dropped = sum(pipeline.dropped().values())
    assert 2 * K + 1 <= dropped <= 2 * K + 1 + 6 and pipeline.updates == n - dropped


def test_a_cycle_read_at_once_is_the_messages_pushed_one_by_one(monkeypatch):
    """``push_raw`` (the coordinator's worker: a cycle's messages read and pushed per robot
    at once) gives what pushing each message's bytes in turn gives: the same counts by
    reason, sets, arrival latencies and statistics, bit for bit, with cycles of 1 to 40
    messages over a damaged stream, GraspState and GraspStateArray mixed."""
    _, _, series = team_session(noise=True, offsets=False)
    messages = damaged_stream(series)
    messages += single_messages(series, range(N, N + 30))  # GraspState after the batches
    raw = [
        (r, "grasp_state_array" if hasattr(m, "sec") else "grasp_state", serialize_message(m))
        for r, m in messages
    ]
    rng = np.random.default_rng(5)
    cuts = np.cumsum(rng.integers(1, 41, size=len(raw)))
    cycles = np.split(np.arange(len(raw)), cuts[cuts < len(raw)])
    merged = []
    original = TeamPipeline.push_runs

    def counted(self, runs):
        merged.append(original(self, runs))
        return merged[-1]

    monkeypatch.setattr(TeamPipeline, "push_runs", counted)
    one, cycle = (TeamPipeline(ROBOTS, "robot_1", SETTINGS) for _ in range(2))
    reader = RawReader()
    for members in cycles:
        entries = [(*raw[k], 0.001 * k) for k in members]
        for rid, topic, data, received in entries:
            push_converted(one, convert_raw(rid, topic, data), received + 100.0)
        push_raw(cycle, entries, reader, clock=100.0)
        one.process()
        cycle.process()
    assert 0 < sum(merged) < len(merged)  # some cycles at once, the damaged one by one
    assert one.accepted == cycle.accepted and one.rejected == cycle.rejected
    assert one.rejection_details == cycle.rejection_details
    assert one.updates == cycle.updates and one.dropped() == cycle.dropped()
    assert all(list(one._transport[r]) == list(cycle._transport[r]) for r in ROBOTS)
    for a, b in zip(statistics(one), statistics(cycle), strict=True):
        assert np.array_equal(a, b)
    assert sum(one.rejected.values()) == 1 + 1 + 2 * K - 1


def test_a_message_converted_once_is_the_pipelines_and_refusals_keep_their_reasons():
    """The coordinator converts each message once (``convert``, in its subscription callback)
    and hands the same samples to its external wrench output and to the pipeline."""
    _, _, series = team_session(offsets=False)
    pipeline = TeamPipeline(ROBOTS, "robot_1", SETTINGS)
    single = convert("robot_1", single_messages(series, range(1))[0][1])
    batch = convert("robot_2", batches(series, "robot_2", K)[0])
    for message in (single, batch):
        push_converted(pipeline, message)
        assert message.refusal is None
        assert pipeline.latest[message.robot_id] is message.samples[-1]
    assert len(batch.samples) == K
    wrong_robot = convert("robot_3", single_messages(series, range(1))[0][1])
    short = batches(series, "robot_3", K)[0]
    short.position = short.position[:-1]
    malformed = convert("robot_3", short)
    for message in (wrong_robot, malformed):
        assert message.samples == ()
        push_converted(pipeline, message)
    assert wrong_robot.refusal[0] == "unknown robot id"
    assert "GraspStateArray.position has" in malformed.refusal[1]
    assert pipeline.rejected == Counter(
        {("robot_3", "unknown robot id"): 1, ("robot_3", "malformed message"): 1}
    )


def test_a_solve_on_a_snapshot_leaves_updates_going_and_is_adopted():
    _, _, series = team_session(noise=True, offsets=False)
    n, every = N, K * len(ROBOTS)
    now = [1.7e9]  # the node's ROS clock: far from the samples' stamps (a bag's, 0-4 s)
    pipeline = TeamPipeline(ROBOTS, "robot_1", SETTINGS, clock=lambda: now[0])
    feed(pipeline, single_messages(series, range(n // 2)), every)
    reference = TeamPipeline(ROBOTS, "robot_1", SETTINGS)
    feed(reference, single_messages(series, range(n // 2)), every)
    job = pipeline.start_solve()
    now[0] += 0.5
    feed(pipeline, single_messages(series, range(n // 2, n)), every)  # while the solve runs
    job.run()
    now[0] += 0.25
    estimate = pipeline.finish_solve(job)
    expected = reference.estimate()
    assert estimate.stamp == expected.stamp < pipeline.last_stamp["robot_1"]
    assert np.array_equal(estimate.theta, expected.theta)
    live = pipeline.full.estimator
    assert live._kinematics is job.snapshots["full"]._kinematics and live._maps
    assert live._dirty  # samples arrived since the snapshot: the next estimate solves
    # PayloadEstimate.age: on the node's clock since the snapshot's newest update, not
    # now - stamp (the stamps are on the robots' clocks)
    assert pipeline.estimate_age() == 0.75
    pipeline.finish_solve(run_job(pipeline.start_solve()))
    assert pipeline.estimate_age() == 0.25  # the second half came in at +0.5
    assert TeamPipeline(ROBOTS, "robot_1", SETTINGS).estimate_age() == 0.0  # no clock


def run_job(job):
    job.run()
    return job


def test_cycles_alike_are_read_with_the_last_ones_grouping_and_a_changed_message_is_not():
    """The node's steady state: every cycle one GraspStateArray per robot, so ``RawReader``
    reads each cycle with the last one's grouping (``RawReader._plan``); a message whose
    strings changed at the same length (another frame id) or whose flags changed is checked
    again and refused by name. Counts, refusals, transport latencies and statistics are the
    per-message path's, bit for bit."""
    _, _, series = team_session(noise=True, offsets=False)
    per_robot = {r: batches(series, r, N) for r in ROBOTS}
    wrong = per_robot["robot_2"][12]
    wrong.header.frame_id = "robot_2/grasX"  # the same length: only the strings differ
    per_robot["robot_3"][20].has_torque = not per_robot["robot_3"][20].has_torque
    messages = interleaved(per_robot)
    raw = [(r, "grasp_state_array", serialize_message(m)) for r, m in messages]
    cycles = [range(k, k + len(ROBOTS)) for k in range(0, len(raw), len(ROBOTS))]
    one, cycle = (TeamPipeline(ROBOTS, "robot_1", SETTINGS) for _ in range(2))
    reader, grouped = RawReader(), []
    original = reader._grouped

    def counted(messages):
        grouped.append(len(messages))
        return original(messages)

    reader._grouped = counted
    for members in cycles:
        entries = [(*raw[k], 0.001 * k) for k in members]
        for rid, topic, data, received in entries:
            push_converted(one, convert_raw(rid, topic, data), received)
        push_raw(cycle, entries, reader)
        one.process()
        cycle.process()
    # grouped again: the first cycle, the changed strings and the cycle after them (its layout
    # was replaced), the changed flags (the kept layout fits the next cycle again)
    assert len(grouped) == 4
    assert one.rejected == cycle.rejected and ("robot_2", "wrong frame id") in one.rejected
    assert one.accepted == cycle.accepted and one.updates == cycle.updates
    assert all(list(one._transport[r]) == list(cycle._transport[r]) for r in ROBOTS)
    for a, b in zip(statistics(one), statistics(cycle), strict=True):
        assert np.array_equal(a, b)


def test_robots_whose_names_differ_in_length_are_read_as_one_cycle():
    """robot_1 and robot_10 name messages of the same length (CDR pads the strings) with
    strings of different lengths: each length is its own shape of rows (it used to raise in
    every cycle, so the node's worker kept none of 16 robots' samples at 100 Hz)."""
    _, _, series = team_session(noise=True, offsets=False)
    names = {"robot_1": "robot_1", "robot_2": "robot_2", "robot_3": "robot_10"}
    ids = list(names.values())
    raw = [
        [
            (name, "grasp_state", serialize_message(to_grasp_state(sample, *frames)))
            for rid, name in names.items()
            for sample in [dataclasses.replace(series[rid].sample(k), robot_id=name)]
            for frames in [(f"{name}/grasp", f"{name}/home")]
        ]
        for k in range(100)
    ]
    assert len({len(data) for cycle in raw for _, _, data in cycle}) == 1
    one, cycle = (TeamPipeline(ids, "robot_1", SETTINGS) for _ in range(2))
    reader = RawReader()
    for k, messages in enumerate(raw):
        entries = [(*m, 0.01 * k) for m in messages]
        for rid, topic, data, received in entries:
            push_converted(one, convert_raw(rid, topic, data), received)
        push_raw(cycle, entries, reader)
        one.process()
        cycle.process()
    assert cycle.accepted == one.accepted == Counter(dict.fromkeys(ids, 100))
    for a, b in zip(statistics(one), statistics(cycle), strict=True):
        assert np.array_equal(a, b)
