"""The per-robot state and cable-tension UKF of paper 002 (Sec. VI-A1, eqs. 31-37, 41).

State (19, eq. 31): ``x (0:3) | v (3:6) | phi (6:9) | Omega (9:12) | xi (12:15) | xi_dot
(15:18) | mu (18)``. The attitude is stored as the rotation vector phi of R (R = exp3(phi)),
but sigma points, means and residuals treat it on SO(3) (right perturbations R exp(dphi),
an iterated Karcher mean, residuals log(R_a^T R_b)): no Euler-angle averaging. ZYX Euler
angles (the paper's Theta) are only an output. Deviations from the paper (notes section 2.12):
the standard update form (erratum 10), H = [I_18 0] (erratum 9), a 19x19 process noise Q
(erratum 8) scaled with the step so that predictions may be asynchronous, and the
attach-point acceleration a_k = g e3 unless given (erratum 11).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack
from scipy.spatial.transform import Rotation
from scipy.stats import chi2

from ..spatial import (
    compose_rotation_vectors,
    conjugate,
    cross_rows,
    exp3,
    log3,
    quaternion_e3,
    quaternion_product,
    quaternions,
    rotation_vectors,
)
from .allocation import E3, GRAVITY

STATE_DIM = 19
POSITION, VELOCITY, ATTITUDE, RATE = slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 12)
CABLE, CABLE_RATE, TENSION = slice(12, 15), slice(15, 18), 18

# Sigma points travel as a pair (X, q): X the (m, 19) stack of states and q the (m, 4) unit
# quaternions of their attitudes, so that the manifold never converts rotation vectors back
# and forth; the attitude columns of X are read only by EuclideanSpace (notes in the spaces).
StateFunction = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
MeasurementFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (X, q) -> (m, d)


class EuclideanSpace:
    """Every block added as a vector (the parametrization filterpy assumes); the attitude
    columns of a sigma stack X hold its rotation vectors, q is derived from them."""

    def retract(self, X: np.ndarray, dX: np.ndarray) -> np.ndarray:
        return X + dX

    def local(self, X: np.ndarray, x0: np.ndarray) -> np.ndarray:
        return X - x0

    def points(self, x: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sigma stack (X, q) of x [+] steps."""
        X = x + steps
        return X, quaternions(X[:, ATTITUDE])

    def mean_and_local(
        self, X: np.ndarray, q: np.ndarray, weights: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The weighted mean x of the stack (X, q) and local(X, x)."""
        X[:, ATTITUDE] = rotation_vectors(q)
        x = weights @ X
        return x, X - x

    def attitude_residuals(self, X: np.ndarray, q: np.ndarray, R: np.ndarray) -> np.ndarray:
        return X[:, ATTITUDE] - log3(R)


class AttitudeManifold(EuclideanSpace):
    """The attitude block on SO(3) (right perturbations R exp(dphi)), all other blocks
    vectors. In a sigma stack only q holds the attitudes (the columns of X are stale)."""

    def retract(self, X: np.ndarray, dX: np.ndarray) -> np.ndarray:
        out = X + dX
        out[..., ATTITUDE] = compose_rotation_vectors(X[..., ATTITUDE], dX[..., ATTITUDE])
        return out

    def local(self, X: np.ndarray, x0: np.ndarray) -> np.ndarray:
        out = X - x0
        out[:, ATTITUDE] = compose_rotation_vectors(-x0[ATTITUDE], X[:, ATTITUDE])
        return out

    def points(self, x: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x + steps, quaternion_product(quaternions(x[ATTITUDE]), quaternions(steps[:, 6:9]))

    def mean_and_local(
        self, X: np.ndarray, q: np.ndarray, weights: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The weighted mean x and local(X, x); the attitude's mean by one Gauss-Newton step
        of the Karcher mean on SO(3) from the first point q_0 (the propagated mean):
        q_0 exp(step), step = sum w_i log(q_0^-1 q_i), the residuals taken from that mean.
        The step is below 1e-10 rad at hover and 2 rad/s turns, and one step equals the
        iterated mean to 1e-12 rad (1e-8 at 0.3 rad spreads; test_aerial_ukf)."""
        x = weights @ X
        D = X - x
        relative = quaternion_product(conjugate(q[0]), q)
        residuals = rotation_vectors(relative)
        step = weights @ residuals
        rotation = quaternions(step)
        if step @ step > 1e-20:  # |step| > 1e-10 rad: the residuals from the new mean
            residuals = rotation_vectors(quaternion_product(conjugate(rotation), relative))
        else:  # to first order: exact to |step| |r_i| / 2 < 1e-10 rad (hover, slow turns)
            residuals -= step
        D[:, ATTITUDE] = residuals
        x[ATTITUDE] = rotation_vectors(quaternion_product(q[0], rotation))
        return x, D

    def attitude_residuals(self, X: np.ndarray, q: np.ndarray, R: np.ndarray) -> np.ndarray:
        """log(R^T R_i) of each sigma point."""
        return rotation_vectors(quaternion_product(quaternions(log3(R.T)), q))


@dataclass(frozen=True)
class SigmaPoints:
    """The scaled unscented transform (Julier; Wan & van der Merwe). The default
    alpha = 1, beta = 0, kappa = 0 gives lambda = 0: the cubature rule (2n equally weighted
    points; the centre point has weight 0), whose covariance weights are never negative."""

    alpha: float = 1.0
    beta: float = 0.0
    kappa: float = 0.0

    def weights(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        lam = self.alpha**2 * (n + self.kappa) - n
        wm = np.full(2 * n + 1, 0.5 / (n + lam))
        wc = wm.copy()
        wm[0] = lam / (n + lam)
        wc[0] = wm[0] + 1.0 - self.alpha**2 + self.beta
        return wm, wc

    def points(
        self, x: np.ndarray, L: np.ndarray, space: EuclideanSpace
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X, q, steps): the sigma stack of x, then x [+] column i of sqrt(n + lambda) L,
        then x [+] minus it (L L^T = P); steps are the perturbations, local(X, x) = steps."""
        n = len(x)
        scaled = np.sqrt(self.alpha**2 * (n + self.kappa)) * L.T
        steps = np.empty((2 * n + 1, n))
        steps[0] = 0.0
        steps[1 : n + 1] = scaled
        np.negative(scaled, out=steps[n + 1 :])
        return *space.points(x, steps), steps


def _cholesky(P: np.ndarray) -> np.ndarray | None:
    """The lower Cholesky factor of P (LAPACK potrf: no checks, no copies beyond its own;
    np.linalg.cholesky costs 3x more on 19x19), None if P is not positive definite."""
    L, info = lapack.dpotrf(P, lower=1, clean=1)
    return L if info == 0 else None


def symmetric_positive_definite(P: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(P, L, repaired): P (symmetric; its lower triangle is read) and its Cholesky factor
    L; eigenvalues lifted to a floor (repaired = True) if P was not positive definite."""
    L = _cholesky(P)
    if L is not None:
        return P, L, False
    values, vectors = np.linalg.eigh(P)
    floor = 1e-12 * max(float(np.abs(values).max()), 1e-12)
    P = (vectors * np.maximum(values, floor)) @ vectors.T
    P = 0.5 * (P + P.T)
    return P, np.linalg.cholesky(P), True


@lru_cache(maxsize=64)
def _gate(probability: float, dim: int) -> float:
    """The Mahalanobis gate: the chi-square quantile of the NIS."""
    return float(chi2.ppf(probability, dim))


REACQUIRE_INFLATIONS = 20  # covariance inflations tried before a measurement is refused


class _Innovation(NamedTuple):
    """One update's innovation y, its NIS, the gain K and the cross covariance P_xz."""

    y: np.ndarray
    nis: float
    K: np.ndarray
    P_xz: np.ndarray


class UnscentedFilter:
    """A UKF on a state space with retract/local/mean (additive noise, sigma points
    redrawn before every predict and update); updates are gated (NaN, Mahalanobis) and
    counted in ``counters`` ('<name>.accepted', '<name>.nan', '<name>.gated',
    '<name>.reacquired')."""

    def __init__(
        self,
        x0: np.ndarray,
        P0: np.ndarray,
        space: EuclideanSpace | None = None,
        sigma_points: SigmaPoints | None = None,
        gate_probability: float | None = 0.9999,
    ):
        self.x = np.asarray(x0, dtype=float).copy()
        self.P = np.asarray(P0, dtype=float)
        n = len(self.x)
        if self.x.shape != (n,) or self.P.shape != (n, n) or not np.all(np.isfinite(self.P)):
            raise ValueError(
                f"UKF start: need a state (n,) and a finite covariance (n, n), got shapes "
                f"{self.x.shape} and {self.P.shape}"
            )
        self.P = 0.5 * (self.P + self.P.T)  # kept symmetric by every predict and update
        self.space = space or EuclideanSpace()
        self.sigma_points = sigma_points or SigmaPoints()
        self.wm, self.wc = self.sigma_points.weights(len(self.x))
        self.gate_probability = gate_probability
        self.counters: Counter[str] = Counter()
        self.last_nis: dict[str, float] = {}

    def _sigmas(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.P, L, repaired = symmetric_positive_definite(self.P)
        if repaired:
            self.counters["covariance_repairs"] += 1
        return self.sigma_points.points(self.x, L, self.space)

    def predict(self, f: StateFunction, Q: np.ndarray) -> None:
        """x <- mean f(chi_i), P <- sum wc d d^T + Q."""
        X, q, _ = self._sigmas()
        self.x, D = self.space.mean_and_local(*f(X, q), self.wm)
        P = (D.T * self.wc) @ D + Q
        self.P = 0.5 * (P + P.T)

    def update(
        self,
        name: str,
        h: MeasurementFunction,
        z: np.ndarray,
        R: np.ndarray,
        reacquire: bool = False,
    ) -> bool:
        """The standard update x <- x [+] K (z - z_bar) (erratum 10); False if z was refused.
        ``reacquire`` (after a long gap, when the prediction may have drifted beyond the
        gate): a gated z is retried with P inflated by 2 NIS / gate until it passes (at most
        ``REACQUIRE_INFLATIONS`` times; refused and P kept if it never does)."""
        z = np.asarray(z, dtype=float)
        if not np.isfinite(z).all():
            self.counters[f"{name}.nan"] += 1
            return False
        gate = np.inf if self.gate_probability is None else _gate(self.gate_probability, len(z))
        P_before = self.P
        innovation = self._innovation(h, z, R)
        self.last_nis[name] = innovation.nis
        inflations = 0
        while innovation.nis > gate and reacquire and inflations < REACQUIRE_INFLATIONS:
            self.P = self.P * (2.0 * innovation.nis / gate)
            innovation = self._innovation(h, z, R)
            inflations += 1
        if innovation.nis > gate:
            self.P = P_before
            self.counters[f"{name}.gated"] += 1
            return False
        if inflations:
            self.counters[f"{name}.reacquired"] += 1
        self.x = self.space.retract(self.x, innovation.K @ innovation.y)
        P = self.P - innovation.K @ innovation.P_xz.T  # K S K^T = K P_xz^T
        self.P = 0.5 * (P + P.T)
        self.counters[f"{name}.accepted"] += 1
        return True

    def _innovation(self, h: MeasurementFunction, z: np.ndarray, R: np.ndarray) -> _Innovation:
        """y = z - z_bar, S, P_xz, K = P_xz S^-1 and the NIS y^T S^-1 y (one Cholesky of
        S, one triangular solve for y and P_xz^T together)."""
        X, q, steps = self._sigmas()
        Z = h(X, q)
        z_bar = self.wm @ Z
        dZ = Z - z_bar
        weighted = dZ.T * self.wc
        S = weighted @ dZ + R
        rhs = np.empty((len(z), len(self.x) + 1))  # [y | P_xz^T], solved together
        y = rhs[:, 0]
        np.subtract(z, z_bar, out=y)
        P_xz_T = rhs[:, 1:]
        np.matmul(weighted, steps, out=P_xz_T)
        L_S = _cholesky(S)
        if L_S is None:  # S is R plus a Gram matrix: only non-finite predictions get here
            return _Innovation(y, np.inf, np.zeros_like(P_xz_T.T), P_xz_T.T)
        solved, _ = lapack.dpotrs(L_S, rhs, lower=1)
        return _Innovation(y, float(y @ solved[:, 0]), solved[:, 1:].T, P_xz_T.T)


@dataclass(frozen=True)
class RobotCableModel:
    """One quadrotor on a taut cable: mass m_k [kg], inertia J_k (body frame), cable length
    l_k [m]."""

    mass: float
    inertia: np.ndarray
    length: float
    inertia_inverse: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """The inertia as given (3x3) or as its diagonal (3,)."""
        inertia = np.asarray(self.inertia, dtype=float)
        inertia = np.diag(inertia) if inertia.shape == (3,) else inertia
        if inertia.shape != (3, 3) or self.mass <= 0.0 or self.length <= 0.0:
            raise ValueError(
                f"robot model: need mass > 0 ({self.mass}), length > 0 ({self.length}) and a "
                f"3x3 or diagonal (3,) inertia (shape {np.shape(self.inertia)})"
            )
        object.__setattr__(self, "inertia", inertia)
        object.__setattr__(self, "inertia_inverse", np.linalg.inv(inertia))

    def propagate(
        self, S: np.ndarray, u: np.ndarray, dt: float, attach_accel: np.ndarray | None = None
    ) -> np.ndarray:
        """g(S, U) of eq. 34 for a state (19,) or a stack (m, 19) (``propagate_stack``)."""
        S = np.asarray(S, dtype=float)
        X = np.atleast_2d(S)
        out, q = self.propagate_stack(X, quaternions(X[:, ATTITUDE]), u, dt, attach_accel)
        out[:, ATTITUDE] = rotation_vectors(q)
        return out.reshape(S.shape)

    def propagate_stack(
        self,
        X: np.ndarray,
        q: np.ndarray,
        u: np.ndarray,
        dt: float,
        attach_accel: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """g of eq. 34 on a sigma stack (X (m, 19), q (m, 4) its attitudes; the attitude
        columns of X are neither read nor written), with x_ddot from eq. 6, Omega_dot from
        eq. 7 and xi_ddot from eq. 35; R <- R exp(Omega dt) (erratum 7); xi renormalized
        and xi_dot made perpendicular to it; mu a random walk."""
        f, M = u[0], u[1:4]
        Omega, xi, xi_dot, mu = X[:, RATE], X[:, CABLE], X[:, CABLE_RATE], X[:, TENSION:]
        thrust = quaternion_e3(q) * f
        accel = (thrust + mu * xi) * (1.0 / self.mass) - GRAVITY * E3
        Omega_dot = (M - cross_rows(Omega, Omega @ self.inertia.T)) @ self.inertia_inverse.T
        a_k = GRAVITY * E3 if attach_accel is None else attach_accel
        w = (thrust - self.mass * a_k) * (1.0 / (self.mass * self.length))
        xi_ddot = cross_rows(xi, cross_rows(xi, w)) - xi * _dot(xi_dot, xi_dot)  # [xi]^2 w
        stacked = np.zeros((len(X), 2 * STATE_DIM))  # [X | second derivatives]
        stacked[:, :STATE_DIM] = X
        stacked[:, STATE_DIM + 3 : STATE_DIM + 6] = accel
        stacked[:, STATE_DIM + 9 : STATE_DIM + 12] = Omega_dot
        stacked[:, STATE_DIM + 15 : STATE_DIM + 18] = xi_ddot
        out = stacked @ _kinematics(dt)
        xi_new = out[:, CABLE]
        xi_new /= np.sqrt(_dot(xi_new, xi_new))
        out[:, CABLE_RATE] -= _dot(out[:, CABLE_RATE], xi_new) * xi_new
        return out, quaternion_product(q, quaternions(Omega * dt))


def _kinematic_parts() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    shift = np.zeros((STATE_DIM, STATE_DIM))  # X shift: v into the x columns, xi_dot into xi
    shift[VELOCITY, POSITION] = shift[CABLE_RATE, CABLE] = np.eye(3)
    zeros, identity = np.zeros_like(shift), np.eye(STATE_DIM)
    return np.vstack([identity, zeros]), np.vstack([shift, identity]), np.vstack([zeros, shift])


_KINEMATICS = _kinematic_parts()


@lru_cache(maxsize=8)  # the control period, and whatever the stamps give in between
def _kinematics(dt: float) -> np.ndarray:
    """K (38, 19) with [X | A] K the constant-acceleration step of x, xi (second
    derivatives A in the columns of v, xi_dot) and of v, Omega, xi_dot (A in their own
    columns): p + v dt + a dt^2 / 2, v + a dt; all other blocks kept."""
    constant, linear, quadratic = _KINEMATICS
    K = constant + dt * linear + (0.5 * dt**2) * quadratic
    K.flags.writeable = False
    return K


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of two (m, 3) stacks, shape (m, 1)."""
    return (a * b) @ _ONES3[:, None]


_ONES3 = np.ones(3)


def _diag(stds: list[float], sizes: list[int]) -> np.ndarray:
    return np.diag(np.repeat(np.square(stds), sizes))


_BLOCKS = [3, 3, 3, 3, 3, 3, 1]


_TWIST = np.r_[3:6, 9:12]
_MOCAP = np.r_[0:3, 6:9, 3:6, 9:18]  # Z of eq. 36: p, attitude, v, Omega, xi, xi_dot


def _twist(X: np.ndarray, q: np.ndarray) -> np.ndarray:
    return X[:, _TWIST]


@lru_cache(maxsize=32)
def _measurement_noise(stds: tuple[float, ...]) -> np.ndarray:
    """R = diag of each standard deviation squared, three times (not to be written to)."""
    return _diag(list(stds), [3] * len(stds))


def _cable(X: np.ndarray, q: np.ndarray) -> np.ndarray:
    return X[:, 12:18]


@dataclass(frozen=True)
class CableUKFNoise:
    """Noise levels (notes sections 3.2, 6.3). Process: standard deviations per sqrt(s) of
    x, v, attitude, Omega, xi, xi_dot, mu (Q = diag(q^2) dt). Measurement: standard
    deviations of position [m], attitude [rad], velocity [m/s], Omega [rad/s], xi, xi_dot."""

    process: tuple[float, ...] = (1e-3, 0.1, 1e-2, 0.5, 1e-2, 0.5, 0.3)
    position: float = 1e-3
    attitude: float = 5e-3
    velocity: float = 1e-2
    rate: float = 2e-2
    cable: float = 2e-3
    cable_rate: float = 2e-2
    Q: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "Q", _diag(list(self.process), _BLOCKS))


class CableTensionUKF:
    """The UKF of one robot (eqs. 31-37): predict at the control rate from the rotor
    wrench U = [f, M] (eqs. 32-33), update asynchronously from whatever mocap delivers.

    ``reacquire_after`` [s]: after this long without an accepted update of a kind (a mocap
    gap, or all of them gated), the prediction may have drifted beyond the Mahalanobis
    gate, which would then refuse that kind for good; its next measurement inflates the
    covariance until it passes the gate (counted '<name>.reacquired'; ``None``: never)."""

    def __init__(
        self,
        model: RobotCableModel,
        x0: np.ndarray,
        P0: np.ndarray,
        noise: CableUKFNoise | None = None,
        space: EuclideanSpace | None = None,
        sigma_points: SigmaPoints | None = None,
        gate_probability: float | None = 0.9999,
        reacquire_after: float | None = 0.5,
    ):
        if reacquire_after is not None and not reacquire_after > 0.0:
            raise ValueError(f"reacquire_after = {reacquire_after} s: must be > 0 or None")
        self.model = model
        self.noise = noise or CableUKFNoise()
        self.reacquire_after = reacquire_after
        self.coasting: dict[str, float] = {}  # [s] predicted since each kind's last update
        self.filter = UnscentedFilter(
            x0, P0, space or AttitudeManifold(), sigma_points, gate_probability
        )
        hover_thrust = model.mass * GRAVITY + float(np.asarray(x0)[TENSION])
        self._last_input = np.array([hover_thrust, 0.0, 0.0, 0.0])  # until a valid input

    @property
    def counters(self) -> Counter[str]:
        return self.filter.counters

    def predict(self, u: np.ndarray, dt: float, attach_accel: np.ndarray | None = None) -> None:
        """Propagate by dt [s] with the rotor wrench u = [f, M]; a non-finite u (a NaN rotor
        speed) is counted ('input.nan') and the last valid input is held."""
        if not dt >= 0.0:
            raise ValueError(
                f"UKF step dt = {dt} s: time must not run backwards; drop or reorder the "
                "out-of-order sample before predicting"
            )
        u = np.asarray(u, dtype=float)
        if np.isfinite(u).all():
            self._last_input = u
        else:
            self.counters["input.nan"] += 1
        u = self._last_input
        for name in self.coasting:
            self.coasting[name] += dt
        self.filter.predict(
            lambda X, q: self.model.propagate_stack(X, q, u, dt, attach_accel), self.noise.Q * dt
        )

    def _update(self, name: str, h: MeasurementFunction, z: np.ndarray, stds: list[float]) -> bool:
        R = _measurement_noise(tuple(stds))
        coasting = self.coasting.setdefault(name, 0.0)
        gap = self.reacquire_after is not None and coasting > self.reacquire_after
        accepted = self.filter.update(name, h, z, R, reacquire=gap)
        if accepted:
            self.coasting[name] = 0.0
        if self.filter.x[TENSION] < 0.0:  # mu >= 0: a cable cannot push (slack: mu = 0)
            self.filter.x[TENSION] = 0.0
            self.counters["tension.clamped"] += 1
        return accepted

    def update_pose(self, p: np.ndarray, R: np.ndarray) -> bool:
        """Mocap position p (in I) and attitude R (body to I)."""
        space = self.filter.space
        R = np.asarray(R, dtype=float)
        finite = np.isfinite(R).all()  # a NaN R makes z NaN, so that the update is refused
        z = np.concatenate([p, np.zeros(3) if finite else np.full(3, np.nan)])

        def h(X: np.ndarray, q: np.ndarray) -> np.ndarray:
            return np.hstack([X[:, POSITION], space.attitude_residuals(X, q, R)])

        return self._update("pose", h, z, [self.noise.position, self.noise.attitude])

    def update_twist(self, v: np.ndarray, Omega: np.ndarray) -> bool:
        """Mocap velocity v (in I) and body rate Omega."""
        z = np.concatenate([v, Omega])
        return self._update("twist", _twist, z, [self.noise.velocity, self.noise.rate])

    def update_cable(self, xi: np.ndarray, xi_dot: np.ndarray) -> bool:
        """Cable direction xi and its rate from mocap (eq. 41)."""
        z = np.concatenate([xi, xi_dot])
        return self._update("cable", _cable, z, [self.noise.cable, self.noise.cable_rate])

    def update_mocap(
        self,
        p: np.ndarray,
        R: np.ndarray,
        v: np.ndarray,
        Omega: np.ndarray,
        xi: np.ndarray,
        xi_dot: np.ndarray,
    ) -> bool:
        """The paper's full measurement Z (eq. 36, 18 values) in one update."""
        space, R = self.filter.space, np.asarray(R, dtype=float)
        finite = np.isfinite(R).all()
        attitude = np.zeros(3) if finite else np.full(3, np.nan)
        z = np.concatenate([p, attitude, v, Omega, xi, xi_dot])

        def h(X: np.ndarray, q: np.ndarray) -> np.ndarray:
            Z = X[:, _MOCAP]
            Z[:, 3:6] = space.attitude_residuals(X, q, R)
            return Z

        noise = self.noise
        stds = [noise.position, noise.attitude, noise.velocity, noise.rate]
        return self._update("mocap", h, z, stds + [noise.cable, noise.cable_rate])

    @property
    def tension(self) -> float:
        """mu_k [N] (>= 0)."""
        return float(self.filter.x[TENSION])

    @property
    def tension_std(self) -> float:
        return float(np.sqrt(self.filter.P[TENSION, TENSION]))

    @property
    def cable_direction(self) -> np.ndarray:
        """xi_k, a unit vector."""
        xi = self.filter.x[CABLE]
        return xi / np.linalg.norm(xi)

    @property
    def cable_covariance(self) -> np.ndarray:
        """The 4x4 covariance of (xi, mu), the input of the human-wrench estimator."""
        index = np.r_[12:15, 18]
        return self.filter.P[np.ix_(index, index)]

    @property
    def attitude(self) -> np.ndarray:
        return exp3(self.filter.x[ATTITUDE])

    @property
    def euler_zyx(self) -> np.ndarray:
        """Theta_k: yaw, pitch, roll [rad] (the paper's output)."""
        return Rotation.from_matrix(self.attitude).as_euler("ZYX")
