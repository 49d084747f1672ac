"""The planner's payload reference and its modes, ROS-free (issue 14 item 3): ``admittance``
(a person moves the payload, ``supervisor``), ``balancing`` (a certified robust-balancing
trajectory, paper 004, ``core.planning``) and ``hold``, switched with a bumpless transfer:
at every switch the reference T_w_s and body twist V_s of {s} continue without a jump.

* -> ``hold``: the reference decelerates within the acceleration limits from its current
  pose and velocity to rest, and holds.
* -> ``balancing``: planning takes seconds while the control ticks run on (the plan on a
  thread), so the plan starts from the reference's predicted state: ``planning_start``
  turns a moving reference to ``hold`` (it decelerates within the limits, deterministically)
  and gives the OCP's initial state (tray pose q and rates [dq, ddq]) where that deceleration
  comes to rest. ``start_balancing`` takes the certified plan; if the reference is still
  decelerating (planning was quicker), the switch waits for the tick at which it rests. At
  the switch the plan's start must continue the reference (pose within
  ``position_tolerance`` / ``angle_tolerance``, velocity within a_max dt), else it is
  refused (e.g. another switch moved the reference meanwhile). The reference then follows
  the plan from its start, its clock running with the ticks (dt per tick, like the
  admittance), and holds at its end.
* -> ``admittance``: the admittance starts from the current reference (pose and velocity),
  refused with the supervisor's reason (e.g. no valid estimate).

A safe stop of the supervisor (estimate invalid, an input silent) turns the mode to ``hold``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from .. import spatial as sp
from ..planning.planner import TrayPlan
from ..planning.tray import body_motion, euler_rate_map, rotation
from .admittance import Admittance, AdmittanceGains, AdmittanceState
from .supervisor import AdmittanceSupervisor, Reference

MODES = ("admittance", "balancing", "hold")


@dataclass(frozen=True)
class PlanningStart:
    """The balancing OCP's initial state from the reference at ``stamp``: q and [dq, ddq]."""

    stamp: float
    q: np.ndarray
    rates: np.ndarray


