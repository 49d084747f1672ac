"""The 6-D admittance (paper 002 eq. 40; issue 14 item 2): the notes' step-response table
(§4.6), the notes' RK4 (appendix A) as the small-angle oracle, SO(3) at 90 deg pitch, dead
band, low-pass, limits, walls, safe stop, gains from the estimate, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.aerial.payload_controller import PayloadReference
from inertia_estimation_ros.core.collaboration.admittance import (
    Admittance,
    AdmittanceError,
    AdmittanceGains,
    AdmittanceState,
)
from inertia_estimation_ros.core.spatial import log3

DT = 0.01
FREE = dict(
    max_linear_speed=10.0,
    max_angular_speed=10.0,
    max_linear_acceleration=100.0,
    max_angular_acceleration=100.0,
)


def notes_rk4(e, ed, w, M, D, K, dt):
    """Eq. 40 in R^n by RK4, as the notes' appendix A writes it (the oracle)."""

    def f(e, ed):
        return (ed, (w - D * ed - K * e) / M)

    k1 = f(e, ed)
    k2 = f(e + dt / 2 * k1[0], ed + dt / 2 * k1[1])
    k3 = f(e + dt / 2 * k2[0], ed + dt / 2 * k2[1])
    k4 = f(e + dt * k3[0], ed + dt * k3[1])
    return (
        e + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
        ed + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]),
    )


def _admittance(**gains: object) -> Admittance:
    return Admittance(AdmittanceGains(**{**FREE, **gains}), AdmittanceState(np.zeros(3), np.eye(3)))


def _run(adm: Admittance, force: np.ndarray, moment: np.ndarray, seconds: float) -> list:
    return [adm.step(force, moment, DT) for _ in range(round(seconds / DT))]


@pytest.mark.parametrize("force", [0.5, 1.0])
@pytest.mark.parametrize("damping", [(1.0, 2.0, 5.0), (10.0, 10.0, 10.0)])
def test_force_step_table(force: float, damping: tuple) -> None:
    """Notes §4.6, Figs. 6-7: M = 0.25, K = 0, the step F on each axis (D per axis): the
    velocity is (F / D)(1 - exp(-t D / M)), i.e. F / D at steady state with the time
    constant M / D (0.50 / 0.25 / 0.10 / 0.05 m/s for F = 0.5 N)."""
    D = np.array(damping)
    tau = 0.25 / D
    adm = _admittance(mass=0.25, damping_linear=D)
    states = _run(adm, np.full(3, force), np.zeros(3), 3 * tau.max())
    t = DT * np.arange(1, len(states) + 1)[:, None]
    analytic = force / D * (1 - np.exp(-t / tau))
    np.testing.assert_allclose([s.v for s in states], analytic, rtol=5e-4, atol=1e-12)
    e, ed = np.zeros(3), np.zeros(3)  # the notes' RK4 at dt = 0.01 s: the same numbers
    for s in states:
        e, ed = notes_rk4(e, ed, force, 0.25, D, 0.0, DT)
        np.testing.assert_allclose(s.v, ed, rtol=1e-12)
        np.testing.assert_allclose(s.p, e, rtol=1e-12)


@pytest.mark.parametrize(("damping", "rate"), [(0.05, 1.0), (0.25, 0.2), (1.25, 0.04), (2.5, 0.02)])
def test_yaw_moment_step_table(damping: float, rate: float) -> None:
    """Notes §4.6, Fig. 8: M_z = 0.05 N m, J = 0.1: the yaw rate (w / D)(1 - exp(-t D / J))
    (steady states 1.0 / 0.2 / 0.04 / 0.02 rad/s, time constants 2.0 / 0.4 / 0.08 / 0.04 s),
    and the yaw angle its integral, on SO(3)."""
    tau = 0.1 / damping
    adm = _admittance(inertia=0.1, damping_angular=damping)
    states = _run(adm, np.zeros(3), np.array([0, 0, 0.05]), max(3 * tau, 0.2))
    t = DT * np.arange(1, len(states) + 1)
    assert 0.05 / damping == pytest.approx(rate)
    np.testing.assert_allclose(
        [s.omega[2] for s in states], rate * (1 - np.exp(-t / tau)), rtol=2e-4, atol=1e-12
    )
    yaw = rate * (t[-1] - tau * (1 - np.exp(-t[-1] / tau)))
    expected = Rotation.from_euler("z", yaw).as_matrix()
    np.testing.assert_allclose(states[-1].R, expected, atol=1e-6)


