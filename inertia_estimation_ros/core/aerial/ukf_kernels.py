"""The cable-tension UKF's predict and update, each one compiled call (numba) over float64
arrays: sigma points, process or measurement model, mean, covariance, gain and NIS in one
kernel, so that no Python runs between its steps (``ukf.CableTensionUKF`` keeps the API,
validation, counters and gating decisions). The maths is that of ``ukf``'s docstrings
(paper 002, eqs. 31-37, 41; notes section 2.12).

Compiled on first use and cached on disk (numba's ``cache=True``: ``__pycache__`` beside this
file, else the user's cache directory); where neither is writable (a read-only install
without a home), compiled once per process instead. Quaternions are (w, x, y, z) tuples.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numba
import numpy as np

from .allocation import GRAVITY  # numba freezes a global at compile time

# ``model`` arrays (7, 3): [mass [kg], cable length [m], 0], the inertia J (3 rows), J^-1
# ``update`` outcomes
ACCEPTED, GATED, NOT_POSITIVE_DEFINITE = 0, 1, 2


def _compiled(function: Callable) -> Callable:
    """numba.njit cached on disk, or uncached when numba finds no writable cache directory
    (it raises at decoration then)."""
    try:
        return numba.njit(cache=True)(function)
    except RuntimeError:
        return numba.njit(function)


# ----- unit quaternions and rotation vectors (core/spatial.py's convention) ----------------
@_compiled
def quaternion(x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """The unit quaternion of the rotation vector (x, y, z): (cos(a/2), sin(a/2) axis)."""
    angle = math.sqrt(x * x + y * y + z * z)
    scale = math.sin(0.5 * angle) / angle if angle > 0.0 else 0.5
    return math.cos(0.5 * angle), scale * x, scale * y, scale * z


@_compiled
def rotation_vector(w: float, x: float, y: float, z: float) -> tuple[float, float, float]:
    """The rotation vector, |phi| in [0, pi] (the short way round), of a unit quaternion."""
    norm = math.sqrt(x * x + y * y + z * z)
    scale = math.copysign(2.0 * math.atan2(norm, abs(w)) / max(norm, 1e-300), w)
    return scale * x, scale * y, scale * z


@_compiled
def product(a: tuple, b: tuple) -> tuple[float, float, float, float]:
    """a * b (Hamilton): the rotation R_a R_b."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


@_compiled
def _conjugate(q: tuple) -> tuple[float, float, float, float]:
    return q[0], -q[1], -q[2], -q[3]


@_compiled
def _row(q: np.ndarray, i: int) -> tuple[float, float, float, float]:
    return q[i, 0], q[i, 1], q[i, 2], q[i, 3]


@_compiled
def _cross(a: tuple, b: tuple) -> tuple[float, float, float]:
    return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]


@_compiled
def _times(A: np.ndarray, v: tuple) -> tuple[float, float, float]:
    """A v for a 3x3 A."""
    return (
        A[0, 0] * v[0] + A[0, 1] * v[1] + A[0, 2] * v[2],
        A[1, 0] * v[0] + A[1, 1] * v[1] + A[1, 2] * v[2],
        A[2, 0] * v[0] + A[2, 1] * v[1] + A[2, 2] * v[2],
    )


@_compiled
def _put(out: np.ndarray, start: int, values: tuple) -> None:
    """out[start:start + len(values)] = values (a vector, or a row of a stack)."""
    for k in range(len(values)):
        out[start + k] = values[k]


@_compiled
def thrust_direction(q: tuple) -> tuple[float, float, float]:
    """R(q) e3."""
    w, x, y, z = q
    return 2.0 * (x * z + w * y), 2.0 * (y * z - w * x), w * w - x * x - y * y + z * z


# ----- linear algebra of the small dense matrices -------------------------------------------
@_compiled
def _cholesky(A: np.ndarray, L: np.ndarray) -> bool:
    """L (lower) with L L^T = A, reading A's lower triangle; False if A is not positive
    definite (or not finite)."""
    n = A.shape[0]
    L[:] = 0.0
    for j in range(n):
        diagonal = A[j, j]
        for k in range(j):
            diagonal -= L[j, k] * L[j, k]
        if not diagonal > 0.0:
            return False
        L[j, j] = math.sqrt(diagonal)
        for i in range(j + 1, n):
            value = A[i, j]
            for k in range(j):
                value -= L[i, k] * L[j, k]
            L[i, j] = value / L[j, j]
    return True


@_compiled
def _cholesky_solve(L: np.ndarray, B: np.ndarray) -> None:
    """B <- (L L^T)^-1 B in place (forward, then backward substitution)."""
    n, columns = B.shape
    for c in range(columns):
        for i in range(n):
            value = B[i, c]
            for k in range(i):
                value -= L[i, k] * B[k, c]
            B[i, c] = value / L[i, i]
        for i in range(n - 1, -1, -1):
            value = B[i, c]
            for k in range(i + 1, n):
                value -= L[k, i] * B[k, c]
            B[i, c] = value / L[i, i]


