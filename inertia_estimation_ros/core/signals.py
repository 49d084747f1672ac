"""Signal conditioning for grasp data: low-pass filters, numerical derivatives, body twists.

Paper 000 (Sec. IV-B) filters encoder and torque data with a 4th-order Butterworth
low-pass, builds T_i0_i by forward kinematics and gets the body twist
[V_i] = T_i0_i^-1 dT_i0_i/dt (Eq. 35) and its derivative by central differences.
This module provides those steps for any sampled pose and wrench sequence:

* ``zero_phase_lowpass`` (offline, ``scipy.signal.sosfiltfilt``) and
  ``CausalLowpass`` (online, one sample at a time, constant memory);
* ``derivative``: central differences or Savitzky-Golay (``scipy.signal.savgol_filter``);
* ``lowpass_poses`` filters positions and sign-continuous quaternions, then re-normalizes;
* ``body_twists``: T^-1 dT/dt projected onto se(3) (rotation block made skew);
* ``series_from_poses``: the whole paper pipeline, raw poses and wrenches to a GraspSeries.

All arrays are time-major: sample k is ``x[k]``. Sampling must be uniform.
"""

from __future__ import annotations

import numpy as np
from scipy import signal
from scipy.spatial.transform import Rotation

from .samples import GraspSeries
from .spatial import unskew

DERIVATIVE_METHODS = ("central", "savgol")

try:  # ``sosfilt``'s kernel: its argument checks cost ~0.1 ms a call, more than a block's filtering
    from scipy.signal._sosfilt import _sosfilt
except ImportError:  # pragma: no cover (a scipy without it: sosfilt itself)
    _sosfilt = None


def _kernel_filter(sos: np.ndarray, x: np.ndarray, zi: np.ndarray) -> np.ndarray | None:
    """``signal.sosfilt(sos, x, axis=0, zi=zi)`` through its kernel (x (Q, M), zi (sections, 2,
    M), zi updated in place): the same arithmetic; None if the kernel is not there."""
    if _sosfilt is None:
        return None
    y = np.ascontiguousarray(x.T)  # (M, Q): the kernel filters rows, in place
    state = np.ascontiguousarray(zi.transpose(2, 0, 1))  # (M, sections, 2)
    _sosfilt(sos, y, state)
    zi[...] = state.transpose(1, 2, 0)
    return y.T


def _kernel_agrees() -> bool:
    """Whether the kernel gives sosfilt's numbers (a scipy that changed it: sosfilt itself)."""
    sos = signal.butter(4, 2.0, fs=100.0, output="sos")
    x = np.random.default_rng(0).normal(size=(7, 3))
    zi = np.ones((len(sos), 2, 3))
    try:
        y = _kernel_filter(sos, x, mine := zi.copy())
    except (TypeError, ValueError):
        return False
    expected, final = signal.sosfilt(sos, x, axis=0, zi=zi)
    return y is not None and np.array_equal(y, expected) and np.array_equal(mine, final)


_KERNEL = _kernel_agrees()


def uniform_step(t: np.ndarray, rtol: float = 1e-3) -> float:
    """The sampling step of time stamps t; ValueError if they are not uniform and increasing."""
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or len(t) < 2:
        raise ValueError("need at least two time stamps in a 1-D array")
    steps = np.diff(t)
    dt = float(np.median(steps))
    if dt <= 0 or np.any(np.abs(steps - dt) > rtol * dt):
        raise ValueError(
            f"time stamps are not uniform (steps {steps.min():.6g}..{steps.max():.6g} s): "
            "resample them first (core.cooperative.clock aligns and resamples)"
        )
    return dt


def butterworth_lowpass(cutoff_hz: float, rate_hz: float, order: int = 4) -> np.ndarray:
    """Second-order sections of a digital Butterworth low-pass (paper 000, Sec. IV-B)."""
    if not 0.0 < cutoff_hz < 0.5 * rate_hz:
        raise ValueError(
            f"cutoff {cutoff_hz} Hz must be between 0 and the Nyquist rate {0.5 * rate_hz} Hz"
        )
    return signal.butter(order, cutoff_hz, btype="low", fs=rate_hz, output="sos")