def plan_reference(plan: TrayPlan, t: float, T_e_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T_w_s, V_s) of the tray plan at time t (clamped to the plan), {s} = tray {e} T_e_s."""
    x = plan.states(np.array([np.clip(t, 0.0, plan.times[-1])]))[0]
    T_w_e = sp.transform(rotation(x[:6]), x[:3])
    V_e, _, _ = body_motion(x)
    return T_w_e @ T_e_s, sp.twist_to(sp.inverse(T_e_s), V_e)


def tray_state(T_w_s: np.ndarray, V_s: np.ndarray, T_e_s: np.ndarray) -> np.ndarray:
    """[q, dq] (12) of the tray with {s} at T_w_s moving with body twist V_s."""
    T_w_e = T_w_s @ sp.inverse(T_e_s)
    R_w_e = T_w_e[:3, :3]
    yaw, pitch, roll = Rotation.from_matrix(R_w_e).as_euler("ZYX")
    V_e = sp.twist_to(T_e_s, V_s)
    E = euler_rate_map(np.array(roll), np.array(pitch))[0]
    angle_rates = np.linalg.solve(E, V_e[:3])
    return np.concatenate([T_w_e[:3, 3], [roll, pitch, yaw], R_w_e @ V_e[3:], angle_rates])


class ReferenceModes:
    """Module docstring. ``dt``: the control period [s]; ``T_e_s``: {s} in the tray frame."""

    def __init__(
        self,
        supervisor: AdmittanceSupervisor,
        T_e_s: np.ndarray,
        dt: float,
        position_tolerance: float = 1e-3,
        angle_tolerance: float = 1e-3,
    ) -> None:
        self.supervisor, self.T_e_s, self.dt = supervisor, np.asarray(T_e_s, dtype=float), dt
        self.tolerances = (position_tolerance, angle_tolerance)
        options = supervisor.gain_options
        self.limits = (
            float(options.get("max_linear_acceleration", 1.0)),
            float(options.get("max_angular_acceleration", 2.0)),
        )
        self._hold_gains = AdmittanceGains.from_estimate(1.0, np.eye(3), **options)
        self.mode = "hold"
        self.reference: Reference | None = None
        self._brake: Admittance | None = None
        self._plan: tuple[TrayPlan, float] | None = None
        self._pending: TrayPlan | None = None  # certified, waiting for the reference to rest

    # ----- switches ----------------------------------------------------------------------
    def hold(self, reason: str = "hold requested") -> tuple[bool, str]:
        """Decelerate within the limits from the current reference, then hold (from
        admittance: the supervisor's own safe stop)."""
        if self.mode == "admittance":
            self.supervisor.stop(reason)
            self._brake = None
        elif self.reference is not None:
            self._brake = Admittance(self._hold_gains, self._state(self.reference))
            self._brake.stop()
        self.mode, self._plan, self._pending = "hold", None, None
        return True, f"hold: the reference decelerates within the limits and holds ({reason})"

    def admittance(self) -> tuple[bool, str]:
        """Admittance from the current reference (pose and velocity); refused with the cause."""
        ok, message = self.supervisor.start(self.reference)
        if ok:
            self.mode, self._plan, self._brake, self._pending = "admittance", None, None, None
        return ok, message

    def planning_start(self) -> PlanningStart | tuple[bool, str]:
        """The OCP's initial state: where the reference rests (before any reference, the
        measured pose); a moving reference first turns to ``hold`` and decelerates (module
        docstring). Or (False, why not)."""
        measured = self.supervisor.measured_pose()
        if self.reference is None and measured is not None:
            self.reference = Reference(measured[0], measured[1], np.zeros(6), False)
        if self.reference is None:
            return False, "balancing refused: no reference and no payload pose received yet"
        if np.any(self.reference.V_s) or self.mode != "hold":
            self._decelerate("planning a balancing trajectory from where the reference rests")
        rest = self._rest()
        x = tray_state(rest.T_w_s, rest.V_s, self.T_e_s)
        return PlanningStart(rest.stamp, x[:6], np.concatenate([x[6:], np.zeros(6)]))

    def _decelerate(self, reason: str) -> None:
        """``hold`` on this class's own brake from the current reference (also from the
        admittance), so that ``_rest`` can predict where it stops."""
        if self.mode == "admittance":
            self.supervisor.stop(reason)
        self._brake = Admittance(self._hold_gains, self._state(self.reference))
        self._brake.stop()
        self.mode, self._plan, self._pending = "hold", None, None

    def _rest(self) -> Reference:
        """The reference where the hold's deceleration will bring it to rest (propagated
        on a copy of the brake, tick by tick as ``tick`` will)."""
        if self._brake is None:
            return self.reference
        brake, ticks = copy.deepcopy(self._brake), 0
        while not brake.at_rest:
            brake.step(np.zeros(3), np.zeros(3), self.dt)
            ticks += 1
        T_w_s = sp.transform(brake.state.R, brake.state.p)
        return Reference(self.reference.stamp + ticks * self.dt, T_w_s, np.zeros(6), False)

    def start_balancing(
        self, plan: TrayPlan | None, start: PlanningStart, certified: bool, why: str = ""
    ) -> tuple[bool, str]:
        """Follow ``plan`` (planned from ``start``) if certified and bumpless: now, or at the
        tick at which the hold's deceleration rests."""
        if plan is None or not certified:
            return False, f"balancing refused: no certified plan ({why or 'not certified'})"
        if plan.robot != "tray":
            return False, "balancing refused: the reference follows tray plans only"
        if self.mode == "hold" and self._brake is not None and not self._brake.at_rest:
            jump = self._jump(self._rest(), *plan_reference(plan, 0.0, self.T_e_s))
            if jump:
                return False, f"balancing refused: the plan does not start at rest ({jump})"
            self._pending = plan
            return True, (
                f"balancing: following the certified {plan.times[-1]:g} s plan once the "
                "reference has decelerated to rest"
            )
        return self._switch_to(plan)

    def _switch_to(self, plan: TrayPlan) -> tuple[bool, str]:
        """Balancing from the current reference, if ``plan`` continues it."""
        jump = self._jump(self.reference, *plan_reference(plan, 0.0, self.T_e_s))
        if jump:
            return False, f"balancing refused: the reference moved while planning ({jump}): retry"
        if self.mode == "admittance":
            self.supervisor.stop("balancing takes over")
        self.mode, self._plan, self._brake, self._pending = "balancing", (plan, 0.0), None, None
        return True, f"balancing: following the certified {plan.times[-1]:g} s plan"

    def _jump(self, ref: Reference, T_w_s: np.ndarray, V_s: np.ndarray) -> str:
        """'' if (T_w_s, V_s) continues ``ref`` within the tolerances, else what jumps."""
        position = float(np.linalg.norm(T_w_s[:3, 3] - ref.T_w_s[:3, 3]))
        angle = float(np.linalg.norm(sp.log3(ref.T_w_s[:3, :3].T @ T_w_s[:3, :3])))
        dv = float(np.linalg.norm(V_s[3:] - ref.V_s[3:]))
        domega = float(np.linalg.norm(V_s[:3] - ref.V_s[:3]))
        limits = (*self.tolerances, self.limits[0] * self.dt, self.limits[1] * self.dt)
        values = (position, angle, dv, domega)
        names = ("position [m]", "angle [rad]", "velocity [m/s]", "angular velocity [rad/s]")
        return ", ".join(
            f"{n} {v:.3g} > {limit:.3g}"
            for n, v, limit in zip(names, values, limits, strict=True)
            if v > limit
        )

    # ----- control tick ------------------------------------------------------------------
    def tick(self, now: float, dt: float) -> Reference | None:
        """The reference at ``now`` (advanced by dt); None before there is one."""
        if self.mode == "admittance":
            reference = self.supervisor.tick(now, dt)
            if not self.supervisor.active:  # a safe stop: its deceleration is the hold
                self.mode = "hold"
        elif self.mode == "balancing":
            plan, elapsed = self._plan
            self._plan = plan, elapsed + dt  # the plan's clock runs with the ticks
            T_w_s, V_s = plan_reference(plan, elapsed + dt, self.T_e_s)
            reference = Reference(now, T_w_s, V_s, elapsed + dt < plan.times[-1])
            if not reference.moving:
                self.reference = reference
                self.hold("the balancing trajectory ended")
        elif self._brake is not None:
            state = self._brake.step(np.zeros(3), np.zeros(3), dt)
            reference = Reference(now, sp.transform(state.R, state.p), self._twist(state), False)
            if self._pending is not None and self._brake.at_rest:
                self.reference, plan, self._pending = reference, self._pending, None
                ok, message = self._switch_to(plan)
                self.supervisor.events.append(message)
        else:  # the admittance's safe stop, or None before any mode ran
            reference = self.supervisor.tick(now, dt)
        self.reference = reference or self.reference
        return reference

    # ----- frames ------------------------------------------------------------------------
    @staticmethod
    def _state(ref: Reference) -> AdmittanceState:
        R = ref.T_w_s[:3, :3]
        return AdmittanceState(ref.T_w_s[:3, 3].copy(), R.copy(), R @ ref.V_s[3:], ref.V_s[:3])

    @staticmethod
    def _twist(state: AdmittanceState) -> np.ndarray:
        return np.concatenate([state.omega, state.R.T @ state.v])
