"""The admittance mode's supervision, ROS-free (issue 14 item 3): what the planner node's
admittance mode does with its inputs, so that it can be tested without a graph.

Inputs: the payload's pose T_w_s (the reference robot's grasp frame {s} in the world),
the estimate (mass, CoM p_s_c, CoM inertia, validity) and the human wrench about the CoM
in the axes of {s} (``human_wrench``, or an aerial team's estimate converted to that).
Output, every control tick: the reference pose T_w_s,des and body twist of {s}.

* ``start`` refuses, saying why, without a valid mass and CoM (and inertia: the virtual
  inertia is a fraction of it), without a pose, or while the last human wrench that arrived
  was older than ``input_timeout`` behind the pose (its source lags; a start would stop at
  once for want of a valid wrench); otherwise it starts bumplessly from the
  last reference (or the measured pose) with gains from the estimate.
* A wrench with a non-finite value, one older than ``input_timeout`` behind the newest
  pose, or one that went back in time is ignored and counted; no fresh wrench means no
  input (the reference coasts to rest through its damping).
* Safe stop (the reference decelerates within the limits and holds): ``stop``; the
  estimate going invalid; no pose or no wrench for ``input_timeout``.
* Each step gets the wrench's age (now - its stamp): the admittance's passivity controller
  damps what a late wrench would make the loop oscillate (``admittance.PassivityObserver``).
  ``stabilizer`` says whether it acts (it dissipates more than ``ACTING_POWER``), an event
  when it starts and when it has been idle for ``IDLE_AFTER`` again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from .. import spatial as sp
from .admittance import Admittance, AdmittanceError, AdmittanceGains, AdmittanceState

ACTING_POWER = 0.01  # [W] the stabilizer acts when its extra damping dissipates more
IDLE_AFTER = 1.0  # [s] without acting: idle again


@dataclass(frozen=True)
class ModelSummary:
    """The estimate as the admittance needs it: mass, CoM p_s_c and CoM inertia in {s}."""

    valid: bool
    mass: float = 0.0
    p_s_c: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia_about_com: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    reason: str = ""


@dataclass
class Stabilizer:
    """What the admittance's passivity controller did while acting (``since`` not None):
    the wrench's largest age [s], the largest extra damping (x D), the energy dissipated [J]."""

    since: float | None = None
    last: float = -np.inf  # the last step it acted
    age: float = 0.0
    damping: float = 0.0
    dissipated: float = 0.0

    @property
    def acting(self) -> bool:
        return self.since is not None

    def values(self) -> dict[str, str]:
        return {
            "stabilizer": "acting" if self.acting else "idle",
            "stabilizer wrench age [ms]": f"{self.age * 1e3:.0f}",
            "stabilizer extra damping [x D]": f"{self.damping:.2f}",
            "stabilizer dissipated [J]": f"{self.dissipated:.4f}",
        }


@dataclass(frozen=True)
class Reference:
    """The payload reference: T_w_s (4x4) and the body twist V_s (omega, v) of {s}."""

    stamp: float
    T_w_s: np.ndarray
    V_s: np.ndarray
    moving: bool


