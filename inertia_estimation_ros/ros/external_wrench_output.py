"""The coordinator's live external (human) wrench output (issue 14 item 1).

``ExternalWrenchOutput`` publishes, for every new instant of the robots' samples, the wrench
the robots do not apply (``core.collaboration.human_wrench``: about the estimated CoM in {s},
with its covariance) as ``msg/ExternalWrench`` on ``external_wrench``, at most once per
``1 / external_wrench_rate`` of sample time. It runs in the subscription callbacks
(``on_message``, the executor's thread): the wrench leaves as soon as the last robot's sample
of an instant arrives, without waiting for the worker thread's cycle or a solve. Each
message is kept as one block (its stamps as an array; a sample is re-stamped on the reference
clock only when a wrench uses it), so the callbacks cost little per sample at 1 kHz. The
instant is the newest time every robot has reached (stamps on the reference clock with the
estimated clock offsets); each robot contributes its sample at or just before it, so one
wrench sums simultaneous samples whatever order they arrive in. The worker hands over the
estimate and the clock offsets (``follow``) when they change. Without a valid mass and CoM,
or while a robot lags by more than ``external_wrench_max_spread``, nothing is published and
the cause is counted (``counts()``, in the coordinator's diagnostics values). The sensor
noise is the samples' own covariance where they carry one, otherwise the estimate's
net-wrench residual RMS shared among the robots (it holds every noise source at once).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter, deque
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from rclpy.node import Node

from ..core.collaboration.human_wrench import (
    PayloadModel,
    SensorNoise,
    WrenchUnavailableError,
    external_wrench,
)
from ..core.samples import GraspSample
from ..core.team_pipeline import TeamPipeline
from ..msg import ExternalWrench
from .conversions import to_external_wrench
from .ingest import GraspMessage
from .interface import RELIABLE_QOS, Topic
from .parameters import Param

# Messages (GraspState or GraspStateArray) kept per robot: the instant of a robot that lags
# by up to this many of the others' messages can still be computed.
HISTORY = 256
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
]


class _Inputs(NamedTuple):
    """What the worker hands over: the estimate (identity), its model and noise, offsets."""

    estimate: object
    model: PayloadModel
    noise: SensorNoise
    offsets: dict[str, float]


class ExternalWrenchOutput:
    """Publishes the external wrench of the robots' samples (module docstring). Threads:
    ``follow`` on the pipeline's (worker) thread, ``on_message`` on the executor's."""

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
        self._history = {r: deque(maxlen=HISTORY) for r in robot_ids}
        self._inputs: _Inputs | None = None
        self._last_slot = -np.inf  # round(instant * rate) of the last instant computed

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def _count(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] += 1

    def follow(self, pipeline: TeamPipeline) -> None:
        """The pipeline's latest estimate and clock offsets, for the next samples."""
        estimate, offsets, inputs = pipeline.last_estimate, pipeline.full.aligner.offsets, None
        if estimate is None:
            self._inputs = None
            return
        inputs = self._inputs
        if inputs is None or inputs.estimate is not estimate:
            model = PayloadModel.from_estimate(estimate)
            self._inputs = _Inputs(estimate, model, self._noise(estimate), dict(offsets))
        elif inputs.offsets != offsets:
            self._inputs = inputs._replace(offsets=dict(offsets))

    @property
    def active(self) -> bool:
        """Whether messages are wanted: an estimate to compute with and a rate above 0."""
        return self._inputs is not None and self.node.params.external_wrench_rate > 0

    def on_message(self, message: GraspMessage) -> ExternalWrench | None:
        """A robot's message as it arrives (converted once, ``ingest.convert``: the pipeline
        takes the same samples); returns the wrench published, if any. Messages the pipeline
        refuses whole (another robot's id, wrong frame, malformed) are left out here and
        counted there."""
        rid = message.robot_id
        if message.refusal is not None or message.frame_id != self.frame_of(rid):
            return None
        return self.on_samples(rid, message.samples)

    def on_samples(self, robot_id: str, samples: Sequence[GraspSample]) -> ExternalWrench | None:
        """``on_message`` for converted samples of one robot (in time order, as a message
        carries them). Kept as one block per message: stamps as an array on the reference
        clock, the samples as they came (a sample is re-stamped only when it is used)."""
        inputs = self._inputs
        if inputs is None or self.node.params.external_wrench_rate <= 0 or not samples:
            return None
        stamps = np.fromiter((s.stamp for s in samples), float, len(samples))
        self._add(robot_id, stamps - inputs.offsets.get(robot_id, 0.0), samples)
        return self._publish_instant(inputs, robot_id)

    def _add(self, robot_id: str, stamps: np.ndarray, samples: Sequence[GraspSample]) -> None:
        """A robot's block of samples into its history: only samples newer than its newest
        are kept; a stamp more than ``clock_jump`` before it (a looping bag) restarts."""
        history = self._history[robot_id]
        newest = history[-1].stamps[-1] if history else -np.inf
        if stamps[0] > newest and (len(stamps) == 1 or np.all(np.diff(stamps) > 0)):
            history.append(_Block(stamps, samples))  # the usual case: a block in time order
            return
        for stamp, sample in zip(stamps, samples, strict=True):  # one by one
            if history and stamp < history[-1].stamps[-1] - self.clock_jump:
                self._restart()
            if not history or stamp > history[-1].stamps[-1]:
                history.append(_Block(np.array([stamp]), [sample]))

    def _restart(self) -> None:
        for history in self._history.values():
            history.clear()
        self._last_slot = -np.inf

    def _publish_instant(self, inputs: _Inputs, robot_id: str) -> ExternalWrench | None:
        """The wrench at the newest instant every robot has reached, if not done yet."""
        params = self.node.params
        if not all(self._history.values()):
            return None
        newest = [h[-1].stamps[-1] for h in self._history.values()]
        instant = min(newest)
        if (
            robot_id == self.reference_id
            and max(newest) - instant > params.external_wrench_max_spread
        ):
            self._count(LAGS)
        slot = round(instant * params.external_wrench_rate)
        if slot <= self._last_slot:
            return None
        self._last_slot = slot
        samples = {r: _at(h, instant) for r, h in self._history.items()}
        try:
            result = external_wrench(
                samples, inputs.model, inputs.noise, params.external_wrench_max_spread
            )
        except WrenchUnavailableError as error:
            self._count(str(error).split(":")[0])
            return None
        msg = to_external_wrench(result, self.frame_of(self.reference_id))
        self.publisher.publish(msg)
        self._count("published")
        return msg

    @staticmethod
    def _noise(estimate: object) -> SensorNoise:
        """Per-robot noise from the net-wrench residual RMS (N robots add their noise)."""
        share = 1.0 / np.sqrt(max(len(estimate.grasps), 1))
        return SensorNoise(
            moment=estimate.residual_rms_moment * share, force=estimate.residual_rms_force * share
        )


class _Block(NamedTuple):
    """Samples of one message, in time order, and their stamps on the reference clock."""

    stamps: np.ndarray
    samples: Sequence[GraspSample]


def _at(history: deque, instant: float) -> GraspSample:
    """The newest sample at or before ``instant`` (the oldest kept if none), stamped on the
    reference clock."""
    for block in reversed(history):
        if block.stamps[0] <= instant:
            k = int(np.searchsorted(block.stamps, instant, side="right")) - 1
            break
    else:
        block, k = history[0], 0
    return dataclasses.replace(block.samples[k], stamp=float(block.stamps[k]))
