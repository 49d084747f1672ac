"""The payload controller of paper 002 (eqs. 10-12): the wrench the cables must apply."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..spatial import skew, unskew
from .allocation import E3, GRAVITY
from .cables import RigidBodyState


@dataclass(frozen=True)
class PayloadGains:
    """Diagonal gains (3-vectors); defaults: RotorTM's triangular payload (notes section 3.9)."""

    Kp: np.ndarray = field(default_factory=lambda: np.array([3.08, 3.08, 6.25]))
    Kd: np.ndarray = field(default_factory=lambda: np.array([2.15, 2.15, 3.42]))
    Ki: np.ndarray = field(default_factory=lambda: np.zeros(3))
    KR: np.ndarray = field(default_factory=lambda: np.array([0.55, 0.50, 0.16]))
    KOmega: np.ndarray = field(default_factory=lambda: np.array([0.162, 0.162, 0.068]))
    integral_limit: float = 0.5  # [m s], anti-windup clamp of the position-error integral


@dataclass(frozen=True)
class PayloadReference:
    """Desired payload state: x, v, a in I; R (L_des to I); Omega and Omega_dot in L_des."""

    x: np.ndarray
    v: np.ndarray = field(default_factory=lambda: np.zeros(3))
    a: np.ndarray = field(default_factory=lambda: np.zeros(3))
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    Omega: np.ndarray = field(default_factory=lambda: np.zeros(3))
    Omega_dot: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(frozen=True)
class PayloadCommand:
    """F_L,des (in I), M_L,des (in L) and the commanded acceleration a_L,c (with + g)."""

    force: np.ndarray
    moment: np.ndarray
    accel: np.ndarray

    @property
    def wrench(self) -> np.ndarray:
        """[F; M], the ordering of P (eq. 13)."""
        return np.concatenate([self.force, self.moment])


class PayloadController:
    """Eqs. 10-12, errors 'desired - actual' and + K (notes section 2.4)."""

    def __init__(self, mass: float, inertia: np.ndarray, gains: PayloadGains | None = None):
        self.mass, self.inertia = float(mass), np.asarray(inertia, dtype=float)
        self.gains = gains or PayloadGains()
        self.integral = np.zeros(3)

    def update(self, state: RigidBodyState, ref: PayloadReference, dt: float) -> PayloadCommand:
        g = self.gains
        e_x, e_v = ref.x - state.x, ref.v - state.v
        limit = g.integral_limit
        self.integral = np.clip(self.integral + e_x * dt, -limit, limit)
        accel = g.Kp * e_x + g.Kd * e_v + g.Ki * self.integral + ref.a + GRAVITY * E3  # eq. 10
        R_rel = state.R.T @ ref.R
        e_R = 0.5 * unskew(R_rel - R_rel.T)  # eq. 12: (R^T R_d - R_d^T R)^v / 2
        Omega_d = R_rel @ ref.Omega
        e_Omega = Omega_d - state.Omega
        J = self.inertia
        moment = (
            g.KR * e_R
            + g.KOmega * e_Omega
            + J @ R_rel @ ref.Omega_dot
            + skew(Omega_d) @ J @ Omega_d
        )  # eq. 11
        return PayloadCommand(self.mass * accel, moment, accel)
