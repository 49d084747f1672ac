"""The per-robot state and cable-tension UKF of paper 002 (Sec. VI-A1, eqs. 31-37, 41).

State (19, eq. 31): ``x (0:3) | v (3:6) | phi (6:9) | Omega (9:12) | xi (12:15) | xi_dot
(15:18) | mu (18)``. The attitude is stored as the rotation vector phi of R (R = exp3(phi)),
but sigma points, means and residuals treat it on SO(3) (right perturbations R exp(dphi),
a Karcher mean, residuals log(R_a^T R_b)): no Euler-angle averaging. A predict and each
update are one compiled call each (``ukf_kernels``); this module keeps the API, the input
checks, the counters and the gating decisions. ZYX Euler
angles (the paper's Theta) are only an output. Deviations from the paper (notes section 2.12):
the standard update form (erratum 10), H = [I_18 0] (erratum 9), a 19x19 process noise Q
(erratum 8) scaled with the step so that predictions may be asynchronous, and the
attach-point acceleration a_k = g e3 unless given (erratum 11).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.spatial.transform import Rotation
from scipy.stats import chi2

from ..spatial import exp3, log3
from . import ukf_kernels as kernels
from .allocation import E3, GRAVITY

STATE_DIM = 19
POSITION, VELOCITY, ATTITUDE, RATE = slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 12)
CABLE, CABLE_RATE, TENSION = slice(12, 15), slice(15, 18), 18
HANGING = GRAVITY * E3  # the attach point's acceleration a_k unless given (erratum 11)
HANGING.flags.writeable = False


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

    def scale(self, n: int) -> float:
        """sqrt(n + lambda): the sigma points are x [+] +-scale times the columns of L
        (L L^T = P)."""
        return float(np.sqrt(self.alpha**2 * (n + self.kappa)))


def repaired_covariance(P: np.ndarray) -> np.ndarray:
    """P (symmetric) with its eigenvalues lifted to a floor: positive definite."""
    values, vectors = np.linalg.eigh(P)
    floor = 1e-12 * max(float(np.abs(values).max()), 1e-12)
    P = (vectors * np.maximum(values, floor)) @ vectors.T
    return np.ascontiguousarray(0.5 * (P + P.T))


@lru_cache(maxsize=64)
def _gate(probability: float, dim: int) -> float:
    """The Mahalanobis gate: the chi-square quantile of the NIS."""
    return float(chi2.ppf(probability, dim))


REACQUIRE_INFLATIONS = 20  # covariance inflations tried before a measurement is refused


@dataclass(frozen=True)
class RobotCableModel:
    """One quadrotor on a taut cable: mass m_k [kg], inertia J_k (body frame), cable length
    l_k [m]."""

    mass: float
    inertia: np.ndarray
    length: float
    parameters: np.ndarray = field(init=False, repr=False)  # ukf_kernels' ``model`` array

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
        head = [[self.mass, self.length, 0.0]]
        parameters = np.vstack([head, inertia, np.linalg.inv(inertia)])
        parameters.flags.writeable = False
        object.__setattr__(self, "parameters", parameters)

    def propagate(
        self, S: np.ndarray, u: np.ndarray, dt: float, attach_accel: np.ndarray | None = None
    ) -> np.ndarray:
        """g(S, U) of eq. 34 (``ukf_kernels.propagate``) for a state (19,) or a stack
        (m, 19), the attitudes as rotation vectors."""
        S = np.asarray(S, dtype=float)
        X = np.array(np.atleast_2d(S))
        q = np.array([kernels.quaternion(*phi) for phi in X[:, ATTITUDE].tolist()])
        u, a_k = _kernel_inputs(u, attach_accel)
        out, q = kernels.propagate(X, q, self.parameters, u, float(dt), a_k)
        out[:, ATTITUDE] = [kernels.rotation_vector(*row) for row in q.tolist()]
        return out.reshape(S.shape)


def _kernel_inputs(u: np.ndarray, attach_accel: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Fresh writable float64 copies of u and a_k (g e3 unless given): numba compiles a
    kernel once per argument type, and a read-only array is another type."""
    a_k = HANGING if attach_accel is None else attach_accel
    return np.array(u, dtype=float), np.array(a_k, dtype=float)


_BLOCKS = [3, 3, 3, 3, 3, 3, 1]
# The measured state columns (the attitude's, 6-8, as residuals to the measured attitude):
_POSE, _TWIST, _CABLE = np.r_[0:3, 6:9], np.r_[3:6, 9:12], np.r_[12:18]
_MOCAP = np.r_[0:3, 6:9, 3:6, 9:18]  # Z of eq. 36: p, attitude, v, Omega, xi, xi_dot
_ZERO3, _NAN3 = np.zeros(3), np.full(3, np.nan)


