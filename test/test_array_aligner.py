"""``StreamingAligner`` keeps samples as arrays and finds the brackets of all pending sets at
once (``np.searchsorted``): it forms exactly the sets, bit for bit, and drops exactly the
sets (by reason) that the per-sample aligner it replaced did, one sample and one bracket at a
time (``OneByOne`` below, that aligner's rules: bisect per robot and set, a set waits for
the sample after its bracket, gaps, holes, ``max_delay``, the buffer's length). Streams
with clock offsets, jitter, lost samples, refused samples (holes), samples out of order,
exact and interpolated brackets, pushed one by one or in batches, popped at random."""

from __future__ import annotations

import bisect
from collections import Counter, deque

import numpy as np
import pytest

from inertia_estimation_ros.core.cooperative import StreamingAligner
from inertia_estimation_ros.core.cooperative.clock import (
    GAP_PERIODS,
    PERIOD_WINDOW,
    interpolate_sample,
)
from inertia_estimation_ros.core.samples import GraspBatch, GraspSample
from inertia_estimation_ros.core.spatial import exp6

ROBOTS = ("robot_1", "robot_2", "robot_3")


class OneByOne:
    """The per-sample aligner (deques of GraspSample, one bisect per robot and set)."""

    def __init__(self, offsets: dict, max_gap: float, max_delay: float, buffer_seconds: float):
        self.offsets, self.max_gap, self.max_delay = offsets, max_gap, max_delay
        self.buffer_seconds = buffer_seconds
        self.buffers = {r: deque() for r in ROBOTS}
        self.intervals = {r: deque(maxlen=PERIOD_WINDOW) for r in ROBOTS}
        self.holes = {r: [] for r in ROBOTS}
        self.dropped = Counter()

    def push(self, sample: GraspSample) -> str:
        buffer = self.buffers[sample.robot_id]
        if buffer and sample.stamp <= buffer[-1].stamp:
            return "non-monotonic stamp"
        if buffer:
            self.intervals[sample.robot_id].append(sample.stamp - buffer[-1].stamp)
        buffer.append(sample)
        while buffer[-1].stamp - buffer[0].stamp > self.buffer_seconds:
            buffer.popleft()
        return ""

    def hole(self, rid: str, stamp: float) -> None:
        bisect.insort(self.holes[rid], stamp)
        buffer = self.buffers[rid]
        oldest = buffer[0].stamp if buffer else stamp - self.buffer_seconds
        del self.holes[rid][: bisect.bisect_left(self.holes[rid], oldest)]

    def bracket(self, rid: str, stamp: float):
        buffer = self.buffers[rid]
        if not buffer or buffer[-1].stamp < stamp:
            return "wait"
        if buffer[0].stamp > stamp:
            return "old"
        k = bisect.bisect_left(buffer, stamp, key=lambda s: s.stamp)
        if buffer[k].stamp == stamp:
            return buffer[k], buffer[k]
        if k == len(buffer) - 1:
            return "wait"
        a, b = buffer[k - 1], buffer[k]
        widest = min(self.max_gap, GAP_PERIODS * float(np.median(self.intervals[rid])))
        holes = self.holes[rid]
        spans = bisect.bisect_right(holes, a.stamp) < bisect.bisect_left(holes, b.stamp)
        return (a, b) if b.stamp - a.stamp <= widest and not spans else "gap"

    def pop_ready(self) -> list[dict]:
        out, reference = [], self.buffers[ROBOTS[0]]
        while reference:
            head = reference[0]
            t, parts, status = head.stamp, {ROBOTS[0]: head}, ""
            for rid in ROBOTS[1:]:
                bracket = self.bracket(rid, t + self.offsets[rid])
                if isinstance(bracket, str):
                    status = bracket
                    break
                parts[rid] = interpolate_sample(*bracket, t + self.offsets[rid], t)
            if status == "wait" and reference[-1].stamp - t <= self.max_delay:
                break
            reference.popleft()
            if status:
                self.dropped["drop-out or late data" if status == "wait" else status] += 1
                continue
            out.append(parts)
        return out


def stream(rid: str, rng: np.random.Generator, offset: float, exact: bool) -> list[GraspSample]:
    """6 s of one robot's samples at 100 Hz: jitter (unless ``exact``), 5 % lost, gravity
    on some robots, random motion."""
    t = offset + np.arange(0.0, 6.0, 0.01)
    if not exact:
        t = t + rng.uniform(-2e-3, 2e-3, len(t))
    t = t[rng.random(len(t)) > 0.05]
    samples = []
    for stamp in t:
        T = exp6(rng.normal(size=6))
        samples.append(
            GraspSample(
                rid,
                float(stamp),
                T,
                rng.normal(size=6),
                rng.normal(size=6),
                rng.normal(size=6),
                rng.normal(size=3) if rid != "robot_3" else None,
            )
        )
    return samples


