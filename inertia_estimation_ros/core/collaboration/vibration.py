"""The payload's vibration: how far the human wrench can trust the measured acceleration.

The human wrench (``human_wrench.team_wrench``) subtracts the model's wrench at the payload's
measured twist derivative dV_s. Where the robots vibrate (their impedance loops while the
payload moves with a person, 2-10 Hz), the wrenches they measure do not follow their
kinematics sample by sample: the simulated team's force error during the pull is ~2.5 m times
the payload's acceleration above ~4 Hz, common to all robots (docs/collaboration.md,
2026-11-27, s30d), while at rest that acceleration is ~0 and the error the F/T noise alone.
One constant acceleration noise cannot state both (5x too wide at rest, or 5x too narrow in
motion). ``VibrationMeter`` measures, per axis, the running mean square of dV_s's
high-frequency part, so that the covariance can grow with the vibration and shrink back
when it stops (``team_wrench(..., vibration=gain^2 * meter.mean_square)``).

The high-pass is a 4th-order Butterworth (two biquad sections, bilinear transform with the
cutoff prewarped; -24 dB per octave below it: the team's own motion, which the model
follows, lies at 0.5-3 Hz) whose coefficients follow the instants' spacing dt (a wrench
output skips instants while behind; one design per 1 % of dt, kept: jittered stamps do not
make one per sample), the cutoff at most
``NYQUIST_SHARE`` of the samples' Nyquist rate. The mean square is an exponential average
over ``time_constant`` with weight 1 - exp(-dt / time_constant). A gap longer than
``max_gap`` (or a stamp that goes back: a clock restart) restarts the high-pass from the new
sample and keeps the mean square (a gap says nothing about calm).
"""

from __future__ import annotations

import math

import numpy as np

SECTIONS_Q = (0.5411961001461970, 1.3065629648763766)  # a 4th-order Butterworth's pole pairs
NYQUIST_SHARE = 0.8  # the cutoff at most this share of half the samples' rate


class VibrationMeter:
    """Running mean square (6,) of a twist derivative's part above ``cutoff`` [Hz] (module
    docstring), averaged over ``time_constant`` [s]; units of dV squared: (rad/s^2)^2
    (angular, first three) and (m/s^2)^2 (linear)."""

    def __init__(self, cutoff: float, time_constant: float = 0.25, max_gap: float = 0.1) -> None:
        if not (cutoff > 0 and time_constant > 0 and max_gap > 0):
            raise ValueError(
                f"cutoff {cutoff}, time_constant {time_constant} and max_gap {max_gap} must be > 0"
            )
        self.cutoff = cutoff
        self.time_constant = time_constant
        self.max_gap = max_gap
        self.mean_square = np.zeros(6)
        self._stamp = -np.inf
        # the high-pass's state (two sections' z1, z2: DF-II transposed) and, last, the input
        self._state = np.zeros((2 * len(SECTIONS_Q) + 1, 6))
        self._offset = np.zeros(6)  # the input at the last restart, taken off every input
        self._designs: dict[int, tuple[np.ndarray, float]] = {}  # per 1 % of dt

    def add(self, stamp: float, dV: np.ndarray) -> None:
        """The payload's twist derivative (6,) at ``stamp`` [s] (after the last one's)."""
        if not np.isfinite(dV).all():
            return
        dt = stamp - self._stamp
        self._stamp = stamp
        if not 0 < dt <= self.max_gap:  # the first sample, a gap or a restart: at rest at dV
            self._offset = np.array(dV, dtype=float)
            self._state[:] = 0.0
            return
        step, weight = self._design(dt)
        self._state[-1] = dV - self._offset
        self._state[:] = step @ self._state  # the next state and, last row, the output
        y = self._state[-1]
        self.mean_square += weight * (y * y - self.mean_square)

    def _design(self, dt: float) -> tuple[np.ndarray, float]:
        """(S, w) for samples ``dt`` apart: S (5 x 5) maps (state, input) to (next state,
        output) of the two sections in cascade (one matrix product per sample), w the
        average's weight."""
        key = round(100.0 * math.log(dt))
        design = self._designs.get(key)
        if design is None:
            if len(self._designs) > 64:  # irregular spacing: keep a few
                self._designs.clear()
            K = np.tan(np.pi * min(self.cutoff * dt, 0.5 * NYQUIST_SHARE))
            sections = []
            for Q in SECTIONS_Q:
                norm = 1.0 / (1.0 + K / Q + K * K)
                sections.append((norm, 2.0 * (K * K - 1.0) * norm, (1.0 - K / Q + K * K) * norm))
            step = np.column_stack([_cascade(sections, e) for e in np.eye(len(self._state))])
            design = self._designs[key] = (step, -np.expm1(-dt / self.time_constant))
        return design


def _cascade(sections: list[tuple[float, float, float]], column: np.ndarray) -> np.ndarray:
    """(next state, output) of biquad sections (b0, a1, a2; numerator b0 (1, -2, 1)) in
    cascade from (state, input) ``column``."""
    out, x = np.empty(len(column)), column[-1]
    for k, (b0, a1, a2) in enumerate(sections):
        z1, z2 = column[2 * k], column[2 * k + 1]
        y = b0 * x + z1
        out[2 * k], out[2 * k + 1] = -2.0 * b0 * x - a1 * y + z2, b0 * x - a2 * y
        x = y
    out[-1] = x
    return out
