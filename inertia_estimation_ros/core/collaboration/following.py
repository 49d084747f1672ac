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
from ..inertial import InertialParameters
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


def share_maps(
    T_s_i: Mapping[str, np.ndarray], has_torque: Mapping[str, bool]
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The minimum-norm split as linear maps, fixed while the grasps are: robot r's wrench
    (in its {i}) = maps[r] @ F_s (6x6, moment rows zero for a robot that transmits no moment),
    and the residual F_s - sum that the grasp map cannot carry = residual @ F_s."""
    ids = list(T_s_i)
    columns = {r: slice(0, 6) if has_torque.get(r, True) else slice(3, 6) for r in ids}
    G = np.hstack([sp.adjoint(sp.inverse(T_s_i[r])).T[:, columns[r]] for r in ids])
    G_plus = np.linalg.pinv(G, rcond=1e-10)
    maps, k = {}, 0
    for r in ids:
        width = columns[r].stop - columns[r].start
        maps[r] = np.zeros((6, 6))
        maps[r][columns[r]] = G_plus[k : k + width]
        k += width
    return maps, np.eye(6) - G @ G_plus


def wrench_shares(
    T_s_i: Mapping[str, np.ndarray], has_torque: Mapping[str, bool], F_s: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Minimum-norm robot wrenches (each in its {i}) whose sum about {s} is F_s, and the
    residual F_s - sum that the grasp map cannot carry."""
    maps, residual = share_maps(T_s_i, has_torque)
    return {r: M @ F_s for r, M in maps.items()}, residual @ F_s


def model_wrench(
    T_w_s: np.ndarray, V_s: np.ndarray, dV_s: np.ndarray, theta: np.ndarray, gravity_w: np.ndarray
) -> np.ndarray:
    """F_s = Y(V_s, dV_s, g_s) theta with g_s = R_w_s^T g_w: the wrench (about {s}, in {s})
    that moves the model theta along the reference; gravity_w in the world frame [m/s^2]."""
    g_s = T_w_s[:3, :3].T @ np.asarray(gravity_w, dtype=float)
    return body_regressor(V_s, dV_s, g_s) @ np.asarray(theta, dtype=float)


@dataclass(frozen=True)
class ReferenceWrench:
    """``model_wrench`` at a reference with dV_s = 0 (a robot's command), for one model theta:
    Newton-Euler with theta's spatial inertia G, factored once per estimate,

        F_s = -G (0, g_s) - ad_V^T G V = G_g g_s + (w x m + v x f, w x f),  (m, f) = G V,

    the regressor's wrench (``core/regressor.py``) to rounding (a few 1e-16 relative), in a
    few numpy calls instead of the 6x10 regressor's dozens (issue 14: the robot node's
    reference callback is on the loop's hot path)."""

    G: np.ndarray  # 6x6 spatial inertia of theta in {s}
    G_gravity: np.ndarray  # 6x3: -G[:, 3:], the wrench per unit gravity in {s}

    @classmethod
    def of(cls, theta: np.ndarray) -> ReferenceWrench:
        G = InertialParameters(np.asarray(theta, dtype=float)).spatial_inertia
        return cls(G, -G[:, 3:])

    def __call__(self, T_w_s: np.ndarray, V_s: np.ndarray, gravity_w: np.ndarray) -> np.ndarray:
        """F_s (about {s}, in {s}) at the reference pose T_w_s and body twist V_s; gravity_w
        in the world frame [m/s^2]."""
        g_s = T_w_s[:3, :3].T @ gravity_w
        (w0, w1, w2, v0, v1, v2), (m0, m1, m2, f0, f1, f2) = V_s.tolist(), (self.G @ V_s).tolist()
        bias = [
            w1 * m2 - w2 * m1 + v1 * f2 - v2 * f1,
            w2 * m0 - w0 * m2 + v2 * f0 - v0 * f2,
            w0 * m1 - w1 * m0 + v0 * f1 - v1 * f0,
            w1 * f2 - w2 * f1,
            w2 * f0 - w0 * f2,
            w0 * f1 - w1 * f0,
        ]
        return self.G_gravity @ g_s + np.array(bias)


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
    F_s = model_wrench(T_w_s, V_s, dV_s, theta, gravity_w)
    shares, unbalanced = wrench_shares(T_s_i, has_torque, F_s)
    commands = {
        r: GraspCommand(r, T_w_s @ T, sp.twist_to(sp.inverse(T), V_s), shares[r])
        for r, T in T_s_i.items()
    }
    return TeamCommand(commands, unbalanced)
