"""Grasp messages into a ``TeamPipeline``: the one path of the coordinator node and of
``inertia_estimation estimate`` (bags), for ``GraspState`` and ``GraspStateArray`` alike.
Each message is converted once (``convert``, or ``convert_raw`` from its CDR bytes); the
coordinator hands the same samples to its external wrench output and, later, to the pipeline
(``push_converted``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.samples import GraspSample
from ..core.team_pipeline import TeamPipeline
from ..msg import GraspState, GraspStateArray
from .bag_grasps import decode_grasp_state, decode_grasp_state_array
from .conversions import grasp_sample, grasp_samples

# The topics a robot's samples come on, relative to its namespace, and their messages.
GRASP_TOPICS = {"grasp_state": GraspState, "grasp_state_array": GraspStateArray}
# Their CDR bytes decoded as arrays where the layout is the usual one (``bag_grasps``).
DECODERS = {"grasp_state": decode_grasp_state, "grasp_state_array": decode_grasp_state_array}


@dataclass(frozen=True)
class GraspMessage:
    """A message from ``robot_id``'s topic, converted: its samples and header frame id, or
    ``refusal`` (reason, detail) when the pipeline refuses it whole (no samples then)."""

    robot_id: str
    frame_id: str
    samples: Sequence[GraspSample] = ()
    refusal: tuple[str, str] | None = None


def convert(robot_id: str, msg: GraspState | GraspStateArray) -> GraspMessage:
    """The samples of a message from ``robot_id``'s topic; a message naming another robot or
    malformed (arrays of the wrong length) is refused whole."""
    batch = isinstance(msg, GraspStateArray)
    frame_id = msg.header.frame_id
    if msg.robot_id != robot_id:
        topic = "grasp_state_array" if batch else "grasp_state"
        detail = f"robot id {msg.robot_id!r} on /{robot_id}/{topic}"
        return GraspMessage(robot_id, frame_id, refusal=("unknown robot id", detail))
    try:
        samples = grasp_samples(msg) if batch else [grasp_sample(msg)]
    except (ValueError, TypeError) as error:
        return GraspMessage(robot_id, frame_id, refusal=("malformed message", str(error)))
    return GraspMessage(robot_id, frame_id, samples)


def convert_raw(robot_id: str, topic: str, raw: bytes) -> GraspMessage:
    """``convert`` of a message's CDR bytes from ``robot_id``'s ``topic`` (a key of
    ``GRASP_TOPICS``): read straight from the bytes where the layout is the usual one (the
    same samples, bit for bit), else deserialized by rclpy and converted."""
    decoded = DECODERS[topic](raw, robot_id)
    if decoded is not None:
        frame_id, fields = decoded
        return GraspMessage(robot_id, frame_id, grasp_samples(fields))
    from rclpy.serialization import deserialize_message

    try:
        msg = deserialize_message(raw, GRASP_TOPICS[topic])
    except Exception as error:  # bytes no publisher of the type would send
        detail = f"{len(raw)} bytes on /{robot_id}/{topic} not deserializable: {error}"
        return GraspMessage(robot_id, "", refusal=("malformed message", detail))
    return convert(robot_id, msg)


def push_converted(
    pipeline: TeamPipeline, message: GraspMessage, received: float | None = None
) -> None:
    """Every sample of a converted message into the pipeline, each checked on its own
    (``TeamPipeline.push_batch``; refusals are counted by the pipeline, never raised)."""
    if message.refusal is not None:
        pipeline.reject(message.robot_id, *message.refusal)
        return
    pipeline.push_batch(message.samples, message.frame_id, received)


def push_message(
    pipeline: TeamPipeline,
    robot_id: str,
    msg: GraspState | GraspStateArray,
    received: float | None = None,
) -> None:
    """``convert`` then ``push_converted``."""
    push_converted(pipeline, convert(robot_id, msg), received)
