"""Grasp messages into a ``TeamPipeline``: the one path of the coordinator node and of
``inertia_estimation estimate`` (bags), for ``GraspState`` and ``GraspStateArray`` alike."""

from __future__ import annotations

from ..core.team_pipeline import TeamPipeline
from ..msg import GraspState, GraspStateArray
from .conversions import grasp_sample, grasp_samples

# The topics a robot's samples come on, relative to its namespace, and their messages.
GRASP_TOPICS = {"grasp_state": GraspState, "grasp_state_array": GraspStateArray}


def push_message(
    pipeline: TeamPipeline,
    robot_id: str,
    msg: GraspState | GraspStateArray,
    received: float | None = None,
) -> None:
    """Every sample of a message from ``robot_id``'s topic into the pipeline, each checked on
    its own (``TeamPipeline.push_batch``; refusals are counted by the pipeline, never
    raised): a message naming another robot or malformed (arrays of the wrong length) is
    refused whole."""
    batch = isinstance(msg, GraspStateArray)
    if msg.robot_id != robot_id:
        topic = "grasp_state_array" if batch else "grasp_state"
        pipeline.reject(
            robot_id, "unknown robot id", f"robot id {msg.robot_id!r} on /{robot_id}/{topic}"
        )
        return
    try:
        samples = grasp_samples(msg) if batch else [grasp_sample(msg)]
    except (ValueError, TypeError) as error:
        pipeline.reject(robot_id, "malformed message", str(error))
        return
    pipeline.push_batch(samples, msg.header.frame_id, received)
