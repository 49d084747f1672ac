"""Robots that follow the payload reference (issue 14 item 4): each robot's grasp command.

Pose: T_w_i,des = T_w_s,des T_s_i (the reference composed with the estimated grasp frame);
body twist V_i = Ad(T_i_s) V_s. Feed-forward wrench: the estimated model's wrench at the
reference motion, F_s = Y(V_s, dV_s, g_s) theta (``core.regressor``; weight and inertia),
split over the grasp map G = [Ad(T_i_s)^T, force columns only for robots that transmit no
moment] by the minimum-norm solution F = G^+ F_s, so force-only robots get forces only.
What G cannot carry (two gimbals: the moment about the line through them) is reported as
``unbalanced``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import spatial as sp
from ..regressor import body_regressor


@dataclass(frozen=True)
class GraspCommand:
    """One robot's command: T_w_i (4x4), body twist V_i and the wrench F_i (moment, force)
    to apply on the payload, about the origin of {i}, in {i}."""

    robot_id: str
    T_w_i: np.ndarray
    V_i: np.ndarray
    F_i: np.ndarray


@dataclass(frozen=True)
class TeamCommand:
    commands: dict[str, GraspCommand]
    unbalanced: np.ndarray  # part of the model wrench (about {s}) the grasps cannot apply


def wrench_shares(
    T_s_i: Mapping[str, np.ndarray], has_torque: Mapping[str, bool], F_s: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Minimum-norm robot wrenches (each in its {i}) whose sum about {s} is F_s, and the
    residual F_s - sum that the grasp map cannot carry."""
    ids = list(T_s_i)
    maps = {r: sp.adjoint(sp.inverse(T_s_i[r])).T for r in ids}
    columns = {r: slice(0, 6) if has_torque.get(r, True) else slice(3, 6) for r in ids}
    G = np.hstack([maps[r][:, columns[r]] for r in ids])
    x = np.linalg.pinv(G, rcond=1e-10) @ F_s
    shares, k = {}, 0
    for r in ids:
        F = np.zeros(6)
        width = columns[r].stop - columns[r].start
        F[columns[r]] = x[k : k + width]
        shares[r], k = F, k + width
    return shares, F_s - G @ x


def grasp_commands(
    T_w_s: np.ndarray,
    V_s: np.ndarray,
    dV_s: np.ndarray,
    theta: np.ndarray,
    T_s_i: Mapping[str, np.ndarray],
    has_torque: Mapping[str, bool],
    gravity_w: np.ndarray,
) -> TeamCommand:
    """Every robot's command for the reference (T_w_s, V_s, dV_s) of {s} and the model
    theta (in {s}); gravity_w in the world frame [m/s^2] (module docstring)."""
    g_s = T_w_s[:3, :3].T @ np.asarray(gravity_w, dtype=float)
    F_s = body_regressor(V_s, dV_s, g_s) @ np.asarray(theta, dtype=float)
    shares, unbalanced = wrench_shares(T_s_i, has_torque, F_s)
    commands = {
        r: GraspCommand(r, T_w_s @ T, sp.twist_to(sp.inverse(T), V_s), shares[r])
        for r, T in T_s_i.items()
    }
    return TeamCommand(commands, unbalanced)
