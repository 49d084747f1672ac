"""The external wrench output on the coordinator's raw subscriptions: ``on_raw`` keeps a
message of the usual layout as its CDR bytes and reads only the sample a wrench uses, and
publishes the same wrenches, bit for bit (the messages' bytes), with the same counts, as
converting every message (``ingest.convert_raw``, ``on_message``), on random arrivals of
GraspState and GraspStateArray messages (batches of 1-4, lags, messages sent twice, a clock
jump, NaN, samples with covariances, another frame, another robot's id, bytes no layout
reads) and over a stream long enough for the history to drop its oldest messages."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from rclpy.serialization import serialize_message
from test_collaboration_wrench_oracle import _arrivals, _model, _noise, _sample

from inertia_estimation_ros.core.samples import GraspSample
from inertia_estimation_ros.ros.conversions import to_grasp_state, to_grasp_state_array
from inertia_estimation_ros.ros.external_wrench_output import ExternalWrenchOutput
from inertia_estimation_ros.ros.ingest import convert_raw


def _raw(rng: np.random.Generator, rid: str, samples: list[GraspSample]) -> list[tuple]:
    """(robot, topic, CDR bytes) of samples: a GraspStateArray, or a GraspState per sample
    (always for samples with covariances or gravity in some only); some sent under another
    frame or robot id."""
    frame = f"{rid}/grasp" if rng.uniform() > 0.03 else "elsewhere"
    sender = rid if rng.uniform() > 0.03 else "someone"
    with_covariances = any(s.F_cov is not None or s.dV_cov is not None for s in samples)
    one_gravity = len({s.g_i is None for s in samples}) == 1
    if rng.uniform() < 0.5 and one_gravity and not with_covariances:
        msg = to_grasp_state_array(list(samples), frame, f"{rid}/home")
        msg.robot_id = sender
        return [(rid, "grasp_state_array", serialize_message(msg))]
    messages = []
    for sample in samples:
        msg = to_grasp_state(sample, frame, f"{rid}/home")
        msg.robot_id = sender
        messages.append((rid, "grasp_state", serialize_message(msg)))
    return messages


def _outputs(ids, model, noise, offsets, rate, max_spread) -> list:
    """Two outputs with the same inputs, and what each publishes."""
    made = []
    for _ in range(2):
        published = []
        params = SimpleNamespace(external_wrench_rate=rate, external_wrench_max_spread=max_spread)
        node = SimpleNamespace(
            params=params,
            create_publisher=lambda *a, sink=published: SimpleNamespace(publish=sink.append),
        )
        output = ExternalWrenchOutput(node, lambda r: f"{r}/grasp", ids, ids[0])
        output._inputs = SimpleNamespace(estimate=None, model=model, noise=noise, offsets=offsets)
        made.append((output, published))
    return made


def _assert_same_output(raw_path: tuple, converted: tuple) -> None:
    (lazy, lazy_published), (full, full_published) = raw_path, converted
    assert lazy_published == full_published  # serialized ExternalWrench messages
    assert lazy.counts() == full.counts()
    assert lazy.checks.status() == full.checks.status()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_raw_path_publishes_what_converting_every_message_publishes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = ("r1", "r2", "r3", "r4")
    has_torque = {r: bool(rng.integers(2)) for r in ids}
    model, noise = _model(rng, ids), _noise(rng)
    offsets = {r: float(rng.uniform(-0.003, 0.003)) for r in ids}
    messages = [
        m for rid, samples in _arrivals(rng, ids, has_torque) for m in _raw(rng, rid, samples)
    ]
    messages.insert(
        len(messages) // 2, ("r2", "grasp_state_array", b"\x00\x01\x00\x00" + bytes(40))
    )
    for rate in (100.0, 30.0):
        lazy, full = _outputs(ids, model, noise, offsets, rate, 0.03)
        for rid, topic, raw in messages:
            mine = lazy[0].on_raw(rid, topic, raw)
            theirs = full[0].on_message(convert_raw(rid, topic, raw))
            assert (mine is None) == (theirs is None)
        _assert_same_output(lazy, full)
        counts = lazy[0].counts()
        assert counts["published"] > 10 and len(counts) > 2


def test_the_raw_path_keeps_a_bounded_history_and_the_same_wrenches() -> None:
    """5 s of two robots at 1 kHz, one GraspState per sample and then GraspStateArrays of
    ten (a batch's gravity that of its first sample): the output drops its oldest
    rows and messages and still publishes the same wrenches (one robot silent for 0.4 s)."""
    rng = np.random.default_rng(7)
    ids = ("r1", "r2")
    model, noise = _model(rng, ids), _noise(rng)
    lazy, full = _outputs(ids, model, noise, {}, 10.0, 0.5)
    t = np.arange(5000) * 1e-3 + 1.0
    start = 0
    while start < len(t):
        size = 1 if start < 1000 else 10
        for rid in ids:
            if rid == "r2" and 2000 <= start < 2400:
                continue  # silent, then late
            samples = [_sample(rng, rid, float(s), True) for s in t[start : start + size]]
            frame, home = f"{rid}/grasp", f"{rid}/home"
            if size == 1:
                topic, msg = "grasp_state", to_grasp_state(samples[0], frame, home)
            else:
                samples = [replace(s, g_i=samples[0].g_i) for s in samples]
                topic, msg = "grasp_state_array", to_grasp_state_array(samples, frame, home)
            raw = serialize_message(msg)
            lazy[0].on_raw(rid, topic, raw)
            full[0].on_message(convert_raw(rid, topic, raw))
        start += size
    history = lazy[0]._history
    assert all(len(m) <= c for m, c in zip(history.messages, history.count, strict=True))
    assert len(history.messages[0]) < 1000  # of the 1400 sent: the oldest dropped
    _assert_same_output(lazy, full)
    assert lazy[0].counts()["published"] > 30


def _shuffled_stream(seed: int) -> tuple:
    """Three robots at 1 kHz for 3 s, messages of K in 1, 3, 10 or 40 (GraspState or
    GraspStateArray) with the stamps of a few swapped inside a message, messages sent twice or
    missing, the last robot silent for 0.3 s (then late), a clock jump 1.5 s back."""
    rng = np.random.default_rng(seed)
    ids = ("r1", "r2", "r3")
    model, noise = _model(rng, ids), _noise(rng)
    offsets = {r: float(rng.uniform(-0.002, 0.002)) for r in ids}
    t = np.arange(3000) * 1e-3 + 1.0
    t[2000:] -= 1.5
    messages, start = [], 0
    while start < len(t):
        size = int(rng.choice([1, 3, 10, 40]))
        for rid in ids:
            if (rid == "r3" and 800 <= start < 1100) or rng.uniform() < 0.02:
                continue
            stamps = t[start : start + size].copy()
            if len(stamps) > 2 and rng.uniform() < 0.1:
                stamps[[0, 1]] = stamps[[1, 0]]
            samples = [_sample(rng, rid, float(s), True) for s in stamps]
            frame, home = f"{rid}/grasp", f"{rid}/home"
            if size == 1 and rng.uniform() < 0.5:
                topic, msg = "grasp_state", to_grasp_state(samples[0], frame, home)
            else:
                samples = [replace(s, g_i=samples[0].g_i) for s in samples]
                topic, msg = "grasp_state_array", to_grasp_state_array(samples, frame, home)
            messages.append((rid, topic, serialize_message(msg)))
            if rng.uniform() < 0.02:
                messages.append(messages[-1])
        start += size
    return ids, model, noise, offsets, messages


@pytest.mark.parametrize("seed", [3, 4])
def test_the_raw_path_equals_converting_with_shuffled_stamps_and_mixed_batches(seed: int) -> None:
    """``on_raw`` against ``on_message`` (the oracle) on ``_shuffled_stream``: the same
    wrenches, counts and checks, and what the checks were handed, array for array."""
    ids, model, noise, offsets, messages = _shuffled_stream(seed)
    lazy, full = _outputs(ids, model, noise, offsets, 200.0, 0.5)
    handed = []
    for output, _ in (lazy, full):
        seen, add = [], output.checks.add
        output.checks.add = lambda *a, seen=seen, add=add: (seen.append(a), add(*a))
        handed.append(seen)
    for rid, topic, raw in messages:
        lazy[0].on_raw(rid, topic, raw)
        full[0].on_message(convert_raw(rid, topic, raw))
    _assert_same_output(lazy, full)
    assert lazy[0].counts()["published"] > 100
    assert len(handed[0]) == len(handed[1])
    for (team, result, *_), (expected_team, expected, *_) in zip(*handed, strict=True):
        for x, y in zip(team[1:], expected_team[1:], strict=True):
            assert (x is None and y is None) or np.array_equal(x, y, equal_nan=True)
        assert np.array_equal(result.covariance, expected.covariance)