# ----- the unscented transform on the state space -------------------------------------------
@_compiled
def sigma_points(
    x: np.ndarray, L: np.ndarray, scale: float, manifold: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, q, steps): x [+] the columns of scale L, then x [+] minus them (centre point
    first); q (m, 4) the attitudes: R exp(step) on the manifold, exp(X's attitude columns)
    in the vector parametrization (whose attitude columns are the rotation vectors; on the
    manifold they are stale and never read)."""
    n = x.shape[0]
    steps = np.zeros((2 * n + 1, n))
    for j in range(n):
        for r in range(j, n):  # L is lower triangular
            steps[1 + j, r] = scale * L[r, j]
            steps[1 + n + j, r] = -scale * L[r, j]
    X = steps + x
    q = np.empty((2 * n + 1, 4))
    centre = quaternion(x[6], x[7], x[8])
    for i in range(2 * n + 1):
        if manifold:
            _put(q[i], 0, product(centre, quaternion(steps[i, 6], steps[i, 7], steps[i, 8])))
        else:
            _put(q[i], 0, quaternion(X[i, 6], X[i, 7], X[i, 8]))
    return X, q, steps


@_compiled
def propagate(
    X: np.ndarray, q: np.ndarray, model: np.ndarray, u: np.ndarray, dt: float, a_k: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """g of eq. 34 on each row of (X, q) (``RobotCableModel.propagate``): x_ddot (eq. 6),
    Omega_dot (eq. 7), xi_ddot (eq. 35) over dt at constant accelerations; R <- R exp(Omega
    dt) (erratum 7); xi renormalized, xi_dot made perpendicular to it; mu a random walk."""
    mass, length = model[0, 0], model[0, 1]
    f, M = u[0], (u[1], u[2], u[3])
    out, q_out = X.copy(), np.empty_like(q)
    half_dt2 = 0.5 * dt * dt
    for i in range(X.shape[0]):
        v, Omega = (X[i, 3], X[i, 4], X[i, 5]), (X[i, 9], X[i, 10], X[i, 11])
        xi, xi_dot, mu = (X[i, 12], X[i, 13], X[i, 14]), (X[i, 15], X[i, 16], X[i, 17]), X[i, 18]
        b = thrust_direction(_row(q, i))
        spin = _cross(Omega, _times(model[1:4], Omega))
        Omega_dot = _times(model[4:7], (M[0] - spin[0], M[1] - spin[1], M[2] - spin[2]))
        w = _cross(xi, _cross(xi, (b[0] * f - mass * a_k[0], b[1] * f - mass * a_k[1],
                                   b[2] * f - mass * a_k[2])))  # fmt: skip
        speed2 = xi_dot[0] ** 2 + xi_dot[1] ** 2 + xi_dot[2] ** 2
        xi_norm = 0.0
        for k in range(3):
            accel = (b[k] * f + mu * xi[k]) / mass - (GRAVITY if k == 2 else 0.0)
            xi_ddot = w[k] / (mass * length) - xi[k] * speed2  # [xi]^2 w - |xi_dot|^2 xi
            out[i, k] += v[k] * dt + accel * half_dt2
            out[i, 3 + k] += accel * dt
            out[i, 9 + k] += Omega_dot[k] * dt
            out[i, 12 + k] += xi_dot[k] * dt + xi_ddot * half_dt2
            out[i, 15 + k] += xi_ddot * dt
            xi_norm += out[i, 12 + k] ** 2
        xi_norm = math.sqrt(xi_norm)
        along = 0.0
        for k in range(3):
            out[i, 12 + k] /= xi_norm
            along += out[i, 15 + k] * out[i, 12 + k]
        for k in range(3):
            out[i, 15 + k] -= along * out[i, 12 + k]
        turn = quaternion(Omega[0] * dt, Omega[1] * dt, Omega[2] * dt)
        _put(q_out[i], 0, product(_row(q, i), turn))
    return out, q_out


@_compiled
def mean_and_residuals(
    X: np.ndarray, q: np.ndarray, weights: np.ndarray, manifold: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The weighted mean x of (X, q) and the residuals D = local(X, x). Vector
    parametrization: the attitude columns are the rotation vectors of q, averaged as vectors.
    Manifold: the attitude's mean by one Gauss-Newton step of the Karcher mean from q_0 (the
    propagated mean), q_0 exp(s), s = sum w_i log(q_0^-1 q_i); the residuals from that mean
    (to first order, r_i - s, when |s| < 1e-10 rad: exact to |s| |r_i| / 2)."""
    m = X.shape[0]
    D = X.copy()
    inverse = _conjugate(_row(q, 0))
    for i in range(m):
        q_i = product(inverse, _row(q, i)) if manifold else _row(q, i)
        _put(D[i], 6, rotation_vector(q_i[0], q_i[1], q_i[2], q_i[3]))
    x = weights @ D
    residuals = D[:, 6:9].copy()
    if manifold:
        turn = quaternion(x[6], x[7], x[8])
        if x[6] ** 2 + x[7] ** 2 + x[8] ** 2 > 1e-20:
            inverse = _conjugate(product(_row(q, 0), turn))
            for i in range(m):
                q_i = product(inverse, _row(q, i))
                _put(residuals[i], 0, rotation_vector(q_i[0], q_i[1], q_i[2], q_i[3]))
        else:
            for i in range(m):
                for k in range(3):
                    residuals[i, k] -= x[6 + k]
        mean = product(_row(q, 0), turn)
        _put(x, 6, rotation_vector(mean[0], mean[1], mean[2], mean[3]))
    for i in range(m):
        for r in range(X.shape[1]):
            D[i, r] -= x[r]
    if manifold:
        D[:, 6:9] = residuals
    return x, D


@_compiled
def predict(
    x: np.ndarray,
    P: np.ndarray,
    weights: np.ndarray,
    scale: float,
    manifold: bool,
    model: np.ndarray,
    u: np.ndarray,
    dt: float,
    a_k: np.ndarray,
    Q: np.ndarray,
) -> bool:
    """x <- mean g(chi_i), P <- sum wc_i d_i d_i^T + Q dt, in place (weights: rows wm, wc);
    False (nothing changed) if P is not positive definite."""
    L = np.empty_like(P)
    if not _cholesky(P, L):
        return False
    X, q, _ = sigma_points(x, L, scale, manifold)
    X, q = propagate(X, q, model, u, dt, a_k)
    mean, D = mean_and_residuals(X, q, weights[0].copy(), manifold)
    x[:] = mean
    covariance = (D.T * weights[1]) @ D + Q * dt
    P[:] = 0.5 * (covariance + covariance.T)
    return True


@_compiled
def update(
    x: np.ndarray,
    P: np.ndarray,
    weights: np.ndarray,
    scale: float,
    manifold: bool,
    columns: np.ndarray,
    attitude: np.ndarray,
    z: np.ndarray,
    noise_variances: np.ndarray,
    gate: float,
) -> tuple[int, float]:
    """The standard update (erratum 10) of the measurement z of the state's ``columns``
    (those of the attitude, 6-8, read as the residual log(R^T R_i) to the measured attitude
    R = exp(``attitude``); z holds 0 there) with noise diag(noise_variances): (outcome,
    NIS). x <- x [+] K y and P <- P - K P_xz^T in place only if the NIS y^T S^-1 y is
    within ``gate`` (one Cholesky of S, one solve for y and P_xz^T together)."""
    n, d = x.shape[0], z.shape[0]
    L = np.empty_like(P)
    if not _cholesky(P, L):
        return NOT_POSITIVE_DEFINITE, np.inf
    X, q, steps = sigma_points(x, L, scale, manifold)
    wm, wc = weights[0].copy(), weights[1].copy()
    measured = _conjugate(quaternion(attitude[0], attitude[1], attitude[2]))
    Z = np.empty((X.shape[0], d))
    for i in range(X.shape[0]):
        if manifold:
            r = product(measured, _row(q, i))
            residual = rotation_vector(r[0], r[1], r[2], r[3])
        else:
            residual = (X[i, 6] - attitude[0], X[i, 7] - attitude[1], X[i, 8] - attitude[2])
        for k in range(d):
            column = columns[k]
            Z[i, k] = residual[column - 6] if 6 <= column <= 8 else X[i, column]
    z_bar = wm @ Z
    dZ = Z - z_bar
    weighted = dZ.T * wc
    S = weighted @ dZ
    for k in range(d):
        S[k, k] += noise_variances[k]
    y = z - z_bar
    P_xz_T = weighted @ steps
    solved = np.empty((d, n + 1))  # [y | P_xz^T], solved together
    solved[:, 0] = y
    solved[:, 1:] = P_xz_T
    L_S = np.empty_like(S)
    if not _cholesky(S, L_S):  # S is R plus a Gram matrix: only non-finite predictions
        return GATED, np.inf
    _cholesky_solve(L_S, solved)
    nis = y @ solved[:, 0].copy()
    if not nis <= gate:
        return GATED, nis
    K_T = solved[:, 1:].copy()  # (P_xz S^-1)^T
    dx = y @ K_T
    if manifold:
        turned = product(quaternion(x[6], x[7], x[8]), quaternion(dx[6], dx[7], dx[8]))
        x += dx
        _put(x, 6, rotation_vector(turned[0], turned[1], turned[2], turned[3]))
    else:
        x += dx
    P -= K_T.T @ P_xz_T  # K S K^T = K P_xz^T
    P[:] = 0.5 * (P + P.T)
    return ACCEPTED, nis