def test_matches_the_notes_rk4_for_small_angles() -> None:
    """Obstacle mode (M 0.25, D 5, K 1.2) in translation: the notes' RK4 to machine
    precision; a small push and twist about all axes: the Euler-angle RK4 to second order."""
    M = np.r_[np.full(3, 0.25), np.full(3, 0.1)]
    D = np.r_[np.full(3, 5.0), np.full(3, 5.0)]
    K = np.r_[np.full(3, 1.2), np.full(3, 0.8)]
    adm = _admittance(
        mass=M[:3],
        inertia=M[3:],
        damping_linear=D[:3],
        damping_angular=D[3:],
        stiffness_linear=K[:3],
        stiffness_angular=K[3:],
    )
    w = np.array([0.7, -0.4, 0.3, 0.004, -0.003, 0.005])
    e, ed = np.zeros(6), np.zeros(6)
    for _ in range(300):
        e, ed = notes_rk4(e, ed, w, M, D, K, DT)
        s = adm.step(w[:3], w[3:], DT)
        np.testing.assert_allclose(s.p, e[:3], atol=1e-13)
        np.testing.assert_allclose(s.v, ed[:3], atol=1e-13)
    assert np.abs(e[3:]).max() < 0.01
    np.testing.assert_allclose(log3(s.R), e[3:], atol=1e-5)  # rotation vector ~ angles
    np.testing.assert_allclose(s.omega, ed[3:], atol=1e-5)


def test_rotation_is_exact_through_90_degrees_pitch() -> None:
    """Pitch to 90 deg (Euler ZYX singular), then a body yaw moment: R = R_y(90) R_z(psi),
    psi the analytic integral; R stays a rotation."""
    adm = _admittance(inertia=0.1, damping_angular=1.0)
    adm.reset(AdmittanceState(np.zeros(3), Rotation.from_euler("y", 90, degrees=True).as_matrix()))
    states = _run(adm, np.zeros(3), np.array([0, 0, 0.5]), 2.0)
    t, tau, rate = DT * len(states), 0.1, 0.5
    psi = rate * (t - tau * (1 - np.exp(-t / tau)))
    expected = Rotation.from_euler("YZ", [90, np.degrees(psi)], degrees=True).as_matrix()
    R = states[-1].R
    np.testing.assert_allclose(R, expected, atol=1e-6)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    # a pitch step through 90 deg against a rotational stiffness (static offset 2 rad): the
    # 1-D RK4 of the notes, exactly (a fixed axis)
    adm = _admittance(inertia=0.1, damping_angular=0.5, stiffness_angular=0.25)
    e, ed = np.zeros(1), np.zeros(1)
    for _ in range(300):
        e, ed = notes_rk4(e, ed, 0.5, 0.1, 0.5, 0.25, DT)
        s = adm.step(np.zeros(3), np.array([0, 0.5, 0]), DT)
        np.testing.assert_allclose(log3(s.R), [0, e[0], 0], atol=1e-9)
    assert e[0] > np.pi / 2


def test_dead_band_and_low_pass() -> None:
    """A 0.05 N bias in a 0.1 N dead band moves nothing (notes §3.3: no creep at bias/D);
    the low-pass reaches 1 - 1/e of a step after one time constant."""
    adm = _admittance(force_dead_band=0.1, moment_dead_band=0.01)
    states = _run(adm, np.array([0.05, -0.08, 0.09]), np.array([0.005, 0, -0.009]), 1.0)
    assert adm.at_rest and not np.any(states[-1].p)
    adm = _admittance(force_dead_band=0.1)
    adm.step(np.array([0.6, 0, 0]), np.zeros(3), DT)
    assert adm.filtered[0] == pytest.approx(0.5)
    adm = _admittance(cutoff_hz=2.0)
    tau = 1 / (2 * np.pi * 2.0)
    for _ in range(round(tau / DT * 100)):
        w = adm.condition(np.array([1.0, 0, 0]), np.zeros(3), DT / 100)
    assert w[0] == pytest.approx(1 - np.exp(-1), rel=1e-2)


