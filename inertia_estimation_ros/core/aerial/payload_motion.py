"""The payload's acceleration and angular acceleration from its mocap, with covariances: the
inertial terms of the dynamic human-wrench estimate (eq. 38) and the attach-point
accelerations a_k of the cable model (eq. 9; erratum 11).

Two linear Kalman filters on white-jerk models: per world axis (x, x_dot, x_ddot) measured
by position and velocity, per body axis (Omega, Omega_dot) measured by the body rate. The
three axes share their matrices, so one covariance serves all three (states are (k, 3)).

Both filters' accelerations are the truth delayed (``PayloadMotionFilter.lag``: about 51 ms
for x_ddot and 40 ms for Omega_dot at 100 Hz with the default noises), their velocity and
rate are not (to first order): whoever pairs an acceleration with another signal of the
same instant reads it ``lag`` later, or smooths: each filter keeps its posteriors of the
last ``history`` seconds, and ``states`` runs a Rauch-Tung-Striebel backward pass over them
with the filter's own F and Q (a fixed-lag smoother: the in-flight identification reads
the payload's motion at a sample's instant once ``smoothing_lag`` seconds of mocap have
followed it).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cache, lru_cache
from math import factorial

import numpy as np
from scipy.linalg import solve_discrete_are


@dataclass(frozen=True)
class PayloadMotionNoise:
    """Process: white jerk [m/s^3/sqrt(Hz)] and angular jerk [rad/s^3/sqrt(Hz)];
    measurements: mocap position [m], velocity [m/s], body rate [rad/s] (notes section 6.3)."""

    jerk: float = 0.5
    angular_jerk: float = 2.0
    position: float = 1e-3
    velocity: float = 8e-3
    rate: float = 2e-2


@lru_cache(maxsize=64)
def _transition(order: int, q: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """F and Q of the white-``order``-th-derivative model over dt (q: its spectral density),
    read-only (cached: mocap comes at a few fixed steps)."""
    F = np.array([[dt ** (j - i) / factorial(j - i) if j >= i else 0.0 for j in range(order)]
                  for i in range(order)])  # fmt: skip
    powers = np.add.outer(np.arange(order, 0, -1), np.arange(order, 0, -1)) - 1
    scale = np.outer(F[:, -1], F[:, -1])  # dt^(a+b) / (a! b!) of the last column
    Q = q * scale * dt / powers
    F.flags.writeable = Q.flags.writeable = False
    return F, Q


@cache
def steady_state_lag(order: int, q: float, dt: float, measured: tuple) -> float:
    """The delay [s] of the top state (the acceleration) of a steady-state ``_AxisFilter``
    stepping dt, measuring ``measured`` ((state index, std), ...): its low-frequency group
    delay, the constant error on an input of constant next derivative j (exactly tracked
    below it) divided by j. The error obeys e = M (F e + w), M = I - K H the steady-state
    update (discrete Riccati equation), w = j (dt^order / order!, ..., dt) the input's
    step, so e = (I - M F)^-1 M w."""
    F, Q = _transition(order, q, dt)
    H = np.eye(order)[[i for i, _ in measured]]
    R = np.diag([std**2 for _, std in measured])
    P = solve_discrete_are(F.T, H.T, Q, R)  # the predicted covariance
    M = np.eye(order) - P @ H.T @ np.linalg.solve(H @ P @ H.T + R, H)
    w = np.array([dt ** (order - i) / factorial(order - i) for i in range(order)])
    return float(np.linalg.solve(np.eye(order) - M @ F, M @ w)[-1])


def acceleration_covariance(P_linear: np.ndarray, P_angular: np.ndarray) -> np.ndarray:
    """6x6 covariance of (x_ddot_L, Omega_dot_L) from the linear filter's (x, x_dot, x_ddot)
    and the angular filter's (Omega, Omega_dot) covariances (axes independent)."""
    return np.diag(np.r_[[P_linear[2, 2]] * 3, [P_angular[1, 1]] * 3])


