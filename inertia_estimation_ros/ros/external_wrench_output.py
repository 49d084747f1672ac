"""The coordinator's live external (human) wrench output (issue 14 item 1).

``ExternalWrenchOutput`` publishes, for every new instant of the robots' samples, the wrench
the robots do not apply (``core.collaboration.human_wrench``: about the estimated CoM in {s},
with its covariance) as ``msg/ExternalWrench`` on ``external_wrench``, at most once per
``1 / external_wrench_rate`` of sample time. It runs in the subscription callbacks
(``on_raw``, the executor's thread): the wrench leaves as soon as the last robot's sample
of an instant arrives, without waiting for the worker thread's cycle or a solve. Each
robot's messages are kept as they came (``_History``: per message its stamps on the
reference clock and its CDR bytes, or its converted samples' rows), and a wrench takes
every robot's row of its instant at once (``human_wrench.team_wrench``), so no per-sample
object is made. A message of the usual layout (``grasp_layout``) costs on arrival one
``struct`` read of its fixed bytes (is it the layout of the robot's last message?) and one
of its stamps, in plain Python; only the one sample per robot that a wrench uses is read
from the bytes, found by bisection (at most ``external_wrench_rate`` times a second,
whatever the robots' rates and batches; the same values, bit for bit, as converting every
message, ``ingest.convert_raw``). The
instant is the newest time every robot has reached (stamps on the reference clock with the
estimated clock offsets); each robot contributes its sample at or just before it, so one
wrench sums simultaneous samples whatever order they arrive in. The worker hands over the
estimate and the clock offsets (``follow``) when they change. Without a valid mass and CoM,
or while a robot lags by more than ``external_wrench_max_spread``, nothing is published and
the cause is counted (``counts()``, in the coordinator's diagnostics values). The sensor
noise is the samples' own covariance where they carry one, otherwise the estimate's
net-wrench residual RMS shared among the robots (it holds every noise source at once), the
gravity direction's the poses' quantization (``pose_angle_resolution / sqrt(12)``) and the
twist derivative's the declared ``acceleration_noise_angular`` / ``_linear`` (each robot's,
the floor) plus the payload's vibration: ``acceleration_vibration_gain`` times the RMS of
the payload's twist derivative above ``acceleration_vibration_cutoff`` over the last
``VIBRATION_TIME`` (``core.collaboration.vibration``, measured on the wrenches' own
instants), common to every robot. At rest it is ~0 and the sigma the sensors' alone; while
the robots vibrate it grows, as the error does (their wrenches do not follow their
kinematics there: docs/collaboration.md, 2026-11-27, s30d).
``checks`` (``ros.wrench_checks``) keeps the published wrenches for the coordinator's
consistency diagnostics and ``~/check_rest``.
"""

from __future__ import annotations

import struct
import threading
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from typing import NamedTuple

import numpy as np
from rclpy.node import Node

from ..core.collaboration.human_wrench import (
    PayloadModel,
    SensorNoise,
    TeamInstant,
    WrenchUnavailableError,
    team_wrench,
)
from ..core.collaboration.vibration import VibrationMeter
from ..core.samples import GraspBatch, GraspSample
from ..core.team_pipeline import TeamPipeline
from ..msg import ExternalWrench
from .grasp_layout import LAYOUTS, STRINGS, RawLayout
from .ingest import GraspMessage, convert_raw
from .interface import RELIABLE_QOS, Topic
from .parameters import Param
from .serialized import ExternalWrenchLayout
from .wrench_checks import WrenchChecks

# Messages (GraspState or GraspStateArray) kept per robot, at least: the instant of a robot
# that lags by up to this many of the others' messages can still be computed.
HISTORY = 256
VIBRATION_TIME = 0.25  # [s of sample time] the vibration's running mean square's time constant
VIBRATION_CUTOFF = 4.0  # [Hz] acceleration_vibration_cutoff's default
LAGS = "a robot lags (its newest sample is more than external_wrench_max_spread behind)"

