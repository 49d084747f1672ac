"""core.signals: filters against scipy, derivatives against analytic signals, body twists."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import signal
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import signals
from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.sim import analytic as an

RATE = 100.0


def test_causal_lowpass_is_sosfilt_one_sample_at_a_time():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4, 3)) + 5.0
    lowpass = signals.CausalLowpass(RATE, 5.0)
    streamed = np.stack([lowpass(sample) for sample in x])
    sos = signal.butter(4, 5.0, fs=RATE, output="sos")
    zi = signal.sosfilt_zi(sos)[:, :, None, None] * x[0]
    np.testing.assert_allclose(streamed, signal.sosfilt(sos, x, axis=0, zi=zi)[0], atol=1e-12)
    np.testing.assert_allclose(streamed, signals.causal_lowpass(x, RATE, 5.0), atol=1e-12)


DESIGNS = [
    (order, cutoff, rate)
    for order in range(1, 9)
    for cutoff, rate in ((2.0, 100.0), (5.0, 100.0), (45.0, 100.0), (2.0, 1000.0), (10.0, 1000.0))
]


@pytest.mark.parametrize(("order", "cutoff", "rate"), DESIGNS)
def test_the_butterworth_design_is_scipys_bit_for_bit(order, cutoff, rate):
    sos = signals.butterworth_lowpass(cutoff, rate, order)
    expected = signal.butter(order, cutoff, fs=rate, output="sos")
    assert sos.tobytes() == expected.tobytes()
    assert signals.steady_state(sos).tobytes() == signal.sosfilt_zi(expected).tobytes()


def _relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize(("order", "cutoff", "rate"), DESIGNS)
def test_blocks_and_whole_signals_filter_as_scipy_does(order, cutoff, rate):
    """To 1e-12 of the signal's scale (the same recursion as products of its maps), through
    blocks of random lengths (longer than a chunk too) and single samples mixed. Orders above
    4 at 2 Hz / 1 kHz: 5e-12 (poles within 1e-2 of the unit circle: there scipy's own
    recursion is 1e-12 off a long-double one, the maps up to 2e-12)."""
    tolerance = 1e-12 if order <= 4 or cutoff / rate > 0.005 else 5e-12
    rng = np.random.default_rng(order)
    x = rng.normal(size=(700, 3, 2)) + 5.0 + np.sin(np.arange(700) / 40.0)[:, None, None]
    sos = signal.butter(order, cutoff, fs=rate, output="sos")
    zi = signal.sosfilt_zi(sos)[:, :, None, None] * x[0]
    expected, final = signal.sosfilt(sos, x, axis=0, zi=zi)
    y, z = signals.filter_sections(sos, x, zi)
    assert _relative_error(y, expected) < tolerance and _relative_error(z, final) < tolerance
    assert _relative_error(signals.causal_lowpass(x, rate, cutoff, order), expected) < tolerance
    lowpass = signals.CausalLowpass(rate, cutoff, order)
    cuts = np.sort(rng.choice(np.arange(1, len(x)), 30, replace=False))
    parts = [lowpass.block(x[:0])]  # an empty block: nothing
    for part in np.split(x, cuts):
        parts.append(lowpass(part[0])[None] if len(part) == 1 else lowpass.block(part))
    streamed = np.concatenate(parts)
    assert _relative_error(streamed, expected) < tolerance
    if len(x) > 3 * (2 * len(sos) + 1):
        zero_phase = signals.zero_phase_lowpass(x, rate, cutoff, order)
        assert _relative_error(zero_phase, signal.sosfiltfilt(sos, x, axis=0)) < tolerance


def test_zero_phase_lowpass_refuses_a_signal_shorter_than_its_padding():
    with pytest.raises(ValueError, match="too few"):
        signals.zero_phase_lowpass(np.zeros(15), RATE, 5.0)
    assert signals.zero_phase_lowpass(np.zeros(16), RATE, 5.0).shape == (16,)


@pytest.mark.parametrize(
    ("window", "polyorder"), [(3, 1), (5, 2), (7, 3), (11, 3), (11, 5), (21, 4)]
)
def test_savgol_derivative_is_scipys(window, polyorder):
    x = np.random.default_rng(window).normal(size=(60, 4, 3)) + 2.0
    expected = signal.savgol_filter(x, window, polyorder, deriv=1, delta=0.01, axis=0)
    got = signals.derivative(x, 0.01, "savgol", window, polyorder)
    assert _relative_error(got, expected) < 1e-12
    with pytest.raises(ValueError, match="odd window"):
        signals.derivative(x, 0.01, "savgol", window + 1, polyorder)


def test_causal_lowpass_passes_a_constant_from_the_first_sample():
    lowpass = signals.CausalLowpass(RATE, 2.0)
    assert all(np.allclose(lowpass(np.array([3.0, -1.0])), [3.0, -1.0]) for _ in range(50))


def test_zero_phase_lowpass_keeps_phase_and_cuts_noise():
    t = np.arange(0, 20, 1 / RATE)
    slow = np.sin(2 * np.pi * 0.5 * t)
    fast = 0.3 * np.sin(2 * np.pi * 30 * t)
    filtered = signals.zero_phase_lowpass(slow + fast, RATE, 5.0)
    np.testing.assert_allclose(filtered[200:-200], slow[200:-200], atol=2e-3)


def test_filter_rejects_a_cutoff_beyond_nyquist():
    with pytest.raises(ValueError, match="Nyquist"):
        signals.butterworth_lowpass(60.0, RATE)


def test_derivatives_of_a_sine_and_a_cubic():
    t = np.arange(0, 4, 1 / RATE)
    x = np.sin(2 * np.pi * t)[:, None]
    dx = 2 * np.pi * np.cos(2 * np.pi * t)[:, None]
    central = signals.derivative(x, 1 / RATE)
    assert np.abs(central - dx)[1:-1].max() < (2 * np.pi / RATE) ** 2 / 6 * 2 * np.pi * 1.01
    cubic = (t**3 - 2 * t)[:, None]
    savgol = signals.derivative(cubic, 1 / RATE, "savgol", window=7, polyorder=3)
    np.testing.assert_allclose(savgol, (3 * t**2 - 2)[:, None], atol=1e-9)
    with pytest.raises(ValueError, match="derivative method"):
        signals.derivative(x, 1 / RATE, "spline")


def test_uniform_step_refuses_irregular_stamps():
    assert signals.uniform_step(np.arange(10) * 0.01) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="not uniform"):
        signals.uniform_step(np.array([0.0, 0.01, 0.03, 0.04]))


def test_continuous_quaternions_remove_sign_flips():
    R = Rotation.from_rotvec(np.linspace(0, 3.0, 200)[:, None] * [0, 0, 1]).as_matrix()
    q = signals.continuous_quaternions(R)
    assert np.all(np.einsum("ki,ki->k", q[1:], q[:-1]) > 0)
    np.testing.assert_allclose(Rotation.from_quat(q).as_matrix(), R, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_body_twist_of_a_constant_twist_motion(xi):
    """T_k = T_0 exp(k dt [V]) has the constant body twist V (Modern Robotics Eq. 3.70)."""
    V = np.array(xi)
    dt = 0.01
    T0 = sp.exp6([0.3, -0.2, 0.1, 1.0, 2.0, 3.0])
    T = np.stack([T0 @ sp.exp6(k * dt * V) for k in range(50)])
    twists = signals.body_twists(T, dt)
    # central differences on the group: error O((|omega| dt)^2)
    assert np.abs(twists[1:-1] - V).max() < 1e-4 * (1 + np.abs(V).max()) ** 3


def test_body_twists_match_the_generator_and_savgol_is_more_accurate():
    motion = an.paper_kinematics_motion(np.random.default_rng(1))
    t = np.arange(0, 6, 1 / RATE)
    T, V, dV = motion.evaluate(t)
    central = signals.body_twists(T, 1 / RATE)[10:-10]
    savgol = signals.body_twists(T, 1 / RATE, "savgol")[10:-10]
    assert np.abs(central - V[10:-10]).max() < 5e-3
    assert np.abs(savgol - V[10:-10]).max() < 0.3 * np.abs(central - V[10:-10]).max()


def test_series_from_poses_on_exact_data():
    team, payload = an.paper_team(), an.paper_payload()
    motion = an.paper_inertia_motion(np.random.default_rng(2))
    t = np.arange(0, 12, 1 / RATE)
    exact = an.simulate(team, payload, motion, t).exact["robot_2"]
    series = signals.series_from_poses(
        "robot_2", t, exact.T_i0_i, exact.F_i, exact.g_i, 10.0, method="savgol", has_torque=False
    )
    inner = slice(200, -200)
    np.testing.assert_allclose(series.V_i[inner], exact.V_i[inner], atol=2e-4)
    np.testing.assert_allclose(series.dV_i[inner], exact.dV_i[inner], atol=2e-2)
    np.testing.assert_allclose(series.F_i[inner, 3:], exact.F_i[inner, 3:], atol=1e-2)
    assert np.all(series.F_i[:, :3] == 0.0)


def test_lowpass_poses_leaves_a_still_pose_alone():
    T = np.tile(sp.exp6([0.5, -0.4, 2.5, 0.1, 0.2, 0.3]), (100, 1, 1))
    for zero_phase in (True, False):
        np.testing.assert_allclose(
            signals.lowpass_poses(T, RATE, 3.0, 4, zero_phase), T, atol=1e-12
        )