def zero_phase_lowpass(
    x: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4
) -> np.ndarray:
    """Forward-backward Butterworth along axis 0: no phase lag, squared magnitude response."""
    x = np.asarray(x, dtype=float)
    sos = butterworth_lowpass(cutoff_hz, rate_hz, order)
    return signal.sosfiltfilt(sos, x, axis=0)


def causal_lowpass(x: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """The batch equivalent of ``CausalLowpass``: causal filtering from a steady start at x[0]."""
    x = np.asarray(x, dtype=float)
    sos = butterworth_lowpass(cutoff_hz, rate_hz, order)
    zi = signal.sosfilt_zi(sos)[(...,) + (None,) * (x.ndim - 1)] * x[0]
    return signal.sosfilt(sos, x, axis=0, zi=zi)[0]


class CausalLowpass:
    """Streaming Butterworth low-pass of a fixed-shape signal: one sample in, one out.

    The same recursion as ``scipy.signal.sosfilt`` (transposed direct form II per
    second-order section), written out so that one sample costs microseconds. The state
    starts at steady state on the first sample (``sosfilt_zi``), so a constant input
    passes unchanged from the start. Memory is constant (2 states per section).
    """

    def __init__(self, rate_hz: float, cutoff_hz: float, order: int = 4) -> None:
        self._sos = butterworth_lowpass(cutoff_hz, rate_hz, order)
        self._zi_unit = signal.sosfilt_zi(self._sos)
        self._zi: np.ndarray | None = None

    def reset(self) -> None:
        self._zi = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = np.asarray(x, dtype=float)
        if self._zi is None:
            self._zi = self._zi_unit[(...,) + (None,) * y.ndim] * y
        z = self._zi
        for k, (b0, b1, b2, _, a1, a2) in enumerate(self._sos):
            u = y
            y = b0 * u + z[k, 0]
            z[k, 0] = b1 * u - a1 * y + z[k, 1]
            z[k, 1] = b2 * u - a2 * y
        return y

    def block(self, x: np.ndarray) -> np.ndarray:
        """Consecutive samples x (Q, ...) at once, oldest first: the same as Q calls."""
        x = np.asarray(x, dtype=float)
        if len(x) <= 1:  # sosfilt's set-up costs more than one step
            return x if len(x) == 0 else self(x[0])[None]
        if self._zi is None:
            self._zi = self._zi_unit[(...,) + (None,) * (x.ndim - 1)] * x[0]
        if _KERNEL:
            zi = self._zi.reshape(len(self._sos), 2, -1)
            y = _kernel_filter(self._sos, x.reshape(len(x), -1), zi)
            self._zi = zi.reshape(self._zi.shape)
            return y.reshape(x.shape)
        y, self._zi = signal.sosfilt(self._sos, x, axis=0, zi=self._zi)
        return y


def derivative(
    x: np.ndarray, dt: float, method: str = "central", window: int = 11, polyorder: int = 3
) -> np.ndarray:
    """dx/dt along axis 0: central differences (one-sided at the ends) or Savitzky-Golay."""
    x = np.asarray(x, dtype=float)
    if method == "central":
        return np.gradient(x, dt, axis=0)
    if method == "savgol":
        return signal.savgol_filter(x, window, polyorder, deriv=1, delta=dt, axis=0)
    raise ValueError(f"derivative method {method!r} is not one of {DERIVATIVE_METHODS}")


def three_point_derivative(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dt at t[1:-1] of non-uniformly sampled x (axis 0): the second-order central formula.

    The interior formula of ``numpy.gradient``, written out so that a sliding window of three
    samples (online) gives bit-identical numbers to the whole series (offline); numpy switches
    to another formula when a window happens to be uniform.
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    shape = (-1,) + (1,) * (x.ndim - 1)
    h0 = (t[1:-1] - t[:-2]).reshape(shape)
    h1 = (t[2:] - t[1:-1]).reshape(shape)
    return (
        -h1 / (h0 * (h0 + h1)) * x[:-2]
        + (h1 - h0) / (h0 * h1) * x[1:-1]
        + h0 / (h1 * (h0 + h1)) * x[2:]
    )


def continuous_quaternions(R: np.ndarray) -> np.ndarray:
    """Quaternions (x, y, z, w) of rotations R (Q, 3, 3), signs chosen so that q[k].q[k-1] > 0."""
    q = Rotation.from_matrix(R).as_quat()
    flips = np.cumprod(np.where(np.einsum("ki,ki->k", q[1:], q[:-1]) < 0, -1.0, 1.0))
    q[1:] *= flips[:, None]
    return q


def lowpass_poses(
    T: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4, zero_phase: bool = True
) -> np.ndarray:
    """Low-pass a pose sequence (Q, 4, 4): positions and continuous quaternions, re-normalized."""
    T = np.asarray(T, dtype=float)
    lowpass = zero_phase_lowpass if zero_phase else causal_lowpass
    q = lowpass(continuous_quaternions(T[:, :3, :3]), rate_hz, cutoff_hz, order)
    out = np.tile(np.eye(4), (len(T), 1, 1))
    out[:, :3, :3] = Rotation.from_quat(q).as_matrix()  # from_quat normalizes
    out[:, :3, 3] = lowpass(T[:, :3, 3], rate_hz, cutoff_hz, order)
    return out


def body_twists(
    T: np.ndarray, dt: float, method: str = "central", window: int = 11, polyorder: int = 3
) -> np.ndarray:
    """Body twists V = (omega, v) of poses T (Q, 4, 4): [V] = T^-1 dT/dt (paper 000, Eq. 35).

    dT/dt comes from ``derivative``; the rotation block of T^-1 dT/dt is projected
    onto so(3) (its skew-symmetric part), which removes the first-order error of
    differencing on the curved group.
    """
    T = np.asarray(T, dtype=float)
    dT = derivative(T, dt, method, window, polyorder)
    Rt = np.swapaxes(T[:, :3, :3], 1, 2)
    omega = unskew(Rt @ dT[:, :3, :3])
    v = np.einsum("kij,kj->ki", Rt, dT[:, :3, 3])
    return np.concatenate([omega, v], axis=1)


def series_from_poses(
    robot_id: str,
    t: np.ndarray,
    T_i0_i: np.ndarray,
    F_i: np.ndarray,
    g_i: np.ndarray | None = None,
    cutoff_hz: float | None = 5.0,
    order: int = 4,
    method: str = "central",
    zero_phase: bool = True,
    has_torque: bool = True,
) -> GraspSeries:
    """Paper 000's preprocessing (Sec. IV-B): filter poses and wrenches alike, differentiate twice.

    Poses and wrenches get the same Butterworth low-pass (cutoff_hz None: no
    filter) so they keep the same phase; V_i = T^-1 dT/dt (Eq. 35) and dV_i = dV_i/dt.
    Non-finite wrench components (e.g. the moment of a passive gimbal) stay NaN.
    """
    dt = uniform_step(t)
    T = np.asarray(T_i0_i, dtype=float)
    F = np.asarray(F_i, dtype=float)
    if cutoff_hz is not None:
        rate = 1.0 / dt
        lowpass = zero_phase_lowpass if zero_phase else causal_lowpass
        T = lowpass_poses(T, rate, cutoff_hz, order, zero_phase)
        finite = np.all(np.isfinite(F), axis=0)
        F = F.copy()
        F[:, finite] = lowpass(F[:, finite], rate, cutoff_hz, order)
        if g_i is not None:
            g_i = lowpass(np.asarray(g_i, dtype=float), rate, cutoff_hz, order)
    V = body_twists(T, dt, method)
    dV = derivative(V, dt, method)
    return GraspSeries(
        robot_id=robot_id,
        t=np.asarray(t, dtype=float),
        T_i0_i=T,
        V_i=V,
        dV_i=dV,
        F_i=F,
        g_i=None if g_i is None else np.asarray(g_i, dtype=float),
        has_torque=has_torque,
    )
