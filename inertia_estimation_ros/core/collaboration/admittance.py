"""6-D payload admittance (paper 002, eq. 40, notes §2.10, §3.4): a human wrench becomes a
payload reference, for ground and aerial teams alike.

    M e_ddot + D e_dot + K e = w_H

e is the reference's deviation from a nominal pose (``nominal``, default: where the
admittance started): the translation p - p_nom in the world frame {w} (as x_L in 𝓘 of
eq. 40) and the rotation vector log(R_nom^T R) in the reference's body frame (as M_H in 𝓛).
The rotational part lives on SO(3) through the exponential map (erratum 15: no Euler
angles, no singularity at 90 deg pitch); e_dot is (v in {w}, omega in the body frame).
Integration: RK4 on the velocities (as the notes' appendix) and Runge-Kutta-Munthe-Kaas on
the rotation (local coordinates u, R = R_n exp(u), u_dot = dexp^-1_u(omega) to third
order), so for small angles it is the paper's RK4 on Euler angles, exactly so with K = 0.

Around eq. 40, what a pHRI user expects (notes §3.3, §5.6, issue 14):
* w_H passes a per-component dead band (a sensor bias must not make the payload creep at
  bias/D) and a first-order low-pass;
* speed and acceleration limits (norms of the linear and angular parts);
* virtual walls: a box in {w}; within ``wall_margin`` of a face a spring of stiffness
  ``wall_stiffness`` (and the damping D) pushes back, the notes' obstacle mode (K > 0);
* ``stop()``: the reference decelerates at the acceleration limits to rest and holds;
* a late w_H (``step``'s ``age``: a loaded computer, a slow network) must not make the loop
  through a stiff arm oscillate: a time-domain passivity observer and controller on the
  port (w_H, reference twist) adds damping only while the delay makes energy
  (``PassivityObserver``); without delay it never acts (the same numbers);
* M, D, K are 3x3 blocks (translation, rotation; force first as eq. 40's [F_H; M_H]),
  per axis or full; ``AdmittanceGains.from_estimate`` takes M as a fraction of the
  estimated mass and CoM inertia, so the payload feels lighter but keeps its shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..aerial.payload_controller import PayloadReference
from ..spatial import exp3, log3

FORCE, MOMENT = slice(0, 3), slice(3, 6)


class AdmittanceError(ValueError):
    """A refused admittance parameter or start; the message gives the valid range or cause."""


def _block(value: float | np.ndarray, name: str) -> np.ndarray:
    """A 3x3 matrix from a scalar, 3 per-axis values or a 3x3 matrix."""
    a = np.asarray(value, dtype=float)
    if a.ndim == 0:
        a = np.full(3, float(a))
    if a.shape == (3,):
        a = np.diag(a)
    if a.shape != (3, 3) or not np.all(np.isfinite(a)):
        raise AdmittanceError(f"{name} must be a number, 3 values or a 3x3 matrix, got {value!r}")
    return 0.5 * (a + a.T)


def _check_positive(a: np.ndarray, name: str, strict: bool, upper: float) -> None:
    low = np.linalg.eigvalsh(a)
    if (low[0] <= 0 if strict else low[0] < 0) or low[-1] > upper:
        bound = "> 0" if strict else ">= 0"
        raise AdmittanceError(
            f"{name} has eigenvalues {np.round(low, 6).tolist()}: each must be {bound} and "
            f"<= {upper:g}"
        )


@dataclass(frozen=True)
class AdmittanceGains:
    """M, D, K of eq. 40 as 3x3 blocks (translation in {w}, rotation in the body frame), the
    limits, the input conditioning and the virtual walls. Checked at construction."""

    mass: np.ndarray = field(default_factory=lambda: np.diag([0.25] * 3))  # [kg]
    inertia: np.ndarray = field(default_factory=lambda: np.diag([0.1] * 3))  # [kg m^2]
    damping_linear: np.ndarray = field(default_factory=lambda: np.diag([5.0] * 3))  # [N s/m]
    damping_angular: np.ndarray = field(default_factory=lambda: np.diag([5.0] * 3))  # [N m s]
    stiffness_linear: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # [N/m]
    stiffness_angular: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # [N m]
    max_linear_speed: float = 0.5  # [m/s]
    max_angular_speed: float = 1.0  # [rad/s]
    max_linear_acceleration: float = 2.0  # [m/s^2]
    max_angular_acceleration: float = 4.0  # [rad/s^2]
    force_dead_band: float = 0.0  # [N] per component
    moment_dead_band: float = 0.0  # [N m] per component
    cutoff_hz: float = 0.0  # low-pass of w_H; 0: none
    wall_lower: np.ndarray = field(default_factory=lambda: np.full(3, -np.inf))  # [m] in {w}
    wall_upper: np.ndarray = field(default_factory=lambda: np.full(3, np.inf))
    wall_margin: float = 0.1  # [m]
    wall_stiffness: float = 50.0  # [N/m]
    passivity_max_damping: float = 20.0  # the stabilizer's extra damping, at most x D; 0: off
    passivity_energy_cap: float = 0.05  # [J] the observer's stored energy, at most

    def __post_init__(self) -> None:
        limits = {"mass": 1e4, "inertia": 1e4, "damping_linear": 1e5, "damping_angular": 1e5}
        for name, upper in limits.items():
            a = _block(getattr(self, name), name)
            _check_positive(a, name, name in ("mass", "inertia"), upper)
            object.__setattr__(self, name, a)
        for name in ("stiffness_linear", "stiffness_angular"):
            a = _block(getattr(self, name), name)
            _check_positive(a, name, False, 1e6)
            object.__setattr__(self, name, a)
        positive = {
            "max_linear_speed": 10.0,
            "max_angular_speed": 10.0,
            "max_linear_acceleration": 100.0,
            "max_angular_acceleration": 100.0,
        }
        for name, upper in positive.items():
            self._check_range(name, 0.0, upper, open_low=True)
        for name, upper in (("force_dead_band", 1e3), ("moment_dead_band", 1e3)):
            self._check_range(name, 0.0, upper)
        self._check_range("cutoff_hz", 0.0, 1e3)
        self._check_range("wall_margin", 0.0, 10.0)
        self._check_range("wall_stiffness", 0.0, 1e6)
        self._check_range("passivity_max_damping", 0.0, 1e3)
        self._check_range("passivity_energy_cap", 0.0, 1e3)
        lower = np.broadcast_to(np.asarray(self.wall_lower, dtype=float), (3,)).copy()
        upper = np.broadcast_to(np.asarray(self.wall_upper, dtype=float), (3,)).copy()
        if np.any(np.isnan(lower)) or np.any(np.isnan(upper)) or np.any(lower >= upper):
            raise AdmittanceError(
                f"walls: each lower bound {lower} must be below its upper bound {upper}"
            )
        object.__setattr__(self, "wall_lower", lower)
        object.__setattr__(self, "wall_upper", upper)

    def _check_range(self, name: str, low: float, high: float, open_low: bool = False) -> None:
        v = float(getattr(self, name))
        if not (np.isfinite(v) and (v > low if open_low else v >= low) and v <= high):
            side = "(" if open_low else "["
            raise AdmittanceError(
                f"{name} = {v!r} is outside its valid range {side}{low:g}, {high:g}]"
            )

    @classmethod
    def from_estimate(
        cls,
        mass: float,
        inertia_about_com: np.ndarray,
        fraction: float = 0.3,
        time_constant: float = 0.25,
        **others: object,
    ) -> AdmittanceGains:
        """M = fraction x (estimated mass, estimated CoM inertia), so the payload feels
        ``fraction`` of its weight in inertia but keeps its shape; D = M / time_constant
        (a push settles to w / D within about that time)."""
        if not (np.isfinite(mass) and mass > 0):
            raise AdmittanceError(f"the estimated mass {mass!r} must be positive")
        if not 0.01 <= fraction <= 1.0:
            raise AdmittanceError(f"fraction = {fraction!r} is outside [0.01, 1]")
        if not 0.01 <= time_constant <= 10.0:
            raise AdmittanceError(f"time_constant = {time_constant!r} is outside [0.01, 10] s")
        M = fraction * mass * np.eye(3)
        J = fraction * _block(inertia_about_com, "inertia_about_com")
        J = J + 1e-6 * max(np.trace(J), 1e-3) * np.eye(3)  # a thin rod keeps J > 0
        return cls(M, J, M / time_constant, J / time_constant, **others)


@dataclass(frozen=True)
class AdmittanceState:
    """The reference: position p and velocity v, acceleration a in {w}; rotation R (body to
    {w}), body angular velocity omega and its derivative alpha."""

    p: np.ndarray
    R: np.ndarray
    v: np.ndarray = field(default_factory=lambda: np.zeros(3))
    omega: np.ndarray = field(default_factory=lambda: np.zeros(3))
    a: np.ndarray = field(default_factory=lambda: np.zeros(3))
    alpha: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def payload_reference(self) -> PayloadReference:
        """The aerial payload controller's reference (paper 002 eq. 12's x, v, a, R, Omega,
        Omega_dot): the admittance drives an aerial team too."""
        return PayloadReference(
            self.p.copy(),
            self.v.copy(),
            self.a.copy(),
            self.R.copy(),
            self.omega.copy(),
            self.alpha.copy(),
        )


# The RK4 stages work on 3-vectors as tuples of floats and 3x3 matrices as tuples of rows:
# a dozen 3-element numpy calls per stage cost more in numpy's per-call overhead than in
# arithmetic (issue 14: the planner's CPU per instant).
Vector = tuple[float, float, float]
Rows = tuple[Vector, Vector, Vector]


def _rows(A: np.ndarray) -> Rows:
    return tuple(tuple(row) for row in A.tolist())


def _times(A: Rows, x: Vector) -> Vector:
    """A x."""
    (a, b, c), (x0, x1, x2) = A, x
    return (
        a[0] * x0 + a[1] * x1 + a[2] * x2,
        b[0] * x0 + b[1] * x1 + b[2] * x2,
        c[0] * x0 + c[1] * x1 + c[2] * x2,
    )


def _cross(a: Vector, b: Vector) -> Vector:
    (a0, a1, a2), (b0, b1, b2) = a, b
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


def _minus(a: Vector, b: Vector) -> Vector:
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


def dexp_inverse(u: Vector, omega: Vector) -> Vector:
    """dexp_u^-1 omega on so(3) to third order: omega - [u] omega / 2 + [u]^2 omega / 12
    (enough for a fourth-order RKMK step)."""
    c = _cross(u, omega)
    d = _cross(u, c)
    return tuple(w - 0.5 * ci + di / 12.0 for w, ci, di in zip(omega, c, d, strict=True))


class PassivityObserver:
    """A time-domain passivity observer and controller (Hannaford & Ryu 2002; for a delayed
    channel, Ryu, Artigas & Preusche 2010) on the admittance's port: the human wrench w_H
    and the reference twist V (linear velocity in {w}, angular in the body frame).

    The wrench that reaches the admittance at time t was applied at t - age. The human did
    the work of each wrench along the reference's path at its own time (its stamp, the steps
    tiling the human's time axis: the stamps are made monotonic), the admittance receives it
    along the path now:

        E(t) = sum_k w_k (P(h_k+1) - P(h_k)) - sum_n w_n (P(t_n + dt) - P(t_n)) + dissipated,

    P the path integral of V, h_k the wrench's time. Without delay both sums are the same
    numbers and E stays exactly 0. A delay that lets the admittance give back more than the
    human put in (the loop's oscillation) makes E negative; the controller then adds damping
    beta D (beta <= ``max_damping``) that dissipates the deficit within the next step. E is
    capped at ``cap`` [J] so that energy stored while all was well cannot fund an oscillation
    later."""

    def __init__(self, max_damping: float, cap: float) -> None:
        self.max_damping, self.cap = max_damping, cap
        self.energy = 0.0  # E [J]
        self.damping = 0.0  # beta of the last step
        self.dissipated = 0.0  # [J] by the extra damping, since the start
        self.step_dissipated = 0.0  # [J] ... in the last step
        self.age = 0.0  # [s] of the last wrench
        self._clock = 0.0
        self._times, self._paths = [0.0], [(0.0,) * 6]
        self._human: tuple[float, tuple] | None = None  # (h, the wrench applied from h)

    def _path(self, t: float) -> tuple:
        """P(t), linear between the steps (the oldest before them: no work before)."""
        times, paths = self._times, self._paths
        while len(times) > 2 and times[1] <= t:  # h only grows: what is behind it goes
            times.pop(0)
            paths.pop(0)
        if t <= times[0]:
            return paths[0]
        for i in range(1, len(times)):
            if t == times[i]:
                return paths[i]
            if t < times[i]:
                s = (t - times[i - 1]) / (times[i] - times[i - 1])
                return tuple(a + s * (b - a) for a, b in zip(paths[i - 1], paths[i], strict=True))
        return paths[-1]

    def before_step(self, age: float, dt: float, rate: float) -> float:
        """Book the human's work up to this wrench's time (now - ``age``), cap E, and the
        extra damping beta (x D) for this step; ``rate``: the dissipation V^T D V [W] now."""
        self.age = age
        h = self._clock - age
        if self._human is not None:
            start, w = self._human
            h = max(h, start)
            before = self._path(start)
            done = _dot6(w, _minus6(self._path(h), before))
            self.energy = min(self.energy + done, self.cap)
        self._human = (h, None)
        self.damping = 0.0
        if self.energy < 0.0 and rate > 0.0:
            self.damping = min(-self.energy / (rate * dt), self.max_damping)
        return self.damping

    def after_step(self, w: tuple, dt: float, step_path: tuple, dissipation: float) -> None:
        """Book the admittance's work of the step (w along the path ``step_path``) and what
        the extra damping dissipated [J] (the same differences of P as the human's side)."""
        self._human = (self._human[0], w)
        self._clock += dt
        before = self._paths[-1]
        self._times.append(self._clock)
        self._paths.append(tuple(a + b for a, b in zip(before, step_path, strict=True)))
        self.energy += dissipation - _dot6(w, _minus6(self._paths[-1], before))
        self.dissipated += dissipation
        self.step_dissipated = dissipation


def _dot6(a: tuple, b: tuple) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _minus6(a: tuple, b: tuple) -> tuple:
    return tuple(x - y for x, y in zip(a, b, strict=True))


class Admittance:
    """Eq. 40 on R^3 x SO(3) (module docstring). ``step(force_w, moment_b, dt)`` advances the
    reference by dt under the human force (in {w}) and moment (body frame, about the point
    the reference tracks, the CoM).

    What depends on the gains alone is computed once here: the inverse virtual mass and
    inertia, the dead band, which springs exist (a zero stiffness skips the pose error and
    its rotation per RK4 stage; the gains from an estimate have none) and the box inside the
    walls' margins (inside it no wall pushes). A step gives the numbers of the term-by-term
    evaluation bit for bit (``test_admittance_sequence.py``)."""

    def __init__(self, gains: AdmittanceGains, start: AdmittanceState) -> None:
        self.gains = gains
        self.state = start
        self.nominal = (start.p.copy(), start.R.copy())
        self.filtered = np.zeros(6)
        self.stopping = False
        self._inverse_mass = _rows(np.linalg.inv(gains.mass))
        self._inverse_inertia = _rows(np.linalg.inv(gains.inertia))
        self._matrices = {
            name: _rows(getattr(gains, name))
            for name in ("damping_linear", "damping_angular", "inertia", "stiffness_linear")
        }
        self._walls = bool(np.isfinite([gains.wall_lower, gains.wall_upper]).any())
        margins = (gains.wall_lower + gains.wall_margin, gains.wall_upper - gains.wall_margin)
        self._margins = tuple(zip(*(m.tolist() for m in margins), strict=True))
        self._springs = (bool(gains.stiffness_linear.any()), bool(gains.stiffness_angular.any()))
        self._band = np.repeat([gains.force_dead_band, gains.moment_dead_band], 3)
        self._smoothing = (0.0, 0.0)  # (dt, the low-pass's gain for dt)
        self.passivity = self._observer()
        self._boost = 0.0  # the stabilizer's extra damping of this step, x D

    def _observer(self) -> PassivityObserver | None:
        g = self.gains
        if g.passivity_max_damping <= 0:
            return None
        return PassivityObserver(g.passivity_max_damping, g.passivity_energy_cap)

    # ----- modes --------------------------------------------------------------------------
    def reset(self, start: AdmittanceState, keep_nominal: bool = False) -> None:
        """Bumpless restart from ``start`` (e.g. the reference another mode published last):
        the filter is cleared and, unless ``keep_nominal``, the nominal pose is ``start``."""
        self.state = replace(start, a=np.zeros(3), alpha=np.zeros(3))
        if not keep_nominal:
            self.nominal = (start.p.copy(), start.R.copy())
        self.filtered = np.zeros(6)
        self.stopping = False
        self.passivity = self._observer()

    def stop(self) -> None:
        """Safe stop: ignore the human, decelerate within the limits to rest, then hold."""
        self.stopping = True

    @property
    def at_rest(self) -> bool:
        return not self.state.v.any() and not self.state.omega.any()

    # ----- input conditioning -------------------------------------------------------------
    def condition(self, force_w: np.ndarray, moment_b: np.ndarray, dt: float) -> np.ndarray:
        """Dead band (continuous: |w| - band, sign kept), then the first-order low-pass."""
        cutoff_hz = self.gains.cutoff_hz
        w = np.concatenate([force_w, moment_b]).astype(float)
        w = np.sign(w) * np.maximum(np.abs(w) - self._band, 0.0)
        if cutoff_hz > 0:
            if self._smoothing[0] != dt:
                self._smoothing = (dt, 1.0 - np.exp(-2 * np.pi * cutoff_hz * dt))
            self.filtered += self._smoothing[1] * (w - self.filtered)
        else:
            self.filtered = w
        return self.filtered.copy()

    # ----- dynamics -----------------------------------------------------------------------
    def _wall_force(self, p: Vector) -> Vector:
        """The spring of every wall whose margin p has entered, in {w} (D damps it)."""
        k = self.gains.wall_stiffness
        return tuple(
            k * (max(low - x, 0.0) - max(x - high, 0.0))
            for x, (low, high) in zip(p, self._margins, strict=True)
        )

    def _clear_of_walls(self, p: Vector) -> bool:
        """p outside every wall's margin (there the walls' force is exactly zero); NaN is not."""
        return all(low <= x <= high for x, (low, high) in zip(p, self._margins, strict=True))

    def _accelerations(
        self, w: tuple[Vector, Vector], p: Vector, R: np.ndarray | None, v: Vector, omega: Vector
    ) -> tuple[Vector, Vector]:
        """(a, alpha) of eq. 40, the Euler term of a full rotational M included, clipped to
        the acceleration limits; w = (force, moment). R is needed (and may be None otherwise)
        only with a rotational spring; zero terms are skipped (the same numbers)."""
        g, matrices = self.gains, self._matrices
        linear_spring, angular_spring = self._springs
        damped = _times(matrices["damping_linear"], v)
        if self._boost:  # the stabilizer's extra damping (beta D)
            damped = _scaled(damped, 1.0 + self._boost)
        force = _minus(w[0], damped)
        if linear_spring:
            offset = _minus(p, tuple(self.nominal[0].tolist()))
            force = _minus(force, _times(matrices["stiffness_linear"], offset))
        if self._walls and not self._clear_of_walls(p):
            wall = self._wall_force(p)
            force = tuple(f + x for f, x in zip(force, wall, strict=True))
        damped = _times(matrices["damping_angular"], omega)
        if self._boost:
            damped = _scaled(damped, 1.0 + self._boost)
        moment = _minus(w[1], damped)
        if angular_spring:
            spring = g.stiffness_angular @ log3(self.nominal[1].T @ R)
            moment = _minus(moment, tuple(spring.tolist()))
        moment = _minus(moment, _cross(omega, _times(matrices["inertia"], omega)))
        a = _clip_norm(_times(self._inverse_mass, force), g.max_linear_acceleration)
        alpha = _clip_norm(_times(self._inverse_inertia, moment), g.max_angular_acceleration)
        return a, alpha

    def _braking(self, v: np.ndarray, omega: np.ndarray, dt: float) -> tuple:
        """Decelerations that bring v and omega to zero at the limits, not past zero."""
        g = self.gains

        def brake(x: np.ndarray, limit: float) -> np.ndarray:
            speed = math.sqrt(x.dot(x))
            return -x / dt if speed <= limit * dt else -limit * x / speed

        return brake(v, g.max_linear_acceleration), brake(omega, g.max_angular_acceleration)

    def step(
        self, force_w: np.ndarray, moment_b: np.ndarray, dt: float, age: float = 0.0
    ) -> AdmittanceState:
        """Advance by dt [s] (w_H held over the step, notes §3.4); returns the new reference.
        ``age`` [s]: how long ago the human applied this wrench (now - its stamp), for the
        passivity observer (``PassivityObserver``; without delay it never acts)."""
        if not (np.isfinite(dt) and dt > 0):
            raise AdmittanceError(f"dt = {dt!r} must be a positive time step [s]")
        s = self.state
        if self.stopping:
            a, alpha = self._braking(s.v, s.omega, dt)
            v, omega = s.v + a * dt, s.omega + alpha * dt
            p = s.p + 0.5 * (s.v + v) * dt
            R = s.R @ exp3(0.5 * (s.omega + omega) * dt)
            self.state = AdmittanceState(p, R, v, omega, a, alpha)
            return self.state
        w = self.condition(np.asarray(force_w), np.asarray(moment_b), dt)
        if self.passivity is None:
            self.state = self._rk4(w, dt)
        else:
            self._observed_step(w, dt, max(float(age), 0.0))
        return self.state

    def _dissipation_rate(self, v: Vector, omega: Vector) -> float:
        """v^T D v + omega^T D omega [W]: what the damping D dissipates at (v, omega)."""
        m = self._matrices
        Dv, Dw = _times(m["damping_linear"], v), _times(m["damping_angular"], omega)
        return _dot6((*v, *omega), (*Dv, *Dw))

    def _observed_step(self, w: np.ndarray, dt: float, age: float) -> None:
        """A step under the passivity observer and controller (``PassivityObserver``)."""
        start = self.state
        rate = self._dissipation_rate(tuple(start.v.tolist()), tuple(start.omega.tolist()))
        self._boost = self.passivity.before_step(age, dt, rate)
        try:
            end = self._rk4(w, dt)
        finally:
            boost, self._boost = self._boost, 0.0
        v = tuple((0.5 * (start.v + end.v)).tolist())
        omega = tuple((0.5 * (start.omega + end.omega)).tolist())
        path = (*(end.p - start.p).tolist(), *(dt * x for x in omega))
        dissipated = boost * dt * self._dissipation_rate(v, omega) if boost else 0.0
        self.passivity.after_step(tuple(w.tolist()), dt, path, dissipated)
        self.state = end

    def _rk4(self, w: np.ndarray, dt: float) -> AdmittanceState:
        """One RK4 / RKMK4 step of (p, u, v, omega), R = R_n exp(u), on floats."""
        s = self.state
        angular_spring = self._springs[1]
        wrench = tuple(w[FORCE].tolist()), tuple(w[MOMENT].tolist())

        def f(x: list[float]) -> list[float]:
            p, u, v, omega = tuple(x[:3]), tuple(x[3:6]), tuple(x[6:9]), tuple(x[9:])
            R = s.R @ exp3(np.array(u)) if angular_spring else None
            a, alpha = self._accelerations(wrench, p, R, v, omega)
            return [*v, *dexp_inverse(u, omega), *a, *alpha]

        def ahead(x: list[float], h: float, k: list[float]) -> list[float]:
            return [xi + h * ki for xi, ki in zip(x, k, strict=True)]

        x0 = [*s.p.tolist(), 0.0, 0.0, 0.0, *s.v.tolist(), *s.omega.tolist()]
        k1 = f(x0)
        k2 = f(ahead(x0, 0.5 * dt, k1))
        k3 = f(ahead(x0, 0.5 * dt, k2))
        k4 = f(ahead(x0, dt, k3))
        h = dt / 6.0
        x = [
            xi + h * (((a + 2 * b) + 2 * c) + d)
            for xi, a, b, c, d in zip(x0, k1, k2, k3, k4, strict=True)
        ]
        g = self.gains
        p = tuple(x[:3])
        v = _clip_norm(tuple(x[6:9]), g.max_linear_speed)
        omega = _clip_norm(tuple(x[9:]), g.max_angular_speed)
        R = s.R @ exp3(np.array(x[3:6]))
        a, alpha = self._accelerations(wrench, p, R, v, omega)
        v, omega, a, alpha = (np.array(vector) for vector in (v, omega, a, alpha))
        return AdmittanceState(np.array(p), R, v, omega, a, alpha)


def _scaled(x: Vector, factor: float) -> Vector:
    return x[0] * factor, x[1] * factor, x[2] * factor


def _clip_norm(x: Vector, limit: float) -> Vector:
    norm = math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    if norm > limit:
        scale = limit / norm
        return x[0] * scale, x[1] * scale, x[2] * scale
    return x
