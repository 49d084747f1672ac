"""Signal conditioning for grasp data: low-pass filters, numerical derivatives, body twists.

Paper 000 (Sec. IV-B) filters encoder and torque data with a 4th-order Butterworth
low-pass, builds T_i0_i by forward kinematics and gets the body twist
[V_i] = T_i0_i^-1 dT_i0_i/dt (Eq. 35) and its derivative by central differences.
This module provides those steps for any sampled pose and wrench sequence:

* ``zero_phase_lowpass`` (offline, as ``scipy.signal.sosfiltfilt``) and
  ``CausalLowpass`` (online, one sample or a block at a time, constant memory);
* ``derivative``: central differences or Savitzky-Golay (as ``scipy.signal.savgol_filter``);
* ``lowpass_poses`` filters positions and sign-continuous quaternions, then re-normalizes;
* ``body_twists``: T^-1 dT/dt projected onto se(3) (rotation block made skew);
* ``series_from_poses``: the whole paper pipeline, raw poses and wrenches to a GraspSeries.

All arrays are time-major: sample k is ``x[k]``. Sampling must be uniform.

The filters are written here rather than taken from ``scipy.signal``, whose import (it
loads scipy.stats, optimize, interpolate, spatial) cost ~1 s of the offline estimate's
start-up; ``test/test_signals.py`` checks them against scipy.signal.
"""

from __future__ import annotations

import numpy as np

from .samples import GraspSeries
from .spatial import unskew

