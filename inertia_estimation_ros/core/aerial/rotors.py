"""The rotor model of an X quadrotor (paper 002, eq. 33): rotor speeds <-> thrust and moments."""

from __future__ import annotations

import numpy as np

RPM_PER_RAD_S = 60.0 / (2.0 * np.pi)


class RotorModel:
    """Eq. 33 for an X quadrotor: rotor 1 at (+x, +y), 2 (-x, +y), 3 (-x, -y), 4 (+x, -y);
    arm [m] rotor to centre, k_f [N/rpm^2], k_m [N m/rpm^2], speed limits [rpm]."""

    def __init__(
        self,
        arm: float,
        k_f: float,
        k_m: float,
        rpm_min: float = 0.0,
        rpm_max: float = np.inf,
    ):
        if not (arm > 0.0 and k_f > 0.0 and k_m > 0.0):
            raise ValueError(
                f"rotor model: need arm > 0 ({arm} m), k_f > 0 ({k_f} N/rpm^2) and k_m > 0 "
                f"({k_m} N m/rpm^2)"
            )
        d, kf, km = arm / np.sqrt(2.0), k_f, k_m
        self.A = np.array(
            [
                [kf, kf, kf, kf],
                [d * kf, d * kf, -d * kf, -d * kf],
                [-d * kf, d * kf, d * kf, -d * kf],
                [km, -km, km, -km],
            ]
        )
        self.A_inv = np.linalg.inv(self.A)
        self.limits = (rpm_min**2, rpm_max**2)

    def speeds(self, thrust: float, moment: np.ndarray) -> np.ndarray:
        """Rotor speeds [rpm] realising (f, M), each clipped to its range."""
        squared = np.clip(self.A_inv @ np.array([thrust, *moment]), *self.limits)
        return np.sqrt(squared)

    def wrench(self, rpm: np.ndarray) -> tuple[float, np.ndarray]:
        """(f, M) of the rotor speeds [rpm] (eq. 33)."""
        out = self.A @ np.square(rpm)
        return float(out[0]), out[1:]

    def input(self, rad_s: np.ndarray) -> np.ndarray:
        """The UKF's input U = [f, M] (eq. 32) from ESC speeds in rad/s (JointState)."""
        return self.A @ np.square(np.asarray(rad_s, dtype=float) * RPM_PER_RAD_S)
