"""Exact test data for a rigid payload carried by N robots (paper 000's setting), plus sensor noise.

Nothing here is estimated: every quantity is computed in closed form.

* ``PayloadMotion``: any payload trajectory built from a pivot point of the payload
  that moves along a 3-D signal, and ZYX angles about it. ``evaluate`` gives the pose
  T_w_s of the reference grasp frame {s} and its exact body twist V_s and derivative dV_s.
  Signals: ``Multisine`` (sums of sines) and ``SmoothWaypoints`` (minimum-jerk moves
  between holds), both with analytic first and second derivatives.
* Newton-Euler: the net wrench on the payload about {s}, in {s},
  ``F_s = G (dV_s - (0, g_s)) - ad(V_s)^T G V_s`` (Modern Robotics Eq. 8.42), is split among
  the robots, ``F_s = sum_i Ad(T_i_s)^T F_i``, by the minimum-norm solution plus any
  internal-force distribution projected onto the null space of that grasp map.
  Robots without moment capability (passive gimbals) get pure forces.
* Unmeasured external wrenches (``HandPush``, ``HumanGuidance``): a human's wrench F_ext on
  the payload during chosen time intervals; the robots then apply F_s - F_ext.
* ``NoiseModel``: white noise, encoder quantization (on the ZYX angles and positions of
  T_i0_i), constant biases and encoder zero offsets, wrench scale errors and clock offsets.
  Per-robot constants are drawn once (``draw_errors``) so that they can stay the same
  over several trials, as a calibration error would.
* ``paper_*``: the configuration of paper 000, Table I, and its experiment protocol (notes §7).

Robot i's measurements follow ``core.samples``: T_i0_i (its home frame {i0} is fixed in
the world), the body twist V_i = Ad(T_i_s) V_s and its derivative in {i}, the wrench F_i it
applies on the payload, and gravity in {i}. A robot's stamps are its true sample times plus
its clock offset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
from scipy.spatial.transform import Rotation

from ..core import spatial as sp
from ..core.inertial import InertialParameters
from ..core.samples import GraspSample, GraspSeries

GRAVITY_W = np.array([0.0, 0.0, -9.81])
_ZYX_AXES = np.eye(3)[[2, 1, 0]]


# ----- signals with exact derivatives ----------------------------------------------------------
@dataclass(frozen=True)
class Multisine:
    """x_d(t) = offset_d + sum_k A_dk sin(2 pi f_dk t + phi_dk), for d = 0, 1, 2."""

    amplitudes: np.ndarray  # (3, K)
    frequencies: np.ndarray  # (3, K) [Hz]
    phases: np.ndarray  # (3, K) [rad]
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @classmethod
    def random(
        cls,
        rng: np.random.Generator,
        peak: float | Sequence[float],
        band_hz: tuple[float, float],
        components: int = 3,
    ) -> Multisine:
        """Random frequencies in band_hz and phases; amplitudes so that |x_d| <= peak_d."""
        peak = np.broadcast_to(np.asarray(peak, dtype=float), (3,))
        freqs = rng.uniform(*band_hz, size=(3, components))
        amps = np.repeat(peak[:, None] / components, components, axis=1)
        return cls(amps, freqs, rng.uniform(0, 2 * np.pi, size=(3, components)))

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w = 2 * np.pi * self.frequencies
        arg = w[None] * np.asarray(t, dtype=float)[:, None, None] + self.phases[None]
        x = self.offset + np.sum(self.amplitudes * np.sin(arg), axis=2)
        xd = np.sum(self.amplitudes * w * np.cos(arg), axis=2)
        xdd = -np.sum(self.amplitudes * w**2 * np.sin(arg), axis=2)
        return x, xd, xdd


@dataclass(frozen=True)
class SmoothWaypoints:
    """Hold each waypoint for ``hold`` s, then move to the next in ``move`` s (minimum jerk)."""

    waypoints: np.ndarray  # (M, 3)
    hold: float
    move: float

    @property
    def duration(self) -> float:
        return len(self.waypoints) * self.hold + (len(self.waypoints) - 1) * self.move

    def holding(self, t: np.ndarray) -> np.ndarray:
        """Index of the waypoint held at each time, -1 while moving."""
        period = self.hold + self.move
        k = np.clip(np.floor(np.asarray(t) / period).astype(int), 0, len(self.waypoints) - 1)
        inside = np.asarray(t) - k * period <= self.hold
        return np.where(inside, k, -1)

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.asarray(t, dtype=float)
        wp = np.asarray(self.waypoints, dtype=float)
        period = self.hold + self.move
        k = np.clip(np.floor(t / period).astype(int), 0, len(wp) - 1)
        nxt = np.minimum(k + 1, len(wp) - 1)
        blend, d1, d2 = _min_jerk(np.clip((t - k * period - self.hold) / self.move, 0.0, 1.0))
        d1, d2 = d1 / self.move, d2 / self.move**2
        delta = wp[nxt] - wp[k]
        return wp[k] + blend[:, None] * delta, d1[:, None] * delta, d2[:, None] * delta


Signal3 = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Ramped:
    """signal(t) faded in over [0, ramp] and out over [duration - ramp, duration] (minimum
    jerk), zero outside: a motion that starts and ends at rest."""

    signal: Signal3
    duration: float
    ramp: float

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.asarray(t, dtype=float)
        b1, d1, dd1 = _min_jerk(np.clip(t / self.ramp, 0.0, 1.0))
        b2, d2, dd2 = _min_jerk(np.clip((self.duration - t) / self.ramp, 0.0, 1.0))
        d1, dd1, d2, dd2 = d1 / self.ramp, dd1 / self.ramp**2, -d2 / self.ramp, dd2 / self.ramp**2
        env, denv = (b1 * b2)[:, None], (d1 * b2 + b1 * d2)[:, None]
        ddenv = (dd1 * b2 + 2 * d1 * d2 + b1 * dd2)[:, None]
        x, xd, xdd = self.signal(t)
        return env * x, denv * x + env * xd, ddenv * x + 2 * denv * xd + env * xdd


def _min_jerk(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The minimum-jerk blend b(s) = 10 s^3 - 15 s^4 + 6 s^5 and its first two derivatives."""
    return (
        10 * s**3 - 15 * s**4 + 6 * s**5,
        30 * s**2 - 60 * s**3 + 30 * s**4,
        60 * s - 180 * s**2 + 120 * s**3,
    )


