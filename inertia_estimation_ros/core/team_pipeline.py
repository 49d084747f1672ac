"""The coordinator's pipeline, ROS-free: the very code the coordinator node runs live and
``inertia_estimation estimate`` runs on a bag.

``TeamPipeline`` takes every robot's ``GraspSample`` one at a time (any order across robots,
each on its own clock) and

1. checks it (``push``): known robot, the expected grasp frame id, finite values, a stamp
   after the robot's last one. Bad samples are refused and counted by reason, never raised.
   A stamp more than ``clock_jump`` before the robot's last one (a bag that loops) restarts
   everything cleanly; samples still in flight from before the jump are refused;
2. estimates the robots' clock offsets from their angular speeds (``clock.SpeedHistory``)
   and aligns the samples onto the reference robot's time base (``clock.StreamingAligner``).
   The estimator's statistics never forget, so nothing reaches it before the offsets are
   known: samples wait (at most ``clock_offset_window`` seconds) until every robot's offset
   is determined, then go through the aligner; the offsets are re-estimated every
   ``clock_offset_period`` seconds;
3. feeds the synchronized sets to the team estimator (``cooperative.TeamEstimator``;
   ``process``), and solves when asked (``estimate``);
4. watches the robots' liveness: a robot whose newest sample is ``robot_timeout`` older than
   the team's newest is *silent*. Mass, CoM and inertia need every robot's wrench, so they
   keep their values from before; grasp kinematics goes on among the robots still
   publishing (a second estimator on that sub-team, as long as the reference robot is one of
   them), and the estimate's advice says what can no longer be estimated and why;
5. reports the diagnostics' content (``status``): per robot its rate, latency, clock offset
   and refusals; for the team the stage, excitation figures with the estimator's advice,
   physical consistency, dropped sets and update latency.

Times are seconds on the robots' clocks. ``clock`` (optional) gives "now" on the same time
base (the node's ROS clock); it is only used for latency figures.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np

from .cooperative import (
    ClockOffset,
    EstimatorSettings,
    SpeedHistory,
    Stage,
    StreamingAligner,
    TeamEstimate,
    TeamEstimator,
)
from .samples import GraspBatch, GraspSample

LEVELS = ("OK", "WARN", "ERROR")
RATE_WINDOW = 2.0  # [s] of stamps over which a robot's rate is measured
WARMUP_MIN_SPAN = 4.0  # [s] of samples before the first clock offset estimate
WARMUP_RETRY = 0.5  # [s] between offset estimates until every offset is known
RELEASE_CHUNK = 64  # waiting samples pushed between two alignments
UNTRUSTED = 0.05  # fraction of a robot's samples refused beyond which nothing is valid
LATENCY_SECONDS = 10.0  # [s of the clock] the update latencies' percentiles are over
# EstimatorSettings that the coordinator exposes as parameters.
ESTIMATOR_PARAMETERS = (
    "sample_rate_hz",
    "input_cutoff_hz",
    "kinematics_source",
    "robust_loss",
    "min_kinematics_samples",
    "pose_angle_resolution",
    "pose_position_resolution",
)


@dataclass(frozen=True)
class PipelineSettings:
    """Tuning of ``TeamPipeline``; the coordinator node's parameters have the same names."""

    grasp_frame: str = "{robot}/grasp"  # frame id of every robot's GraspState
    max_gap: float = 0.1  # [s] a longer gap in a robot's samples is not interpolated over
    max_delay: float = 0.5  # [s] a set still incomplete this long after its time is dropped
    robot_timeout: float = 1.0  # [s] behind the team's newest sample: the robot is silent
    clock_jump: float = 0.5  # [s] a stamp this far back restarts everything (a looping bag)
    estimate_clock_offsets: bool = False  # robots on one clock (simulation, PTP) need none
    max_clock_offset: float = 0.2  # [s] largest offset searched between two robots' clocks
    clock_offset_window: float = 20.0  # [s] of angular speed cross-correlated
    clock_offset_period: float = 5.0  # [s] between offset estimates
    estimator: EstimatorSettings = field(default_factory=EstimatorSettings)

    def __post_init__(self) -> None:
        if "{robot}" not in self.grasp_frame:
            raise ValueError("setting grasp_frame must contain {robot}, e.g. '{robot}/grasp'")
        for name in (
            "max_gap",
            "max_delay",
            "robot_timeout",
            "clock_jump",
            "max_clock_offset",
            "clock_offset_window",
            "clock_offset_period",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"setting {name} must be a finite number > 0, got {value!r}")

    def frame_of(self, robot_id: str) -> str:
        return self.grasp_frame.format(robot=robot_id)

    @classmethod
    def from_parameters(cls, values: Mapping[str, object]) -> PipelineSettings:
        """Settings from flat parameters (the coordinator node's): every key named like a field
        of this class or of ``EstimatorSettings`` is used, others are ignored;
        ``input_cutoff_hz`` 0 means no input filter. ValueError names a bad setting."""
        estimator = {k: values[k] for k in ESTIMATOR_PARAMETERS if k in values}
        if estimator.get("input_cutoff_hz") == 0:
            estimator["input_cutoff_hz"] = None
        own = {f.name for f in fields(cls)} - {"estimator"}
        return cls(
            **{k: v for k, v in values.items() if k in own},
            estimator=EstimatorSettings(**estimator),
        )


