"""A person with an intention (issue 14 item 5): a spring-damper from a handle on the payload
to a target that moves along the person's path (position and orientation, 6-DoF).

The person's wrench is what a hand applies through a compliant arm: a force
k (target - handle) - d v_handle and a torsion k_r log(R_target R^T) - d_r omega, moved to
the payload's CoM (paper 002's human model, notes aerial-cable-team-phri.md §2.10).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core import spatial as sp


@dataclass(frozen=True)
class Person:
    """A spring-damper from a handle on the payload (``handle_P``, in the payload frame {P})
    to the target ``target(t) -> (position in {w}, rotation in {w})`` of that handle."""

    target: Callable[[float], tuple[np.ndarray, np.ndarray]]
    handle_P: np.ndarray
    stiffness: float = 150.0  # [N/m]
    damping: float = 40.0  # [N s/m]
    torsion: float = 30.0  # [N m/rad]
    torsion_damping: float = 8.0  # [N m s/rad]

    def wrench(
        self, t: float, T_w_P: np.ndarray, p_w_com: np.ndarray, previous: tuple | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple]:
        """The wrench (moment about the CoM, force) in {w} at time ``t`` for the payload pose
        ``T_w_P``, the handle and its target; ``previous`` (what the last call returned last,
        or None) gives the handle's velocity by a finite difference."""
        handle = (T_w_P @ np.r_[self.handle_P, 1.0])[:3]
        target, R_target = self.target(t)
        velocity, omega = np.zeros(3), np.zeros(3)
        if previous is not None and t > previous[1]:
            velocity = (handle - previous[0]) / (t - previous[1])
            omega = sp.log3(T_w_P[:3, :3] @ previous[2].T) / (t - previous[1])
        force = self.stiffness * (target - handle) - self.damping * velocity
        torsion = self.torsion * sp.log3(R_target @ T_w_P[:3, :3].T) - self.torsion_damping * omega
        moment = np.cross(handle - p_w_com, force) + torsion
        return np.r_[moment, force], handle, target, (handle, t, T_w_P[:3, :3].copy())


def smooth_path(
    T_w_P0: np.ndarray, handle_P: np.ndarray, shift_w: np.ndarray, yaw: float, duration: float
) -> Callable[[float], tuple[np.ndarray, np.ndarray]]:
    """The handle's target: from its place at the payload pose ``T_w_P0``, shifted by
    ``shift_w`` [m] and turned by ``yaw`` [rad] about the world's z, along a smoothstep of
    ``duration`` seconds, then held."""
    h0 = (T_w_P0 @ np.r_[handle_P, 1.0])[:3]
    shift_w = np.asarray(shift_w, dtype=float)

    def target(t: float) -> tuple[np.ndarray, np.ndarray]:
        s = min(max(t / duration, 0.0), 1.0)
        s = s * s * (3 - 2 * s)
        return h0 + shift_w * s, sp.exp3([0.0, 0.0, yaw * s]) @ T_w_P0[:3, :3]

    return target


def path_person(
    T_w_P0: np.ndarray,
    handle_P: np.ndarray,
    shift_w: np.ndarray,
    yaw_deg: float,
    seconds: float,
    start: float = 0.0,
    **arm: float,
) -> Person:
    """A person who moves the handle ``handle_P`` by ``shift_w`` (in {w}) and turns it by
    ``yaw_deg`` about the world's z over ``seconds`` (smoothstep) from the payload pose
    ``T_w_P0``, beginning at time ``start``, then holds it there; ``arm``: ``Person``'s
    stiffness and damping keywords."""
    path = smooth_path(T_w_P0, handle_P, np.asarray(shift_w), np.deg2rad(yaw_deg), seconds)
    return Person(lambda t: path(t - start), np.asarray(handle_P, dtype=float), **arm)
