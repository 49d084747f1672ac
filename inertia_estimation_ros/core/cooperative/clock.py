"""Clock offsets between robots, and alignment of their samples onto one time base.

Paper 000 assumes that all robots sample synchronously. Real teams have their own clocks.
The angular speed |omega_i| is the same for every grasp of a rigid payload
(omega_i = R_i_s omega_s), whatever the grasp frame, so it can be compared across robots
before any grasp is known:

* ``estimate_clock_offset``: the offset d with t_robot = t_reference + d, and its standard
  deviation, by correlating the two angular-speed signals on a common uniform grid: the
  reference over the span both cover, less ``max_offset`` at each end, against the robot's
  over the same span shifted by each lag (equal windows; Pearson's correlation per lag),
  then refining the peak to a fraction of a sample with a parabola through its three
  samples. (Zero-padded signals with their means removed over unequal spans shifted the
  peak by 0.2-3 ms when the reference had one sample more; issue 15.)
* ``SpeedHistory`` keeps a bounded window of (stamp, |omega|) per robot for the coordinator,
  and ``SpeedHistory.offsets`` estimates every robot's offset from it;
* ``StreamingAligner`` buffers each robot's samples (any rates, jitter, drop-outs) and emits
  synchronized sets on the reference robot's time base. Poses are interpolated on SE(3)
  (geodesic, ``spatial.exp6``/``log6``), vectors linearly; every emitted sample carries the
  reference stamp, ready for ``TeamEstimator.update``.
"""

from __future__ import annotations

import bisect
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .. import spatial as sp
from ..samples import GraspBatch, GraspSample, SetBlock

PEAK_RESOLUTION = 1e-3  # [grid steps] floor of an offset's standard deviation
# The speed |omega| is not the Gaussian signal plus white noise that the bound assumes: near
# zero speed its noise is rectified, and its kinks there carry most of the curvature. A
# Monte Carlo (analytic team, 0.01 rad/s white noise on omega, 12 runs x 2 schedules x 2
# robots) found |error| / bound 1.8 RMS and 4.1 at most; the stated sigma is twice the bound.
BOUND_INFLATION = 2.0


@dataclass(frozen=True)
class ClockOffset:
    """t_robot = t_reference + offset [s]; ``correlation`` is the normalized peak (<= 1)."""

    offset: float
    correlation: float
    advice: str = ""  # set when the signals cannot determine the offset
    sigma: float = 0.0  # standard deviation of ``offset`` [s]


def estimate_clock_offset(
    t_reference: np.ndarray,
    speed_reference: np.ndarray,
    t_robot: np.ndarray,
    speed_robot: np.ndarray,
    max_offset: float,
    rate_hz: float | None = None,
    min_correlation: float = 0.5,
) -> ClockOffset:
    """Offset of a robot's clock from the correlation of angular speeds |omega| (module
    docstring), with its standard deviation.

    Both signals are resampled on one uniform grid (``rate_hz``, default four times the
    faster of the two median rates). Only lags up to ``max_offset`` are searched. A
    normalized peak below ``min_correlation`` comes with advice instead of trust.
    """
    t_ref, a = np.asarray(t_reference, float), np.asarray(speed_reference, float)
    t_rob, b = np.asarray(t_robot, float), np.asarray(speed_robot, float)
    if len(t_ref) < 4 or len(t_rob) < 4:
        return ClockOffset(0.0, 0.0, "too few samples to align clocks: record a few seconds")
    step = min(np.median(np.diff(t_ref)), np.median(np.diff(t_rob)))
    dt = 1.0 / (rate_hz or 4.0 / step)
    lag = int(np.ceil(max_offset / dt))
    start, end = max(t_ref[0], t_rob[0]), min(t_ref[-1], t_rob[-1])
    grid = start + dt * np.arange(int((end - start) / dt) + 1)
    if len(grid) < 2 * lag + 8:
        return ClockOffset(0.0, 0.0, "too few samples to align clocks: record a few seconds")
    x = np.interp(grid[lag:-lag], t_ref, a)
    x = x - x.mean()
    y = np.interp(grid, t_rob, b)
    corr = _pearson_per_lag(x, y)
    if corr is None:
        return ClockOffset(0.0, 0.0, "constant angular speed: rotate the payload back and forth")
    lags = np.arange(-lag, lag + 1)
    k = int(np.argmax(corr))
    shift, curvature = 0.0, 0.0
    if 0 < k < len(corr) - 1:
        c0, c1, c2 = corr[k - 1], corr[k], corr[k + 1]
        curvature = c0 - 2 * c1 + c2
        exact = c1 > 1.0 - 1e-12  # the signals coincide at this lag: nothing to refine
        shift = 0.5 * (c0 - c2) / curvature if curvature < 0 and not exact else 0.0
    offset = (lags[k] + shift) * dt
    peak = float(min(corr[k], 1.0))
    sigma = _offset_sigma(peak, -curvature, len(x) * dt / step, dt)
    advice = ""
    if peak < min_correlation:
        advice = (
            f"clock offset uncertain (correlation {peak:.2f}): rotate the payload back and "
            "forth at varying speed"
        )
    return ClockOffset(float(offset), peak, advice, sigma)