TOPICS = [
    Topic(
        "external_wrench",
        "inertia_estimation_ros/msg/ExternalWrench",
        "reliable",
        "the human's (external) wrench on the payload: robots' wrenches minus the estimated "
        "model's, about the CoM in {s}, with covariance and observable components",
    ),
]
PARAMETERS = [
    Param(
        "external_wrench_rate",
        "double",
        100.0,
        "largest rate of external_wrench [Hz of the samples' stamps]; 0: not computed",
        bounds=(0.0, 1000.0),
        read_only=False,
    ),
    Param(
        "external_wrench_max_spread",
        "double",
        0.05,
        "the robots' newest samples must lie within this many seconds (reference clock) for "
        "an external wrench [s]",
        bounds=(1e-4, 1.0),
        read_only=False,
    ),
    Param(
        "external_wrench_delay",
        "double",
        0.0,
        "how much older the robots' samples' content is than their stamps (the robot nodes' "
        "low-pass group delay, the robots' sensing lag); the wrench is stamped that much "
        "earlier, so that its consumers see its true age [s]",
        bounds=(0.0, 1.0),
        read_only=False,
    ),
    Param(
        "acceleration_vibration_gain",
        "double",
        1.0,
        "the payload's twist derivative above acceleration_vibration_cutoff (its RMS over the "
        "last 0.25 s, per axis) times this is an error common to every robot's, in the "
        "external wrench's covariance (the robots' wrenches do not follow their vibration); "
        "acceleration_noise_* stay each robot's floor; 0: off [1]",
        bounds=(0.0, 100.0),
        read_only=False,
    ),
    Param(
        "acceleration_vibration_cutoff",
        "double",
        VIBRATION_CUTOFF,
        "corner of the vibration's high-pass (4th-order Butterworth on the payload's twist "
        "derivative at the wrenches' instants): the team's own motion below it is what the "
        "model follows [Hz]",
        bounds=(0.1, 500.0),
        read_only=False,
    ),
]


class _Inputs(NamedTuple):
    """What the worker hands over: the estimate (identity), its model and noise, offsets."""

    estimate: object
    model: PayloadModel
    noise: SensorNoise
    offsets: dict[str, float]


class _Plan(NamedTuple):
    """Where the fields a wrench reads lie in the bytes of messages of one ``RawLayout``:
    the first sample's twist, twist derivative, wrench and gravity (None: not reported),
    the k-th sample's at k times the field's width further; ``fixed`` reads the bytes that
    every message of the layout shares (``RawLayout.matches``: the strings, the
    encapsulation, array lengths and flags; ``template`` the layout's), ``times`` the
    samples' sec and nanosec, each with one precompiled ``struct``."""

    layout: RawLayout
    samples: int  # K per message
    sec: int
    twist: int
    twist_derivative: int
    wrench: int
    gravity: int | None
    has_force: bool
    has_torque: bool
    fixed: struct.Struct
    template: tuple
    times: struct.Struct
    orientation: int | None  # a GraspState's (its quaternion must not be zero)

    @classmethod
    def of(cls, layout: RawLayout) -> _Plan:
        at = {name: (count, offset) for name, _, count, offset in layout.fields}
        has_force, has_torque, has_gravity = layout.flags
        k, sec, nanosec = at["sec"][0], at["sec"][1], at["nanosec"][1]
        fixed = _fixed_bytes(layout)
        return cls(
            layout,
            k,
            sec,
            at["twist"][1],
            at["twist_derivative"][1],
            at["wrench"][1],
            at["gravity"][1] if has_gravity else None,
            has_force,
            has_torque,
            fixed,
            fixed.unpack_from(layout.raw),
            struct.Struct(f"<{k}i{nanosec - sec - 4 * k}x{k}I"),
            at["orientation"][1] if layout.grasp_state else None,
        )

    def matches(self, raw: bytes) -> bool:
        """``RawLayout.matches``: the layout's length and fixed bytes (and for a GraspState a
        quaternion not zero)."""
        if len(raw) != self.layout.length or self.fixed.unpack_from(raw) != self.template:
            return False
        return self.orientation is None or any(_QUATERNION.unpack_from(raw, self.orientation))

    def stamps(self, raw: bytes, offset: float) -> list[float]:
        """The samples' stamps [s] minus ``offset``, as ``conversions.grasp_samples``
        computes them (sec + 1e-9 nanosec in float64) and then ``- offset``."""
        times, k = self.times.unpack_from(raw, self.sec), self.samples
        return [s + 1e-9 * ns - offset for s, ns in zip(times[:k], times[k:], strict=True)]

    def values(self, raw: bytes, k: int) -> tuple[float, ...]:
        """Sample k's V, dV, F (angular first, an unsensed half NaN) and g (NaN if not
        reported): the values ``conversions.grasp_samples`` gives it, read from the bytes."""
        v = _SIX.unpack_from(raw, self.twist + 48 * k)
        dv = _SIX.unpack_from(raw, self.twist_derivative + 48 * k)
        f = _SIX.unpack_from(raw, self.wrench + 48 * k)
        torque = f[3:] if self.has_torque else _NAN3
        force = f[:3] if self.has_force else _NAN3
        g = _NAN3 if self.gravity is None else _THREE.unpack_from(raw, self.gravity + 24 * k)
        return v[3:] + v[:3] + dv[3:] + dv[:3] + torque + force + g


