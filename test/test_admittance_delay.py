"""The admittance with a late human wrench (issue 14): the closed yaw loop of
test_collaboration_loop.py, analytic. A person's arm (a torsion spring of 60 N m/rad and a
damper of 16 N m s/rad toward a target yaw: the simulated person's 30 N m/rad torsion plus
its 150 N/m on the 0.45 m handle) holds the payload, which follows the admittance's
reference through the robots (a 30 ms lag); the robots' wrench filter (5 Hz) and a transport
delay of 0-150 ms (a loaded computer, a slow network) lie between the arm and the
admittance. The admittance is the planner's for that payload: half the estimated yaw
inertia (1.58 kg m^2), time constant 0.5 s, the node's limits and low-pass.

Without the passivity controller the loop swings about the target at the speed limit from
100 ms on (the reference behaviour); with it, it converges with a bounded overshoot, and
without delay it does not act at all (the same numbers bit for bit)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inertia_estimation_ros.core.collaboration.admittance import (
    Admittance,
    AdmittanceGains,
    AdmittanceState,
)
from inertia_estimation_ros.core.collaboration.supervisor import AdmittanceSupervisor, ModelSummary

DT, SECONDS, TARGET = 0.01, 10.0, np.deg2rad(10.0)
ARM = (60.0, 16.0)  # the person's yaw stiffness [N m/rad] and damping [N m s/rad]
ROBOT_LAG, SENSOR_CUTOFF = 0.03, 5.0  # [s] the payload behind the reference; [Hz]
LOOP_GAINS = dict(
    mass=16.2, inertia=1.58, damping_linear=32.4, damping_angular=1.58 / 0.5,
    max_linear_speed=0.3, max_angular_speed=0.5, max_linear_acceleration=1.0,
    max_angular_acceleration=2.0, force_dead_band=2.0, moment_dead_band=0.0, cutoff_hz=5.0,
)  # fmt: skip


@dataclass
class Run:
    yaw: np.ndarray  # [rad] the payload's, per step
    damping: np.ndarray  # the stabilizer's extra damping (x D), per step
    lowest_energy: float  # [J] the observer's lowest energy (-: given back beyond received)
    dissipated: float  # [J] by the stabilizer

    @property
    def swing(self) -> float:
        """Peak-to-peak yaw over the last 3 s [rad]."""
        tail = self.yaw[-int(3.0 / DT) :]
        return float(tail.max() - tail.min())


def target(t: float) -> float:
    """The person's target yaw: 10 deg along a 3-s smoothstep (the loop test's path)."""
    s = min(max(t / 3.0, 0.0), 1.0)
    return TARGET * s * s * (3 - 2 * s)


class Arm:
    """The payload's yaw, 30 ms behind the reference (the robots), and the person's moment
    on it as the robots' 5 Hz wrench filter passes it on."""

    def __init__(self) -> None:
        self.yaw = self.previous = self.sensed = 0.0
        self.smoothing = 1.0 - np.exp(-2 * np.pi * SENSOR_CUTOFF * DT)

    def moment(self, t: float, reference: float) -> float:
        self.yaw += DT / ROBOT_LAG * (reference - self.yaw)
        moment = ARM[0] * (target(t) - self.yaw) - ARM[1] * (self.yaw - self.previous) / DT
        self.previous = self.yaw
        self.sensed += self.smoothing * (moment - self.sensed)
        return self.sensed


