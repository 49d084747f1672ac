"""The planner's reference modes (admittance, balancing, hold) and their bumpless switches.

Reference: the control period dt and the limits. Across every switch the published pose
moves by at most the speed limit times dt and the velocity changes by at most a_max dt
(what one tick of any mode may do), the balancing plan starts exactly at the reference's
state (the OCP's initial state), and refusals name their cause.
"""

from __future__ import annotations

import numpy as np

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.modes import (
    PlanningStart,
    ReferenceModes,
    plan_reference,
    tray_state,
)
from inertia_estimation_ros.core.collaboration.supervisor import (
    AdmittanceSupervisor,
    ModelSummary,
)
from inertia_estimation_ros.core.planning.objects import BalancedObject
from inertia_estimation_ros.core.planning.planner import PlannerSettings
from inertia_estimation_ros.core.planning.session import plan_and_verify

DT = 0.01
A_MAX, V_MAX, ALPHA_MAX, W_MAX = 1.0, 0.3, 2.0, 0.5
P_S_C = np.array([0.0, 0.0, 0.1])  # the admittance runs at the CoM: {s} moves also by w x p
MODEL = ModelSummary(True, 10.0, P_S_C, np.diag([0.5, 0.6, 0.9]))
# one tick of any mode moves {s} by at most these (the CoM's limits plus the lever arm)
DP = (V_MAX + W_MAX * np.linalg.norm(P_S_C)) * DT
DV = (A_MAX + (ALPHA_MAX + W_MAX**2) * np.linalg.norm(P_S_C)) * DT
PUSH = np.array([0.0, 0.0, 0.0, 15.0, 5.0, 0.0])  # (moment, force) about the CoM, {s} axes
GOAL = np.array([1.4, 0.3, 1.0])


class Run:
    """Ticks the modes at DT, feeding the reference back as the measured pose."""

    def __init__(self) -> None:
        sup = AdmittanceSupervisor(
            input_timeout=0.2,
            max_linear_speed=V_MAX,
            max_linear_acceleration=A_MAX,
            max_angular_speed=W_MAX,
            max_angular_acceleration=ALPHA_MAX,
        )
        sup.on_estimate(MODEL)
        sup.on_pose(0.0, sp.transform(np.eye(3), [1.0, 0.0, 0.8]))
        self.modes = ReferenceModes(sup, np.eye(4), DT)
        self.now, self.refs = 0.0, []

    def ticks(self, seconds: float, wrench: np.ndarray | None = None) -> None:
        for _ in range(round(seconds / DT)):
            self.now += DT
            last = self.modes.reference
            self.modes.supervisor.on_pose(self.now, last.T_w_s if last else np.eye(4))
            if wrench is not None:
                self.modes.supervisor.on_wrench(self.now, wrench)
            self.refs.append(self.modes.tick(self.now, DT))

    def speed(self) -> float:
        return float(np.linalg.norm(self.refs[-1].V_s[3:]))


def _jumps(before, after) -> tuple[float, float]:
    dp = np.linalg.norm(after.T_w_s[:3, 3] - before.T_w_s[:3, 3])
    dv = np.linalg.norm(after.T_w_s[:3, :3] @ after.V_s[3:] - before.T_w_s[:3, :3] @ before.V_s[3:])
    return float(dp), float(dv)


def _assert_bumpless(run: Run, at: int) -> None:
    """Ticks at-1 -> at -> at+1 move like one tick of a mode within the limits."""
    for k in (at, at + 1):
        dp, dv = _jumps(run.refs[k - 1], run.refs[k])
        assert dp <= DP + 1e-9
        assert dv <= DV + 1e-9


def _plan(start: PlanningStart):
    outcome = plan_and_verify(
        [BalancedObject.box((0.15, 0.15, 0.5))], "robust", PlannerSettings(duration=3.0),
        start.q, GOAL, 200, start_rates=start.rates,
    )  # fmt: skip
    return outcome


def test_switches_are_bumpless_and_follow_the_plan() -> None:
    run = Run()
    assert run.modes.admittance()[0]
    run.ticks(1.0, PUSH)
    assert run.modes.mode == "admittance" and run.speed() > 0.2

    start = run.modes.planning_start()  # balancing from where the moving reference rests
    assert run.modes.mode == "hold" and not start.rates.any()
    outcome = _plan(start)
    assert outcome.certified
    assert np.allclose(outcome.plan.X[0, :12], np.concatenate([start.q, start.rates[:6]]))
    at = len(run.refs)
    run.ticks(DT)  # the reference decelerates while the planner works
    ok, message = run.modes.start_balancing(outcome.plan, start, outcome.certified)
    assert ok and "once the reference has decelerated to rest" in message, message
    run.ticks(1.0, PUSH)
    for k in range(at, len(run.refs) - 1):
        _assert_bumpless(run, k)
    assert run.modes.mode == "balancing"
    T_w_s, V_s = plan_reference(outcome.plan, 0.0, np.eye(4))
    rest = next(r for r in run.refs[at:] if not np.any(r.V_s))  # the switch's tick
    assert np.allclose(rest.T_w_s, T_w_s, atol=1e-9) and not V_s.any()

    at = len(run.refs)
    assert run.modes.admittance()[0]  # admittance from the plan's current state
    run.ticks(0.5, PUSH)
    _assert_bumpless(run, at)

    at = len(run.refs)
    assert run.modes.hold()[0]
    run.ticks(1.0, PUSH)
    _assert_bumpless(run, at)
    for before, after in zip(run.refs[at:-1], run.refs[at + 1 :], strict=True):
        assert _jumps(before, after)[1] <= DV + 1e-9  # decelerates within the limits
    assert run.speed() == 0.0 and run.modes.mode == "hold"