def _fixed_bytes(layout: RawLayout) -> struct.Struct:
    """A struct that reads a message's bytes that ``layout.matches`` compares: its strings and
    its spans (each as one bytes value, the rest skipped)."""
    spans = [(STRINGS, STRINGS + len(layout.strings))]
    spans += [(a, min(b, layout.length)) for a, b in layout.spans]
    form, at = "<", 0
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        form += f"{a - at}x{b - a}s"
        at = b
    return struct.Struct(form)


_SIX, _THREE, _QUATERNION = struct.Struct("<6d"), struct.Struct("<3d"), struct.Struct("<4d")
_NAN3 = (np.nan,) * 3


class ExternalWrenchOutput:
    """Publishes the external wrench of the robots' samples (module docstring). Threads:
    ``follow`` on the pipeline's (worker) thread, ``on_raw`` (``on_message``) on the
    executor's."""

    def __init__(
        self,
        node: Node,
        frame_of: object,
        robot_ids: Sequence[str],
        reference_id: str,
        clock_jump: float = 1.0,
    ) -> None:
        self.node = node
        self.clock_jump = clock_jump  # [s] a stamp this far back: the clock restarted
        self.frame_of = frame_of
        self.reference_id = reference_id
        self.publisher = node.create_publisher(ExternalWrench, "external_wrench", RELIABLE_QOS)
        self._counts: Counter = Counter()
        self._lock = threading.Lock()  # the counts: written by on_message, read by the worker
        self._robots = {r: n for n, r in enumerate(robot_ids)}
        self._history = _History(tuple(robot_ids))
        self._plans: dict[tuple[str, str], _Plan] = {}  # per robot topic, its last layout's
        self._inputs: _Inputs | None = None
        self._last_slot = -np.inf  # round(instant * rate) of the last instant computed
        # the message as bytes, made now (its checks take ~1-2 ms: not the first wrench's)
        self._wrench_layout = ExternalWrenchLayout(frame_of(reference_id))
        self.checks = WrenchChecks(node.params)  # whether the wrench's sigma holds
        # the payload's vibration, measured at the wrenches' instants
        self.vibration = VibrationMeter(VIBRATION_CUTOFF, VIBRATION_TIME)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def _count(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] += 1

    def follow(self, pipeline: TeamPipeline) -> None:
        """The pipeline's latest estimate and clock offsets, for the next samples; the oldest
        published instant's consistency checks not run yet (``WrenchChecks.check_pending``:
        one per cycle instead of a second's at once when /diagnostics reads them)."""
        self.checks.check_pending(most=1)
        estimate, offsets, inputs = pipeline.last_estimate, pipeline.full.aligner.offsets, None
        if estimate is None:
            self._inputs = None
            return
        inputs = self._inputs
        if inputs is None or inputs.estimate is not estimate:
            model = PayloadModel.from_estimate(estimate)
            noise = self._noise(estimate, self.node.params)
            self._inputs = _Inputs(estimate, model, noise, dict(offsets))
        elif inputs.offsets != offsets:
            self._inputs = inputs._replace(offsets=dict(offsets))

    @property
    def active(self) -> bool:
        """Whether messages are wanted: an estimate to compute with and a rate above 0."""
        return self._inputs is not None and self.node.params.external_wrench_rate > 0

    def on_raw(self, robot_id: str, topic: str, raw: bytes) -> bytes | None:
        """A robot's message as it arrives, its CDR bytes from ``topic`` (a key of
        ``ingest.GRASP_TOPICS``); returns the wrench published (its serialized ExternalWrench,
        ``serialized.ExternalWrenchLayout``), if any. Of a message of the
        usual layout only the stamps are read now (``_History.add_raw``), anything else is
        converted (``ingest.convert_raw``, ``on_message``)."""
        inputs = self._inputs
        if inputs is None or self.node.params.external_wrench_rate <= 0:
            return None
        plan = self._plan(robot_id, topic, raw)
        if plan is None:
            return self.on_message(convert_raw(robot_id, topic, raw))
        if plan.layout.frame_id != self.frame_of(robot_id) or not plan.samples:
            return None
        n, offset = self._robots[robot_id], inputs.offsets.get(robot_id, 0.0)
        if self._history.add_raw(n, raw, plan, plan.stamps(raw, offset), self.clock_jump):
            self._last_slot = -np.inf  # the clock restarted
        return self._publish_instant(inputs, robot_id)

    def _plan(self, robot_id: str, topic: str, raw: bytes) -> _Plan | None:
        """The plan of a message's layout (the last one's, if it has it); None for bytes of
        no layout (``grasp_layout``: read by rclpy and refused by name there)."""
        plan = self._plans.get((robot_id, topic))
        if plan is not None and plan.matches(raw):
            return plan
        layout = LAYOUTS[topic](raw, robot_id)
        if layout is None or not layout.matches(raw):
            return None
        plan = self._plans[(robot_id, topic)] = _Plan.of(layout)
        return plan

    def on_message(self, message: GraspMessage) -> bytes | None:
        """A robot's message as it arrives (converted once, ``ingest.convert``: the pipeline
        takes the same samples); returns the wrench published, if any. Messages the pipeline
        refuses whole (another robot's id, wrong frame, malformed) are left out here and
        counted there."""
        rid = message.robot_id
        if message.refusal is not None or message.frame_id != self.frame_of(rid):
            return None
        return self.on_samples(rid, message.samples)

    def on_samples(self, robot_id: str, samples: Sequence[GraspSample]) -> bytes | None:
        """``on_message`` for converted samples of one robot (in time order, as a message
        carries them; a ``GraspBatch`` is read as its arrays)."""
        inputs = self._inputs
        if inputs is None or self.node.params.external_wrench_rate <= 0 or not samples:
            return None
        n = self._robots[robot_id]
        offset = inputs.offsets.get(robot_id, 0.0)
        if self._history.add(n, samples, offset, self.clock_jump):
            self._last_slot = -np.inf  # the clock restarted
        return self._publish_instant(inputs, robot_id)

    def _publish_instant(self, inputs: _Inputs, robot_id: str) -> bytes | None:
        """The wrench at the newest instant every robot has reached, if not done yet, published
        as serialized bytes (what ``conversions.to_external_wrench`` makes of it)."""
        params = self.node.params
        newest = self._history.newest
        instant = min(newest)
        if instant == -np.inf:  # a robot without samples
            return None
        if (
            robot_id == self.reference_id
            and max(newest) - instant > params.external_wrench_max_spread
        ):
            self._count(LAGS)
        slot = round(instant * params.external_wrench_rate)
        if slot <= self._last_slot:
            return None
        self._last_slot = slot
        team = self._history.at(instant)
        vibration = self._vibration_variance(params)
        try:
            result = team_wrench(
                team,
                inputs.model,
                inputs.noise,
                params.external_wrench_max_spread,
                getattr(params, "external_wrench_delay", 0.0),
                vibration,
            )
        except WrenchUnavailableError as error:
            self._count(str(error).split(":")[0])
            return None
        raw = self._layout(self.frame_of(self.reference_id)).encode(result)
        self.publisher.publish(raw)  # then what only later wrenches use
        if vibration is not None:
            self.vibration.add(instant, result.acceleration)
        self._count("published")
        self.checks.add(team, result, inputs.model, inputs.noise)
        return raw

    def _layout(self, frame_id: str) -> ExternalWrenchLayout:
        """The message's layout in ``frame_id`` (made again if the frame id changes)."""
        if self._wrench_layout.frame_id != frame_id:
            self._wrench_layout = ExternalWrenchLayout(frame_id)
        return self._wrench_layout

    def _vibration_variance(self, params: object) -> np.ndarray | None:
        """gain^2 times the payload's vibration so far (``team_wrench``'s ``vibration``);
        None with the gain 0 (nothing measured then). A new cutoff starts a new measurement."""
        cutoff = getattr(params, "acceleration_vibration_cutoff", VIBRATION_CUTOFF)
        if cutoff != self.vibration.cutoff:
            self.vibration = VibrationMeter(cutoff, VIBRATION_TIME)
        gain = getattr(params, "acceleration_vibration_gain", 0.0)
        return gain * gain * self.vibration.mean_square if gain > 0 else None

    @staticmethod
    def _noise(estimate: object, params: object) -> SensorNoise:
        """Per-robot noise from the net-wrench residual RMS (N robots add their noise); the
        gravity direction's from the poses' quantization step (uniform: step / sqrt(12));
        the twist derivative's the declared ``acceleration_noise_*`` (each robot's floor; the
        payload's vibration is added per wrench, ``_vibration_variance``)."""
        share = 1.0 / np.sqrt(max(len(estimate.grasps), 1))
        return SensorNoise(
            moment=estimate.residual_rms_moment * share,
            force=estimate.residual_rms_force * share,
            angular_acceleration=getattr(params, "acceleration_noise_angular", 0.0),
            linear_acceleration=getattr(params, "acceleration_noise_linear", 0.0),
            gravity_angle=getattr(params, "pose_angle_resolution", 0.0) / np.sqrt(12.0),
        )