@lru_cache(maxsize=32)
def _variances(stds: tuple[float, ...]) -> np.ndarray:
    """diag(R): each standard deviation squared, three times (not to be written to)."""
    variances = np.repeat(np.square(stds), 3)
    variances.flags.writeable = False
    return variances


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
        Q = np.diag(np.repeat(np.square(self.process), _BLOCKS))
        Q.flags.writeable = False
        object.__setattr__(self, "Q", Q)


class CableTensionUKF:
    """The UKF of one robot (eqs. 31-37): predict at the control rate from the rotor
    wrench U = [f, M] (eqs. 32-33), update asynchronously from whatever mocap delivers.
    Sigma points are redrawn before every predict and update (additive noise); each is one
    compiled call (``ukf_kernels``). Updates are gated (NaN, Mahalanobis) and counted in
    ``counters`` ('<name>.accepted', '<name>.nan', '<name>.gated', '<name>.reacquired').

    ``manifold``: the attitude on SO(3) (right perturbations R exp(dphi), one Gauss-Newton
    step of the Karcher mean, residuals log(R_a^T R_b)); False: every block added as a
    vector, the rotation vector too (the parametrization filterpy assumes).

    ``reacquire_after`` [s]: after this long without an accepted update of a kind (a mocap
    gap, or all of them gated), the prediction may have drifted beyond the Mahalanobis
    gate, which would then refuse that kind for good; its next measurement is retried with
    the covariance inflated by 2 NIS / gate until it passes (at most
    ``REACQUIRE_INFLATIONS`` times; counted '<name>.reacquired'; ``None``: never)."""

    def __init__(
        self,
        model: RobotCableModel,
        x0: np.ndarray,
        P0: np.ndarray,
        noise: CableUKFNoise | None = None,
        manifold: bool = True,
        sigma_points: SigmaPoints | None = None,
        gate_probability: float | None = 0.9999,
        reacquire_after: float | None = 0.5,
    ):
        if reacquire_after is not None and not reacquire_after > 0.0:
            raise ValueError(f"reacquire_after = {reacquire_after} s: must be > 0 or None")
        self.x = np.array(x0, dtype=float)
        P = np.asarray(P0, dtype=float)
        if self.x.shape != (STATE_DIM,) or P.shape != self.x.shape * 2 or not np.isfinite(P).all():
            raise ValueError(
                f"UKF start: need a state (19,) and a finite covariance (19, 19), got shapes "
                f"{self.x.shape} and {P.shape}"
            )
        self.P = np.ascontiguousarray(0.5 * (P + P.T))  # kept symmetric by every step
        self.model = model
        self.noise = noise or CableUKFNoise()
        self.manifold = bool(manifold)
        sigma_points = sigma_points or SigmaPoints()
        self._weights = np.vstack(sigma_points.weights(STATE_DIM))  # rows wm, wc
        self._scale = sigma_points.scale(STATE_DIM)
        self.gate_probability = gate_probability
        self.reacquire_after = reacquire_after
        self.counters: Counter[str] = Counter()
        self.last_nis: dict[str, float] = {}  # each kind's NIS (before any inflation)
        self.coasting: dict[str, float] = {}  # [s] predicted since each kind's last update
        hover_thrust = model.mass * GRAVITY + float(self.x[TENSION])
        self._last_input = np.array([hover_thrust, 0.0, 0.0, 0.0])  # until a valid input

    def predict(self, u: np.ndarray, dt: float, attach_accel: np.ndarray | None = None) -> None:
        """Propagate by dt [s] with the rotor wrench u = [f, M] and the attach point's
        acceleration (g e3, hanging, unless given); a non-finite u (a NaN rotor speed) is
        counted ('input.nan') and the last valid input is held."""
        if not dt >= 0.0:
            raise ValueError(
                f"UKF step dt = {dt} s: time must not run backwards; drop or reorder the "
                "out-of-order sample before predicting"
            )
        u, a_k = _kernel_inputs(u, attach_accel)
        if u.shape != (4,) or a_k.shape != (3,):
            raise ValueError(
                f"UKF predict: need u = [f, M_x, M_y, M_z] (4,) and an attach-point "
                f"acceleration (3,), got shapes {u.shape} and {a_k.shape}"
            )
        if np.isfinite(u).all():
            self._last_input = u
        else:
            self.counters["input.nan"] += 1
        for name in self.coasting:
            self.coasting[name] += dt
        args = (self._weights, self._scale, self.manifold, self.model.parameters)
        args += (self._last_input, float(dt), a_k, self.noise.Q)
        if not kernels.predict(self.x, self.P, *args):
            self._repair(self.P)
            kernels.predict(self.x, self.P, *args)

    def _repair(self, P: np.ndarray) -> None:
        P[:] = repaired_covariance(P)
        self.counters["covariance_repairs"] += 1

    def _update(
        self,
        name: str,
        columns: np.ndarray,
        z: np.ndarray,
        stds: tuple[float, ...],
        attitude: np.ndarray = _ZERO3,
    ) -> bool:
        """The update of the state's ``columns`` by z (``ukf_kernels.update``, the attitude's
        columns against exp(``attitude``)); False if z was refused (NaN or gated)."""
        if z.shape != columns.shape:
            raise ValueError(f"UKF {name} update: need {len(columns)} values, got {z.shape}")
        if not np.isfinite(z).all():
            self.counters[f"{name}.nan"] += 1
            return False
        gate = np.inf if self.gate_probability is None else _gate(self.gate_probability, len(z))
        coasting = self.coasting.setdefault(name, 0.0)
        reacquire = self.reacquire_after is not None and coasting > self.reacquire_after
        args = (self._weights, self._scale, self.manifold, columns, attitude, z)
        args += (_variances(stds), gate)
        P = self.P
        outcome, nis = kernels.update(self.x, P, *args)
        if outcome == kernels.NOT_POSITIVE_DEFINITE:
            self._repair(P)
            outcome, nis = kernels.update(self.x, P, *args)
        self.last_nis[name] = nis
        inflations = 0
        while outcome == kernels.GATED and reacquire and inflations < REACQUIRE_INFLATIONS:
            P = P * (2.0 * nis / gate)
            outcome, nis = kernels.update(self.x, P, *args)
            inflations += 1
        if outcome != kernels.ACCEPTED:
            self.counters[f"{name}.gated"] += 1
            return False
        self.P = P
        self.coasting[name] = 0.0
        if inflations:
            self.counters[f"{name}.reacquired"] += 1
        if self.x[TENSION] < 0.0:  # mu >= 0: a cable cannot push (slack: mu = 0)
            self.x[TENSION] = 0.0
            self.counters["tension.clamped"] += 1
        self.counters[f"{name}.accepted"] += 1
        return True

    def _attitude(self, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(z's attitude slots, the measured rotation vector): NaN slots for a non-finite R,
        so that the update is refused."""
        R = np.asarray(R, dtype=float)
        return (_ZERO3, log3(R)) if np.isfinite(R).all() else (_NAN3, _ZERO3)

    def update_pose(self, p: np.ndarray, R: np.ndarray) -> bool:
        """Mocap position p (in I) and attitude R (body to I)."""
        slots, attitude = self._attitude(R)
        z = np.concatenate([p, slots])
        stds = (self.noise.position, self.noise.attitude)
        return self._update("pose", _POSE, z, stds, attitude)

    def update_twist(self, v: np.ndarray, Omega: np.ndarray) -> bool:
        """Mocap velocity v (in I) and body rate Omega."""
        z = np.concatenate([v, Omega]).astype(float)
        return self._update("twist", _TWIST, z, (self.noise.velocity, self.noise.rate))

    def update_cable(self, xi: np.ndarray, xi_dot: np.ndarray) -> bool:
        """Cable direction xi and its rate from mocap (eq. 41)."""
        z = np.concatenate([xi, xi_dot]).astype(float)
        return self._update("cable", _CABLE, z, (self.noise.cable, self.noise.cable_rate))

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
        slots, attitude = self._attitude(R)
        z = np.concatenate([p, slots, v, Omega, xi, xi_dot])
        noise = self.noise
        stds = (noise.position, noise.attitude, noise.velocity, noise.rate)
        return self._update("mocap", _MOCAP, z, stds + (noise.cable, noise.cable_rate), attitude)

    @property
    def tension(self) -> float:
        """mu_k [N] (>= 0)."""
        return float(self.x[TENSION])

    @property
    def tension_std(self) -> float:
        return float(np.sqrt(self.P[TENSION, TENSION]))

    @property
    def cable_direction(self) -> np.ndarray:
        """xi_k, a unit vector."""
        xi = self.x[CABLE]
        return xi / np.linalg.norm(xi)

    @property
    def cable_covariance(self) -> np.ndarray:
        """The 4x4 covariance of (xi, mu), the input of the human-wrench estimator."""
        index = np.r_[12:15, 18]
        return self.P[np.ix_(index, index)]

    @property
    def attitude(self) -> np.ndarray:
        return exp3(self.x[ATTITUDE])

    @property
    def euler_zyx(self) -> np.ndarray:
        """Theta_k: yaw, pitch, roll [rad] (the paper's output)."""
        return Rotation.from_matrix(self.attitude).as_euler("ZYX")


def warm_up() -> float:
    """Compile the UKF's kernels now, or load them from numba's cache, and return the time
    it took [s]: otherwise the first predict takes it (about 20 s of CPU to compile, under
    1 s to load), e.g. in a node's first message callback."""
    tic = time.perf_counter()
    x0 = np.zeros(STATE_DIM)
    x0[12:15] = -E3
    ukf = CableTensionUKF(RobotCableModel(1.0, np.ones(3), 1.0), x0, np.eye(STATE_DIM))
    ukf.predict(ukf._last_input, 0.01)
    ukf.update_mocap(x0[:3], np.eye(3), x0[3:6], x0[9:12], x0[12:15], x0[15:18])
    return time.perf_counter() - tic
