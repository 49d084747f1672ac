"""The coordinator's live external (human) wrench output (issue 14 item 1).

``ExternalWrenchOutput`` is what ``coordinator_node`` calls once per worker cycle: from the
newest sample of every robot (stamps put on the reference clock with the estimated clock
offsets) and the latest estimate, ``core.collaboration.human_wrench`` gives the wrench the
robots do not apply, about the estimated CoM in {s}, with its covariance; it is published
as ``msg/ExternalWrench`` on ``external_wrench`` at most at ``external_wrench_rate``.
Without a valid mass and CoM, or while a robot lags, nothing is published and the cause is
counted (``counts``, in the coordinator's diagnostics values). The sensor noise is the
samples' own covariance where they carry one, otherwise the estimate's net-wrench residual
RMS shared among the robots (it holds every noise source at once).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
from rclpy.node import Node

from ..core.collaboration.human_wrench import (
    PayloadModel,
    SensorNoise,
    WrenchUnavailableError,
    external_wrench,
)
from ..core.team_pipeline import TeamPipeline
from ..msg import ExternalWrench
from .conversions import to_external_wrench
from .interface import RELIABLE_QOS, Topic
from .parameters import Param

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
        "largest rate of external_wrench [Hz, ROS clock]; 0: not computed",
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


class ExternalWrenchOutput:
    """Publishes the external wrench of ``pipeline`` (module docstring)."""

    def __init__(self, node: Node, frame_of: object) -> None:
        self.node = node
        self.frame_of = frame_of
        self.publisher = node.create_publisher(ExternalWrench, "external_wrench", RELIABLE_QOS)
        self.counts: Counter = Counter()
        self._last_stamp = -np.inf
        self._model: tuple[object, PayloadModel] | None = None

    def update(self, pipeline: TeamPipeline) -> ExternalWrench | None:
        """Publish if the rate allows and new samples arrived; returns what was published."""
        params = self.node.params
        estimate = pipeline.last_estimate
        if params.external_wrench_rate <= 0 or estimate is None:
            return None
        latest = pipeline.latest
        reference = latest.get(pipeline.reference_id)
        if (
            reference is None
            or reference.stamp < self._last_stamp + 1 / params.external_wrench_rate
        ):
            return None
        offsets = pipeline.full.aligner.offsets
        samples = {
            r: dataclasses.replace(s, stamp=s.stamp - offsets.get(r, 0.0))
            for r, s in latest.items()
        }
        try:
            result = external_wrench(
                samples,
                self._payload_model(estimate),
                self._noise(estimate),
                params.external_wrench_max_spread,
            )
        except WrenchUnavailableError as error:
            self.counts[str(error).split(":")[0]] += 1
            self._last_stamp = reference.stamp
            return None
        self._last_stamp = reference.stamp
        msg = to_external_wrench(result, self.frame_of(pipeline.reference_id))
        self.publisher.publish(msg)
        self.counts["published"] += 1
        return msg

    def _payload_model(self, estimate: object) -> PayloadModel:
        if self._model is None or self._model[0] is not estimate:
            self._model = (estimate, PayloadModel.from_estimate(estimate))
        return self._model[1]

    @staticmethod
    def _noise(estimate: object) -> SensorNoise:
        """Per-robot noise from the net-wrench residual RMS (N robots add their noise)."""
        share = 1.0 / np.sqrt(max(len(estimate.grasps), 1))
        return SensorNoise(
            moment=estimate.residual_rms_moment * share, force=estimate.residual_rms_force * share
        )