# The columns of a sample's row (``_History.at``, ``_Converted``): its stamp on the reference
# clock, has_g, has_torque, whether it carries covariances, two unused (MSG, J: zero; the
# columns as they were, so that the instant's arrays are laid out as before), V, dV, F, g.
STAMP, HAS_G, HAS_TORQUE, OWN, MSG, J = 0, 1, 2, 3, 4, 5
V, DV, F, G = slice(6, 12), slice(12, 18), slice(18, 24), slice(24, 27)
COLUMNS = 27
_NO_ID = (0.0, 0.0)  # a row's MSG and J


class _Converted(NamedTuple):
    """Converted samples' rows (``COLUMNS``) and their covariances (k, 2, 6, 6: F, dV; None
    if none carries one), as a message's part of ``_History``."""

    rows: np.ndarray
    covariances: np.ndarray | None

    @classmethod
    def of(cls, samples: Sequence[GraspSample], stamps: list[float], first: int) -> _Converted:
        """Samples ``first`` to ``first + len(stamps)`` of a message (``stamps`` theirs on the
        reference clock); a ``GraspBatch`` appended whole as its arrays (no covariances)."""
        rows = np.zeros((len(stamps), COLUMNS))
        rows[:, STAMP] = stamps
        if isinstance(samples, GraspBatch) and len(rows) == len(samples):
            rows[:, HAS_G], rows[:, HAS_TORQUE] = samples.has_g, samples.has_torque
            rows[:, V], rows[:, DV], rows[:, F] = samples.V_i, samples.dV_i, samples.F_i
            rows[:, G] = samples.g_i
            return cls(rows, None)
        covariances = None
        for j, row in enumerate(rows):
            sample = samples[first + j]
            row[HAS_G], row[HAS_TORQUE] = sample.g_i is not None, sample.has_torque
            row[V], row[DV], row[F] = sample.V_i, sample.dV_i, sample.F_i
            row[G] = np.nan if sample.g_i is None else sample.g_i
            own = (sample.F_cov, sample.dV_cov)
            row[OWN] = any(c is not None for c in own)
            if row[OWN]:
                if covariances is None:
                    covariances = np.full((len(rows), 2, 6, 6), np.nan)
                for which, C in enumerate(own):
                    covariances[j, which] = np.nan if C is None else C
        return cls(rows, covariances)