class _AxisFilter:
    """A Kalman filter on x_{k+1} = F x_k per axis, k states, the axes in columns."""

    def __init__(self, order: int, spectral_density: float, history: float = 0.0):
        self.order, self.q = order, spectral_density**2
        self.x = np.zeros((order, 3))
        self.P = np.eye(order) * 1e6
        self.time: float | None = None
        self.step: float | None = None  # the mean dt (exponential, over ~20 steps)
        self.history_span = float(history)
        self.history: deque = deque()  # the posteriors before the current one: (time, x, P,
        # the step to the next one: F, the predicted covariance, the smoother's gain)

    def lag(self, measured: tuple) -> float:
        """The top state's delay at the mean step (``steady_state_lag``); 0 before one."""
        if self.step is None:
            return 0.0
        return steady_state_lag(self.order, self.q, round(self.step, 5), measured)

    def predict(self, t: float) -> None:
        if self.time is None:
            self.time = t
            return
        dt = t - self.time
        if dt <= 0.0:
            return
        F, Q = _transition(self.order, self.q, dt)
        predicted = F @ self.P @ F.T + Q
        gain = np.linalg.solve(predicted, F @ self.P).T  # RTS: P_k F^T P_{k+1|k}^-1
        self.history.append((self.time, self.x, self.P, F, predicted, gain))
        while self.history and self.history[0][0] < t - self.history_span:
            self.history.popleft()
        self.time = t
        self.step = dt if self.step is None else 0.95 * self.step + 0.05 * dt
        self.x = F @ self.x
        self.P = predicted

    def states(self, since: float, smooth: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Times (n,), states (n, order, 3) and covariances (n, order, order) of the
        posteriors from the last one at or before ``since`` to the current one; if
        ``smooth``, conditioned on all of them (RTS backward pass, the filter's F and Q)."""
        entries = [(self.time, self.x, self.P, None, None, None)]
        for entry in reversed(self.history):  # back to the last one at or before ``since``
            if entries[-1][0] <= since:
                break
            entries.append(entry)
        entries.reverse()
        times = np.array([e[0] for e in entries])
        x = np.array([e[1] for e in entries])
        P = np.array([e[2] for e in entries])
        for k in range(len(entries) - 2, -1, -1) if smooth else ():
            _, x_k, P_k, F, predicted, gain = entries[k]
            x[k] = x_k + gain @ (x[k + 1] - F @ x_k)
            P[k] = P_k + gain @ (P[k + 1] - predicted) @ gain.T
        return times, x, P

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

    def __init__(self, noise: PayloadMotionNoise | None = None, history: float = 2.0):
        """``history`` [s]: how long the posteriors are kept for ``states`` (2 s: the
        in-flight identification's samples wait 0.2 s, and up to a solve period, 1 s, after
        a contact stops the estimates)."""
        self.noise = noise or PayloadMotionNoise()
        self._linear = _AxisFilter(3, self.noise.jerk, history)
        self._angular = _AxisFilter(2, self.noise.angular_jerk, history)

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
    def lag(self) -> tuple[float, float]:
        """(delay of ``accel``, delay of ``Omega_dot``) [s] at the mean mocap step (pose and
        twist sharing their stamps, as mocap gives them): each is the truth of that long ago
        (``steady_state_lag``; measured on noise-free 0.2-1 Hz sinusoids at 100 Hz: 51-52
        ms, gain 1.000)."""
        n = self.noise
        linear = self._linear.lag(((0, n.position), (1, n.velocity)))
        return linear, self._angular.lag(((0, n.rate),))

    @property
    def time(self) -> float:
        """The stamp of the latest mocap [s] (-inf before any)."""
        times = (self._linear.time, self._angular.time)
        return min(times) if None not in times else -np.inf

    def states(self, since: float, smooth: bool) -> tuple:
        """((times, (x, x_dot, x_ddot) states, covariances) of the linear filter, the same
        of the angular one (Omega, Omega_dot)) from ``since`` to now (``_AxisFilter.states``:
        smoothed over them all if ``smooth``)."""
        return self._linear.states(since, smooth), self._angular.states(since, smooth)

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
        return acceleration_covariance(self._linear.P, self._angular.P)
