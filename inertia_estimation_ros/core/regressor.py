"""The rigid-body regressor: wrench = Y(V, dV, g) theta, linear in the inertial parameters.

Newton-Euler in a body frame {b} (Modern Robotics Eq. 8.42), with gravity g in {b}:

    F = G (dV - (0, g)) - ad_V^T G V

F is the total wrench the supports apply on the body, about the origin of {b}, in
{b}; V = (omega, v) the body twist and dV its time derivative; G the spatial
inertia of ``InertialParameters`` and theta the project's 10-vector
``[m, h, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]``. Expanding G theta-linearly gives the
closed form below (compare Atkeson et al. 1986; paper 001 Eq. 3).
"""

from __future__ import annotations

import numpy as np

from .spatial import cross, skew


def _inertia_map(x: np.ndarray) -> np.ndarray:
    """L(x) with I x = L(x) [Ixx, Ixy, Ixz, Iyy, Iyz, Izz] (paper 000, Eq. 20); x: (..., 3)."""
    if x.shape == (3,):  # one sample (a command's model wrench): the same entries, quicker
        a, b, c = x.tolist()
        return np.array(
            [[a, b, c, 0.0, 0.0, 0.0], [0.0, a, 0.0, b, c, 0.0], [0.0, 0.0, a, 0.0, b, c]]
        )
    out = np.zeros(x.shape[:-1] + (3, 6))
    out[..., 0, 0:3] = x
    out[..., 1, 1], out[..., 1, 3], out[..., 1, 4] = x[..., 0], x[..., 1], x[..., 2]
    out[..., 2, 2], out[..., 2, 4], out[..., 2, 5] = x[..., 0], x[..., 1], x[..., 2]
    return out


def body_regressor(V: np.ndarray, dV: np.ndarray, g: np.ndarray | None = None) -> np.ndarray:
    """Y (6x10, or (..., 6, 10) for stacked samples) with F = Y theta.

    V, dV: body twist (omega, v) and its derivative in {b}; g: gravity in {b}
    [m/s^2] (None or zeros for a gravity-free or gravity-compensated wrench).
    """
    V = np.asarray(V, dtype=float)
    dV = np.asarray(dV, dtype=float)
    w, v = V[..., :3], V[..., 3:]
    alpha, a = dV[..., :3], dV[..., 3:]
    if g is not None:
        a = a - np.asarray(g, dtype=float)
    a_origin = a + cross(w, v)  # acceleration of the origin of {b}, minus gravity
    W = skew(w)
    Y = np.zeros(V.shape[:-1] + (6, 10))
    Y[..., :3, 1:4] = -skew(a_origin)
    Y[..., :3, 4:] = _inertia_map(alpha) + W @ _inertia_map(w)
    Y[..., 3:, 0] = a_origin
    Y[..., 3:, 1:4] = skew(alpha) + W @ W
    return Y


def gravity_regressor(g: np.ndarray) -> np.ndarray:
    """Y for a body at rest (V = dV = 0): F = (h x (-g), -m g) depends only on m and h.

    This is the gravity-dominated reduced model of paper 001 (Eq. 4) with the
    inertia columns dropped; returns (..., 6, 4) for theta[:4] = (m, h).
    """
    g = np.asarray(g, dtype=float)
    Y = np.zeros(g.shape[:-1] + (6, 4))
    Y[..., :3, 1:4] = skew(g)
    Y[..., 3:, 0] = -g
    return Y
