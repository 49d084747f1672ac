"""Honesty checks of the coordinator's external wrench (issue 14): whether its sigma holds.

``WrenchChecks`` keeps the wrenches ``ExternalWrenchOutput`` published over the last
``WINDOW`` of sample time and, at most ``CHECK_RATE`` times per second of it (one instant per
worker cycle, ``check_pending``, and those left when the window is read, ``status``: on the
worker's thread, not the executor's), asks whether the robots agree, within their stated
noise, about the payload's acceleration (``team_motion_consistency``: late stamps, an off
clock, noisier sensors) and about gravity in {s} (``team_gravity_consistency``: a tilted
base, poses coarser than stated). The share of checked instants where they disagree goes to
/diagnostics; sustained above ``WARN_SHARE`` (each check has ``FALSE_ALARM`` false alarms
on clean input) it WARNs with the robot that disagrees most and what to do. ``check_rest``
(the coordinator's ``~/check_rest``: nobody touches the payload and it rests) runs
``rest_check`` on the window's wrenches: an F/T bias, a model off by more than its sigma, or
sensors noisier than stated.

The acceleration check needs the robots' twist-derivative noise: the samples' own dV
covariance where they carry one, else the parameters ``acceleration_noise_angular`` and
``acceleration_noise_linear`` (0, the default: the check is off and says so). The
estimate's residual cannot supply it: it is a wrench residual, mixing every noise source.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque

import numpy as np

from ..core.collaboration.human_wrench import (
    ExternalWrenchEstimate,
    MotionConsistency,
    PayloadModel,
    RestCheck,
    SensorNoise,
    TeamInstant,
    rest_check,
    team_gravity_consistency,
    team_motion_consistency,
)
from ..core.team_pipeline import Status
from .parameters import Param

WINDOW = 1.0  # [s of sample time] the wrenches kept: the rest check's and the shares' window
CHECK_RATE = 20.0  # [Hz of sample time] consistency checks at most
FALSE_ALARM = 0.01  # per check, on clean input
WARN_SHARE = 0.25  # clean input, 1 % per check: P(share > 0.25) 4e-8 of 20 checks, 1e-4 of 10
MIN_CHECKS = 10  # checks in the window before a share is judged
REST_MIN_SPAN = 0.5 * WINDOW  # [s] the rest check needs wrenches over at least this span

PARAMETERS = [
    Param(
        "acceleration_noise_angular",
        "double",
        0.0,
        "std of each robot's angular twist derivative per axis [rad/s^2] (samples without a "
        "dV covariance): in the external wrench's covariance (from the next estimate on; the "
        "floor, the payload's vibration is added: acceleration_vibration_gain) and for the "
        "check that the robots agree about the payload's acceleration; 0 with 0 linear: that "
        "check is off",
        bounds=(0.0, 1e4),
        read_only=False,
    ),
    Param(
        "acceleration_noise_linear",
        "double",
        0.0,
        "std of each robot's linear twist derivative per axis [m/s^2] (as the angular one)",
        bounds=(0.0, 1e4),
        read_only=False,
    ),
]

CAUSES = {
    "acceleration": "{robot}'s samples are late or its clock is off, its grasp frame is off or "
    "its acceleration noise is larger than stated (acceleration_noise_*)",
    "gravity": "{robot}'s base is tilted or its pose coarser than stated (declare "
    "pose_angle_resolution, level the bases), or its samples are late while the payload turns",
}

OFF = {
    "acceleration": "off (declare acceleration_noise_angular / _linear)",
    "gravity": "off (fewer than 2 robots report gravity)",
}


@dataclasses.dataclass
class _Check:
    stamp: float
    disagree: bool | None  # None: not checked (off)
    worst: str


class WrenchChecks:
    """The checks' window (module docstring). ``add`` on the executor's thread, ``status``
    on the worker's, ``check_rest`` on a service's: one lock."""

    def __init__(self, params: object) -> None:
        self.params = params
        self._lock = threading.Lock()
        self._wrenches: deque[ExternalWrenchEstimate] = deque()
        self._checks: dict[str, deque[_Check]] = {q: deque() for q in CAUSES}
        self._last_slot = -np.inf
        # (stamp, instant, model, noise) of the instants to check (``check_pending``)
        self._pending: deque[tuple[float, TeamInstant, PayloadModel, SensorNoise]] = deque()
        self._restarts = 0  # clock restarts seen by ``add``
        self.rest: RestCheck | None = None
        self.rest_answer = ""

    def add(
        self,
        instant: TeamInstant,
        wrench: ExternalWrenchEstimate,
        model: PayloadModel,
        noise: SensorNoise,
    ) -> None:
        """A published wrench and its instant's samples; at most ``CHECK_RATE`` of them are
        checked, when the window is read (``status``, on the worker's thread: not on the
        executor's, where the robots' next samples and the next wrench wait)."""
        slot = round(wrench.stamp * CHECK_RATE)
        with self._lock:
            if self._wrenches and wrench.stamp < self._wrenches[-1].stamp:  # clock restarted
                self._wrenches.clear()
                self._pending.clear()
                self._restarts += 1
                for q in self._checks.values():
                    q.clear()
            self._wrenches.append(wrench)
            if slot != self._last_slot:
                self._last_slot = slot
                self._pending.append((float(instant.stamps.max()), instant, model, noise))
            self._prune(wrench.stamp - WINDOW)

    def check_pending(self, most: int | None = None) -> None:
        """The consistency checks of the instants added and not checked yet: the oldest
        ``most`` of them (all if None). The worker checks one per cycle
        (``ExternalWrenchOutput.follow``; ~0.3-0.5 ms each), so that ``status`` does not run a
        second's 20 at once (6-10 ms at load 11-17: the executor's callbacks waited for them,
        docs/throughput.md)."""
        with self._lock:
            count = len(self._pending) if most is None else min(most, len(self._pending))
            pending, restarts = [self._pending.popleft() for _ in range(count)], self._restarts
        done = [self._consistency(*args) for args in pending]
        with self._lock:
            if restarts != self._restarts:  # the clock restarted meanwhile: stale
                return
            for checks in done:
                for quantity, check in checks.items():
                    self._checks[quantity].append(check)
            if self._wrenches:
                self._prune(self._wrenches[-1].stamp - WINDOW)

    def _consistency(
        self, stamp: float, instant: TeamInstant, model: PayloadModel, noise: SensorNoise
    ) -> dict[str, _Check]:
        p = self.params
        acceleration = dataclasses.replace(
            noise,
            angular_acceleration=getattr(p, "acceleration_noise_angular", 0.0),
            linear_acceleration=getattr(p, "acceleration_noise_linear", 0.0),
        )
        results: dict[str, MotionConsistency] = {
            "acceleration": team_motion_consistency(instant, model, acceleration, FALSE_ALARM),
            "gravity": team_gravity_consistency(instant, model, noise, FALSE_ALARM),
        }
        return {
            q: _Check(stamp, None if r.dof == 0 else not r.consistent, r.worst)
            for q, r in results.items()
        }

    def _prune(self, oldest: float) -> None:
        while self._wrenches and self._wrenches[0].stamp < oldest:
            self._wrenches.popleft()
        while self._pending and self._pending[0][0] < oldest:
            self._pending.popleft()
        for q in self._checks.values():
            while q and q[0].stamp < oldest:
                q.popleft()

    def check_rest(self) -> tuple[bool, str]:
        """``rest_check`` of the window's wrenches: (success, what it found)."""
        with self._lock:
            wrenches = list(self._wrenches)
        span = wrenches[-1].stamp - wrenches[0].stamp if wrenches else 0.0
        if len(wrenches) < 2 or span < REST_MIN_SPAN:
            return False, (
                f"not checked: {len(wrenches)} external wrenches over {span:.2f} s, the check "
                f"needs {REST_MIN_SPAN:g} s of them (is external_wrench published? wait and "
                "call again)"
            )
        result = rest_check(wrenches, FALSE_ALARM)
        if result.zero and result.noise_within:
            answer = (
                f"consistent: the wrench at rest is zero within its sigma over {result.samples} "
                f"wrenches (chi-square {result.offset:.3g} <= {result.offset_bound:.3g}, "
                f"spread {result.spread:.3g} <= {result.spread_bound:.3g})"
            )
        else:
            answer = self._rest_failure(result)
        with self._lock:
            self.rest, self.rest_answer = result, answer
        return result.zero and result.noise_within, answer

    @staticmethod
    def _rest_failure(result: RestCheck) -> str:
        parts = []
        if not result.zero:
            parts.append(
                f"bias suspected: the wrench at rest is {np.linalg.norm(result.mean[3:]):.3g} N, "
                f"{np.linalg.norm(result.mean[:3]):.3g} N m"
            )
        if not result.noise_within:
            parts.append(f"noise larger than stated by a factor {result.noise_factor:.2g}")
        return "; ".join(parts) + f" ({result.reason})"

    def status(self) -> Status:
        """The window's disagreement shares and the last rest check, for /diagnostics (the
        instants not checked yet checked first)."""
        self.check_pending()
        with self._lock:
            checks = {q: list(c) for q, c in self._checks.items()}
            rest, rest_answer = self.rest, self.rest_answer
        values, warnings = {}, []
        for quantity, window in checks.items():
            done = [c for c in window if c.disagree is not None]
            key = f"robots disagree about {quantity} [share of checks]"
            if not done:
                values[key] = OFF[quantity] if window else "no data"
                continue
            bad = [c for c in done if c.disagree]
            share = len(bad) / len(done)
            values[key] = f"{share:.2f} of {len(done)}"
            if len(done) >= MIN_CHECKS and share > WARN_SHARE:
                worst = max(set(c.worst for c in bad), key=[c.worst for c in bad].count)
                warnings.append(
                    f"the robots disagree about {quantity} at {share:.0%} of instants (most: "
                    f"{worst}): " + CAUSES[quantity].format(robot=worst) + "; the external "
                    "wrench's sigma may not hold"
                )
        if rest is not None:
            values["rest check"] = rest_answer
            if not (rest.zero and rest.noise_within):
                warnings.append("~/check_rest failed: " + rest_answer)
        if warnings:
            return Status("external wrench", "WARN", "; ".join(warnings), values)
        return Status("external wrench", "OK", "consistent", values)
