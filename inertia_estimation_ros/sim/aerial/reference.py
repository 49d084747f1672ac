"""The payload's reference: rest-to-rest minimum-jerk segments through the scenario's
waypoints (position and ZYX attitude), with velocity and acceleration feed-forward."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from ...core.aerial.payload_controller import PayloadReference
from ...core.spatial import exp3, log3


def _min_jerk(s: float) -> tuple[float, float, float]:
    """The quintic 10 s^3 - 15 s^4 + 6 s^5 and its first two derivatives in s."""
    s = min(max(s, 0.0), 1.0)
    return (
        10 * s**3 - 15 * s**4 + 6 * s**5,
        30 * s**2 - 60 * s**3 + 30 * s**4,
        60 * s - 180 * s**2 + 120 * s**3,
    )


class WaypointTrajectory:
    """Waypoints (t, xyz, rpy_deg) visited at rest, the first at t = 0."""

    def __init__(self, waypoints: list[tuple[float, np.ndarray, np.ndarray]]):
        self.times = np.array([w[0] for w in waypoints])
        self.positions = [np.asarray(w[1], dtype=float) for w in waypoints]
        self.rotations = [
            Rotation.from_euler("ZYX", np.deg2rad(w[2])[::-1]).as_matrix() for w in waypoints
        ]

    def __call__(self, t: float) -> PayloadReference:
        k = int(np.searchsorted(self.times, t, side="right")) - 1
        if k >= len(self.times) - 1:
            return PayloadReference(x=self.positions[-1], R=self.rotations[-1])
        T = self.times[k + 1] - self.times[k]
        s, ds, dds = _min_jerk((t - self.times[k]) / T)
        dx = self.positions[k + 1] - self.positions[k]
        phi = log3(self.rotations[k].T @ self.rotations[k + 1])  # body-frame rotation vector
        return PayloadReference(
            x=self.positions[k] + s * dx,
            v=ds / T * dx,
            a=dds / T**2 * dx,
            R=self.rotations[k] @ exp3(s * phi),
            Omega=ds / T * phi,
            Omega_dot=dds / T**2 * phi,
        )