@dataclass(frozen=True)
class Status:
    """One diagnostic status: ``level`` is OK, WARN or ERROR."""

    name: str
    level: str
    message: str
    values: dict[str, str]


@dataclass(frozen=True)
class Runs:
    """Several robots' samples of one worker cycle as the rows of one ``GraspBatch`` (its
    robot id unused): robot ``robots[k]``'s are rows ``bounds[k]:bounds[k + 1]`` (at least
    one), in order, sent with frame id ``frames[k]``; ``arrivals`` is each row's arrival
    time."""

    batch: GraspBatch
    robots: tuple[str, ...]
    frames: tuple[str, ...]
    bounds: np.ndarray  # (R + 1,) int
    arrivals: np.ndarray


class LatestSamples(Mapping[str, GraspSample]):
    """Robot id -> its newest accepted ``GraspSample`` (``TeamPipeline.latest``). A batch's
    sample is made only when it is read (``newest``): per cycle there is one per robot, and
    most are never read."""

    def __init__(self) -> None:
        self._entries: dict[str, GraspSample | tuple[GraspBatch, int]] = {}

    def __setitem__(self, robot_id: str, sample: GraspSample) -> None:
        self._entries[robot_id] = sample

    def newest(self, robot_id: str, batch: GraspBatch, row: int) -> None:
        """Row ``row`` of ``batch`` is ``robot_id``'s newest sample."""
        self._entries[robot_id] = (batch, row)

    def __getitem__(self, robot_id: str) -> GraspSample:
        value = self._entries[robot_id]
        if isinstance(value, tuple):
            batch, row = value
            value = batch[row]
            if value.robot_id != robot_id:
                value = replace(value, robot_id=robot_id)
            self._entries[robot_id] = value
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


class _Subteam:
    """Robots whose aligned sets feed one estimator (the whole team, or those still publishing)."""

    def __init__(
        self,
        robot_ids: Sequence[str],
        reference_id: str,
        settings: PipelineSettings,
        offsets: dict[str, float],
    ) -> None:
        self.robot_ids = tuple(robot_ids)
        self.aligner = StreamingAligner(
            self.robot_ids,
            reference_id,
            {r: offsets[r] for r in self.robot_ids},
            settings.max_gap,
            settings.max_delay,
            buffer_seconds=settings.max_delay + 2 * settings.max_clock_offset + 1.0,
        )
        self.estimator = TeamEstimator(self.robot_ids, reference_id, settings.estimator)


class SolveJob:
    """One solve of a pipeline's estimators (``TeamPipeline.start_solve``): ``run`` it on any
    thread, then hand it to ``TeamPipeline.finish_solve``. ``results`` maps each team
    ("full", "partial") to its TeamEstimate, or the error its solve raised."""

    def __init__(
        self,
        teams: dict[str, tuple[_Subteam, TeamEstimator]],
        full: bool,
        snapshots: dict[str, TeamEstimator] | None = None,
        updated_at: float | None = None,
    ) -> None:
        self.teams, self.full, self.snapshots = teams, full, snapshots or {}
        self.updated_at = updated_at  # the pipeline's ``updated_at`` when the job was made
        self.results: dict[str, TeamEstimate | Exception] = {}
        self.seconds = 0.0  # wall time of ``run``

    def run(self) -> None:
        started = time.perf_counter()
        for name, (_, live) in self.teams.items():
            estimator = self.snapshots.get(name, live)
            try:
                self.results[name] = estimator.estimate_now() if self.full else estimator.estimate()
            except (np.linalg.LinAlgError, ValueError) as error:
                self.results[name] = error
        self.seconds = time.perf_counter() - started