class _History:
    """Every robot's newest samples, message by message (``messages[n]``: robot n's, oldest
    first, each (stamps on the reference clock, CDR bytes, ``_Plan``, the samples' indices
    in the message or None for all of them) or (stamps, None, ``_Converted``, None)), the
    stamps strictly increasing over a robot's messages. A message's only work on arrival is
    its stamps; the one row per robot a wrench uses is read when it is computed (``at``).
    At least ``HISTORY`` messages are kept per robot: robot n's ``count[n]`` newest samples
    (its oldest message's first ``skip[n]`` samples dropped), trimmed as the arrays of rows
    were (``_make_room``: the same rows kept, so the same oldest sample)."""

    def __init__(self, robot_ids: tuple[str, ...]) -> None:
        self.robot_ids = robot_ids
        self.longest = 1  # samples in the longest message so far
        self.capacity = 0  # rows per robot before the oldest are dropped (grown as they come)
        self.count = [0] * len(robot_ids)
        self.newest = [-np.inf] * len(robot_ids)  # floats: read per message
        self.messages: list[list[tuple]] = [[] for _ in robot_ids]
        self.lasts: list[list[float]] = [[] for _ in robot_ids]  # each message's newest stamp
        self.skip = [0] * len(robot_ids)

    def clear(self) -> None:
        for n, messages in enumerate(self.messages):
            messages.clear()
            self.lasts[n].clear()
        self.count[:] = [0] * len(self.count)
        self.skip[:] = [0] * len(self.skip)
        self.newest[:] = [-np.inf] * len(self.newest)

    def add(self, n: int, samples: Sequence[GraspSample], offset: float, clock_jump: float) -> bool:
        """Robot n's samples (its stamps minus ``offset``: the reference clock) after its
        newest; a stamp more than ``clock_jump`` before it (a looping bag) clears every
        robot's samples first. Returns whether that happened."""
        if isinstance(samples, GraspBatch):
            stamps = (samples.stamps - offset).tolist()
        else:
            stamps = (
                np.fromiter((s.stamp for s in samples), float, len(samples)) - offset
            ).tolist()
        return self._add(
            n,
            stamps,
            clock_jump,
            lambda part, first: (None, _Converted.of(samples, part, first), None),
        )

    def add_raw(
        self, n: int, raw: bytes, plan: _Plan, stamps: list[float], clock_jump: float
    ) -> bool:
        """``add`` of a message's CDR bytes of ``plan``'s layout, its samples' ``stamps`` on
        the reference clock: the rest of a row is read when a wrench uses it (``at``)."""
        if stamps[0] > self.newest[n] and (
            len(stamps) == 1 or all(map(float.__lt__, stamps, stamps[1:]))
        ):
            self._append(n, (stamps, raw, plan, None))  # the usual case: a message in time order
            return False
        return self._add(n, stamps, clock_jump, lambda part, first: (raw, plan, (first,)))

    def _add(self, n: int, stamps: list[float], clock_jump: float, part: Callable) -> bool:
        """``add``: ``part(stamps, first)`` is a message's entry but its stamps, for its
        samples from index ``first`` on."""
        if stamps[0] > self.newest[n] and all(map(float.__lt__, stamps, stamps[1:])):
            self._append(n, (stamps, *part(stamps, 0)))  # in time order
            return False
        restarted = False
        for k, stamp in enumerate(stamps):  # one by one
            if self.count[n] and stamp < self.newest[n] - clock_jump:
                self.clear()
                restarted = True
            if stamp > self.newest[n]:
                self._append(n, ([stamp], *part([stamp], k)))
        return restarted

    def _append(self, n: int, message: tuple) -> None:
        stamps = message[0]
        if len(stamps) > self.longest or self.count[n] + len(stamps) > self.capacity:
            self._make_room(n, len(stamps))
        self.messages[n].append(message)
        self.lasts[n].append(stamps[-1])
        self.count[n] += len(stamps)
        self.newest[n] = stamps[-1]

    def _make_room(self, n: int, k: int) -> None:
        """Room for k more rows of robot n: its oldest rows beyond ``HISTORY`` messages
        dropped, and a larger capacity if that is not enough."""
        self.longest = max(self.longest, k)
        depth = HISTORY * self.longest
        if self.count[n] + k <= self.capacity:
            return
        if self.capacity < depth + depth // 4 + k:
            self.capacity = depth + depth // 4 + k
            if self.count[n] + k <= self.capacity:
                return
        self._drop(n, self.count[n] - min(self.count[n], depth))

    def _drop(self, n: int, rows: int) -> None:
        """Robot n's ``rows`` oldest samples (and the messages left without any)."""
        messages, skip, gone = self.messages[n], self.skip[n] + rows, 0
        while gone < len(messages) and len(messages[gone][0]) <= skip:
            skip -= len(messages[gone][0])
            gone += 1
        del messages[:gone], self.lasts[n][:gone]
        self.skip[n], self.count[n] = skip, self.count[n] - rows

    def at(self, instant: float) -> TeamInstant:
        """Every robot's newest sample at or before ``instant`` (its oldest kept if none)."""
        found = [self._at_or_before(n, instant) for n in range(len(self.robot_ids))]
        values = chain.from_iterable([self._row(*f) for f in found])
        rows = np.fromiter(values, float, len(found) * COLUMNS).reshape(len(found), COLUMNS)
        F_cov = dV_cov = None
        if rows[:, OWN].any():
            own = np.full((len(found), 2, 6, 6), np.nan)
            for n, (message, j) in enumerate(found):
                if rows[n, OWN]:
                    own[n] = message[2].covariances[j]
            F_cov, dV_cov = (None if np.isnan(C).all() else C for C in (own[:, 0], own[:, 1]))
        return TeamInstant(
            self.robot_ids,
            rows[:, STAMP],
            rows[:, V],
            rows[:, DV],
            rows[:, F],
            rows[:, G],
            rows[:, HAS_G] > 0,
            rows[:, HAS_TORQUE] > 0,
            F_cov,
            dV_cov,
        )

    def _at_or_before(self, n: int, instant: float) -> tuple[tuple, int]:
        """(robot n's message, the sample's index in its entry) of its newest sample at or
        before ``instant`` (its oldest kept if none)."""
        messages = self.messages[n]
        m = bisect_right(self.lasts[n], instant)  # messages[:m] end at or before it
        if m < len(messages):
            j = bisect_right(messages[m][0], instant) - 1
            if j >= (self.skip[n] if m == 0 else 0):
                return messages[m], j
            if m == 0:
                return messages[0], self.skip[n]
        return messages[m - 1], len(messages[m - 1][0]) - 1

    @staticmethod
    def _row(message: tuple, j: int) -> tuple[float, ...] | np.ndarray:
        """Sample j's row of a message's entry in ``messages``."""
        stamps, raw, plan, indices = message
        if raw is None:
            return plan.rows[j]
        flags = (stamps[j], plan.gravity is not None, plan.has_torque, 0.0) + _NO_ID
        return flags + plan.values(raw, j if indices is None else indices[j])