def equal_sets(one: list[dict], other: list[dict]) -> bool:
    names = ("stamp", "T_i0_i", "V_i", "dV_i", "F_i", "g_i", "has_force", "has_torque")
    return len(one) == len(other) and all(
        all(
            np.array_equal(
                np.asarray(getattr(a[r], n), dtype=float) if getattr(a[r], n) is not None else 0,
                np.asarray(getattr(b[r], n), dtype=float) if getattr(b[r], n) is not None else 0,
            )
            for n in names
        )
        for a, b in zip(one, other, strict=True)
        for r in ROBOTS
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_array_aligner_forms_and_drops_the_sets_of_the_per_sample_one(seed):
    rng = np.random.default_rng(seed)
    exact = seed % 2 == 0  # robots on one clock: exact brackets; else interpolated
    offsets = {"robot_1": 0.0, "robot_2": 0.0 if exact else 0.013, "robot_3": 0.0}
    settings = dict(max_gap=0.05, max_delay=0.3, buffer_seconds=1.5)
    arrays = StreamingAligner(ROBOTS, ROBOTS[0], offsets, **settings)
    reference = OneByOne(offsets, **settings)
    streams = {r: stream(r, rng, offsets[r], exact) for r in ROBOTS}
    refused = {r: set(rng.choice(len(streams[r]), 6, replace=False)) for r in ROBOTS}
    position = dict.fromkeys(ROBOTS, 0)
    formed = 0
    while any(position[r] < len(streams[r]) for r in ROBOTS):
        rid = ROBOTS[rng.integers(3)]
        k = int(rng.integers(1, 12))
        batch = streams[rid][position[rid] : position[rid] + k]
        position[rid] += k
        good = [s for j, s in enumerate(batch, position[rid] - k) if j not in refused[rid]]
        for j, s in enumerate(batch, position[rid] - k):
            if j in refused[rid]:
                arrays.hole(rid, s.stamp)
                reference.hole(rid, s.stamp)
        if good and rng.random() < 0.5:
            assert arrays.push_batch(GraspBatch.from_samples(good)) == [""] * len(good)
        else:
            assert [arrays.push(s) for s in good] == [""] * len(good)
        assert [reference.push(s) for s in good] == [""] * len(good)
        if good and rng.random() < 0.2:  # a sample again, out of order: refused by both
            late = good[0]
            assert arrays.push(late) == reference.push(late) == "non-monotonic stamp"
        if rng.random() < 0.3:
            ours, theirs = arrays.pop_ready(), reference.pop_ready()
            assert equal_sets(ours, theirs)
            formed += len(ours)
    assert equal_sets(arrays.pop_ready(), reference.pop_ready())
    assert arrays.dropped == reference.dropped
    assert formed > 100 and sum(arrays.dropped.values()) > 10, (formed, arrays.dropped)


def test_a_set_at_every_robots_own_stamp_is_formed_without_their_next_samples():
    """Robots on one clock: the set at the newest stamp is formed as soon as every robot's
    sample at that stamp is in (the coordinator's worker updates with it in the cycle its
    last message woke), not when the next samples come; a robot whose samples only bracket
    the stamp (another clock's jitter) holds it until its sample after the bracket."""
    rng = np.random.default_rng(3)

    def sample(rid: str, stamp: float) -> GraspSample:
        return GraspSample(rid, stamp, exp6(rng.normal(size=6)), *rng.normal(size=(3, 6)))

    aligner = StreamingAligner(ROBOTS, ROBOTS[0])
    stamps = 0.01 * np.arange(5)
    for rid in ROBOTS:
        aligner.push_batch(GraspBatch.from_samples([sample(rid, t) for t in stamps]))
    block = aligner.pop_block()
    assert block.stamps[:, 0].tolist() == stamps.tolist()
    for rid in ROBOTS:  # robot_3's sample comes 0.2 ms late: its bracket needs one more
        aligner.push(sample(rid, 0.05 + (2e-4 if rid == "robot_3" else 0.0)))
    assert len(aligner.pop_block()) == 0
    aligner.push(sample("robot_3", 0.0601))
    assert aligner.pop_block().stamps[:, 0].tolist() == [0.05]
    assert not aligner.dropped