def zyx_body_rates(
    q: np.ndarray, qd: np.ndarray, qdd: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R = Rz(q0) Ry(q1) Rx(q2), its body angular velocity and acceleration, for (Q, 3) angles.

    Composition rule for R = A B: omega = B^T omega_A + omega_B and
    alpha = B^T alpha_A - [omega_B] B^T omega_A + alpha_B.
    """
    R = np.tile(np.eye(3), (len(q), 1, 1))
    omega = np.zeros((len(q), 3))
    alpha = np.zeros((len(q), 3))
    for k, axis in enumerate(_ZYX_AXES):
        B = Rotation.from_rotvec(axis[None] * q[:, k : k + 1]).as_matrix()
        Bt = np.swapaxes(B, 1, 2)
        omega_B, alpha_B = axis * qd[:, k : k + 1], axis * qdd[:, k : k + 1]
        Bt_omega = np.einsum("kij,kj->ki", Bt, omega)
        alpha = np.einsum("kij,kj->ki", Bt, alpha) - np.cross(omega_B, Bt_omega) + alpha_B
        omega = Bt_omega + omega_B
        R = R @ B
    return R, omega, alpha


@dataclass(frozen=True)
class PayloadMotion:
    """A payload trajectory: the payload point ``pivot_s`` (in {s}) is displaced by
    ``translation`` (world frame) from its start, while the payload turns by the ZYX
    angles ``rotation`` relative to its start orientation; T_w_s0 is the start pose."""

    rotation: Signal3
    translation: Signal3
    pivot_s: np.ndarray = field(default_factory=lambda: np.zeros(3))
    T_w_s0: np.ndarray = field(default_factory=lambda: np.eye(4))

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T_w_s (Q, 4, 4), body twist V_s (Q, 6), its derivative dV_s (Q, 6)), exact."""
        t = np.asarray(t, dtype=float)
        R_rel, omega, alpha = zyx_body_rates(*self.rotation(t))
        d, dd, ddd = self.translation(t)
        R = self.T_w_s0[:3, :3] @ R_rel
        Rt = np.swapaxes(R, 1, 2)
        r = np.asarray(self.pivot_s, dtype=float)
        pivot_w = self.T_w_s0[:3, :3] @ r + self.T_w_s0[:3, 3] + d
        T = np.tile(np.eye(4), (len(t), 1, 1))
        T[:, :3, :3] = R
        T[:, :3, 3] = pivot_w - R @ r
        Rt_dd = np.einsum("kij,kj->ki", Rt, dd)
        v = Rt_dd - np.cross(omega, r)
        dv = np.einsum("kij,kj->ki", Rt, ddd) - np.cross(omega, Rt_dd) - np.cross(alpha, r)
        return T, np.concatenate([omega, v], axis=1), np.concatenate([alpha, dv], axis=1)


def still(t_w_s0: np.ndarray | None = None) -> PayloadMotion:
    """A payload at rest at T_w_s0."""
    zero = SmoothWaypoints(np.zeros((1, 3)), hold=1.0, move=1.0)
    return PayloadMotion(zero, zero, T_w_s0=np.eye(4) if t_w_s0 is None else t_w_s0)


# ----- the team and its wrenches ---------------------------------------------------------------
@dataclass(frozen=True)
class Team:
    """N robots holding one payload: grasp frames T_s_i in the reference grasp frame {s}."""

    robot_ids: tuple[str, ...]
    reference_id: str
    T_s_i: Mapping[str, np.ndarray]
    moment_capable: Mapping[str, bool] = field(default_factory=dict)  # default True

    def __post_init__(self) -> None:
        if self.reference_id not in self.robot_ids:
            raise ValueError(f"reference robot {self.reference_id!r} is not in the team")
        if set(self.T_s_i) != set(self.robot_ids):
            raise ValueError("T_s_i must give one grasp frame per robot id")
        if not np.allclose(self.T_s_i[self.reference_id], np.eye(4)):
            raise ValueError("the reference robot's grasp frame is {s}: its T_s_i must be I")

    def has_torque(self, robot_id: str) -> bool:
        return self.moment_capable.get(robot_id, True)

    def grasp_map(self) -> np.ndarray:
        """G (6 x 6N): F_s = G [F_1; ...; F_N]; moment columns of force-only robots are zero."""
        blocks = []
        for rid in self.robot_ids:
            block = sp.adjoint(sp.inverse(self.T_s_i[rid])).T
            if not self.has_torque(rid):
                block = block.copy()
                block[:, :3] = 0.0
            blocks.append(block)
        return np.hstack(blocks)


def ring_team(
    n: int, rng: np.random.Generator, radius: float = 0.7, moment_capable: bool = False
) -> tuple[Team, np.ndarray]:
    """n robots on a ring of the given radius about the origin of a payload frame {p}, in
    its x-y plane (heights within 5 cm), each grasp yawed at random. {s} is robot_1's grasp.
    Returns the team and T_s_p, to express a payload given in {p} in {s}."""
    angles = np.sort(rng.uniform(0, 2 * np.pi, n))
    T_p_i = [
        sp.transform(
            Rotation.from_euler("z", rng.uniform(-np.pi, np.pi)).as_matrix(),
            radius * np.array([np.cos(a), np.sin(a), 0.0]) + [0.0, 0.0, rng.uniform(-0.05, 0.05)],
        )
        for a in angles
    ]
    ids = tuple(f"robot_{k + 1}" for k in range(n))
    T_s_p = sp.inverse(T_p_i[0])
    T_s_i = {r: T_s_p @ T for r, T in zip(ids, T_p_i, strict=True)}
    T_s_i[ids[0]] = np.eye(4)
    return Team(ids, ids[0], T_s_i, {r: moment_capable for r in ids}), T_s_p


def squeeze_forces(team: Team, magnitude: float) -> np.ndarray:
    """A constant internal-force proposal (6N): every grasp pushes toward the grasp centroid."""
    centroid = np.mean([team.T_s_i[r][:3, 3] for r in team.robot_ids], axis=0)
    out = []
    for rid in team.robot_ids:
        T = team.T_s_i[rid]
        toward = centroid - T[:3, 3]
        norm = np.linalg.norm(toward)
        f_s = magnitude * toward / norm if norm > 0 else np.zeros(3)
        out.append(np.r_[0.0, 0.0, 0.0, T[:3, :3].T @ f_s])
    return np.concatenate(out)


def split_wrench(team: Team, F_s: np.ndarray, internal: np.ndarray | None = None) -> np.ndarray:
    """Robot wrenches (Q, N, 6), each in its {i}, whose sum about {s} is F_s (Q, 6).

    Minimum-norm split plus ``internal`` ((6N,) or (Q, 6N) proposals) projected onto
    null(G), so internal forces never change the net wrench.
    """
    G = team.grasp_map()
    G_pinv = np.linalg.pinv(G)
    F = np.atleast_2d(F_s) @ G_pinv.T
    if internal is not None:
        F = F + np.atleast_2d(internal) @ (np.eye(G.shape[1]) - G_pinv @ G).T
    F = F.reshape(len(F), len(team.robot_ids), 6)
    for k, rid in enumerate(team.robot_ids):
        if not team.has_torque(rid):
            F[:, k, :3] = 0.0
    return F


def net_wrench(
    payload_s: InertialParameters, V_s: np.ndarray, dV_s: np.ndarray, g_s: np.ndarray
) -> np.ndarray:
    """Newton-Euler (Modern Robotics Eq. 8.42): F_s = G (dV - (0, g)) - ad(V)^T G V, (Q, 6).

    With G V = (m, f): -ad(V)^T (m, f) = (omega x m + v x f, omega x f), for all samples.
    """
    G = payload_s.spatial_inertia
    accel = dV_s - np.concatenate([np.zeros_like(g_s), g_s], axis=1)
    V_s = np.asarray(V_s, dtype=float)
    momentum = V_s @ G.T
    omega, v, m, f = V_s[:, :3], V_s[:, 3:], momentum[:, :3], momentum[:, 3:]
    bias = np.concatenate([np.cross(omega, m) + np.cross(v, f), np.cross(omega, f)], axis=1)
    return accel @ G.T + bias


# ----- unmeasured external wrenches --------------------------------------------------------------
def interval_window(
    t: np.ndarray, intervals: Sequence[tuple[float, float]], ramp: float
) -> np.ndarray:
    """(Q,) in [0, 1]: 1 inside the intervals, switched on and off by a smoothstep of ``ramp``
    seconds that starts at each interval's start and ends at its end."""
    t = np.asarray(t, dtype=float)
    out = np.zeros(len(t))
    for start, stop in intervals:
        rise = np.clip((t - start) / ramp, 0.0, 1.0) if ramp > 0 else (t >= start) * 1.0
        fall = np.clip((stop - t) / ramp, 0.0, 1.0) if ramp > 0 else (t <= stop) * 1.0
        out = np.maximum(out, _min_jerk(rise)[0] * _min_jerk(fall)[0])
    return out


@dataclass(frozen=True)
class HandPush:
    """A hand on the payload, measured by no robot: a force fixed in the world (e.g. leaning
    down) at the payload point ``point_s`` (in {s}), plus a moment (world axes), during the
    time ``intervals`` [s], switched on and off over ``ramp`` seconds."""

    intervals: tuple[tuple[float, float], ...]
    force_w: tuple[float, float, float] = (0.0, 0.0, -10.0)  # [N]
    point_s: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [m]
    moment_w: tuple[float, float, float] = (0.0, 0.0, 0.0)  # [N m]
    ramp: float = 0.1

    def __call__(self, t: np.ndarray, T_w_s: np.ndarray, inertial_s: np.ndarray) -> np.ndarray:
        """The wrench (Q, 6) on the payload about {s}, in {s}."""
        on = interval_window(t, self.intervals, self.ramp)[:, None]
        R_t = np.swapaxes(T_w_s[:, :3, :3], 1, 2)
        f_s = on * (R_t @ np.asarray(self.force_w, dtype=float))
        m_s = np.cross(np.asarray(self.point_s, dtype=float), f_s)
        m_s = m_s + on * (R_t @ np.asarray(self.moment_w, dtype=float))
        return np.concatenate([m_s, f_s], axis=1)


@dataclass(frozen=True)
class HumanGuidance:
    """A human who guides the payload while the robots float and carry its weight (paper
    000's kinematics trials): during the ``intervals`` the human supplies ``share`` of the
    payload's inertial wrench G dV - ad(V)^T G V, everything but the weight."""

    intervals: tuple[tuple[float, float], ...]
    share: float = 1.0
    ramp: float = 0.5

    def __call__(self, t: np.ndarray, T_w_s: np.ndarray, inertial_s: np.ndarray) -> np.ndarray:
        on = interval_window(t, self.intervals, self.ramp)[:, None]
        return self.share * on * inertial_s


ExternalWrench = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


# ----- sensor errors ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SensorErrors:
    """Per-robot constant errors: drawn once, kept over trials."""

    angle_offset: Mapping[str, np.ndarray]  # ZYX encoder zero offsets [rad]
    twist_bias: Mapping[str, np.ndarray]  # (omega, v) bias
    wrench_bias: Mapping[str, np.ndarray]  # (m, f) bias
    wrench_scale: Mapping[str, float]  # measured = (1 + scale) * true + bias + noise
    clock_offset: Mapping[str, float]  # stamp = true time + offset [s]
    home_tilt: Mapping[str, np.ndarray] = field(default_factory=dict)  # rotation vector [rad]


@dataclass(frozen=True)
class NoiseModel:
    """Sensor errors of the robots' grasp measurements (all default to zero)."""

    position_std: float = 0.0  # white noise on p_i0_i [m]
    angle_std: float = 0.0  # white noise on the ZYX encoder angles of R_i0_i [rad]
    position_quantum: float = 0.0  # position resolution [m]
    angle_quantum: float = 0.0  # encoder resolution of the ZYX angles [rad]
    angle_offset_std: float = 0.0  # constant encoder zero offsets [rad]
    angular_velocity_std: float = 0.0  # white noise on omega_i [rad/s]
    linear_velocity_std: float = 0.0  # on v_i [m/s]
    angular_acceleration_std: float = 0.0  # on d omega_i / dt [rad/s^2]
    linear_acceleration_std: float = 0.0  # on d v_i / dt [m/s^2]
    twist_bias_std: tuple[float, float] = (0.0, 0.0)  # constant (omega, v) bias
    force_std: float = 0.0  # white noise on f_i [N]
    moment_std: float = 0.0  # on m_i [N m]
    wrench_bias_std: tuple[float, float] = (0.0, 0.0)  # constant (moment, force) bias
    wrench_scale_std: float = 0.0  # relative scale error of the wrench sensing
    clock_offset_std: float = 0.0  # clock offsets of all robots but the reference [s]
    home_tilt_std: float = 0.0  # error of each home frame's gravity direction (levelness) [rad]

    def draw_errors(
        self, robot_ids: Sequence[str], rng: np.random.Generator, reference_id: str | None = None
    ) -> SensorErrors:
        """Per-robot constants; the reference robot's clock defines the time base (offset 0)."""

        def six(stds: tuple[float, float]) -> np.ndarray:
            return np.r_[rng.normal(0, stds[0], 3), rng.normal(0, stds[1], 3)]

        ids = list(robot_ids)
        return SensorErrors(
            angle_offset={r: rng.normal(0, self.angle_offset_std, 3) for r in ids},
            twist_bias={r: six(self.twist_bias_std) for r in ids},
            wrench_bias={r: six(self.wrench_bias_std) for r in ids},
            wrench_scale={r: float(rng.normal(0, self.wrench_scale_std)) for r in ids},
            clock_offset={
                r: 0.0 if r == reference_id else float(rng.normal(0, self.clock_offset_std))
                for r in ids
            },
            home_tilt=(
                {r: rng.normal(0, self.home_tilt_std, 3) for r in ids}
                if self.home_tilt_std > 0
                else {}
            ),
        )


def no_errors(robot_ids: Sequence[str]) -> SensorErrors:
    return NoiseModel().draw_errors(robot_ids, np.random.default_rng(0))


def _quantize(x: np.ndarray, quantum: float) -> np.ndarray:
    return np.round(x / quantum) * quantum if quantum > 0 else x


def measure_poses(
    T_i0_i: np.ndarray,
    noise: NoiseModel,
    angle_offset: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Encoder model: ZYX angles and positions with offset, white noise and quantization."""
    angles = Rotation.from_matrix(T_i0_i[:, :3, :3]).as_euler("ZYX")
    angles = angles + angle_offset + rng.normal(0, noise.angle_std, angles.shape)
    p = T_i0_i[:, :3, 3] + rng.normal(0, noise.position_std, (len(T_i0_i), 3))
    T = np.tile(np.eye(4), (len(T_i0_i), 1, 1))
    T[:, :3, :3] = Rotation.from_euler("ZYX", _quantize(angles, noise.angle_quantum)).as_matrix()
    T[:, :3, 3] = _quantize(p, noise.position_quantum)
    return T


# ----- simulation ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Simulation:
    """Measured series (stamps on each robot's clock) and the exact series (true times)."""

    measured: dict[str, GraspSeries]
    exact: dict[str, GraspSeries]


def default_homes(team: Team, motion: PayloadMotion) -> dict[str, np.ndarray]:
    """Home frames T_w_i0 where every grasp frame starts: T_w_s(0) T_s_i."""
    T_w_s0 = motion.evaluate(np.zeros(1))[0][0]
    return {r: T_w_s0 @ team.T_s_i[r] for r in team.robot_ids}


def simulate(
    team: Team,
    payload_s: InertialParameters,
    motion: PayloadMotion,
    t: np.ndarray | Mapping[str, np.ndarray],
    *,
    internal: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
    noise: NoiseModel | None = None,
    errors: SensorErrors | None = None,
    rng: np.random.Generator | None = None,
    T_w_i0: Mapping[str, np.ndarray] | None = None,
    gravity_w: np.ndarray = GRAVITY_W,
    external: ExternalWrench | None = None,
) -> Simulation:
    """Every robot's grasp data for ``payload_s`` (inertial parameters in {s}) moving along
    ``motion``, sampled at true times t (one array, or one per robot for different rates,
    jitter or drop-outs). ``internal``: a (6N,) internal-force proposal or a function of the
    (Q,) times returning (Q, 6N). Gravity in {i} is measured through the (noisy) pose of a
    robot whose home frame is known in the world, up to a tilt of its gravity direction
    (``NoiseModel.home_tilt_std``: the levelness of its base).
    ``external(t, T_w_s, inertial_s)``: an unmeasured wrench (Q, 6) on the payload about
    {s}, in {s} (``HandPush``, ``HumanGuidance``); the robots apply the rest of the net
    wrench."""
    noise = noise or NoiseModel()
    rng = rng or np.random.default_rng(0)
    errors = errors or noise.draw_errors(team.robot_ids, rng, team.reference_id)
    homes = dict(T_w_i0) if T_w_i0 is not None else default_homes(team, motion)
    times = t if isinstance(t, Mapping) else {r: t for r in team.robot_ids}
    measured, exact = {}, {}
    for k, rid in enumerate(team.robot_ids):
        tk = np.asarray(times[rid], dtype=float)
        T_w_s, V_s, dV_s = motion.evaluate(tk)
        g_s = np.einsum("kji,j->ki", T_w_s[:, :3, :3], gravity_w)
        proposal = internal(tk) if callable(internal) else internal
        F_s = net_wrench(payload_s, V_s, dV_s, g_s)
        if external is not None:
            F_s = F_s - external(tk, T_w_s, net_wrench(payload_s, V_s, dV_s, 0.0 * g_s))
        F = split_wrench(team, F_s, proposal)[:, k]
        T_i_s = sp.inverse(team.T_s_i[rid])
        Ad = sp.adjoint(T_i_s)
        T_i0_i = sp.inverse(homes[rid]) @ T_w_s @ team.T_s_i[rid]
        R_w_i0 = homes[rid][:3, :3]
        g_i = np.einsum("kji,j->ki", T_i0_i[:, :3, :3], R_w_i0.T @ gravity_w)
        exact[rid] = GraspSeries(
            rid, tk, T_i0_i, V_s @ Ad.T, dV_s @ Ad.T, F, g_i, has_torque=team.has_torque(rid)
        )
        measured[rid] = _measure(exact[rid], noise, errors, rng, R_w_i0.T @ gravity_w)
    return Simulation(measured=measured, exact=exact)


def _measure(
    exact: GraspSeries,
    noise: NoiseModel,
    errors: SensorErrors,
    rng: np.random.Generator,
    g_i0: np.ndarray,
) -> GraspSeries:
    rid, Q = exact.robot_id, len(exact)

    def white(a: float, b: float) -> np.ndarray:
        return np.concatenate([rng.normal(0, a, (Q, 3)), rng.normal(0, b, (Q, 3))], axis=1)

    T = measure_poses(exact.T_i0_i, noise, errors.angle_offset[rid], rng)
    V = (
        exact.V_i
        + errors.twist_bias[rid]
        + white(noise.angular_velocity_std, noise.linear_velocity_std)
    )
    dV = exact.dV_i + white(noise.angular_acceleration_std, noise.linear_acceleration_std)
    F = (1 + errors.wrench_scale[rid]) * exact.F_i + errors.wrench_bias[rid]
    F = F + white(noise.moment_std, noise.force_std)
    if not exact.has_torque:
        F[:, :3] = np.nan
    tilt = errors.home_tilt.get(rid, np.zeros(3))
    g_i = np.einsum("kji,j->ki", T[:, :3, :3], Rotation.from_rotvec(tilt).apply(g_i0))
    return GraspSeries(
        rid,
        exact.t + errors.clock_offset[rid],
        T,
        V,
        dV,
        F,
        g_i,
        has_torque=exact.has_torque,
    )


def simulate_session(
    team: Team,
    payload_s: InertialParameters,
    segments: Sequence[tuple[PayloadMotion, float]],
    rate_hz: float,
    **kwargs: object,
) -> tuple[Simulation, np.ndarray]:
    """One continuous recording of consecutive motions (each of the given duration, each
    starting and ending at rest at the same pose, e.g. ``Ramped`` or ``SmoothWaypoints``).
    Home frames come from the first segment. Returns the simulation and the segment index
    of every sample. Keyword arguments go to ``simulate`` (noise, errors, internal, rng,
    external); an ``external`` wrench sees the session's time."""
    homes = default_homes(team, segments[0][0])
    external = kwargs.pop("external", None)
    parts, labels, start = [], [], 0.0
    for k, (motion, duration) in enumerate(segments):
        t = np.arange(0.0, duration, 1.0 / rate_hz)
        shifted = None if external is None else partial(_shifted, external, start)
        sim = simulate(team, payload_s, motion, t, T_w_i0=homes, external=shifted, **kwargs)
        parts.append((sim, start))
        labels.append(np.full(len(t), k))
        start += len(t) / rate_hz

    def joined(kind: str) -> dict[str, GraspSeries]:
        out = {}
        for rid in team.robot_ids:
            pieces = [(getattr(sim, kind)[rid], t0) for sim, t0 in parts]
            first = pieces[0][0]
            out[rid] = GraspSeries(
                rid,
                np.concatenate([p.t + t0 for p, t0 in pieces]),
                *(np.concatenate([getattr(p, f) for p, _ in pieces]) for f in _SERIES_FIELDS),
                has_force=first.has_force,
                has_torque=first.has_torque,
            )
        return out

    return Simulation(joined("measured"), joined("exact")), np.concatenate(labels)


_SERIES_FIELDS = ("T_i0_i", "V_i", "dV_i", "F_i", "g_i")


def _shifted(
    external: ExternalWrench, start: float, t: np.ndarray, *args: np.ndarray
) -> np.ndarray:
    return external(t + start, *args)


def synchronized_sets(series: Mapping[str, GraspSeries]) -> list[dict[str, GraspSample]]:
    """Per time step, one GraspSample per robot (series of equal length, common time base)."""
    ids = list(series)
    return [{r: series[r].sample(k) for r in ids} for k in range(len(series[ids[0]]))]


# ----- paper 000: Table I and the experiment (notes §7) ---------------------------------------
PAPER_ROBOTS = ("robot_1", "robot_2", "robot_3")


def paper_team() -> Team:
    """Three Omnids with passive gimbals, {s} = {1} (Table I; T_13 = T_12 T_23)."""
    T_12 = sp.transform(np.eye(3), [0.647, 0.533, 0.0])
    T_13 = sp.transform(Rotation.from_euler("z", 90, degrees=True).as_matrix(), [1.104, -0.305, 0])
    return Team(
        PAPER_ROBOTS,
        "robot_1",
        {"robot_1": np.eye(4), "robot_2": T_12, "robot_3": T_13},
        {r: False for r in PAPER_ROBOTS},
    )


def paper_payload() -> InertialParameters:
    """The 11.412 kg frame of Table I, as inertial parameters in {1}."""
    R_1c = Rotation.from_rotvec(np.deg2rad([0.001, 0.010, -95.016])).as_matrix()
    I_1 = R_1c @ np.diag([2.258, 3.448, 5.698]) @ R_1c.T
    return InertialParameters.from_mass_com_inertia(11.412, np.array([0.553, 0.172, 0.072]), I_1)


def paper_kinematics_motion(rng: np.random.Generator) -> PayloadMotion:
    """Random 6-DoF motion: 3 sines per axis in 0.2-1.5 Hz, <= 10 deg and <= 5 cm (notes §7.3)."""
    centroid = np.mean([T[:3, 3] for T in paper_team().T_s_i.values()], axis=0)
    return PayloadMotion(
        Multisine.random(rng, np.deg2rad(10.0), (0.2, 1.5)),
        Multisine.random(rng, 0.05, (0.2, 1.5)),
        pivot_s=centroid,
    )


PAPER_TILTS_DEG = ((0.0, 0.0, 8.0), (0.0, 0.0, -8.0), (0.0, 8.0, 0.0), (0.0, -8.0, 0.0))


def paper_static_motion(hold: float = 2.0, move: float = 1.5) -> PayloadMotion:
    """Four static tilts (ZYX deg) about the CoM, reached by minimum-jerk moves from level."""
    waypoints = np.deg2rad(np.array([(0.0, 0.0, 0.0), *PAPER_TILTS_DEG, (0.0, 0.0, 0.0)]))
    zero = SmoothWaypoints(np.zeros((1, 3)), hold, move)
    return PayloadMotion(SmoothWaypoints(waypoints, hold, move), zero, paper_payload().com)


def paper_inertia_motion(rng: np.random.Generator) -> PayloadMotion:
    """Rotation about the (locked) robot_3 wrist centre: 3 sines per axis, 0.3-1.0 Hz, <= 10 deg."""
    return PayloadMotion(
        Multisine.random(rng, np.deg2rad(10.0), (0.3, 1.0)),
        SmoothWaypoints(np.zeros((1, 3)), 1.0, 1.0),
        pivot_s=paper_team().T_s_i["robot_3"][:3, 3],
    )


def ring_kinematics_case(
    rng: np.random.Generator,
) -> tuple[Team, InertialParameters, PayloadMotion]:
    """The grasp frames' Monte Carlo case (test_cooperative_kinematics, bench_calibration), drawn
    from ``rng``: three robots on a ring (``ring_team``), an 8 kg payload (CoM 5 cm up its
    frame's z, unit inertia) and paper 000's kinematics motion."""
    team, T_s_p = ring_team(3, rng)
    payload = InertialParameters.from_mass_com_inertia(8.0, [0, 0, 0.05], np.eye(3))
    return team, payload.transformed(T_s_p), paper_kinematics_motion(rng)


def paper_calibration_case() -> tuple[Team, InertialParameters, NoiseModel]:
    """The payload's Monte Carlo case (test_cooperative_dynamics, bench_calibration): paper
    000's grasps with F/T sensors (moments measured), a payload well inside the consistent set
    (11.412 kg, principal moments 2.3, 3.4 and 4.6 kg m^2 on the paper payload's axes) and
    instrumented noise with a noisier gyro and F/T sensor."""
    base = paper_team()
    team = Team(base.robot_ids, base.reference_id, base.T_s_i, {})
    R_s_c = paper_payload().principal_axes()[1]
    I_c = R_s_c @ np.diag([2.3, 3.4, 4.6]) @ R_s_c.T
    payload = InertialParameters.from_mass_com_inertia(11.412, [0.553, 0.172, 0.072], I_c)
    noise = replace(instrumented_noise(), angular_velocity_std=0.005, force_std=1.0, moment_std=0.3)
    return team, payload, noise


def paper_session_segments(
    rng: np.random.Generator,
    kin_seconds: float,
    pivot_seconds: float,
    statics: PayloadMotion | None = paper_static_motion(),  # noqa: B008 (frozen, immutable)
) -> list[tuple[PayloadMotion, float]]:
    """Paper 000's protocol as the segments of one ``simulate_session``: guided 6-DoF motion
    (``paper_kinematics_motion``), the static tilts ``statics`` (None: left out), then
    pivoting about robot_3's wrist (``paper_inertia_motion``), the moving parts ramped in and
    out over 1 s."""
    kin, pivot = paper_kinematics_motion(rng), paper_inertia_motion(rng)
    guided = PayloadMotion(
        Ramped(kin.rotation, kin_seconds, 1.0),
        Ramped(kin.translation, kin_seconds, 1.0),
        kin.pivot_s,
    )
    pivoting = PayloadMotion(
        Ramped(pivot.rotation, pivot_seconds, 1.0), pivot.translation, pivot.pivot_s
    )
    tilts = [] if statics is None else [(statics, statics.rotation.duration)]
    return [(guided, kin_seconds), *tilts, (pivoting, pivot_seconds)]


def paper_trials(
    team: Team,
    payload_s: InertialParameters,
    kin: PayloadMotion,
    pivot: PayloadMotion,
    rate_hz: float,
    **kwargs: object,
) -> list[tuple[dict[str, GraspSeries], str]]:
    """Paper 000's three trials as separate recordings, (measured series, phase) each: 5 s of
    ``kin`` (moving), the four static holds of ``paper_static_motion`` (only the holding samples;
    static), 10 s of ``pivot`` (moving). Keyword arguments go to ``simulate`` (noise, rng, ...)."""
    statics = paper_static_motion()
    trials = []
    for motion, duration, phase in (
        (kin, 5.0, "moving"),
        (statics, statics.rotation.duration, "static"),
        (pivot, 10.0, "moving"),
    ):
        t = np.arange(0, duration, 1 / rate_hz)
        if phase == "static":  # only the holds are recorded
            t = t[np.isin(statics.rotation.holding(t), [1, 2, 3, 4])]
        trials.append((simulate(team, payload_s, motion, t, **kwargs).measured, phase))
    return trials


def instrumented_noise() -> NoiseModel:
    """Robots that measure their twist and its derivative directly (e.g. wrist IMU and
    encoders) besides their pose and force: white noise of typical low-cost sensors."""
    return NoiseModel(
        position_std=1e-4,
        angle_std=np.deg2rad(0.02),
        angular_velocity_std=0.003,
        linear_velocity_std=0.002,
        angular_acceleration_std=0.05,
        linear_acceleration_std=0.03,
        force_std=0.5,
    )


def paper_noise(encoder_offsets: bool = False) -> NoiseModel:
    """Notes §7.4: 14-bit gimbal angles (0.022 deg), 0.1 mm positions, white 0.1 mm / 0.02 deg,
    0.5 N force noise; optionally constant encoder zero offsets of about 1 deg (1-sigma)."""
    return NoiseModel(
        position_std=1e-4,
        angle_std=np.deg2rad(0.02),
        position_quantum=1e-4,
        angle_quantum=np.deg2rad(360.0 / 2**14),
        angle_offset_std=np.deg2rad(1.0) if encoder_offsets else 0.0,
        force_std=0.5,
    )
