"""Mass and center of mass from static holds: paper 000, Sec. III-C (Eqs. 9-16).

This is the paper's sequential stage B, kept as written for the paper pipeline. The
project's estimator gets mass and CoM from the one-stage fit of ``dynamics``, where
static samples are the special case V = dV = 0.

In static equilibrium, with {s0} aligned with {s} but its z axis opposite to gravity:
    m g = -sum_i R_s0_i f_i                       (Eq. 9)
    [p_s_c] (R_s_s0 m g) = -sum_i [p_s_i] R_s_i f_i  (Eq. 10)
f_i is the force robot i applies on the payload, in {i}. Grasp moments m_i (F/T sensors)
enter Eq. 10 as -sum_i R_s_i m_i (notes §6.7); passive gimbals have m_i = 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import spatial as sp


def net_force_and_moment(
    wrenches: Mapping[str, np.ndarray], T_s_i: Mapping[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(sum_i R_s_i f_i, sum_i [p_s_i] R_s_i f_i + R_s_i m_i) per sample, (Q, 3) each, in {s}.

    wrenches: per robot (Q, 6) wrenches (m, f) in {i}; non-finite moments count as zero.
    """
    force, moment = 0.0, 0.0
    for rid, F in wrenches.items():
        F = np.asarray(F, dtype=float)
        R, p = T_s_i[rid][:3, :3], T_s_i[rid][:3, 3]
        f_s = F[:, 3:] @ R.T
        m_s = np.nan_to_num(F[:, :3], nan=0.0) @ R.T
        force = force + f_s
        moment = moment + np.cross(p, f_s) + m_s
    return force, moment


def estimate_mass(net_force_s: np.ndarray, g_s: np.ndarray) -> float:
    """m from the z rows of Eq. 9 in {s0} (Eqs. 11-13): A_q = [0 0 1] g, b_q = -[0 0 1] sum R f.

    net_force_s: (Q, 3) sum_i R_s_i f_i; g_s: (Q, 3) gravity in {s}, which gives the z axis
    of {s0} in {s} as -g_s / |g_s|.
    """
    g0 = np.linalg.norm(g_s, axis=1)
    z_s0 = -g_s / g0[:, None]
    A = -g0[:, None]
    b = -np.einsum("ki,ki->k", z_s0, net_force_s)
    return float(np.linalg.lstsq(A, b, rcond=None)[0][0])


def estimate_com(mass: float, net_moment_s: np.ndarray, g_s: np.ndarray) -> np.ndarray:
    """p_s_c by least squares on Eqs. 14-16: A_q = [m g_s], b_q = sum [p_s_i] R_s_i f_i.

    Needs static holds at >= 2 orientations that differ about a non-vertical axis.
    """
    A = sp.skew(mass * np.asarray(g_s, dtype=float)).reshape(-1, 3)
    return np.linalg.lstsq(A, np.asarray(net_moment_s, dtype=float).reshape(-1), rcond=None)[0]