class TeamPipeline:
    """Checks, clock offsets, alignment, estimation and liveness of one team (module docstring)."""

    def __init__(
        self,
        robot_ids: Sequence[str],
        reference_id: str,
        settings: PipelineSettings | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        ids = tuple(robot_ids)
        if len(ids) < 2 or len(set(ids)) != len(ids):
            raise ValueError(f"robots must be at least two distinct ids, got {list(ids)}")
        if reference_id not in ids:
            raise ValueError(f"the reference robot {reference_id!r} is not one of {list(ids)}")
        self.robot_ids, self.reference_id = ids, reference_id
        self.settings = settings or PipelineSettings()
        self.clock = clock
        self.rejected: Counter = Counter()  # (robot id, reason) -> count, over the whole run
        self.rejection_details: dict[tuple[str, str], str] = {}  # (robot, reason) -> latest
        self.last_rejection = ""
        self.resets = 0
        self.events: deque[str] = deque(maxlen=100)  # what changed, for the node's log
        # (clock, latencies) of each update in the last LATENCY_SECONDS
        self._latencies: deque[tuple[float, np.ndarray]] = deque()
        self._reported: Counter = Counter()
        self._frozen = False
        self._plain_senders: tuple = ()  # the robots and frame ids ``push_runs`` last accepted
        self._start()

    def _start(self) -> None:
        ids = self.robot_ids
        self.offsets = {r: ClockOffset(0.0, 0.0) for r in ids}
        self.full = _Subteam(ids, self.reference_id, self.settings, dict.fromkeys(ids, 0.0))
        self.partial: _Subteam | None = None
        self.silent: dict[str, float] = {}  # robot -> seconds behind the team's newest sample
        self.ahead: dict[str, float] = {}  # robot -> seconds its clock runs ahead of the team
        self.last_stamp: dict[str, float] = {}
        self.latest = LatestSamples()  # newest accepted sample per robot
        self.accepted: Counter = Counter()
        self.updates = 0
        self.updated_at: float | None = None  # ``clock`` at the last set into the estimator
        self.last_estimate: TeamEstimate | None = None
        self.estimate_updated_at: float | None = None  # ``updated_at`` of ``last_estimate``
        self._speeds = SpeedHistory(ids, self.settings.clock_offset_window)
        self._recent = {r: deque() for r in ids}  # stamps of the last RATE_WINDOW seconds
        self._transport = {r: deque(maxlen=200) for r in ids}  # received - stamp
        self._first_stamp: float | None = None
        self._next_offsets: float | None = None
        self._jump_base: float | None = None
        # Samples waiting for the first clock offsets (None: offsets known or not estimated).
        self._waiting: list[GraspSample] | None = (
            [] if self.settings.estimate_clock_offsets else None
        )
        if self._frozen:
            self.full.estimator.freeze()

    # ----- life cycle -------------------------------------------------------------------------
    def reset(self, reason: str = "reset requested") -> None:
        """Forget all data and estimates (the counts of refused input stay)."""
        self.resets += 1
        self.events.append(f"estimation restarted: {reason}")
        self._start()

    def freeze(self) -> None:
        self._frozen = True
        for team in self._teams():
            team.estimator.freeze()

    def unfreeze(self) -> None:
        self._frozen = False
        for team in self._teams():
            team.estimator.unfreeze()

    @property
    def frozen(self) -> bool:
        return self._frozen

    def _teams(self) -> list[_Subteam]:
        return [self.full] + ([self.partial] if self.partial is not None else [])

    # ----- input ------------------------------------------------------------------------------
    def reject(self, robot_id: str, reason: str, detail: str = "") -> str:
        """Count a refused input under ``reason``; returns the reason."""
        self.rejected[(robot_id, reason)] += 1
        self.rejection_details[(robot_id, reason)] = detail or reason
        self.last_rejection = f"{robot_id}: {detail or reason}"
        return reason

    def refusals(self) -> list[str]:
        """One line per robot and reason: how many samples were refused and the latest
        detail, e.g. "robot_2: 390 samples refused, wrong frame id (frame id 'world',
        expected 'robot_2/grasp')"; robots with the most refusals first."""
        ordered = sorted(self.rejected.items(), key=lambda item: (-item[1], item[0]))
        return [
            f"{rid}: {n} samples refused, {reason} ({self.rejection_details[(rid, reason)]})"
            for (rid, reason), n in ordered
        ]

    def _untrusted_robots(self) -> tuple[str, ...]:
        """Advice for every robot with more than ``UNTRUSTED`` of its samples refused: its
        samples in between cannot be trusted either (stamps out of order: those accepted
        may carry wrong stamps; NaN in a stretch: the estimate with the rest came out of its
        sigma, 15 sigma on a grasp), and every quantity depends on every robot, so none is
        valid."""
        advice = []
        for rid in self.robot_ids:
            mine = {reason: n for (r, reason), n in self.rejected.items() if r == rid}
            refused = sum(mine.values())
            total = refused + self.accepted[rid]
            if refused <= UNTRUSTED * total:
                continue
            if mine.get("out-of-order stamp", 0) > UNTRUSTED * total:
                cause = (
                    f"{mine['out-of-order stamp']} of its {total} samples came with stamps out "
                    "of order (reordered on the way, or stamped wrongly), so its stamps cannot "
                    "be trusted"
                )
                cure = (
                    "stamp each sample when it is measured, from one monotonic clock, and "
                    "deliver them in order"
                )
            else:
                cause = (
                    f"{refused} of its {total} samples were refused ({self._worst_refusal(rid)})"
                )
                cure = "fix its driver or its configuration"
            advice.append(f"{rid}: {cause}; no quantity is valid with it: {cure}")
        return tuple(advice)

    def _refusal_advice(self) -> tuple[str, ...]:
        """Advice for every robot that had more than 1 % of its samples refused (more than
        ``UNTRUSTED``: ``_untrusted_robots`` says it)."""
        advice = []
        for rid in self.robot_ids:
            mine = {reason: n for (r, reason), n in self.rejected.items() if r == rid}
            refused = sum(mine.values())
            total = refused + self.accepted[rid]
            if 0.01 * total < refused <= UNTRUSTED * total:
                reason = max(mine, key=mine.get)
                advice.append(
                    f"{rid}: {refused} of its {refused + self.accepted[rid]} samples refused, "
                    f"mostly {reason} ({self.rejection_details[(rid, reason)]}): fix its "
                    "driver or its configuration"
                )
        return tuple(advice)

    def push(self, sample: GraspSample, frame_id: str, received: float | None = None) -> str:
        """Check and buffer one robot's sample; returns '' or the reason it was refused."""
        return self.push_batch([sample], frame_id, received)[0]

    def push_batch(
        self, samples: Sequence[GraspSample], frame_id: str, received: float | None = None
    ) -> list[str]:
        """``push`` for the samples of one message (``GraspStateArray``: one frame id), their
        values checked as arrays: the same reasons and counts as pushing them one by one."""
        batch = _as_batch(samples)
        finite = batch.finite() if batch is not None else np.zeros(len(samples), dtype=bool)
        if batch is not None and finite.all() and self._plain(batch, frame_id):
            self._accept_batch(batch, received)
            return [""] * len(batch)
        return [
            self._push(s, frame_id, received, ok) for s, ok in zip(samples, finite, strict=True)
        ]

    def push_runs(self, groups: Sequence[Runs]) -> bool:
        """Several robots' samples of several messages (``Runs``: each robot's in order, with
        their frame id and each sample's arrival time) accepted at once when every robot's
        are plain (as ``_plain``: a known robot, its frame id, stamps increasing from after
        its last one, no clock jump or offsets pending; and finite) and the first sample is
        already in: then accepting them is the same whatever the order of the robots'
        messages. Otherwise nothing is pushed and False returned: push the messages one by
        one, in their order."""
        if self._first_stamp is None or self._jump_base is not None:
            return False
        if self.settings.estimate_clock_offsets:
            return False
        senders = tuple((group.robots, group.frames) for group in groups)
        if senders != self._plain_senders:
            if not self._known_senders(groups):
                return False
            self._plain_senders = senders
        for group in groups:
            if not (group.batch.finite().all() and self._increasing(group)):
                return False
        for group in groups:
            self._accept_runs(group)
        return True

    def _known_senders(self, groups: Sequence[Runs]) -> bool:
        """Whether every robot of the groups is known, in one group only, with its frame id."""
        frame_of, seen = self.settings.frame_of, set()
        for group in groups:
            for rid, frame_id in zip(group.robots, group.frames, strict=True):
                if rid not in self._recent or rid in seen or frame_id != frame_of(rid):
                    return False
                seen.add(rid)
        return True

    def _increasing(self, group: Runs) -> bool:
        """Whether each robot's stamps in a group increase, from after its last one."""
        stamps, bounds = group.batch.stamps, group.bounds
        steps = stamps[1:] > stamps[:-1]
        steps[bounds[1:-1] - 1] = True  # from one robot's samples to the next one's
        last = np.array([self.last_stamp.get(r, -np.inf) for r in group.robots])
        return bool(steps.all() and (stamps[bounds[:-1]] > last).all())

    def _accept_runs(self, group: Runs) -> None:
        """``_accept_batch`` of every robot's samples of a group (``push_runs``)."""
        stamps, bounds = group.batch.stamps, group.bounds.tolist()
        times, latencies = stamps.tolist(), (group.arrivals - stamps).tolist()
        for k, rid in enumerate(group.robots):
            start, stop = bounds[k], bounds[k + 1]
            self.last_stamp[rid] = times[stop - 1]
            self.latest.newest(rid, group.batch, stop - 1)
            self.accepted[rid] += stop - start
            recent, newest = self._recent[rid], times[stop - 1]
            recent.extend(times[start:stop])
            while newest - recent[0] > RATE_WINDOW:
                recent.popleft()
            self._transport[rid].extend(latencies[start:stop])
        for team in self._teams():
            team.aligner.push_runs(group.batch, group.robots, group.bounds)

    def _plain(self, batch: GraspBatch, frame_id: str) -> bool:
        """Whether every sample of a batch is accepted by ``_push`` with nothing else to do:
        a known robot, its frame id, stamps after its last one and increasing, and neither a
        clock jump nor clock offsets pending."""
        rid = batch.robot_id
        if rid not in self.robot_ids or frame_id != self.settings.frame_of(rid):
            return False
        if self._jump_base is not None or self.settings.estimate_clock_offsets:
            return False
        stamps = batch.stamps
        after_last = stamps[0] > self.last_stamp.get(rid, -np.inf)
        return bool(after_last and (stamps[1:] > stamps[:-1]).all())

    def _accept_batch(self, batch: GraspBatch, received: float | np.ndarray | None) -> None:
        """``_accept`` for every sample of a plain batch (``_plain``) at once (``received``:
        the message's arrival, or each sample's)."""
        rid, stamps = batch.robot_id, batch.stamps
        self.last_stamp[rid] = float(stamps[-1])
        self.latest.newest(rid, batch, len(batch) - 1)
        self.accepted[rid] += len(batch)
        if self._first_stamp is None:
            self._first_stamp = float(stamps[0])
        recent = self._recent[rid]
        recent.extend(stamps.tolist())
        while recent[-1] - recent[0] > RATE_WINDOW:
            recent.popleft()
        if received is not None:
            self._transport[rid].extend((received - stamps).tolist())
        for team in self._teams():
            if rid in team.robot_ids:
                team.aligner.push_batch(batch)

    def _push(
        self, sample: GraspSample, frame_id: str, received: float | None, finite: bool
    ) -> str:
        rid = sample.robot_id
        if rid not in self.robot_ids:
            return self.reject(
                str(rid), "unknown robot", f"robot id {rid!r} is not one of {list(self.robot_ids)}"
            )
        reason = self._check(sample, frame_id, finite)
        if reason:
            for team in self._teams():  # no set is interpolated across a refused sample
                if rid in team.robot_ids:
                    team.aligner.hole(rid, sample.stamp)
            return reason
        self._accept(sample, received)
        return ""

    def _check(self, sample: GraspSample, frame_id: str, finite: bool = False) -> str:
        """'' or the reason (counted) why a known robot's sample is refused; ``finite``: its
        values are known finite (``GraspBatch.finite``)."""
        rid = sample.robot_id
        expected = self.settings.frame_of(rid)
        if frame_id != expected:
            return self.reject(
                rid, "wrong frame id", f"frame id {frame_id!r}, expected {expected!r}"
            )
        problem = "" if finite else _sample_problem(sample)
        if problem:
            return self.reject(rid, "non-finite or missing values", problem)
        return self._check_stamp(rid, sample.stamp)

    def _check_stamp(self, rid: str, stamp: float) -> str:
        last = self.last_stamp.get(rid)
        if last is None:
            late = (
                self._jump_base is not None and stamp > self._jump_base + self.settings.clock_jump
            )
            if late:
                return self.reject(rid, "from before a clock jump", f"stamp {stamp:.3f} s")
            return ""
        if stamp > last:
            return ""
        if last - stamp > self.settings.clock_jump:
            self.reset(
                f"{rid}'s clock jumped back {last - stamp:.3g} s (a bag that loops?); "
                "every robot starts afresh"
            )
            self._jump_base = stamp
            return ""
        if stamp == last:
            return self.reject(rid, "duplicate stamp", f"stamp {stamp:.6f} s again")
        return self.reject(
            rid,
            "out-of-order stamp",
            f"stamp {stamp:.6f} s is {last - stamp:.3g} s before the last",
        )

    def _accept(self, sample: GraspSample, received: float | None) -> None:
        rid, stamp = sample.robot_id, sample.stamp
        self.last_stamp[rid] = stamp
        self.latest[rid] = sample
        self.accepted[rid] += 1
        if self._first_stamp is None:
            self._first_stamp = stamp
        if self._jump_base is not None and len(self.last_stamp) == len(self.robot_ids):
            self._jump_base = None
        recent = self._recent[rid]
        recent.append(stamp)
        while recent[-1] - recent[0] > RATE_WINDOW:
            recent.popleft()
        if received is not None:
            self._transport[rid].append(received - stamp)
        if self.settings.estimate_clock_offsets:
            self._speeds.add(sample)
        if self._waiting is not None:
            self._waiting.append(sample)
        else:
            self._align(sample)

    def _align(self, sample: GraspSample) -> None:
        for team in self._teams():
            if sample.robot_id in team.robot_ids:
                team.aligner.push(sample)

    # ----- processing -------------------------------------------------------------------------
    def process(self) -> int:
        """Align what arrived and feed the estimator(s); returns the number of sets accepted."""
        self._update_liveness()
        self._update_offsets()
        return self._update()

    def _update(self) -> int:
        """The aligned sets into the estimators, as one block per team (``update_block``)."""
        accepted = 0
        for team in self._teams():
            block = team.aligner.pop_block()
            if not len(block):
                continue
            kept = team.estimator.update_block(block).accepted
            self._record_latency(block.stamps[kept, 0])
            accepted += int(kept.sum())
        self.updates += accepted
        return accepted

    def _record_latency(self, stamps: np.ndarray) -> None:
        """Each accepted set's latency, from its reference stamp to this update (the clock
        read once per block), kept for ``LATENCY_SECONDS`` of the clock (all of it after the
        clock went back: a looping bag)."""
        if self.clock is None or not len(stamps):
            return
        self.updated_at = now = self.clock()
        latencies = self._latencies
        latencies.append((now, now - stamps))
        while latencies[0][0] < now - LATENCY_SECONDS or latencies[0][0] > now:
            latencies.popleft()

    def update_latency_percentiles(self, q: Sequence[float]) -> np.ndarray | None:
        """Percentiles ``q`` of the update latencies [s] over the last ``LATENCY_SECONDS``
        of the clock (every rate's same span); None before the first update."""
        if not self._latencies:
            return None
        return np.percentile(np.concatenate([c for _, c in self._latencies]), q)

    def _behind(self) -> dict[str, float]:
        """Seconds each robot's newest sample is behind the team's newest (reference time),
        leaving out the robots whose clocks run ahead (``_clock_ahead``)."""
        offsets = self.full.aligner.offsets
        on_reference = {r: t - offsets[r] for r, t in self.last_stamp.items()}
        self.ahead = self._clock_ahead(on_reference)
        newest = max(t for r, t in on_reference.items() if r not in self.ahead)
        return {
            r: newest - on_reference.get(r, self._first_stamp)
            for r in self.robot_ids
            if r not in self.ahead
        }

    def _clock_ahead(self, on_reference: dict[str, float]) -> dict[str, float]:
        """Robots whose newest stamp is more than ``robot_timeout`` ahead of the median of
        the team's newest stamps (a clock set wrong), with how far; needs three robots."""
        if len(on_reference) < 3:
            return {}
        median = _median(list(on_reference.values()))
        return {
            r: t - median
            for r, t in on_reference.items()
            if t - median > self.settings.robot_timeout
        }

    def _update_liveness(self) -> None:
        if not self.last_stamp:
            return
        behind = self._behind()
        silent = {r: t for r, t in behind.items() if t > self.settings.robot_timeout}
        if set(silent) != set(self.silent):
            self._regroup(set(silent))
        self.silent = silent

    def _clock_advice_ahead(self) -> tuple[str, ...]:
        return tuple(self._ahead_advice(rid) for rid in sorted(self.ahead))

    def _ahead_advice(self, rid: str) -> str:
        return (
            f"{rid}'s stamps are {self.ahead[rid]:.3g} s ahead of the other robots': its clock "
            "is wrong, so none of its samples can be paired with theirs; synchronize the "
            "robots' clocks (chrony, PTP)"
        )

    def _regroup(self, silent: set[str]) -> None:
        """A robot went silent or came back: rebuild the sub-team of those publishing."""
        for rid in sorted(silent - set(self.silent)):
            self.events.append(f"{rid} is silent: {self._silence_consequence(rid)}")
        for rid in sorted(set(self.silent) - silent):
            self.events.append(f"{rid} publishes again")
        active = [r for r in self.robot_ids if r not in silent]
        self.partial = None
        if silent and self.reference_id in active and len(active) >= 2:
            offsets = {r: self.full.aligner.offsets[r] for r in active}
            self.partial = _Subteam(active, self.reference_id, self.settings, offsets)
            if self._frozen:
                self.partial.estimator.freeze()
        if not silent:
            self.events.append("the whole team publishes: estimation with every robot goes on")

    def _silence_consequence(self, rid: str) -> str:
        refused = sum(n for (r, _), n in self.rejected.items() if r == rid)
        if refused and not self.accepted[rid]:
            return (
                f"every one of its {refused} samples was refused ({self._worst_refusal(rid)}), "
                "so the team estimate waits for it: fix its driver or its configuration"
            )
        active = [r for r in self.robot_ids if r not in self.silent and r != rid]
        if rid == self.reference_id:
            return (
                "it is the reference robot: nothing can be updated in its grasp frame until it "
                "is back (or restart the coordinator with another reference_robot)"
            )
        if len(active) < 2:
            return "grasp kinematics needs at least two robots publishing"
        return (
            "mass, CoM and inertia need every robot holding the payload, so they keep the "
            f"values estimated before; grasp kinematics goes on among {', '.join(active)}"
        )

    def _worst_refusal(self, rid: str) -> str:
        mine = {reason: n for (r, reason), n in self.rejected.items() if r == rid}
        reason = max(mine, key=mine.get)
        return f"{reason}: {self.rejection_details[(rid, reason)]}"

    def _update_offsets(self) -> None:
        s = self.settings
        if not s.estimate_clock_offsets or not self.last_stamp:
            return
        newest = max(self.last_stamp.values())
        span = newest - self._first_stamp
        if self._next_offsets is None:
            self._next_offsets = self._first_stamp + WARMUP_MIN_SPAN
        if newest < self._next_offsets:
            return
        waiting = self._waiting is not None
        self._next_offsets = newest + (WARMUP_RETRY if waiting else s.clock_offset_period)
        self.offsets = self._speeds.offsets(self.reference_id, s.max_clock_offset)
        trusted = {
            r: o.offset for r, o in self.offsets.items() if not o.advice and r not in self.silent
        }
        if waiting and len(trusted) < len(self.robot_ids) and span < s.clock_offset_window:
            return
        for team in self._teams():
            team.aligner.set_offsets({r: v for r, v in trusted.items() if r in team.robot_ids})
            sigma = {r: self.offsets[r].sigma for r in trusted if r in team.robot_ids}
            team.estimator.set_clock_sigma(sigma)
        if waiting:
            self._release_waiting()

    def _release_waiting(self) -> None:
        """Align the samples that waited for the clock offsets, in time order, in chunks (the
        aligners' buffers hold a few seconds)."""
        offsets = self.full.aligner.offsets
        waiting = sorted(self._waiting, key=lambda x: x.stamp - offsets[x.robot_id])
        self._waiting = None
        for start in range(0, len(waiting), RELEASE_CHUNK):
            for sample in waiting[start : start + RELEASE_CHUNK]:
                self._align(sample)
            self._update()

    # ----- output -----------------------------------------------------------------------------
    def estimate(self, full: bool = False) -> TeamEstimate:
        """The team's estimate: warm-started (cached without new data), or from scratch with
        ``full``. While robots are silent: the whole team's estimate from before, with the
        grasps of the robots still publishing from their own estimator, and advice. Solves in
        place; ``start_solve``/``finish_solve`` do the same with the solve on another thread."""
        job = SolveJob(self._solved_teams(), full, updated_at=self.updated_at)
        job.run()
        return self.finish_solve(job)

    def start_solve(self, full: bool = False, copy: bool = True) -> SolveJob:
        """Snapshot the estimators for a solve (``SolveJob.run``) on any thread while ``push``
        and ``process`` go on; ``finish_solve`` on this pipeline's thread takes it back. With
        ``copy=False`` the job's copies share the live estimators' statistics: for a solver
        that copies them itself before the next ``push`` (``SolverProcess`` pickles them)."""
        teams = self._solved_teams()
        snapshots = {name: e.snapshot(copy) for name, (_, e) in teams.items()}
        return SolveJob(teams, full, snapshots, self.updated_at)

    def _solved_teams(self) -> dict[str, tuple[_Subteam, TeamEstimator]]:
        teams = {"full": self.full}
        if self.silent and self.partial is not None:
            teams["partial"] = self.partial
        return {name: (team, team.estimator) for name, team in teams.items()}

    def finish_solve(self, job: SolveJob) -> TeamEstimate | None:
        """The estimate of a finished job (as ``estimate``), its solve adopted by the live
        estimators; None if the pipeline restarted meanwhile (the job's data are gone)."""
        if job.teams["full"][0] is not self.full:
            return None
        for name, (team, estimator) in job.teams.items():
            result = job.results.get(name)
            if job.snapshots and (team is not self._team_named(name)):
                continue
            if job.snapshots and isinstance(result, TeamEstimate):
                estimator.adopt(job.snapshots[name])
            elif job.snapshots:
                estimator.mark_unsolved()
        estimate = job.results.get("full")
        if not isinstance(estimate, TeamEstimate):  # keep the last one, say why
            if self.last_estimate is None:
                raise estimate
            self.events.append(f"the solve failed ({estimate}); the last estimate stays")
            return self.last_estimate
        if self.silent:
            estimate = self._degraded(estimate, job.results.get("partial"))
        problems = self._clock_advice_ahead() + self._refusal_advice()
        if problems:
            estimate = replace(estimate, advice=problems + estimate.advice)
        untrusted = self._untrusted_robots()
        if untrusted:
            estimate = replace(
                estimate,
                grasps_valid=False,
                mass_valid=False,
                com_valid=False,
                inertia_valid=False,
                advice=untrusted + estimate.advice,
            )
        if self._waiting is not None:
            estimate = replace(estimate, advice=(self._clock_advice(),) + estimate.advice)
        self.last_estimate, self.estimate_updated_at = estimate, job.updated_at
        return estimate

    def estimate_age(self) -> float:
        """[s] on ``clock`` from the update that brought ``last_estimate``'s newest samples
        into the estimator until now: the solve's delay, not the robots' clocks (a bag's
        stamps, an offset) nor the transport; 0 without ``clock``."""
        if self.clock is None or self.estimate_updated_at is None:
            return 0.0
        return max(self.clock() - self.estimate_updated_at, 0.0)

    def _team_named(self, name: str) -> _Subteam | None:
        return self.full if name == "full" else self.partial

    def _clock_advice(self) -> str:
        span = max(self.last_stamp.values()) - self._first_stamp if self.last_stamp else 0.0
        unknown = [r for r, o in self.offsets.items() if o.advice or not o.correlation]
        return (
            f"estimating the clock offsets of {', '.join(unknown)} ({span:.1f} s of samples "
            "wait for them): rotate the payload back and forth"
        )

    def _degraded(
        self, estimate: TeamEstimate, part: TeamEstimate | Exception | None
    ) -> TeamEstimate:
        advice = [
            f"{rid} is silent (no sample for {behind:.1f} s): {self._silence_consequence(rid)}"
            for rid, behind in sorted(self.silent.items())
        ]
        if self.partial is None or not isinstance(part, TeamEstimate):
            return replace(estimate, advice=tuple(advice) + estimate.advice)
        grasps = estimate.grasps
        if part.grasps_valid:
            latest = {g.robot_id: g for g in part.grasps}
            grasps = tuple(latest.get(g.robot_id, g) for g in estimate.grasps)
        else:
            advice.append(
                f"grasp kinematics among {', '.join(self.partial.robot_ids)} has "
                f"{part.samples_kinematics} moving samples of the "
                f"{self.settings.estimator.min_kinematics_samples} it needs: keep moving"
            )
        return replace(
            estimate,
            stamp=max(estimate.stamp, part.stamp),
            grasps=grasps,
            advice=tuple(advice) + estimate.advice,
            samples_kinematics=estimate.samples_kinematics + part.samples_kinematics,
            samples_static=estimate.samples_static + part.samples_static,
            samples_dynamic=estimate.samples_dynamic + part.samples_dynamic,
            samples_rejected=estimate.samples_rejected + part.samples_rejected,
        )

    def dropped(self) -> Counter:
        """Sets the aligners could not form, by reason."""
        total = Counter()
        for team in self._teams():
            total.update(team.aligner.dropped)
        return total

    def status(self) -> list[Status]:
        """Diagnostics: one status per robot, then the team's estimate."""
        statuses = [self._robot_status(r) for r in self.robot_ids]
        statuses.append(self._team_status())
        self._reported = Counter(self.rejected)
        return statuses

    def _robot_status(self, rid: str) -> Status:
        recent = self._recent[rid]
        span = recent[-1] - recent[0] if len(recent) > 1 else 0.0
        values = {
            "rate [Hz]": f"{(len(recent) - 1) / span:.1f}" if span > 0 else "0",
            "accepted": str(self.accepted[rid]),
        }
        if self._transport[rid]:
            values["latency [ms]"] = f"{1e3 * np.median(self._transport[rid]):.1f}"
        offset = self.offsets[rid]
        values["clock offset [ms]"] = f"{1e3 * self.full.aligner.offsets[rid]:.2f}"
        if offset.advice:
            values["clock offset note"] = offset.advice
        rejected = {reason: n for (r, reason), n in self.rejected.items() if r == rid}
        values |= {f"rejected: {reason}": str(n) for reason, n in sorted(rejected.items())}
        new = sum(n - self._reported[(rid, reason)] for reason, n in rejected.items())
        if rid in self.ahead:
            return Status(rid, "ERROR", self._ahead_advice(rid), values)
        if rid in self.silent:
            message = (
                f"{rid} is silent (no sample for {self.silent[rid]:.1f} s): "
                f"{self._silence_consequence(rid)}"
            )
            return Status(rid, "ERROR", message, values)
        if rid not in self.last_stamp:
            return Status(rid, "WARN", f"no sample from {rid} yet", values)
        if new:
            return Status(rid, "WARN", f"{new} samples refused ({self.last_rejection})", values)
        return Status(rid, "OK", f"{values['rate [Hz]']} Hz", values)

    def _team_status(self) -> Status:
        values = {"updates": str(self.updates), "restarts": str(self.resets)}
        values |= {f"sets dropped: {k}": str(v) for k, v in sorted(self.dropped().items())}
        reasons = Counter()
        for team in self._teams():
            reasons.update(team.estimator.rejection_reasons)
        values |= {f"sets rejected: {k}": str(v) for k, v in sorted(reasons.items())}
        percentiles = self.update_latency_percentiles([50, 99])
        if percentiles is not None:
            p50, p99 = percentiles
            values["update latency p50 [ms]"] = f"{1e3 * p50:.1f}"
            values["update latency p99 [ms]"] = f"{1e3 * p99:.1f}"
        estimate = self.last_estimate
        if estimate is None:
            return Status("estimate", "WARN", "no estimate yet", values)
        values |= estimate_values(estimate)
        if self.silent:
            names = ", ".join(sorted(self.silent))
            message = f"{names} silent: " + self._silence_consequence(min(self.silent))
            return Status("estimate", "ERROR", message, values)
        complete = estimate.stage in (Stage.DYNAMICS, Stage.FROZEN) and estimate.inertia_valid
        if complete and estimate.physically_consistent and not estimate.advice:
            return Status("estimate", "OK", "every quantity estimated, consistent", values)
        message = "; ".join(estimate.advice) or f"stage {estimate.stage.name}"
        if estimate.inertia_valid and not estimate.physically_consistent:
            message = "the inertia is not physically consistent; " + message
        return Status("estimate", "WARN", message, values)


def estimate_values(estimate: TeamEstimate) -> dict[str, str]:
    """The diagnostics' key-value view of an estimate: stage, validity, excitation
    (condition numbers and the core's advice), consistency, residuals and counts."""
    values = {
        "stage": estimate.stage.name,
        "valid": ", ".join(
            name
            for name, ok in (
                ("grasps", estimate.grasps_valid),
                ("mass", estimate.mass_valid),
                ("CoM", estimate.com_valid),
                ("inertia", estimate.inertia_valid),
            )
            if ok
        )
        or "nothing yet",
        "excitation: kinematics condition number": f"{estimate.kinematics_condition_number:.3g}",
        "excitation: statics condition number": f"{estimate.statics_condition_number:.3g}",
        "excitation: dynamics condition number": f"{estimate.dynamics_condition_number:.3g}",
        "physically consistent": str(estimate.physically_consistent),
        "consistency margin [kg m^2]": f"{estimate.consistency_margin:.3g}",
        "residual rms angular velocity [rad/s]": f"{estimate.residual_rms_angular_velocity:.3g}",
        "residual rms force [N]": f"{estimate.residual_rms_force:.3g}",
        "residual rms moment [N m]": f"{estimate.residual_rms_moment:.3g}",
        "samples kinematics / static / dynamic / rejected": (
            f"{estimate.samples_kinematics} / {estimate.samples_static} / "
            f"{estimate.samples_dynamic} / {estimate.samples_rejected}"
        ),
    }
    values |= {f"advice {k + 1}": text for k, text in enumerate(estimate.advice)}
    return values


def _median(values: list[float]) -> float:
    """``np.median`` of a few floats (the same operations: the middle one, or the mean of
    the two middle ones), without numpy's cost per call (``_clock_ahead``: every cycle)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _as_batch(samples: Sequence[GraspSample]) -> GraspBatch | None:
    """The samples as a ``GraspBatch`` of one robot, or None (odd shapes, several robots:
    ``_sample_problem`` then checks each sample field by field)."""
    if isinstance(samples, GraspBatch):
        return samples
    try:
        batch = GraspBatch.from_samples(samples)
    except (TypeError, ValueError):
        return None
    return batch if all(s.robot_id == batch.robot_id for s in samples) else None


def _sample_problem(sample: GraspSample) -> str:
    """What makes a sample unusable for the team (non-finite, missing or misshapen fields),
    or ''."""
    for name in ("T_i0_i", "V_i", "dV_i"):
        value = np.asarray(getattr(sample, name), dtype=float)
        if not np.all(np.isfinite(value)):
            return f"{name} is missing or not finite"
    for name, shape in _SHAPES.items():
        value = getattr(sample, name)
        if value is not None and np.shape(value) != shape:
            return f"{name} has shape {np.shape(value)}, not {shape}"
    F = np.asarray(sample.F_i, dtype=float)
    if sample.has_force and not np.all(np.isfinite(F[3:])):
        return "force is not finite"
    if sample.has_torque and not np.all(np.isfinite(F[:3])):
        return "torque is not finite"
    if sample.g_i is not None and not np.all(np.isfinite(sample.g_i)):
        return "gravity is not finite"
    if not math.isfinite(sample.stamp):
        return "stamp is not finite"
    return ""


_SHAPES = {"T_i0_i": (4, 4), "V_i": (6,), "dV_i": (6,), "F_i": (6,), "g_i": (3,)}
