"""The coordinator's live external (human) wrench output (issue 14 item 1).

``ExternalWrenchOutput`` publishes, for every new instant of the robots' samples, the wrench
the robots do not apply (``core.collaboration.human_wrench``: about the estimated CoM in {s},
with its covariance) as ``msg/ExternalWrench`` on ``external_wrench``, at most once per
``1 / external_wrench_rate`` of sample time. It runs in the subscription callbacks
(``on_raw``, the executor's thread): the wrench leaves as soon as the last robot's sample
of an instant arrives, without waiting for the worker thread's cycle or a solve. Each
message's samples are kept as rows of one array per robot (``_History``: stamps on the
reference clock, twists, wrenches, gravity), and a wrench takes every robot's row of its
instant at once (``human_wrench.team_wrench``), so no per-sample object is made. A message
of the usual layout (``grasp_layout``) is kept as its CDR bytes: only its stamps are read
when it comes, and only the one sample per robot that a wrench uses is read from the bytes
(at most ``external_wrench_rate`` times a second, whatever the robots' rates and batches;
the same values, bit for bit, as converting every message, ``ingest.convert_raw``). The
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
from collections import Counter, deque
from collections.abc import Callable, Sequence
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
from .grasp_layout import LAYOUTS, RawLayout
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
    the first sample's stamp (sec, nanosec), twist, twist derivative, wrench and gravity
    (None: not reported); the k-th sample's at k times the field's width further."""

    layout: RawLayout
    samples: int  # K per message
    sec: int
    nanosec: int
    twist: int
    twist_derivative: int
    wrench: int
    gravity: int | None
    has_force: bool
    has_torque: bool

    @classmethod
    def of(cls, layout: RawLayout) -> _Plan:
        at = {name: (count, offset) for name, _, count, offset in layout.fields}
        has_force, has_torque, has_gravity = layout.flags
        return cls(
            layout,
            at["sec"][0],
            at["sec"][1],
            at["nanosec"][1],
            at["twist"][1],
            at["twist_derivative"][1],
            at["wrench"][1],
            at["gravity"][1] if has_gravity else None,
            has_force,
            has_torque,
        )

    def stamps(self, raw: bytes) -> np.ndarray:
        """The samples' stamps [s], as ``conversions.grasp_samples`` computes them."""
        k = self.samples
        stamps = np.frombuffer(raw, np.int32, k, self.sec).astype(np.int64)
        return stamps + 1e-9 * np.frombuffer(raw, np.uint32, k, self.nanosec).astype(np.int64)

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


_SIX, _THREE = struct.Struct("<6d"), struct.Struct("<3d")
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
        if self._history.add_raw(n, raw, plan, plan.stamps(raw) - offset, self.clock_jump):
            self._last_slot = -np.inf  # the clock restarted
        return self._publish_instant(inputs, robot_id)

    def _plan(self, robot_id: str, topic: str, raw: bytes) -> _Plan | None:
        """The plan of a message's layout (the last one's, if it has it); None for bytes of
        no layout (``grasp_layout``: read by rclpy and refused by name there)."""
        plan = self._plans.get((robot_id, topic))
        if plan is not None and plan.layout.matches(raw):
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


# The columns of a sample's row in ``_History``; a row read from a message's bytes when
# used (``_History.add_raw``) has its message's serial number (MSG) and the sample's index
# in it (J), and V, dV, F, g unset until then; the other rows have MSG -1.
STAMP, HAS_G, HAS_TORQUE, OWN, MSG, J = 0, 1, 2, 3, 4, 5
V, DV, F, G = slice(6, 12), slice(12, 18), slice(18, 24), slice(24, 27)
COLUMNS = 27
_Write = Callable[[int, slice, int], None]  # ``_History._add``'s write


