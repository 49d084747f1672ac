"""The free-flying tray: the payload pose of a carrying team as a 6-DoF triple integrator.

Generalized position q = [x, y, z, roll, pitch, yaw] of the tray frame {e} in the world
{w}, with R_w_e = Rz(yaw) Ry(pitch) Rx(roll); state x = [q, dq, ddq] (18), input the jerk
(6), piecewise constant (paper 004, Sec. III-B and notes §3.1: the paper's robot model,
with the tray's own coordinates instead of joints). This module maps states to the
body motion the balancing constraints need: the body twist V = (omega, v), its
derivative and gravity, all in {e}, and from them the regressor of ``core.regressor``.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from ..regressor import body_regressor

GRAVITY_W = np.array([0.0, 0.0, -9.81])
NQ = 6
NX = 3 * NQ


def rotation(q: np.ndarray) -> np.ndarray:
    """R_w_e (..., 3, 3) of generalized positions (..., 6)."""
    q = np.asarray(q, dtype=float)
    angles = q[..., [5, 4, 3]].reshape(-1, 3)
    return Rotation.from_euler("ZYX", angles).as_matrix().reshape(q.shape[:-1] + (3, 3))


def euler_rate_map(roll: np.ndarray, pitch: np.ndarray) -> tuple[np.ndarray, ...]:
    """E with omega_e = E (droll, dpitch, dyaw), and its partial derivatives by roll and pitch."""
    sr, cr, sp, cp = np.sin(roll), np.cos(roll), np.sin(pitch), np.cos(pitch)
    zero, one = np.zeros_like(roll), np.ones_like(roll)
    E = np.stack(
        [
            np.stack([one, zero, -sp], -1),
            np.stack([zero, cr, sr * cp], -1),
            np.stack([zero, -sr, cr * cp], -1),
        ],
        -2,
    )
    dE_droll = np.stack(
        [
            np.stack([zero, zero, zero], -1),
            np.stack([zero, -sr, cr * cp], -1),
            np.stack([zero, -cr, -sr * cp], -1),
        ],
        -2,
    )
    dE_dpitch = np.stack(
        [
            np.stack([zero, zero, -cp], -1),
            np.stack([zero, zero, -sr * sp], -1),
            np.stack([zero, zero, -cr * sp], -1),
        ],
        -2,
    )
    return E, dE_droll, dE_dpitch


def body_motion(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(V, dV, g_e) of states x (..., 18): body twist (omega, v), its time derivative
    (Modern Robotics' body acceleration; pinocchio's LOCAL) and gravity, all in {e}."""
    x = np.asarray(x, dtype=float)
    q, dq, ddq = x[..., :NQ], x[..., NQ : 2 * NQ], x[..., 2 * NQ :]
    R = rotation(q)
    Rt = np.swapaxes(R, -1, -2)
    E, dE_droll, dE_dpitch = euler_rate_map(q[..., 3], q[..., 4])
    omega = np.einsum("...ij,...j->...i", E, dq[..., 3:])
    dE = dE_droll * dq[..., 3, None, None] + dE_dpitch * dq[..., 4, None, None]
    alpha = np.einsum("...ij,...j->...i", E, ddq[..., 3:]) + np.einsum(
        "...ij,...j->...i", dE, dq[..., 3:]
    )
    v = np.einsum("...ij,...j->...i", Rt, dq[..., :3])
    a_origin = np.einsum("...ij,...j->...i", Rt, ddq[..., :3])
    g_e = np.einsum("...ij,j->...i", Rt, GRAVITY_W)
    V = np.concatenate([omega, v], axis=-1)
    dV = np.concatenate([alpha, a_origin - np.cross(omega, v)], axis=-1)
    return V, dV, g_e


def regressors(x: np.ndarray) -> np.ndarray:
    """Y (..., 6, 10) with w_GI = Y theta in {e} (paper 004, Eq. 2) for states x (..., 18)."""
    V, dV, g_e = body_motion(x)
    return body_regressor(V, dV, g_e)


def step_matrices(dt: float, nq: int = NQ) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of the exact discretization x+ = A x + B u with constant jerk u over dt."""
    eye = np.eye(nq)
    A = np.block(
        [
            [eye, dt * eye, dt**2 / 2 * eye],
            [0 * eye, eye, dt * eye],
            [0 * eye, 0 * eye, eye],
        ]
    )
    B = np.vstack([dt**3 / 6 * eye, dt**2 / 2 * eye, dt * eye])
    return A, B


def rollout(x0: np.ndarray, U: np.ndarray, dt: float) -> np.ndarray:
    """States (N+1, 3 nq) from x0 under the jerks U (N, nq), each held for dt."""
    A, B = step_matrices(dt, U.shape[1])
    X = [np.asarray(x0, dtype=float)]
    for u in U:
        X.append(A @ X[-1] + B @ u)
    return np.array(X)


def interpolate(times: np.ndarray, X: np.ndarray, U: np.ndarray, t: np.ndarray) -> np.ndarray:
    """States at times t between the nodes, exact for constant jerk; held after the end."""
    nq = U.shape[1]
    t = np.clip(np.asarray(t, dtype=float), times[0], times[-1])
    k = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(U) - 1)
    tau = (t - times[k])[:, None]
    q, dq, ddq, u = X[k, :nq], X[k, nq : 2 * nq], X[k, 2 * nq :], U[k]
    return np.hstack(
        [
            q + dq * tau + ddq * tau**2 / 2 + u * tau**3 / 6,
            dq + ddq * tau + u * tau**2 / 2,
            ddq + u * tau,
        ]
    )


class TrayModel:
    """The free-flying tray as a planner model: what ``robot.MobileManipulator`` offers for
    the 9-DoF robot, for q = [x, y, z, roll, pitch, yaw] (the position is q[:3])."""

    name = "tray"
    nq = NQ
    fd_indices = np.arange(3, NX)  # the position does not enter the balancing residuals

    def __init__(
        self,
        velocity_limit: np.ndarray,
        acceleration_limit: np.ndarray,
        jerk_limit: np.ndarray,
        tilt_limit: float,
        workspace: tuple[np.ndarray, np.ndarray],
    ) -> None:
        tilt = np.array([tilt_limit, tilt_limit, np.inf])
        v, a = np.asarray(velocity_limit, dtype=float), np.asarray(acceleration_limit, dtype=float)
        self.state_lo = np.concatenate([workspace[0], -tilt, -v, -a])
        self.state_hi = np.concatenate([workspace[1], tilt, v, a])
        self.jerk_limit = np.asarray(jerk_limit, dtype=float)

    @staticmethod
    def body_motion(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return body_motion(x)

    @staticmethod
    def regressors(x: np.ndarray) -> np.ndarray:
        return regressors(x)

    @staticmethod
    def positions(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p_w_e (n, 3), d p / d q (n, 3, 6))."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        return q[:, :3].copy(), np.broadcast_to(np.eye(3, NQ), (len(q), 3, NQ)).copy()

    @staticmethod
    def poses(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R_w_e (n, 3, 3), p_w_e (n, 3))."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        return rotation(q), q[:, :3].copy()
