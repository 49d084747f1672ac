"""The momentum-observer baseline of paper 002's Table II (its ref. [7], Sanalitro et al.,
RA-L 2022): each robot estimates the external force on it from its translational momentum,

    r_k = K_O (m_k v_k - m_k v_k(t0) - integral (f_k R_k e3 - m_k g e3 + r_k) dt),

a first-order low-pass (time constant 1/K_O) of the force m_k v_dot_k - f_k R_k e3 + m_k g e3
(eq. 6), which on a taut cable is mu_k xi_k. The team combines the tension vectors on the
payload, -r_k, through eq. 39 (quasi-static, as the paper's comparison). No covariance: a
baseline for the benchmark, not an estimator of the package.
"""

from __future__ import annotations

import numpy as np

from .allocation import E3, GRAVITY, CableAllocation


class MomentumObserver:
    """One robot's observer; ``gain`` K_O [1/s]."""

    def __init__(self, mass: float, gain: float = 10.0):
        if not (mass > 0.0 and gain > 0.0):
            raise ValueError(f"momentum observer: need mass > 0 ({mass}) and gain > 0 ({gain})")
        self.mass, self.gain = float(mass), float(gain)
        self.force = np.zeros(3)  # r_k: the external force on the robot, in I
        self._p0: np.ndarray | None = None
        self._integral = np.zeros(3)
        self._time: float | None = None

    def update(self, t: float, v: np.ndarray, thrust: np.ndarray) -> np.ndarray:
        """v [m/s] in I, thrust f_k R_k e3 [N] in I (held over the step to t)."""
        p = self.mass * np.asarray(v, dtype=float)
        if self._p0 is None:
            self._p0, self._time = p, t
            return self.force
        dt = t - self._time
        self._time = t
        known = np.asarray(thrust, dtype=float) - self.mass * GRAVITY * E3
        self._integral += (known + self.force) * dt
        self.force = self.gain * (p - self._p0 - self._integral)
        return self.force


def observer_wrench(
    allocation: CableAllocation, R_L: np.ndarray, forces: np.ndarray, payload_mass: float
) -> np.ndarray:
    """Eq. 39 with the tension vectors -r_k: [F_H (I); M_H (L)] from the robots' observed
    external forces r_k (n, 3)."""
    forces = np.asarray(forces, dtype=float)
    return allocation.external_wrench(R_L, np.ones(len(forces)), forces, payload_mass)