def test_speed_and_acceleration_limits() -> None:
    adm = Admittance(
        AdmittanceGains(max_linear_speed=0.3, max_linear_acceleration=1.0, max_angular_speed=0.5),
        AdmittanceState(np.zeros(3), np.eye(3)),
    )
    states = _run(adm, np.array([30.0, 40.0, 0]), np.array([0, 0, 20.0]), 1.0)
    speeds = np.array([np.linalg.norm(s.v) for s in states])
    assert speeds.max() == pytest.approx(0.3)
    assert np.all(np.diff(speeds) <= 1.0 * DT + 1e-12)
    assert np.linalg.norm(states[-1].omega) == pytest.approx(0.5)
    np.testing.assert_allclose(states[-1].v[:2] / 0.3, [0.6, 0.8])  # direction kept


def test_virtual_wall_holds_the_payload_back() -> None:
    """Pushing toward x = 1 m: the wall's spring within its 0.1 m margin stops the payload at
    0.9 m + F / k_wall, short of the wall."""
    adm = _admittance(wall_upper=[1.0, np.inf, np.inf], wall_margin=0.1, wall_stiffness=200.0)
    adm.reset(AdmittanceState(np.array([0.7, 0, 0]), np.eye(3)))
    states = _run(adm, np.array([2.0, 0, 0]), np.zeros(3), 3.0)
    x = np.array([s.p[0] for s in states])
    assert x[-1] == pytest.approx(0.9 + 2.0 / 200.0, abs=1e-6)
    assert x.max() < 1.0


def test_safe_stop_decelerates_within_the_limit_and_holds() -> None:
    adm = _admittance(max_linear_acceleration=0.5, max_angular_acceleration=1.0)
    states = _run(adm, np.array([5.0, 0, 0]), np.array([0, 0, 1.0]), 1.0)
    v0 = states[-1].v.copy()
    adm.stop()
    stop = _run(adm, np.array([5.0, 0, 0]), np.array([0, 0, 1.0]), 1.5)
    speeds = np.array([np.linalg.norm(s.v) for s in [states[-1], *stop]])
    assert np.all(-np.diff(speeds) <= 0.5 * DT + 1e-12)
    assert adm.at_rest
    steps = int(np.argmax(speeds == 0))
    assert steps * DT == pytest.approx(np.linalg.norm(v0) / 0.5, abs=DT)
    held = stop[-1].p.copy()
    _run(adm, np.array([5.0, 0, 0]), np.zeros(3), 0.2)
    np.testing.assert_array_equal(adm.state.p, held)
    adm.reset(adm.state)  # bumpless: resumes from the held reference
    assert not adm.stopping and np.array_equal(adm.state.p, held)


def test_gains_from_the_estimate_keep_the_shape_of_the_inertia() -> None:
    I_c = np.array([[0.5, 0.1, 0.0], [0.1, 0.8, 0.05], [0.0, 0.05, 1.2]])
    gains = AdmittanceGains.from_estimate(10.0, I_c, fraction=0.2, time_constant=0.5)
    np.testing.assert_allclose(gains.mass, 2.0 * np.eye(3))
    np.testing.assert_allclose(gains.inertia, 0.2 * I_c, rtol=1e-5)
    np.testing.assert_allclose(gains.damping_linear, 4.0 * np.eye(3))
    assert isinstance(
        Admittance(gains, AdmittanceState(np.zeros(3), np.eye(3))).state.payload_reference(),
        PayloadReference,
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(mass=-1.0), "mass has eigenvalues"),
        (dict(damping_linear=[1.0, -2.0, 1.0]), "damping_linear has eigenvalues"),
        (dict(inertia=np.ones((3, 3))), "inertia has eigenvalues"),
        (dict(max_linear_speed=0.0), r"max_linear_speed = 0.0 is outside its valid range \(0"),
        (dict(cutoff_hz=float("nan")), "cutoff_hz"),
        (dict(wall_lower=[0, 0, 0], wall_upper=[1, -1, 1]), "lower bound"),
    ],
)
def test_absurd_parameters_are_refused_with_the_valid_range(changes: dict, message: str) -> None:
    with pytest.raises(AdmittanceError, match=message):
        AdmittanceGains(**changes)


def test_refusals_of_estimate_and_step() -> None:
    with pytest.raises(AdmittanceError, match="mass"):
        AdmittanceGains.from_estimate(0.0, np.eye(3))
    with pytest.raises(AdmittanceError, match="dt"):
        _admittance().step(np.zeros(3), np.zeros(3), 0.0)
