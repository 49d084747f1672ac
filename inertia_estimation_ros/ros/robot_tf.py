"""A robot's TF as ``robot_state_publisher`` gives it: one edge per URDF joint, parent link to
child link, fixed joints on /tf_static and moving ones on /tf from a JointState.

The simulation graph publishes its robots this way (``sim_node``), under a REP-105 ``world``
root, so that RViz shows the robots and the coordinator's ``payload`` frames together, as on
hardware where ``robot_state_publisher`` runs per robot.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from std_msgs.msg import Header

from .conversions import to_transform


class LinkTree:
    """The links of a URDF and the joint between each link and its parent (Pinocchio)."""

    def __init__(self, urdf: str):
        self.model = model = pin.buildModelFromXML(urdf)
        self.data = model.createData()
        self.root = next(f.name for f in model.frames if f.type == pin.FrameType.BODY)
        self.fixed: list[tuple[int, int]] = []  # (parent link frame, child link frame)
        self.moving: list[tuple[int, int]] = []
        for child, frame in enumerate(model.frames):
            if frame.type != pin.FrameType.BODY or frame.name == self.root:
                continue
            joint = model.frames[frame.parentFrame]
            edge = (joint.parentFrame, child)
            (self.fixed if joint.type == pin.FrameType.FIXED_JOINT else self.moving).append(edge)
        self._index = {
            model.names[j]: model.joints[j].idx_q
            for j in range(1, model.njoints)
            if model.joints[j].nq == 1
        }

    def _placements(self, names: Sequence[str], positions: Sequence[float]) -> None:
        q = pin.neutral(self.model)
        for name, value in zip(names, positions, strict=False):
            if name in self._index:
                q[self._index[name]] = value
        pin.framesForwardKinematics(self.model, self.data, q)

    def transforms(
        self, stamp: Time, names: Sequence[str], positions: Sequence[float], fixed: bool
    ) -> list[TransformStamped]:
        """The fixed joints' edges (``fixed``) or the moving ones' at these joint positions."""
        self._placements(names, positions)
        frames, placements = self.model.frames, self.data.oMf
        return [
            TransformStamped(
                header=Header(stamp=stamp, frame_id=frames[parent].name),
                child_frame_id=frames[child].name,
                transform=to_transform(
                    np.asarray((placements[parent].inverse() * placements[child]).homogeneous)
                ),
            )
            for parent, child in (self.fixed if fixed else self.moving)
        ]
