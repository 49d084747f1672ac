"""Cable states and the taut-cable tension (paper 002, eqs. 1, 2, 8, 9, 41)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spatial import skew
from .allocation import E3, GRAVITY


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for two 3-vectors (np.cross costs ~10x more on single vectors)."""
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


@dataclass(frozen=True)
class RigidBodyState:
    """Pose and twist of a body as mocap gives them: position x and velocity v in I, R the
    rotation from the body frame to I, and the angular velocity Omega in the body frame."""

    x: np.ndarray
    v: np.ndarray
    R: np.ndarray
    Omega: np.ndarray


def attach_points(payload: RigidBodyState, rho_L: np.ndarray) -> np.ndarray:
    """p_att,k = x_L + R_L rho_k (eq. 1), shape (n, 3)."""
    return payload.x + rho_L @ payload.R.T


def attach_velocities(payload: RigidBodyState, rho_L: np.ndarray) -> np.ndarray:
    """d p_att,k / dt = v_L + R_L (Omega_L x rho_k), shape (n, 3)."""
    return payload.v + np.cross(payload.Omega, rho_L) @ payload.R.T


def cable_states(
    payload: RigidBodyState,
    rho_L: np.ndarray,
    robot_x: np.ndarray,
    robot_v: np.ndarray,
    lengths: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(xi, xi_dot), each (n, 3), from mocap (eq. 41); xi_dot is projected perpendicular to
    xi so that it is the rate of a unit vector."""
    delta = attach_points(payload, rho_L) - robot_x
    xi = delta / np.linalg.norm(delta, axis=1, keepdims=True)
    xi_dot = (attach_velocities(payload, rho_L) - robot_v) / np.asarray(lengths)[:, None]
    xi_dot -= np.sum(xi_dot * xi, axis=1, keepdims=True) * xi
    return xi, xi_dot


def attach_accelerations(
    payload_accel: np.ndarray,
    R_L: np.ndarray,
    Omega_L: np.ndarray,
    Omega_dot_L: np.ndarray,
    rho_L: np.ndarray,
) -> np.ndarray:
    """a_k = xddot_L + g e3 - R_L [rho_k] Omegadot_L + R_L [Omega_L]^2 rho_k (eq. 9), (n, 3).

    With the commanded a_L,c (which already holds + g) in place of xddot_L + g, this is the
    a_k,c of eq. 28."""
    W = skew(Omega_L)
    body = -skew(rho_L) @ Omega_dot_L + rho_L @ (W @ W).T
    return payload_accel + body @ R_L.T


def taut_tension(
    mass: float, length: float, xi: np.ndarray, xi_dot: np.ndarray, u: np.ndarray, a: np.ndarray
) -> float:
    """mu_k = m_k l_k |xi_dot|^2 - xi^T (u_k - m_k a_k) (notes section 2.3); <= 0: slack."""
    return float(mass * length * xi_dot @ xi_dot - xi @ (u - mass * a))


def gravity_acceleration() -> np.ndarray:
    """g e3, the acceleration a_k of a payload at rest."""
    return GRAVITY * E3