def _fake_plan(start: PlanningStart):
    """A one-node plan at the planning start (checks tray_state / plan_reference invert)."""
    from inertia_estimation_ros.core.planning.planner import TrayPlan

    X = np.concatenate([start.q, start.rates])[None].repeat(2, axis=0)
    return TrayPlan(np.array([0.0, 1.0]), X, np.zeros((1, 6)), np.zeros((2, 0)), "robust", 0, 0)


def test_tray_state_inverts_plan_reference_with_an_offset() -> None:
    T_e_s = sp.transform(sp.exp3([0.1, -0.2, 0.3]), [0.05, 0.0, -0.1])
    T_w_s = sp.transform(sp.exp3([0.3, 0.2, -0.5]), [1.0, 0.5, 0.9])
    V_s = np.array([0.1, -0.2, 0.3, 0.2, 0.1, -0.05])
    x = tray_state(T_w_s, V_s, T_e_s)
    start = PlanningStart(0.0, x[:6], np.concatenate([x[6:], np.zeros(6)]))
    T, V = plan_reference(_fake_plan(start), 0.0, T_e_s)
    assert np.allclose(T, T_w_s, atol=1e-12) and np.allclose(V, V_s, atol=1e-12)


def test_refusals_name_their_cause() -> None:
    run = Run()
    run.modes.supervisor.on_estimate(ModelSummary(False, reason="the estimate has mass_valid"))
    ok, message = run.modes.admittance()
    assert not ok and "mass_valid" in message and run.modes.mode == "hold"
    blind = ReferenceModes(AdmittanceSupervisor(), np.eye(4), DT)
    ok, message = blind.planning_start()
    assert not ok and "no reference and no payload pose" in message

    run.modes.supervisor.on_estimate(MODEL)
    assert run.modes.admittance()[0]
    run.ticks(0.5, PUSH)
    start = run.modes.planning_start()
    ok, message = run.modes.start_balancing(None, start, False, "plan not certified: lengthen")
    assert not ok and "no certified plan (plan not certified" in message
    plan = _fake_plan(start)
    assert run.modes.admittance()[0]  # the person takes over again while planning
    run.ticks(0.3, PUSH)
    ok, message = run.modes.start_balancing(plan, start, True)
    assert not ok and "moved while planning" in message and run.modes.mode == "admittance"


def test_a_plan_slower_than_the_deceleration_starts_where_the_reference_rests() -> None:
    """A multi-threaded executor ticks on while the planner works: the plan, from the state
    planning_start predicted, still starts exactly at the reference (here the ticks of 1 s
    of planning, the deceleration at rest after 0.3 s at most)."""
    run = Run()
    assert run.modes.admittance()[0]
    run.ticks(1.0, PUSH)
    assert run.speed() > 0.2
    start = run.modes.planning_start()
    at = len(run.refs)
    run.ticks(1.0, PUSH)  # planning: the person still pushes, the reference rests regardless
    assert run.speed() == 0.0 and run.modes.mode == "hold"
    plan = _fake_plan(start)
    assert np.allclose(plan_reference(plan, 0.0, np.eye(4))[0], run.refs[-1].T_w_s, atol=1e-9)
    ok, message = run.modes.start_balancing(plan, start, True)
    assert ok and run.modes.mode == "balancing", message
    run.ticks(0.2, PUSH)
    for k in range(at, len(run.refs) - 1):
        _assert_bumpless(run, k)


def test_an_estimate_gone_invalid_stops_the_reference_without_a_jump() -> None:
    """The safe stop of an invalid (or stale) estimate keeps the admittance's frame, the CoM
    of the model it started with: the reference {s} decelerates from where it is instead of
    jumping by the lever arm p_s_c (it jumped by 0.1 m here before)."""
    run = Run()
    assert run.modes.admittance()[0]
    run.ticks(0.5, PUSH)
    at = len(run.refs)
    run.modes.supervisor.on_estimate(ModelSummary(False, reason="no payload_estimate for 5 s"))
    run.ticks(1.0, PUSH)
    for k in range(at, len(run.refs) - 1):
        _assert_bumpless(run, k)
    assert run.speed() == 0.0 and run.modes.mode == "hold"
