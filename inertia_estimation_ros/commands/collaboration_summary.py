"""What ``inertia_estimation demo --collaborate`` prints at the end (issue 14): from the bag,
how far the payload went with the person and how well the coordinator saw the person's force.

The person acts where the simulator's ``/ground_truth/human_wrench`` is not zero. Over the
last such stretch (the ``collaborate`` phase; the earlier ones are the guided estimation
phases): the payload's displacement and rotation (``/ground_truth/payload_pose``), the
person's RMS force, and the RMS error of the coordinator's ``/external_wrench`` force (axes
of {s}, like the truth's) against the truth at the nearest stamp.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..bags import read_bag
from ..core import spatial as sp
from ..ros.conversions import pose_matrix, seconds, vector3


def _series(bag: Path, topic: str, value: object) -> tuple[np.ndarray, np.ndarray]:
    rows = [(seconds(m.message.header.stamp), value(m.message)) for m in read_bag(bag, [topic])]
    if not rows:
        return np.zeros(0), np.zeros((0, 3))
    t, values = zip(*rows, strict=True)
    return np.array(t), np.array(values)


def _pose(msg: object) -> np.ndarray:
    T = pose_matrix(msg.pose)
    return np.concatenate([T[:3, 3], np.ravel(T[:3, :3])])


def collaboration_figures(bag: Path) -> dict[str, float] | None:
    """The figures of the module docstring; None if the person never acted."""
    t_h, force = _series(bag, "/ground_truth/human_wrench", lambda m: vector3(m.wrench.force))
    acting = np.linalg.norm(force, axis=1) > 1e-6
    if not acting.any():
        return None
    # The person's last stretch (a human also guides the payload in the estimation phases).
    last = np.flatnonzero(acting)[-1]
    idle = np.flatnonzero(~acting[:last])
    first = idle[-1] + 1 if len(idle) else 0
    acting[:first] = False
    start, end = t_h[first], t_h[last]
    t_p, poses = _series(bag, "/ground_truth/payload_pose", _pose)
    span = (t_p >= start) & (t_p <= end)
    first, last = poses[span][0], poses[span][-1]
    turn = sp.log3(last[3:].reshape(3, 3) @ first[3:].reshape(3, 3).T)
    t_e, estimate = _series(bag, "/external_wrench", lambda m: vector3(m.wrench.force))
    used = (t_e >= start) & (t_e <= end)
    nearest = np.clip(np.searchsorted(t_h, t_e[used]), 0, len(t_h) - 1)
    error = estimate[used] - force[nearest]
    return {
        "seconds": float(end - start),
        "moved [m]": float(np.linalg.norm(last[:3] - first[:3])),
        "turned [deg]": float(np.rad2deg(np.linalg.norm(turn))),
        "person RMS force [N]": float(np.sqrt(np.mean(np.sum(force[acting] ** 2, axis=1)))),
        "force estimate RMS error [N]": float(np.sqrt(np.mean(np.sum(error**2, axis=1))))
        if used.any()
        else float("nan"),
    }


def print_collaboration(bag: Path) -> None:
    figures = collaboration_figures(bag)
    if figures is None:
        print("\ncollaboration: the person never acted (no collaborate phase in the scenario?)")
        return
    print("\nCollaboration (the person's pull, from the bag):")
    for name, value in figures.items():
        print(f"  {name:32s} {value:8.3f}")
