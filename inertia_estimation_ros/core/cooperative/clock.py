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
from ..samples import GraspSample

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


class StreamingAligner:
    """Buffers per-robot samples and emits synchronized sets on the reference time base.

    ``push`` one sample at a time (any robot, any order across robots, increasing stamps per
    robot). ``pop_ready`` returns every set that can be formed: for each reference sample at
    t, every other robot i needs samples bracketing t + offset_i no more than ``max_gap``
    apart and no more than ``GAP_PERIODS`` of its sample period (the median interval of its
    last ``PERIOD_WINDOW`` samples) and with no refused sample between them (``hole``):
    only neighbouring samples are interpolated between. A sample lost, refused or out of
    order leaves a gap that no set spans, since the estimator's noise model holds for
    measured samples, not for interpolation across a gap (issue 15: 1 in 4 samples lost
    moved a grasp 1.1 mm, 250 sigma). A set waits for the sample after its bracket, so that
    one arriving out of order is seen as a hole first. Sets that cannot be formed within
    ``max_delay`` of the newest reference sample are dropped and counted in ``dropped``
    (with the reason). Memory is bounded by ``buffer_seconds`` per robot.
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
        self._buffers: dict[str, deque] = {r: deque() for r in robot_ids}
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
        buffer = self._buffers.get(sample.robot_id)
        if buffer is None:
            return f"unknown robot {sample.robot_id!r}"
        if not np.isfinite(sample.stamp) or (buffer and sample.stamp <= buffer[-1].stamp):
            return "non-monotonic stamp"
        if buffer:
            self._intervals[sample.robot_id].append(sample.stamp - buffer[-1].stamp)
            self._new_intervals.add(sample.robot_id)
        buffer.append(sample)
        while buffer[-1].stamp - buffer[0].stamp > self.buffer_seconds:
            buffer.popleft()
        return ""

    def hole(self, robot_id: str, stamp: float) -> None:
        """A sample of ``robot_id`` at ``stamp`` (its clock) was refused: no set is
        interpolated across it."""
        holes = self._holes.get(robot_id)
        if holes is None or not np.isfinite(stamp):
            return
        bisect.insort(holes, float(stamp))
        buffer = self._buffers[robot_id]
        oldest = buffer[0].stamp if buffer else stamp - self.buffer_seconds
        del holes[: bisect.bisect_left(holes, oldest)]

    def _bracket(self, rid: str, stamp: float) -> tuple[GraspSample, GraspSample] | str:
        """(a, b) around stamp, or 'wait' (not there yet) or 'gap'/'old' (cannot be formed)."""
        buffer = self._buffers[rid]
        if not buffer or buffer[-1].stamp < stamp:
            return "wait"
        if buffer[0].stamp > stamp:
            return "old"
        k = bisect.bisect_left(buffer, stamp, key=lambda s: s.stamp)
        if buffer[k].stamp == stamp:
            return buffer[k], buffer[k]
        if k == len(buffer) - 1:
            return "wait"  # for the next sample: one out of order may still fill the bracket
        a, b = buffer[k - 1], buffer[k]
        holes = self._holes[rid]
        spans_hole = bisect.bisect_right(holes, a.stamp) < bisect.bisect_left(holes, b.stamp)
        return (a, b) if b.stamp - a.stamp <= self._widest_gap(rid) and not spans_hole else "gap"

    def _widest_gap(self, rid: str) -> float:
        """The widest bracket of ``rid`` from the median of its last intervals, taken when
        needed (not per sample: a batch of K pushes costs one median)."""
        if rid in self._new_intervals:
            self._new_intervals.discard(rid)
            period = float(np.median(self._intervals[rid]))
            self._widest[rid] = min(self.max_gap, GAP_PERIODS * period)
        return self._widest[rid]

    def pop_ready(self) -> list[dict[str, GraspSample]]:
        """Every synchronized set that can be formed now, oldest first."""
        out = []
        reference = self._buffers[self.reference_id]
        while reference:
            head = reference[0]
            t = head.stamp
            parts, status = {self.reference_id: head}, ""
            for rid in self.robot_ids:
                if rid == self.reference_id:
                    continue
                bracket = self._bracket(rid, t + self.offsets[rid])
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
            out.append({r: parts[r] for r in self.robot_ids})
        return out
