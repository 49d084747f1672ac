"""The payload's acceleration and angular acceleration from its mocap, with covariances: the
inertial terms of the dynamic human-wrench estimate (eq. 38) and the attach-point
accelerations a_k of the cable model (eq. 9; erratum 11).

Two linear Kalman filters on white-jerk models: per world axis (x, x_dot, x_ddot) measured
by position and velocity, per body axis (Omega, Omega_dot) measured by the body rate. The
three axes share their matrices, so one covariance serves all three (states are (k, 3)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PayloadMotionNoise:
    """Process: white jerk [m/s^3/sqrt(Hz)] and angular jerk [rad/s^3/sqrt(Hz)];
    measurements: mocap position [m], velocity [m/s], body rate [rad/s] (notes section 6.3)."""

    jerk: float = 0.5
    angular_jerk: float = 2.0
    position: float = 1e-3
    velocity: float = 8e-3
    rate: float = 2e-2


class _AxisFilter:
    """A Kalman filter on x_{k+1} = F x_k per axis, k states, the axes in columns."""

    def __init__(self, order: int, spectral_density: float):
        self.order, self.q = order, spectral_density**2
        self.x = np.zeros((order, 3))
        self.P = np.eye(order) * 1e6
        self.time: float | None = None

    def predict(self, t: float) -> None:
        if self.time is None:
            self.time = t
            return
        dt = t - self.time
        if dt <= 0.0:
            return
        self.time = t
        if self.order == 3:  # position, velocity, acceleration
            F = np.array([[1.0, dt, dt**2 / 2], [0.0, 1.0, dt], [0.0, 0.0, 1.0]])
            Q = self.q * np.array(
                [
                    [dt**5 / 20, dt**4 / 8, dt**3 / 6],
                    [dt**4 / 8, dt**3 / 3, dt**2 / 2],
                    [dt**3 / 6, dt**2 / 2, dt],
                ]
            )
        else:  # rate, angular acceleration
            F = np.array([[1.0, dt], [0.0, 1.0]])
            Q = self.q * np.array([[dt**3 / 3, dt**2 / 2], [dt**2 / 2, dt]])
        self.x = F @ self.x
        self.P = F @ self.P @ F.T + Q

    def update(self, index: int, z: np.ndarray, std: float) -> None:
        """Measure state ``index`` of every axis (z, shape (3,)) with noise ``std``."""
        if not np.all(np.isfinite(z)):
            return
        S = self.P[index, index] + std**2
        K = self.P[:, index] / S
        self.x = self.x + np.outer(K, z - self.x[index])
        self.P = self.P - np.outer(K, self.P[index])
        self.P = 0.5 * (self.P + self.P.T)


class PayloadMotionFilter:
    """x_ddot_L (in I) and Omega_dot_L (in L) from the payload's mocap."""

    def __init__(self, noise: PayloadMotionNoise | None = None):
        self.noise = noise or PayloadMotionNoise()
        self._linear = _AxisFilter(3, self.noise.jerk)
        self._angular = _AxisFilter(2, self.noise.angular_jerk)

    def update_pose(self, t: float, x: np.ndarray) -> None:
        self._linear.predict(t)
        self._linear.update(0, np.asarray(x, dtype=float), self.noise.position)

    def update_twist(self, t: float, v: np.ndarray, Omega: np.ndarray) -> None:
        """v in I, Omega the body rate (in L)."""
        self._linear.predict(t)
        self._linear.update(1, np.asarray(v, dtype=float), self.noise.velocity)
        self._angular.predict(t)
        self._angular.update(0, np.asarray(Omega, dtype=float), self.noise.rate)

    @property
    def ready(self) -> bool:
        return self._linear.P[2, 2] < 1e3 and self._angular.P[1, 1] < 1e3

    @property
    def velocity(self) -> np.ndarray:
        return self._linear.x[1].copy()

    @property
    def accel(self) -> np.ndarray:
        return self._linear.x[2].copy()

    @property
    def Omega(self) -> np.ndarray:
        return self._angular.x[0].copy()

    @property
    def Omega_dot(self) -> np.ndarray:
        return self._angular.x[1].copy()

    @property
    def covariance(self) -> np.ndarray:
        """6x6 covariance of (x_ddot_L, Omega_dot_L) (axes independent)."""
        return np.diag(np.r_[[self._linear.P[2, 2]] * 3, [self._angular.P[1, 1]] * 3])