class AdmittanceSupervisor:
    """Module docstring. ``gain_options``: ``AdmittanceGains.from_estimate`` keywords."""

    def __init__(self, input_timeout: float = 0.5, **gain_options: object) -> None:
        self.input_timeout = float(input_timeout)
        self.gain_options = gain_options
        AdmittanceGains.from_estimate(1.0, np.eye(3), **gain_options)  # refuse bad ones now
        self.model = ModelSummary(False, reason="no estimate received")
        self.admittance: Admittance | None = None
        self.active = False
        self.ignored: Counter = Counter()
        self.events: list[str] = []
        self.stabilizer = Stabilizer()
        self._pose: tuple[float, np.ndarray] | None = None
        self._wrench: tuple[float, np.ndarray] | None = None
        self._wrench_lag: float | None = None  # the last wrench received was this stale [s]
        self._last_reference: Reference | None = None
        self._started = -np.inf
        # p_s_c of the model the running admittance started with: its frame (the CoM) stays
        # while later estimates come or go invalid, so that the reference never jumps
        self._p_s_c = np.zeros(3)
        self._com_to_s = self._lever_arm(self._p_s_c)

    # ----- inputs ------------------------------------------------------------------------
    def on_estimate(self, model: ModelSummary) -> None:
        self.model = model
        if self.active and not model.valid:
            self._safe_stop(f"the estimate is no longer valid ({model.reason})")

    def on_pose(self, stamp: float, T_w_s: np.ndarray) -> None:
        if np.all(np.isfinite(T_w_s)):
            self._pose = (float(stamp), np.asarray(T_w_s, dtype=float))

    def on_wrench(self, stamp: float, wrench_c: np.ndarray) -> bool:
        """A human wrench (moment, force) about the CoM, axes of {s}; False if ignored."""
        wrench_c = np.asarray(wrench_c, dtype=float)
        if wrench_c.shape != (6,) or not np.all(np.isfinite(wrench_c)):
            self.ignored["non-finite wrench"] += 1
            return False
        newest = self._pose[0] if self._pose else -np.inf
        self._wrench_lag = None
        if stamp < newest - self.input_timeout:
            self.ignored["stale wrench"] += 1
            self._wrench_lag = newest - stamp
            return False
        if self._wrench is not None and stamp < self._wrench[0]:
            self.ignored["wrench out of order"] += 1
            return False
        self._wrench = (float(stamp), wrench_c)
        return True

    # ----- modes -------------------------------------------------------------------------
    def start(self, reference: Reference | None = None) -> tuple[bool, str]:
        """Admittance on, from ``reference`` (another mode's last one), else the last
        reference (bumpless) or the measured pose."""
        if not self.model.valid:
            return False, f"admittance refused: {self.model.reason}"
        if self._pose is None:
            return False, "admittance refused: no payload pose received yet"
        if self._wrench_lag is not None:  # e.g. a coordinator catching up after its solves
            return False, (
                f"admittance refused: the last human wrench was {self._wrench_lag:.2f} s older "
                "than the "
                f"payload pose (input timeout {self.input_timeout:g} s): the wrench source "
                "lags; try again once it has caught up"
            )
        try:
            gains = AdmittanceGains.from_estimate(
                self.model.mass, self.model.inertia_about_com, **self.gain_options
            )
        except AdmittanceError as error:
            return False, f"admittance refused: {error}"
        if reference is not None:
            self._last_reference = reference
        T_w_s = self._last_reference.T_w_s if self._last_reference else self._pose[1]
        V_s = self._last_reference.V_s if self._last_reference else np.zeros(6)
        self._p_s_c = np.array(self.model.p_s_c, dtype=float)
        self._com_to_s = self._lever_arm(self._p_s_c)
        self.admittance = Admittance(gains, self._com_state(T_w_s, V_s))
        self.active = True
        self._started = self._pose[0]
        return True, (
            f"admittance on: virtual mass {gains.mass[0, 0]:.3g} kg, damping "
            f"{gains.damping_linear[0, 0]:.3g} N s/m"
        )

    def stop(self, reason: str = "stop requested") -> None:
        if self.active:
            self._safe_stop(reason)

    def _safe_stop(self, reason: str) -> None:
        self.events.append(f"safe stop: {reason}")
        if self.admittance is not None:
            self.admittance.stop()
        self.active = False

    # ----- control tick ------------------------------------------------------------------
    def tick(self, now: float, dt: float) -> Reference | None:
        """Advance the reference by dt at time ``now`` (robots' clock); None before the first
        start."""
        if self.admittance is None:
            return None
        if self.active:
            self._check_inputs(now)
        force_w, moment_c, age = np.zeros(3), np.zeros(3), 0.0
        if self.active and self._wrench is not None and now - self._wrench[0] <= self.input_timeout:
            R_w_s = self._pose[1][:3, :3]
            force_w, moment_c = R_w_s @ self._wrench[1][3:], self._wrench[1][:3]
            age = now - self._wrench[0]
        state = self.admittance.step(force_w, moment_c, dt, age)
        self._watch_stabilizer(now, dt)
        self._last_reference = self._reference(now, state)
        return self._last_reference

    def _watch_stabilizer(self, now: float, dt: float) -> None:
        """``stabilizer`` from the passivity controller's last step; an event at each change."""
        observer, s = self.admittance.passivity, self.stabilizer
        if observer is None:
            return
        # a safe stop's deceleration steps without the observer (its last step stays)
        dissipated = 0.0 if self.admittance.stopping else observer.step_dissipated
        if dissipated > ACTING_POWER * dt:
            if not s.acting:
                self.stabilizer = s = Stabilizer(since=now)
                self.events.append(
                    f"admittance stabilizer acting: the human wrench arrives "
                    f"{observer.age * 1e3:.0f} ms late and the admittance gave back "
                    f"{-observer.energy * 1e3:.1f} mJ more than the person put in; extra "
                    f"damping {observer.damping:.1f} x its own"
                )
            s.last, s.age = now, max(s.age, observer.age)
            s.damping = max(s.damping, observer.damping)
        if s.acting:
            s.dissipated += dissipated
            if now - s.last > IDLE_AFTER:
                self.events.append(
                    f"admittance stabilizer idle again: it dissipated {s.dissipated:.3f} J in "
                    f"{s.last - s.since:.1f} s (wrench age up to {s.age * 1e3:.0f} ms)"
                )
                s.since = None

    def _check_inputs(self, now: float) -> None:
        last_wrench = max(self._wrench[0] if self._wrench else -np.inf, self._started)
        if self._pose is None or now - self._pose[0] > self.input_timeout:
            self._safe_stop(f"no payload pose for {self.input_timeout:g} s: a robot is silent")
        elif now - last_wrench > self.input_timeout:
            self._safe_stop(f"no valid human wrench for {self.input_timeout:g} s")

    # ----- frames ------------------------------------------------------------------------
    def _com_state(self, T_w_s: np.ndarray, V_s: np.ndarray) -> AdmittanceState:
        """The admittance's frame: the CoM (of the model it started with) with the axes of
        {s}."""
        T_w_c = T_w_s @ sp.transform(np.eye(3), self._p_s_c)
        V_c = sp.twist_to(sp.transform(np.eye(3), -self._p_s_c), V_s)
        return AdmittanceState(T_w_c[:3, 3], T_w_c[:3, :3], T_w_c[:3, :3] @ V_c[3:], V_c[:3])

    @staticmethod
    def _lever_arm(p_s_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(T_c_s, Ad(T_s_c)): {s} seen from the CoM, and the map of a CoM body twist to
        {s}'s, once per start (they change with the model's p_s_c only)."""
        T_c_s = sp.transform(np.eye(3), -p_s_c)
        return T_c_s, sp.adjoint(sp.inverse(T_c_s))

    def _reference(self, now: float, state: AdmittanceState) -> Reference:
        T_w_c = sp.transform(state.R, state.p)
        T_c_s, Ad_s_c = self._com_to_s
        V_c = np.concatenate([state.omega, state.R.T @ state.v])
        moving = bool(state.v.any() or state.omega.any())
        return Reference(now, T_w_c @ T_c_s, Ad_s_c @ V_c, moving)

    def measured_pose(self) -> tuple[float, np.ndarray] | None:
        """(stamp, T_w_s) of the newest payload pose, None before the first."""
        return self._pose

    def last_reference(self) -> Reference | None:
        return None if self._last_reference is None else replace(self._last_reference)