def run_loop(delay: float, max_damping: float, **gains: float) -> Run:
    """The yaw loop (module docstring) for ``SECONDS`` with the wrench ``delay`` [s]."""
    adm = Admittance(
        AdmittanceGains(**{**LOOP_GAINS, "passivity_max_damping": max_damping, **gains}),
        AdmittanceState(np.zeros(3), np.eye(3)),
    )
    late, arm, sent = int(round(delay / DT)), Arm(), []
    log, damping, lowest = [], [], 0.0
    for k in range(int(SECONDS / DT)):
        reference = np.arctan2(adm.state.R[1, 0], adm.state.R[0, 0])
        sent.append(arm.moment(k * DT, reference))
        arrived = sent[k - late] if k >= late else 0.0
        adm.step(np.zeros(3), np.array([0.0, 0.0, arrived]), DT, age=delay)
        log.append(arm.yaw)
        observer = adm.passivity
        damping.append(observer.damping if observer else 0.0)
        lowest = min(lowest, observer.energy if observer else 0.0)
    dissipated = adm.passivity.dissipated if adm.passivity else 0.0
    return Run(np.array(log), np.array(damping), lowest, dissipated)


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.15])
def test_a_late_wrench_makes_todays_admittance_swing_and_the_stabilized_one_converge(
    delay: float,
) -> None:
    plain = run_loop(delay, max_damping=0.0)
    stable = run_loop(delay, max_damping=20.0)
    print(
        f"delay {delay * 1e3:.0f} ms: without the stabilizer swing "
        f"{np.rad2deg(plain.swing):.2f} deg, final {np.rad2deg(plain.yaw[-1]):.2f}; with it "
        f"swing {np.rad2deg(stable.swing):.3f} deg, overshoot "
        f"{np.rad2deg(stable.yaw.max() - TARGET):.3f} deg, final "
        f"{np.rad2deg(stable.yaw[-1]):.3f} deg, dissipated {stable.dissipated:.3f} J"
    )
    # The reference behaviour: from 100 ms on a limit cycle of several degrees at the speed
    # limit (the loop test's "swings about the target"), a settled loop below.
    if delay >= 0.1:
        assert plain.swing > np.deg2rad(4.0)
        assert np.abs(np.diff(plain.yaw[-300:])).max() / DT > 0.3  # [rad/s]; the limit: 0.5
    else:
        assert plain.swing < np.deg2rad(0.05)
    # Stabilized: converged on the target, overshoot bounded, no residual swing.
    assert stable.swing < np.deg2rad(0.05)
    assert abs(stable.yaw[-1] - TARGET) < np.deg2rad(0.1)
    assert stable.yaw.max() - TARGET < np.deg2rad(0.5)
    if delay == 0.0:  # it never acts: the same numbers
        np.testing.assert_array_equal(stable.yaw, plain.yaw)
        assert not stable.damping.any() and stable.dissipated == 0.0


@pytest.mark.parametrize("delay", [0.1, 0.15])
def test_the_observer_sees_the_swing_as_energy_the_delay_made(delay: float) -> None:
    """The passivity observer with a negligible controller (the swing runs free): the
    admittance gives back joules it never received; with the controller, a few hundredths."""
    watched = run_loop(delay, max_damping=1e-9)
    assert watched.swing > np.deg2rad(4.0)
    assert watched.lowest_energy < -1.0
    assert run_loop(delay, max_damping=20.0).lowest_energy > -0.1


wrenches = st.lists(st.lists(st.floats(-50, 50), min_size=6, max_size=6), min_size=1, max_size=60)


@settings(max_examples=40)
@given(wrenches)
def test_without_delay_the_observer_stays_at_zero_and_never_acts(sequence: list) -> None:
    """Any wrench sequence with age 0: the controller never acts, the reference is bit for
    bit the one without the observer (the §4.6 table holds), and once the human's side of
    the last step is booked (a step without wrench) the observed energy is exactly 0."""
    gains = dict(LOOP_GAINS, moment_dead_band=0.3, stiffness_angular=2.0, cutoff_hz=0.0)
    start = AdmittanceState(np.zeros(3), np.eye(3), np.array([0.1, 0, 0]), np.array([0, 0, 0.2]))
    on = Admittance(AdmittanceGains(**gains), start)
    off = Admittance(AdmittanceGains(**gains, passivity_max_damping=0.0), start)
    for w in [*sequence, [0.0] * 6]:
        a = on.step(np.array(w[:3]), np.array(w[3:]), DT, age=0.0)
        b = off.step(np.array(w[:3]), np.array(w[3:]), DT)
        assert on.passivity.damping == 0.0
        for x, y in zip((a.p, a.R, a.v, a.omega), (b.p, b.R, b.v, b.omega), strict=True):
            np.testing.assert_array_equal(x, y)
    assert on.passivity.energy == 0.0