DERIVATIVE_METHODS = ("central", "savgol")
CHUNK = 64  # samples filtered at once by ``SectionMaps`` (its matrices are CHUNK x CHUNK)


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
    """Second-order sections of a digital Butterworth low-pass (paper 000, Sec. IV-B).

    The analog prototype's poles -exp(i pi m / 2n) (m = 1 - n, 3 - n, ..., n - 1) scaled to
    the pre-warped cutoff, mapped by the bilinear transform (every zero at z = -1); each
    conjugate pair and the real pole (odd n, with a pole at the origin) make one section,
    the poles nearest the unit circle last, each section taking the nearest zeros left
    (a zero at the origin pads an odd order), the gain on the first section. The same
    numbers as ``scipy.signal.butter(order, cutoff_hz, fs=rate_hz, output="sos")``.
    """
    if not 0.0 < cutoff_hz < 0.5 * rate_hz:
        raise ValueError(
            f"cutoff {cutoff_hz} Hz must be between 0 and the Nyquist rate {0.5 * rate_hz} Hz"
        )
    if int(order) != order or order < 1:
        raise ValueError(f"filter order {order} must be a positive integer")
    order = int(order)
    warped = 4.0 * np.tan(np.pi * (2 * cutoff_hz / rate_hz) / 2.0)  # 2 fs tan(pi Wn / fs), fs 2
    m = np.arange(-order + 1, order, 2, dtype=float)
    analog = warped * -np.exp(1j * np.pi * m / (2 * order))
    gain = warped**order * np.real(1.0 / np.prod(4.0 - analog))
    poles = (4.0 + analog) / (4.0 - analog)
    pending = [q for q in poles if q.imag > 0] + sorted(q.real for q in poles if q.imag == 0)
    zeros = [-1.0] * order + [0.0] * (order % 2)
    if order % 2:
        pending.append(0.0)
    sos = np.zeros(((order + 1) // 2, 6))
    for section in range(len(sos) - 1, -1, -1):  # the pole nearest the unit circle first
        p1 = pending.pop(int(np.argmin([abs(1 - abs(q)) for q in pending])))
        p2 = np.conj(p1) if np.iscomplex(p1) else pending.pop(pending.index(0.0))
        pair = [zeros.pop(int(np.argmin([abs(z - p1) for z in zeros])))]
        pair.append(zeros.pop(int(np.argmin([abs(z - p1) for z in zeros]))))
        sos[section, :3] = np.poly(pair)
        sos[section, 3:] = np.real(np.poly([p1, p2]))
    sos[0, :3] *= gain
    return sos


def steady_state(sos: np.ndarray) -> np.ndarray:
    """The sections' states (sections, 2) after a long input of ones: the output is one from
    the first sample (``scipy.signal.sosfilt_zi``). Per section the transposed direct form
    II's fixed point z = A z + B, scaled by the DC gain of the sections before it."""
    sos = np.asarray(sos, dtype=float)
    zi = np.empty((len(sos), 2))
    scale = 1.0
    for k, (b0, b1, b2, _, a1, a2) in enumerate(sos):
        I_minus_A = np.array([[1.0 + a1, -1.0], [a2, 1.0]])
        zi[k] = scale * np.linalg.solve(I_minus_A, np.array([b1 - a1 * b0, b2 - a2 * b0]))
        scale *= sos[k, :3].sum() / sos[k, 3:].sum()
    return zi


class SectionMaps:
    """A cascade of second-order sections (transposed direct form II, ``sos`` (S, 6) with
    a0 = 1) as linear maps over up to ``CHUNK`` samples, so that a block of samples costs a
    few matrix products instead of a recursion per sample.

    State z (2 S, M): per section its two delays, as ``scipy.signal.sosfilt``'s zi
    (S, 2, M) flattened. Over q samples x (q, M) from state z:
    y = T[:q, :q] x + O[:q] z and the state after them A_q z + F_q x, where T is the impulse
    response's lower-triangular Toeplitz matrix, O the outputs from unit states, A_q the
    states q steps after unit states and F_q those after an impulse (columns oldest input
    first). Each is read off the recursion itself, run on an impulse and on the 2 S unit
    states. The same numbers as the recursion but for rounding (a few 1e-16 relative).
    """

    def __init__(self, sos: np.ndarray, chunk: int = CHUNK) -> None:
        self.sos = np.asarray(sos, dtype=float)
        width = 2 * len(self.sos)
        wide = np.longdouble  # the maps rounded once, not after each step's rounding
        states = np.zeros((len(self.sos), 2, width + 1), wide)  # probe 0: impulse; unit states
        states.reshape(width, width + 1)[:, 1:] = np.eye(width)
        outputs, after = np.empty((chunk, width + 1)), np.empty((chunk, width, width + 1))
        for k in range(chunk):
            u = np.zeros(width + 1, wide)
            u[0] = 1.0 if k == 0 else 0.0
            outputs[k] = run_sections(self.sos.astype(wide), u, states)
            after[k] = states.reshape(width, width + 1)
        h = outputs[:, 0]
        lags = np.subtract.outer(np.arange(chunk), np.arange(chunk))
        self.T = np.where(lags >= 0, h[np.clip(lags, 0, None)], 0.0)
        self.O = outputs[:, 1:]
        self.A = after[:, :, 1:]  # A[q - 1]: q steps after unit states
        # F[:, chunk - q:] = F_q: column j the states chunk - j steps after an impulse
        self.F = np.ascontiguousarray(after[::-1, :, 0].T)
        self.chunk = chunk

    def __call__(self, x: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Outputs (Q, M) of consecutive inputs x (Q, M) from state z (2 S, M), and the state
        after them."""
        y = np.empty_like(x)
        for start in range(0, len(x), self.chunk):
            part = x[start : start + self.chunk]
            q = len(part)
            y[start : start + q] = self.T[:q, :q] @ part + self.O[:q] @ z
            z = self.A[q - 1] @ z + self.F[:, self.chunk - q :] @ part
        return y, z


def run_sections(sos: np.ndarray, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """One sample x (...) through the sections, their states z (S, 2, ...) updated in place:
    ``scipy.signal.sosfilt``'s recursion, operation for operation."""
    y = x
    for k, (b0, b1, b2, _, a1, a2) in enumerate(sos):
        u = y
        y = b0 * u + z[k, 0]
        z[k, 0] = b1 * u - a1 * y + z[k, 1]
        z[k, 1] = b2 * u - a2 * y
    return y


def filter_sections(
    sos: np.ndarray, x: np.ndarray, zi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.signal.sosfilt(sos, x, axis=0, zi=zi)`` (x (Q, ...), zi (S, 2, ...)): the
    outputs and the final states."""
    x = np.asarray(x, dtype=float)
    flat = x.reshape(len(x), -1)
    y, z = SectionMaps(sos, min(max(len(x), 1), CHUNK))(flat, zi.reshape(2 * len(sos), -1))
    return y.reshape(x.shape), z.reshape(zi.shape)


def zero_phase_lowpass(
    x: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4
) -> np.ndarray:
    """Forward-backward Butterworth along axis 0: no phase lag, squared magnitude response.

    ``scipy.signal.sosfiltfilt``'s defaults: the signal extended at both ends by its odd
    reflection about the end value (3 (2 S + 1) samples, one less per section pair whose
    b2 and a2 are zero), each pass started at steady state on its first sample."""
    x = np.asarray(x, dtype=float)
    sos = butterworth_lowpass(cutoff_hz, rate_hz, order)
    taps = 2 * len(sos) + 1 - min(int(np.sum(sos[:, 2] == 0)), int(np.sum(sos[:, 5] == 0)))
    pad = 3 * taps
    if len(x) <= pad:
        raise ValueError(
            f"{len(x)} samples are too few for a zero-phase low-pass of order {order}: it "
            f"needs more than {pad}"
        )
    ext = np.concatenate([2 * x[0] - x[pad:0:-1], x, 2 * x[-1] - x[-2 : -(pad + 2) : -1]], axis=0)
    unit = steady_state(sos)[(...,) + (None,) * (x.ndim - 1)]
    y = filter_sections(sos, ext, unit * ext[0])[0]
    y = filter_sections(sos, y[::-1], unit * y[-1])[0][::-1]
    return np.ascontiguousarray(y[pad:-pad])


def causal_lowpass(x: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4) -> np.ndarray:
    """The batch equivalent of ``CausalLowpass``: causal filtering from a steady start at x[0]."""
    x = np.asarray(x, dtype=float)
    sos = butterworth_lowpass(cutoff_hz, rate_hz, order)
    zi = steady_state(sos)[(...,) + (None,) * (x.ndim - 1)] * x[0]
    return filter_sections(sos, x, zi)[0]


class CausalLowpass:
    """Streaming Butterworth low-pass of a fixed-shape signal: one sample in, one out.

    The same recursion as ``scipy.signal.sosfilt`` (transposed direct form II per
    second-order section), written out so that one sample costs microseconds; a block of
    samples goes through ``SectionMaps`` (matrix products). The state starts at steady
    state on the first sample (``steady_state``), so a constant input passes unchanged from
    the start. Memory is constant (2 states per section).
    """

    def __init__(self, rate_hz: float, cutoff_hz: float, order: int = 4) -> None:
        self._sos = butterworth_lowpass(cutoff_hz, rate_hz, order)
        self._zi_unit = steady_state(self._sos)
        self._zi: np.ndarray | None = None
        self._maps: SectionMaps | None = None  # built at the first block

    def reset(self) -> None:
        self._zi = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = np.asarray(x, dtype=float)
        if self._zi is None:
            self._zi = self._zi_unit[(...,) + (None,) * y.ndim] * y
        return run_sections(self._sos, y, self._zi)

    def block(self, x: np.ndarray) -> np.ndarray:
        """Consecutive samples x (Q, ...) at once, oldest first: the same as Q calls (but for
        rounding, a few 1e-16 relative)."""
        x = np.asarray(x, dtype=float)
        if len(x) <= 1:  # the maps' set-up costs more than one step
            return x if len(x) == 0 else self(x[0])[None]
        if self._zi is None:
            self._zi = self._zi_unit[(...,) + (None,) * (x.ndim - 1)] * x[0]
        if self._maps is None:
            self._maps = SectionMaps(self._sos)
        shape = self._zi.shape
        y, z = self._maps(x.reshape(len(x), -1), self._zi.reshape(2 * len(self._sos), -1))
        self._zi = z.reshape(shape)
        return y.reshape(x.shape)


def savgol_derivative(x: np.ndarray, dt: float, window: int = 11, polyorder: int = 3) -> np.ndarray:
    """dx/dt along axis 0 by Savitzky-Golay: the slope of the least-squares polynomial of
    degree ``polyorder`` through each ``window`` samples around a sample; within half a
    window of an end, the slope of the polynomial through the first (last) window
    (``scipy.signal.savgol_filter(x, window, polyorder, deriv=1, delta=dt, axis=0)``)."""
    x = np.asarray(x, dtype=float)
    if window % 2 != 1 or not polyorder < window <= len(x) or polyorder < 1:
        raise ValueError(
            f"Savitzky-Golay needs an odd window of more than polyorder {polyorder} >= 1 "
            f"samples and at most the signal's {len(x)}: got {window}"
        )
    half = window // 2
    s = (np.arange(window, dtype=float) - half) / half  # positions in the window, in [-1, 1]
    fit = np.linalg.pinv(s[:, None] ** np.arange(polyorder + 1))  # (polyorder + 1, window)
    powers = np.arange(1, polyorder + 1)

    def slopes(at: np.ndarray) -> np.ndarray:  # (len(at), window): slope at ``at`` per sample
        return (powers * (at[:, None] / half) ** (powers - 1)) @ fit[1:] / (half * dt)

    flat = x.reshape(len(x), -1)
    out = np.empty_like(flat)
    windows = np.lib.stride_tricks.sliding_window_view(flat, window, axis=0)  # (Q - w + 1, M, w)
    out[half : len(x) - half] = windows @ slopes(np.zeros(1))[0]
    out[:half] = slopes(np.arange(-half, 0, dtype=float)) @ flat[:window]
    out[len(x) - half :] = slopes(np.arange(1, half + 1, dtype=float)) @ flat[len(x) - window :]
    return out.reshape(x.shape)


def derivative(
    x: np.ndarray, dt: float, method: str = "central", window: int = 11, polyorder: int = 3
) -> np.ndarray:
    """dx/dt along axis 0: central differences (one-sided at the ends) or Savitzky-Golay."""
    x = np.asarray(x, dtype=float)
    if method == "central":
        return np.gradient(x, dt, axis=0)
    if method == "savgol":
        return savgol_derivative(x, dt, window, polyorder)
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
    from scipy.spatial.transform import Rotation  # not on the estimator's path: loaded here

    q = Rotation.from_matrix(R).as_quat()
    flips = np.cumprod(np.where(np.einsum("ki,ki->k", q[1:], q[:-1]) < 0, -1.0, 1.0))
    q[1:] *= flips[:, None]
    return q


def lowpass_poses(
    T: np.ndarray, rate_hz: float, cutoff_hz: float, order: int = 4, zero_phase: bool = True
) -> np.ndarray:
    """Low-pass a pose sequence (Q, 4, 4): positions and continuous quaternions, re-normalized."""
    from scipy.spatial.transform import Rotation

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