def _pearson_per_lag(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Pearson's correlation of x (centred) with every window of y of its length, the
    window starting at each index (2 lag + 1 windows); None if a signal is constant."""
    n = len(x)
    windows = np.lib.stride_tricks.sliding_window_view(y, n)
    sums = windows.sum(axis=1)
    centred_power = np.einsum("ij,ij->i", windows, windows) - sums**2 / n
    norm = np.sqrt(np.sum(x * x) * np.clip(centred_power, 0.0, None))
    if not np.all(norm > 0):
        return None
    return (windows @ x) / norm


def _offset_sigma(peak: float, curvature: float, independent: float, dt: float) -> float:
    """Standard deviation of the peak's position [s]: 1 - r is the noise-to-signal power
    ratio, the curvature of r at the peak (per grid step squared) the signal's bandwidth,
    over ``independent`` samples (the recorded ones, not the finer grid's); both signals
    noisy: twice the variance. Times ``BOUND_INFLATION``, and at least ``PEAK_RESOLUTION``
    of a grid step: the parabola's own error where the noise is nil."""
    if peak <= 0 or curvature <= 0 or independent <= 0:
        return float("inf")
    noise = 2.0 * max(1.0 - peak, 0.0) / (peak * independent * curvature)
    return float(dt * np.sqrt(BOUND_INFLATION**2 * noise + PEAK_RESOLUTION**2))


class SpeedHistory:
    """A bounded window of (stamp, |omega|) per robot, for estimating clock offsets online."""

    def __init__(self, robot_ids: Sequence[str], window_seconds: float = 30.0) -> None:
        self.window = window_seconds
        self._data = {r: deque() for r in robot_ids}

    def add(self, sample: GraspSample) -> None:
        queue = self._data[sample.robot_id]
        queue.append((sample.stamp, float(np.linalg.norm(sample.V_i[:3]))))
        while queue and queue[-1][0] - queue[0][0] > self.window:
            queue.popleft()

    def offsets(self, reference_id: str, max_offset: float) -> dict[str, ClockOffset]:
        """Every robot's offset relative to the reference robot's clock."""
        t_ref, s_ref = np.array(self._data[reference_id]).reshape(-1, 2).T
        out = {}
        for rid, queue in self._data.items():
            if rid == reference_id:
                out[rid] = ClockOffset(0.0, 1.0)
                continue
            t, s = np.array(queue).reshape(-1, 2).T
            out[rid] = estimate_clock_offset(t_ref, s_ref, t, s, max_offset)
        return out


def interpolate_pose(T_a: np.ndarray, T_b: np.ndarray, u: float) -> np.ndarray:
    """The SE(3) geodesic T_a exp(u log(T_a^-1 T_b)), u in [0, 1]."""
    return T_a @ sp.exp6(u * sp.log6(sp.inverse(T_a) @ T_b))


def interpolate_sample(
    a: GraspSample, b: GraspSample, stamp: float, new_stamp: float
) -> GraspSample:
    """The sample between a and b at ``stamp`` (robot clock), restamped ``new_stamp``; a
    itself when the bracket is exact (``a is b``: the same numbers as interpolating, at a
    tenth of the cost; robots on one clock, N = 16 at 1 kHz; not even copied without an
    offset: samples are frozen)."""
    if a is b:
        return a if a.stamp == new_stamp else replace(a, stamp=new_stamp)
    u = 0.0 if b.stamp == a.stamp else (stamp - a.stamp) / (b.stamp - a.stamp)

    def lerp(x: np.ndarray | None, y: np.ndarray | None) -> np.ndarray | None:
        if x is None or y is None:
            return None
        return (1 - u) * np.asarray(x, float) + u * np.asarray(y, float)

    near = a if u < 0.5 else b
    return replace(
        near,
        stamp=new_stamp,
        T_i0_i=interpolate_pose(a.T_i0_i, b.T_i0_i, u),
        V_i=lerp(a.V_i, b.V_i),
        dV_i=lerp(a.dV_i, b.dV_i),
        F_i=lerp(a.F_i, b.F_i),
        g_i=lerp(a.g_i, b.g_i),
    )


GAP_PERIODS = 1.5  # a bracket wider than this many of the robot's sample periods is a gap
PERIOD_WINDOW = 64  # intervals over which a robot's sample period is the median


# Where each column of a sample sits in a buffer's row of floats (flags as 0 / 1).
_LAYOUT = {
    "stamps": (0, ()),
    "T_i0_i": (1, (4, 4)),
    "V_i": (17, (6,)),
    "dV_i": (23, (6,)),
    "F_i": (29, (6,)),
    "g_i": (35, (3,)),
    "has_g": (38, ()),
    "has_force": (39, ()),
    "has_torque": (40, ()),
}
_WIDTH = 41
_TRIM_HEAD = 64  # the oldest samples a trim looks at first (``_Columns.trim``)


def row_matrix(batch: GraspBatch) -> np.ndarray:
    """(K, _WIDTH) rows of a batch's columns, made once per batch (``aligner_rows``, passed
    on to its ``rows``: a stream's rows made at once serve each of its slices)."""
    if batch.aligner_rows is None:
        k = len(batch)
        columns = [getattr(batch, name).reshape(k, -1) for name in _LAYOUT]
        batch.aligner_rows = np.concatenate(columns, axis=1, dtype=float)
    return batch.aligner_rows


_SIZES = {name: int(np.prod(shape, dtype=int)) for name, (_, shape) in _LAYOUT.items()}


def _from_rows(rows: np.ndarray) -> dict[str, np.ndarray]:
    """The columns of (..., _WIDTH) rows, each its own contiguous array."""
    lead = rows.shape[:-1]
    columns = {}
    for name, (start, shape) in _LAYOUT.items():
        column = rows[..., start : start + _SIZES[name]].reshape(lead + shape)
        columns[name] = column != 0 if name.startswith("has_") else column.copy()
    return columns


class _Columns:
    """One robot's buffered samples as rows of floats (``_LAYOUT``), oldest first, in an
    array that grows by doubling (rows [start, end) are the buffer), and their stamps."""

    def __init__(self) -> None:
        self.start = self.end = 0
        self.data = np.empty((0, _WIDTH))
        self.times = np.empty(0)

    def __len__(self) -> int:
        return self.end - self.start

    @property
    def stamps(self) -> np.ndarray:
        return self.times[self.start : self.end]

    def append(self, batch: GraspBatch) -> None:
        self.append_rows(row_matrix(batch), batch.stamps)

    def append_rows(self, rows: np.ndarray, stamps: np.ndarray) -> None:
        """Rows of floats (``_LAYOUT``) and their stamps, after the newest."""
        k = len(stamps)
        if self.end + k > len(self.times):  # move the rows to the front, grow if still short
            size = max(len(self.times), 2 * (len(self) + k), 64)
            data, times = np.empty((size, _WIDTH)), np.empty(size)
            data[: len(self)] = self.data[self.start : self.end]
            times[: len(self)] = self.times[self.start : self.end]
            self.data, self.times, self.start, self.end = data, times, 0, len(self)
        self.data[self.end : self.end + k] = rows
        self.times[self.end : self.end + k] = stamps
        self.end += k

    def trim(self, seconds: float, newest: float | None = None) -> None:
        """Forget the samples more than ``seconds`` older than the newest (``newest``: its
        stamp, if the caller has it). The stamps increase, so those are the oldest ones:
        counted among the oldest ``_TRIM_HEAD`` first, all only if every one of those goes."""
        if newest is not None and newest - self.times[self.start].item() <= seconds:
            return
        stamps = self.stamps
        if stamps[-1] - stamps[0] > seconds:
            old = int(np.count_nonzero(stamps[-1] - stamps[:_TRIM_HEAD] > seconds))
            if old == _TRIM_HEAD:
                old = int(np.count_nonzero(stamps[-1] - stamps > seconds))
            self.start += old

    def rows(self, index: np.ndarray, increasing: bool = False) -> np.ndarray:
        """The rows at buffer positions ``index`` (0: the oldest); ``increasing``: the
        positions are known to increase strictly, so that consecutive ones are a slice
        (a view, as the caller copies them at once)."""
        if increasing and index[-1] - index[0] == len(index) - 1:
            first = self.start + int(index[0])
            return self.data[first : first + len(index)]
        return self.data[self.start + index]

    def sample(self, k: int) -> GraspSample:
        """The sample at buffer position k as a GraspSample."""
        c = _from_rows(self.data[self.start + k])
        return GraspSample(
            "",
            float(c["stamps"]),
            c["T_i0_i"],
            c["V_i"],
            c["dV_i"],
            c["F_i"],
            c["g_i"] if c["has_g"] else None,
            bool(c["has_force"]),
            bool(c["has_torque"]),
        )


WAIT, OLD, GAP = 1, 2, 3  # why a set cannot be formed (yet); 0: it can
DROP_REASONS = {WAIT: "drop-out or late data", OLD: "old", GAP: "gap"}


class StreamingAligner:
    """Buffers per-robot samples and emits synchronized sets on the reference time base.

    ``push`` one sample at a time or ``push_batch`` a ``GraspBatch`` (any robot, any order
    across robots, increasing stamps per robot). ``pop_block`` returns every set that can be
    formed, as one ``SetBlock`` (``pop_ready``: as GraspSample sets): for each reference
    sample at t, every other robot i needs samples bracketing t + offset_i no more than
    ``max_gap`` apart and no more than ``GAP_PERIODS`` of its sample period (the median
    interval of its last ``PERIOD_WINDOW`` samples) and with no refused sample between them
    (``hole``): only neighbouring samples are interpolated between. A sample lost, refused or
    out of order leaves a gap that no set spans, since the estimator's noise model holds for
    measured samples, not for interpolation across a gap (issue 15: 1 in 4 samples lost
    moved a grasp 1.1 mm, 250 sigma). A set waits for the sample after its bracket, so that
    one arriving out of order is seen as a hole first. Sets that cannot be formed within
    ``max_delay`` of the newest reference sample are dropped and counted in ``dropped``
    (with the reason). Memory is bounded by ``buffer_seconds`` per robot. Samples are kept
    as arrays per robot and the brackets of all pending sets found at once
    (``np.searchsorted``).
    """

    def __init__(
        self,
        robot_ids: Sequence[str],
        reference_id: str,
        offsets: Mapping[str, float] | None = None,
        max_gap: float = 0.1,
        max_delay: float = 0.5,
        buffer_seconds: float = 2.0,
    ) -> None:
        if reference_id not in robot_ids:
            raise ValueError(f"reference robot {reference_id!r} is not in {tuple(robot_ids)}")
        if not (max_gap > 0 and max_delay > 0 and buffer_seconds > max_delay):
            raise ValueError("need max_gap > 0, max_delay > 0 and buffer_seconds > max_delay")
        self.robot_ids, self.reference_id = tuple(robot_ids), reference_id
        self.offsets = {r: 0.0 for r in robot_ids}
        self.set_offsets(offsets or {})
        self.max_gap, self.max_delay, self.buffer_seconds = max_gap, max_delay, buffer_seconds
        self._buffers: dict[str, _Columns] = {r: _Columns() for r in robot_ids}
        self._intervals: dict[str, deque] = {r: deque(maxlen=PERIOD_WINDOW) for r in robot_ids}
        self._widest: dict[str, float] = dict.fromkeys(robot_ids, max_gap)
        self._new_intervals: set[str] = set()  # robots whose ``_widest`` is out of date
        self._holes: dict[str, list[float]] = {r: [] for r in robot_ids}  # sorted stamps
        self.dropped: Counter = Counter()

    def set_offsets(self, offsets: Mapping[str, float]) -> None:
        """Clock offsets (t_robot = t_reference + offset); the reference's is always 0."""
        for rid, value in offsets.items():
            if rid not in self.offsets or not np.isfinite(value):
                raise ValueError(f"offset for {rid!r} must be a finite number of a known robot")
            self.offsets[rid] = 0.0 if rid == self.reference_id else float(value)

    def push(self, sample: GraspSample) -> str:
        """Buffer a sample; returns '' or why it was refused (unknown robot, stamp order)."""
        if sample.robot_id not in self._buffers:
            return f"unknown robot {sample.robot_id!r}"
        return self.push_batch(GraspBatch.from_samples([sample]))[0]

    def push_batch(self, batch: GraspBatch) -> list[str]:
        """``push`` for every sample of a batch of one robot: the same refusals, the samples
        in order buffered at once."""
        buffer = self._buffers.get(batch.robot_id)
        if buffer is None:
            return [f"unknown robot {batch.robot_id!r}"] * len(batch)
        stamps = batch.stamps
        steps = stamps[1:] - stamps[:-1]
        last = buffer.times[buffer.end - 1] if len(buffer) else -np.inf
        finite = np.isfinite(stamps[0]) and np.isfinite(stamps[-1])
        if not (finite and stamps[0] > last and (steps > 0).all()):
            return [self._push_row(batch, k) for k in range(len(batch))]  # one by one
        intervals = self._intervals[batch.robot_id]
        if len(buffer):  # the intervals after the buffer's newest sample
            intervals.append(float(stamps[0] - last))
        intervals.extend(steps.tolist())
        if len(buffer) or len(steps):
            self._new_intervals.add(batch.robot_id)
        buffer.append(batch)
        buffer.trim(self.buffer_seconds)
        return [""] * len(batch)

    def push_runs(self, batch: GraspBatch, robots: Sequence[str], bounds: np.ndarray) -> None:
        """``push_batch`` of several robots' samples in one batch (its robot id unused):
        rows ``bounds[k]:bounds[k + 1]`` are ``robots[k]``'s (robots not aligned here are
        left out). The buffers' rows are made once for all; a robot whose samples
        ``push_batch`` would not take at once goes through it (the same refusals)."""
        stamps, edges = batch.stamps, bounds.tolist()
        inside = stamps[1:] > stamps[:-1]
        inside[bounds[1:-1] - 1] = True  # from one robot's samples to the next one's
        plain = bool(np.isfinite(stamps).all() and inside.all())
        rows, times = row_matrix(batch), stamps.tolist()
        steps = (stamps[1:] - stamps[:-1]).tolist()
        for k, rid in enumerate(robots):
            buffer, start, stop = self._buffers.get(rid), edges[k], edges[k + 1]
            if buffer is None:
                continue
            filled = buffer.end > buffer.start
            last = buffer.times[buffer.end - 1].item() if filled else -np.inf
            if not (plain and times[start] > last):
                part = batch.rows(slice(start, stop))
                part.robot_id = rid
                self.push_batch(part)
                continue
            intervals = self._intervals[rid]
            if filled:  # the intervals after the buffer's newest sample
                intervals.append(times[start] - last)
            intervals.extend(steps[start : stop - 1])
            if filled or stop - start > 1:
                self._new_intervals.add(rid)
            buffer.append_rows(rows[start:stop], stamps[start:stop])
            buffer.trim(self.buffer_seconds, times[stop - 1])

    def _push_row(self, batch: GraspBatch, k: int) -> str:
        buffer, stamp = self._buffers[batch.robot_id], batch.stamps[k]
        if not np.isfinite(stamp) or (len(buffer) and stamp <= buffer.stamps[-1]):
            return "non-monotonic stamp"
        return self.push_batch(batch.rows(slice(k, k + 1)))[0]

    def hole(self, robot_id: str, stamp: float) -> None:
        """A sample of ``robot_id`` at ``stamp`` (its clock) was refused: no set is
        interpolated across it."""
        holes = self._holes.get(robot_id)
        if holes is None or not np.isfinite(stamp):
            return
        bisect.insort(holes, float(stamp))
        buffer = self._buffers[robot_id]
        oldest = buffer.stamps[0] if len(buffer) else stamp - self.buffer_seconds
        del holes[: bisect.bisect_left(holes, oldest)]

    def _brackets(self, rid: str, targets: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """Per target stamp (increasing): (0, WAIT, OLD or GAP: can a bracket be formed, as
        ``_bracket`` decided one by one, or None when every target is one of the robot's
        stamps: all 0; index of its sample after, or the exact one)."""
        stamps = self._buffers[rid].stamps
        n = len(stamps)
        if not n:
            return np.full(len(targets), WAIT), np.zeros(len(targets), dtype=int)
        after = stamps.searchsorted(targets)
        if after[-1] < n and (stamps[after] == targets).all():  # robots sampling together
            return None, after
        after = np.minimum(after, n - 1)
        exact = stamps[after] == targets
        status = np.where(exact | (targets < stamps[n - 1]) & (after < n - 1), 0, WAIT)
        between = ~exact & (status == 0)
        if between.any():  # brackets of two samples: not wider than a gap, no hole inside
            a, b = stamps[after - 1], stamps[after]
            wide = b - a > self._widest_gap(rid)
            holes = self._holes[rid]
            if holes:
                spans = np.searchsorted(holes, a, "right") < np.searchsorted(holes, b, "left")
                wide |= spans
            status[between & wide] = GAP
        if stamps[0] > targets[0]:
            status[stamps[0] > targets] = OLD
        return status, after

    def _widest_gap(self, rid: str) -> float:
        """The widest bracket of ``rid`` from the median of its last intervals, taken when
        needed (not per sample: a batch of K pushes costs one median)."""
        if rid in self._new_intervals:
            self._new_intervals.discard(rid)
            period = float(np.median(self._intervals[rid]))
            self._widest[rid] = min(self.max_gap, GAP_PERIODS * period)
        return self._widest[rid]

    def pop_block(self) -> SetBlock:
        """Every synchronized set that can be formed now, oldest first, as one block."""
        reference = self._buffers[self.reference_id]
        t = reference.stamps
        status = np.zeros(len(t), dtype=int)
        brackets, exact = {}, set()
        for rid in self.robot_ids:
            if rid != self.reference_id and len(t):
                offset = self.offsets[rid]
                mine, after = self._brackets(rid, t + offset if offset else t)
                if mine is None:
                    exact.add(rid)
                else:
                    status = np.where(status == 0, mine, status)
                brackets[rid] = after
        waiting = (status == WAIT) & (t[-1:] - t <= self.max_delay)
        popped = int(np.argmax(waiting)) if waiting.any() else len(t)
        if status[:popped].any():
            for code, count in zip(*np.unique(status[:popped], return_counts=True), strict=True):
                if code:
                    self.dropped[DROP_REASONS[code]] += int(count)
        good = np.flatnonzero(status[:popped] == 0)
        if len(good):
            keep = slice(popped) if len(good) == popped else good  # all: views
            after = {r: a[keep] for r, a in brackets.items()}
            block = self._block(t[keep], good, after, exact)
        else:
            block = SetBlock.empty(self.robot_ids)
        reference.start += popped
        return block

    def _block(
        self, t: np.ndarray, rows: np.ndarray, after: dict[str, np.ndarray], exact: set[str]
    ) -> SetBlock:
        """The sets at reference stamps ``t`` (reference rows ``rows``, the other robots'
        brackets ending at ``after``, the samples themselves for the robots ``exact``),
        every sample stamped t."""
        n = len(self.robot_ids)
        sets = np.empty((len(t), n, _WIDTH))
        for k, rid in enumerate(self.robot_ids):
            buffer = self._buffers[rid]
            if rid == self.reference_id:
                sets[:, k] = buffer.rows(rows, increasing=True)
                continue
            index = after[rid]
            sets[:, k] = buffer.rows(index, increasing=rid in exact)
            if rid in exact:
                continue
            target = t + self.offsets[rid]
            for q in np.flatnonzero(sets[:, k, 0] != target):  # between two samples
                a, b = buffer.sample(index[q] - 1), buffer.sample(index[q])
                between = interpolate_sample(a, b, target[q], t[q])
                sets[q, k] = row_matrix(GraspBatch.from_samples([between]))[0]
        columns = _from_rows(sets)
        columns["stamps"] = np.repeat(t[:, None], n, axis=1)
        return SetBlock(self.robot_ids, **columns)

    def pop_ready(self) -> list[dict[str, GraspSample]]:
        """``pop_block`` as GraspSample sets."""
        block = self.pop_block()
        return [block.set_at(q) for q in range(len(block))]