@settings(max_examples=40)
@given(wrenches, st.lists(st.floats(0.0, 0.2), min_size=60, max_size=60))
def test_the_observed_energy_is_the_work_balance_of_the_port(sequence: list, ages: list) -> None:
    """The observer's energy against an independent balance from the logged reference: the
    human's work (each wrench, held from its stamp to the next one's, along the reference's
    path then: linear displacement and the integral of the body angular velocity) minus the
    admittance's (each step's wrench along that step's path) plus what the stabilizer
    dissipated (no cap)."""
    adm = Admittance(
        AdmittanceGains(**LOOP_GAINS, passivity_energy_cap=1e3),
        AdmittanceState(np.zeros(3), np.eye(3)),
    )
    times, paths, steps = [0.0], [np.zeros(6)], []  # steps: (human time, conditioned wrench)
    human = -np.inf
    for k, (w, age) in enumerate(zip(sequence, ages, strict=False)):
        before = adm.state
        adm.step(np.array(w[:3]), np.array(w[3:]), DT, age=age)
        after = adm.state
        human = max(human, k * DT - age)
        steps.append((human, adm.filtered.copy()))
        times.append((k + 1) * DT)
        omega = 0.5 * (before.omega + after.omega)
        paths.append(paths[-1] + np.r_[after.p - before.p, DT * omega])
    path = np.array(paths)

    def P(t: float) -> np.ndarray:
        return np.array([np.interp(t, times, path[:, i]) for i in range(6)])

    # the last wrench's human work is booked at the next step: all but the last
    marks = [h for h, _ in steps]
    human_work = sum(w @ (P(marks[i + 1]) - P(marks[i])) for i, (_, w) in enumerate(steps[:-1]))
    admittance_work = sum(w @ (path[i + 1] - path[i]) for i, (_, w) in enumerate(steps))
    expected = human_work - admittance_work + adm.passivity.dissipated
    assert adm.passivity.energy == pytest.approx(expected, abs=1e-9 * (1 + abs(human_work)))


def test_the_supervisor_passes_the_wrench_age_and_reports_the_stabilizer() -> None:
    """The supervisor (the planner's gains of config/sim_collaborate.yaml) steps with now -
    the wrench's stamp: in the yaw loop a wrench 150 ms late makes the stabilizer act, the
    loop converges, and the supervisor says when it started acting and when it was idle
    again (events the node logs, ``stabilizer`` its diagnostic values)."""
    sup = AdmittanceSupervisor(
        input_timeout=1.0, fraction=0.5, time_constant=0.5, max_angular_speed=0.5,
        max_angular_acceleration=2.0, moment_dead_band=0.5, cutoff_hz=5.0,
    )  # fmt: skip
    sup.on_estimate(ModelSummary(True, 32.4, np.zeros(3), np.diag([1.1, 2.0, 3.16])))
    sup.on_pose(0.0, np.eye(4))
    assert sup.start()[0]
    arm, sent, late, reference, ages = Arm(), [], 15, 0.0, set()
    for k in range(1, int(SECONDS / DT)):
        now = k * DT
        sent.append((now, arm.moment(now, reference)))
        c, s = np.cos(arm.yaw), np.sin(arm.yaw)
        sup.on_pose(now, np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]]))
        if k > late:
            stamp, m = sent[k - 1 - late]
            sup.on_wrench(stamp, np.array([0, 0, m, 0, 0, 0]))
        R = sup.tick(now, DT).T_w_s[:3, :3]
        reference = np.arctan2(R[1, 0], R[0, 0])
        ages.add(round(sup.admittance.passivity.age, 6))
    assert ages == {0.0, 0.15}  # before the first wrench: none, age 0
    assert abs(arm.yaw - TARGET) < np.deg2rad(0.6)  # the moment dead band: 0.5 N m / 60 N m/rad
    events = [e for e in sup.events if "stabilizer" in e]
    print(events)
    assert len(events) == 2 and "acting" in events[0] and "150 ms late" in events[0]
    assert "idle again" in events[1] and not sup.stabilizer.acting
    assert sup.stabilizer.dissipated > 0 and sup.stabilizer.values()["stabilizer"] == "idle"