class _History:
    """Every robot's newest samples as rows (``COLUMNS``: stamp on the reference clock,
    has_g, has_torque, whether it carries covariances, V, dV, F, g) of one array, robot by
    robot in time order; the covariances of the samples that carry them in a second one,
    made when the first comes; the CDR bytes of the messages whose rows are read when used.
    At least ``HISTORY`` messages are kept per robot."""

    def __init__(self, robot_ids: tuple[str, ...]) -> None:
        self.robot_ids = robot_ids
        self.longest = 1  # samples in the longest message so far
        self.rows = np.empty((len(robot_ids), 0, COLUMNS))  # grown as messages come
        self.stamps = np.empty((len(robot_ids), 0))  # inf beyond the count
        self.count = np.zeros(len(robot_ids), dtype=int)
        self.newest = [-np.inf] * len(robot_ids)  # floats: read per message
        self.covariances: np.ndarray | None = None  # (robots, capacity, 2, 6, 6): F, dV
        self.messages: list[deque[tuple[bytes, _Plan]]] = [deque() for _ in robot_ids]
        self.first_serial = [0] * len(robot_ids)  # the serial number of messages[n][0]

    def clear(self) -> None:
        self.count[:] = 0
        self.stamps[:] = np.inf
        self.newest[:] = [-np.inf] * len(self.newest)
        for n, messages in enumerate(self.messages):
            self.first_serial[n] += len(messages)
            messages.clear()

    def add(self, n: int, samples: Sequence[GraspSample], offset: float, clock_jump: float) -> bool:
        """Robot n's samples (its stamps minus ``offset``: the reference clock) after its
        newest; a stamp more than ``clock_jump`` before it (a looping bag) clears every
        robot's samples first. Returns whether that happened."""
        if isinstance(samples, GraspBatch):
            stamps = samples.stamps - offset
        else:
            stamps = np.fromiter((s.stamp for s in samples), float, len(samples)) - offset
        return self._add(n, stamps, clock_jump, lambda *rows: self._set_samples(samples, *rows))

    def add_raw(
        self, n: int, raw: bytes, plan: _Plan, stamps: np.ndarray, clock_jump: float
    ) -> bool:
        """``add`` of a message's CDR bytes of ``plan``'s layout, its samples' ``stamps`` on
        the reference clock: the rest of a row is read when a wrench uses it (``at``)."""
        return self._add(n, stamps, clock_jump, lambda *rows: self._set_raw(raw, plan, *rows))

    def _add(self, n: int, stamps: np.ndarray, clock_jump: float, write: _Write) -> bool:
        """``add``: ``write(n, rows, first)`` sets robot n's rows (a slice) to its samples
        from index ``first`` of the message on."""
        if stamps[0] > self.newest[n] and (len(stamps) == 1 or (stamps[1:] > stamps[:-1]).all()):
            self._append(n, stamps, write, 0)  # the usual case: a message in time order
            return False
        restarted = False
        for k, stamp in enumerate(stamps):  # one by one
            if self.count[n] and stamp < self.newest[n] - clock_jump:
                self.clear()
                restarted = True
            if stamp > self.newest[n]:
                self._append(n, stamps[k : k + 1], write, k)
        return restarted

    def _append(self, n: int, stamps: np.ndarray, write: _Write, first: int) -> None:
        k = len(stamps)
        self._make_room(n, k)
        c = self.count[n]
        self.rows[n, c : c + k, STAMP] = stamps
        write(n, slice(c, c + k), first)
        self.stamps[n, c : c + k] = stamps
        self.count[n] = c + k
        self.newest[n] = float(stamps[-1])

    def _set_samples(self, samples: Sequence[GraspSample], n: int, at: slice, first: int) -> None:
        rows = self.rows[n, at]
        rows[:, MSG] = -1
        if isinstance(samples, GraspBatch) and len(rows) == len(samples):
            rows[:, HAS_G], rows[:, HAS_TORQUE], rows[:, OWN] = samples.has_g, samples.has_torque, 0
            rows[:, V], rows[:, DV], rows[:, F] = samples.V_i, samples.dV_i, samples.F_i
            rows[:, G] = samples.g_i
        else:
            for j in range(len(rows)):
                self._set_row(n, at.start + j, samples[first + j])

    def _set_raw(self, raw: bytes, plan: _Plan, n: int, at: slice, first: int) -> None:
        messages = self.messages[n]
        if not messages or messages[-1][0] is not raw:
            messages.append((raw, plan))
        rows = self.rows[n, at]
        rows[:, HAS_G], rows[:, HAS_TORQUE] = plan.gravity is not None, plan.has_torque
        rows[:, OWN] = 0
        rows[:, MSG] = self.first_serial[n] + len(messages) - 1
        rows[:, J] = np.arange(first, first + len(rows))

    def _set_row(self, n: int, j: int, sample: GraspSample) -> None:
        row = self.rows[n, j]
        row[HAS_G], row[HAS_TORQUE] = sample.g_i is not None, sample.has_torque
        row[V], row[DV], row[F] = sample.V_i, sample.dV_i, sample.F_i
        row[G] = np.nan if sample.g_i is None else sample.g_i
        own = (sample.F_cov, sample.dV_cov)
        row[OWN] = any(c is not None for c in own)
        if row[OWN]:
            if self.covariances is None:
                self.covariances = np.empty(self.rows.shape[:2] + (2, 6, 6))
            for which, C in enumerate(own):
                self.covariances[n, j, which] = np.nan if C is None else C

    def _make_room(self, n: int, k: int) -> None:
        """Room for k more rows of robot n: its oldest rows beyond ``HISTORY`` messages
        dropped, and a larger array if that is not enough."""
        self.longest = max(self.longest, k)
        depth = HISTORY * self.longest
        if self.count[n] + k <= self.rows.shape[1]:
            return
        if self.rows.shape[1] < depth + depth // 4 + k:
            self._grow(depth + depth // 4 + k)
            if self.count[n] + k <= self.rows.shape[1]:
                return
        keep = min(int(self.count[n]), depth)
        start = self.count[n] - keep
        for array in (self.rows, self.stamps, self.covariances):
            if array is not None:
                array[n, :keep] = array[n, start : start + keep]
        self.stamps[n, keep:] = np.inf
        self.count[n] = keep
        self._drop_messages(n)

    def _drop_messages(self, n: int) -> None:
        """Robot n's messages older than its oldest row read from bytes."""
        serials = self.rows[n, : self.count[n], MSG]
        serials = serials[serials >= 0]
        messages = self.messages[n]
        oldest = serials.min() if len(serials) else self.first_serial[n] + len(messages)
        while self.first_serial[n] < oldest:
            messages.popleft()
            self.first_serial[n] += 1

    def _grow(self, capacity: int) -> None:
        """Room for ``capacity`` rows per robot (rows beyond a robot's count are never read)."""

        def wider(array: np.ndarray, fill: float | None = None) -> np.ndarray:
            shape = (array.shape[0], capacity - array.shape[1]) + array.shape[2:]
            more = np.empty(shape) if fill is None else np.full(shape, fill)
            return np.concatenate([array, more], axis=1)

        self.rows, self.stamps = wider(self.rows), wider(self.stamps, np.inf)
        if self.covariances is not None:
            self.covariances = wider(self.covariances)

    def at(self, instant: float) -> TeamInstant:
        """Every robot's newest sample at or before ``instant`` (its oldest kept if none)."""
        robots = np.arange(len(self.robot_ids))
        index = np.maximum(self._at_or_before(instant) - 1, 0)
        rows = self.rows[robots, index]
        unread = np.flatnonzero(rows[:, MSG] >= 0)
        if len(unread):
            rows[unread, V.start : G.stop] = [self._values(n, rows[n]) for n in unread]
        F_cov = dV_cov = None
        if rows[:, OWN].any():
            own = self.covariances[robots, index]
            own[rows[:, OWN] == 0] = np.nan
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

    def _values(self, n: int, row: np.ndarray) -> tuple[float, ...]:
        """V, dV, F, g of robot n's row read from its message's bytes."""
        raw, plan = self.messages[n][int(row[MSG]) - self.first_serial[n]]
        return plan.values(raw, int(row[J]))

    def _at_or_before(self, instant: float) -> np.ndarray:
        """Per robot, how many of its samples are at or before ``instant``: counted among its
        newest rows (where the instant usually is), else among all of its rows."""
        width = min(8 * self.longest, self.stamps.shape[1])
        start = np.maximum(self.count - width, 0)
        columns = start[:, None] + np.arange(width)
        robots = np.arange(len(self.robot_ids))[:, None]
        below = start + (self.stamps[robots, columns] <= instant).sum(axis=1)
        for n in np.flatnonzero((below == start) & (start > 0)):  # further back
            below[n] = np.searchsorted(self.stamps[n, : self.count[n]], instant, side="right")
        return below
