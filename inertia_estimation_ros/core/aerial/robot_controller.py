"""The robot controller of paper 002 (eqs. 28-30): cable direction and tension to thrust and
moments, with the desired attitude of Mellinger & Kumar [63] (notes section 3.7)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..spatial import skew
from .allocation import E3
from .cables import RigidBodyState, cross3

_TINY = 1e-9


@dataclass(frozen=True)
class RobotGains:
    """Diagonal gains (3-vectors); defaults: RotorTM's Dragonfly (notes section 3.9)."""

    K_xi: np.ndarray = field(default_factory=lambda: np.full(3, 16.0))
    K_omega: np.ndarray = field(default_factory=lambda: np.array([6.7, 6.7, 3.1]))
    K_R: np.ndarray = field(default_factory=lambda: np.array([0.25, 0.25, 0.08]))
    K_Omega: np.ndarray = field(default_factory=lambda: np.array([0.025, 0.025, 0.005]))


@dataclass(frozen=True)
class RobotCommand:
    """Thrust f [N] (eq. 29), body moment M [N m] (eq. 30), the force u (in I, eq. 28) and
    the desired attitude R_des."""

    thrust: float
    moment: np.ndarray
    force: np.ndarray
    R_des: np.ndarray


def cable_force(
    mass: float,
    length: float,
    gains: RobotGains,
    xi: np.ndarray,
    xi_dot: np.ndarray,
    mu_des: np.ndarray,
    a_c: np.ndarray,
    xi_dot_des: np.ndarray | None = None,
    taut: bool = True,
) -> np.ndarray:
    """u_k = u_par + u_perp (eq. 28) for the desired tension vector on the payload mu_des
    (xi_des = -mu_des/|mu_des|) and the attach point's commanded acceleration a_c (+ g).

    ``taut=False`` (a slack cable, beyond the paper; notes pitfall 1): the cable pulls nothing,
    so the tension feed-forward xi xi^T mu_des is left out of u_par instead of lifting the robot
    away; the robot follows its attach point until the cable is taut again."""
    xi_des = -mu_des / max(np.linalg.norm(mu_des), _TINY)
    xi_dot_des = np.zeros(3) if xi_dot_des is None else xi_dot_des
    omega = cross3(xi, xi_dot)
    omega_des = cross3(xi_des, xi_dot_des)
    e_xi = cross3(xi_des, xi)
    e_omega = omega + cross3(xi, cross3(xi, omega_des))
    S2 = skew(xi) @ skew(xi)
    xxT = np.outer(xi, xi)
    u_par = mass * length * (omega @ omega) * xi + mass * xxT @ a_c
    if taut:
        u_par += xxT @ mu_des
    inner = -gains.K_xi * e_xi - gains.K_omega * e_omega - S2 @ omega_des
    inner -= (xi @ omega_des) * xi_dot_des
    u_perp = mass * length * cross3(xi, inner) - mass * S2 @ a_c
    return u_par + u_perp


def desired_attitude(u: np.ndarray, yaw: float) -> np.ndarray:
    """R_des with b3 along u and the heading yaw (Mellinger & Kumar [63])."""
    b3 = u / max(np.linalg.norm(u), _TINY)
    b1c = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    b2 = cross3(b3, b1c)
    b2 /= max(np.linalg.norm(b2), _TINY)
    return np.column_stack([cross3(b2, b3), b2, b3])


def attitude_moment(
    inertia: np.ndarray, gains: RobotGains, state: RigidBodyState, R_des: np.ndarray
) -> np.ndarray:
    """M_k of eq. 30 with errors 'desired - actual' (as eq. 12) and Omega_des = 0."""
    R_rel = state.R.T @ R_des
    e_R = 0.5 * np.array(
        [R_rel[2, 1] - R_rel[1, 2], R_rel[0, 2] - R_rel[2, 0], R_rel[1, 0] - R_rel[0, 1]]
    )  # the vee of R_rel - R_rel^T
    e_Omega = -state.Omega
    return gains.K_R * e_R + gains.K_Omega * e_Omega + cross3(state.Omega, inertia @ state.Omega)


class RobotController:
    """One quadrotor on its cable: eqs. 28-30."""

    def __init__(
        self, mass: float, inertia: np.ndarray, length: float, gains: RobotGains | None = None
    ):
        self.mass, self.length = float(mass), float(length)
        self.inertia = np.asarray(inertia, dtype=float)
        self.gains = gains or RobotGains()

    def update(
        self,
        state: RigidBodyState,
        xi: np.ndarray,
        xi_dot: np.ndarray,
        mu_des: np.ndarray,
        a_c: np.ndarray,
        yaw: float = 0.0,
        taut: bool = True,
    ) -> RobotCommand:
        u = cable_force(self.mass, self.length, self.gains, xi, xi_dot, mu_des, a_c, taut=taut)
        R_des = desired_attitude(u, yaw)
        thrust = float(u @ state.R @ E3)  # eq. 29
        moment = attitude_moment(self.inertia, self.gains, state, R_des)
        return RobotCommand(thrust, moment, u, R_des)
