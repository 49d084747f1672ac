"""The human's (external) wrench on a ground team's payload, from the estimated model (issue 14).

Newton-Euler of the payload about the origin of {s} (``core.regressor``, as the estimator
writes it in ``core.cooperative.dynamics``), with an unmeasured wrench F_ext added:
    sum_i Ad(T_i_s)^T F_i + F_ext = Y(V_s, dV_s, g_s) theta,
so F_ext = Y theta - sum_i Ad(T_i_s)^T F_i: what the estimated model says the payload needs
(weight and inertia, at the measured twist and acceleration) minus what the robots apply.
The result is reported about the estimated CoM, axes of {s}, moment first (``core.spatial``):
F_c = Ad(T_s_c)^T F_ext with T_s_c = (I, p_s_c), p_s_c = h / m.

Covariance, first order, five independent sources:
* the parameters: J_theta Cov(theta) J_theta^T, J_theta analytic (Y, and the CoM shift);
* the grasp frames: J_g blkdiag(Cov(T_s_i)) J_g^T through the map of each robot's wrench
  to {s}; the cross-covariance of grasps and theta is not in the estimate and is neglected;
* the sensors: each robot's wrench noise mapped to {s}, and the twist-derivative noise of
  the payload motion through Y (``dynamics.regressor_noise_covariance``). Per-sample
  covariances (``GraspSample.F_cov``, ``dV_cov``) are used where given; otherwise
  ``SensorNoise`` levels (the coordinator passes the estimate's net-wrench residual RMS,
  which holds every noise source at once);
* the gravity direction each robot reads through its pose (``SensorNoise.gravity_angle``,
  e.g. a quantized pose): the model's weight through g_s (``_gravity_covariance``).
* the payload's vibration (``team_wrench``'s ``vibration``): an error of dV_s common to
  every robot, as large as the measured acceleration's part above a few Hz
  (``vibration.VibrationMeter``), through Y; it grows while the robots vibrate and is
  ~0 at rest, where the declared per-robot noise is the floor.

Damaged input (``bench/bench_wrench_coverage.py``): where the damage is undeclared and
beyond the sigma, three checks say so instead of a silent over-confident sigma:
``motion_consistency`` (the robots disagree about the payload's acceleration beyond their
stated noise: a late or dropping robot, a grasp off), ``gravity_consistency`` (they
disagree about gravity in {s}: a tilted base, coarse poses) and ``rest_check`` (at rest with
nobody touching, the wrench is zero within its sigma: an F/T bias or a model off shows as
an offset, F/T noise above the stated as a spread). A constant bias nobody declared cannot
be covered by a sigma; it is detected at rest.

Observability. Robots measure (and can apply) the wrenches in the range of the grasp map
G = [Ad(T_i_s)^T restricted to what robot i transmits]. Force-only (gimbal) robots transmit
no moment: with two of them, the moment about the line through the grasps is outside the
range, so the robots read nothing of a human moment about that line; it shows only through
the payload's rotational acceleration, i.e. through the estimated inertia. Such directions
are ``observable`` only when the inertia is valid. With three or more non-collinear
gimbals, or one robot that measures moments, every component is measured.

Cost: ``team_wrench`` takes the robots' samples of an instant as arrays (``TeamInstant``, as
the coordinator's output keeps them) and stacks the robots in a few matrix products; what
depends on the model alone (the maps, the consensus, the grasp and sensor covariance maps,
the missing directions) is computed once per model (``_Terms``). ``external_wrench`` is the
same for a dict of GraspSamples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy.special import chdtri

from .. import spatial as sp
from ..cooperative.dynamics import regressor_noise_covariance, regressor_noise_map
from ..cooperative.estimate import TeamEstimate
from ..cooperative.grasp_kinematics import consensus_map, noise_precision, stacked_adjoint
from ..regressor import body_regressor
from ..samples import GraspSample

RANGE_TOL = 1e-8  # relative singular value below which a grasp-map direction is missing


class WrenchUnavailableError(ValueError):
    """The model or the samples cannot give the external wrench; the message says why."""


@dataclass(frozen=True)
class SensorNoise:
    """Noise standard deviations of each robot's measurements, used where a sample carries
    no covariance: wrench (moment [N m], force [N]) and twist derivative (angular [rad/s^2],
    linear [m/s^2]); ``gravity_angle`` [rad]: per axis, the error of the gravity direction a
    robot reads through its pose (e.g. an encoder resolution q: q / sqrt(12)), independent
    among robots (``_gravity_covariance``)."""

    moment: float = 0.0
    force: float = 0.0
    angular_acceleration: float = 0.0
    linear_acceleration: float = 0.0
    gravity_angle: float = 0.0

    def __post_init__(self) -> None:
        values = (
            self.moment,
            self.force,
            self.angular_acceleration,
            self.linear_acceleration,
            self.gravity_angle,
        )
        if not all(np.isfinite(v) and v >= 0 for v in values):
            raise ValueError(f"sensor noise levels must be finite and >= 0, got {values}")


@dataclass(frozen=True)
class PayloadModel:
    """What the external wrench needs of an estimate: theta (10) in {s} with its covariance,
    the grasp frames T_s_i with their 6x6 (dphi, dp) covariances, and the validity flags."""

    reference_id: str
    theta: np.ndarray
    theta_covariance: np.ndarray
    T_s_i: Mapping[str, np.ndarray]
    grasp_covariance: Mapping[str, np.ndarray]
    mass_valid: bool
    com_valid: bool
    inertia_valid: bool

    @classmethod
    def from_estimate(cls, estimate: TeamEstimate) -> PayloadModel:
        return cls(
            estimate.reference_robot_id,
            np.asarray(estimate.theta, dtype=float),
            np.asarray(estimate.theta_covariance, dtype=float),
            {g.robot_id: g.T_s_i for g in estimate.grasps},
            {g.robot_id: g.covariance for g in estimate.grasps},
            bool(estimate.grasps_valid and estimate.mass_valid),
            bool(estimate.grasps_valid and estimate.com_valid),
            bool(estimate.grasps_valid and estimate.inertia_valid),
        )

    @property
    def p_s_c(self) -> np.ndarray:
        return self.theta[1:4] / self.theta[0]


@dataclass(frozen=True)
class ExternalWrenchEstimate:
    """The external wrench (moment, force) about the CoM ``p_s_c``, axes of {s}, at ``stamp``
    (the reference robot's clock), its 6x6 covariance (same order) and, per component,
    whether the robots' data determine it (module docstring)."""

    stamp: float
    wrench: np.ndarray
    covariance: np.ndarray
    p_s_c: np.ndarray
    observable: np.ndarray
    unobservable_directions: np.ndarray  # (k, 6) orthonormal rows, about the CoM
    # the payload's twist derivative dV_s the wrench used (the robots' consensus, about {s})
    acceleration: np.ndarray | None = None

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))

    def chi2(self, true_wrench: np.ndarray) -> float:
        """The squared Mahalanobis distance of a true wrench (about the CoM, {s}) on the
        observable components: chi-square with that many degrees of freedom if the
        covariance is right."""
        keep = self.observable
        r = (np.asarray(true_wrench) - self.wrench)[keep]
        return float(r @ np.linalg.solve(self.covariance[np.ix_(keep, keep)], r))

    def contact(self, false_alarm: float = 0.01) -> bool:
        """Someone pushes: the observable components differ from zero beyond their stated
        noise (chi-square test of the zero wrench, false-alarm rate ``false_alarm``)."""
        keep = self.observable
        if not keep.any():
            return False
        r, C = self.wrench, self.covariance
        if not keep.all():
            r, C = r[keep], C[np.ix_(keep, keep)]
        return bool(_pinv_distance(C, r) > _chi_square_bound(false_alarm, len(r)))


def _pinv_distance(C: np.ndarray, r: np.ndarray) -> float:
    """r^T C^+ r for a symmetric positive semi-definite C, C^+ its pseudo-inverse as
    ``np.linalg.pinv`` cuts it (eigenvalues below 1e-15 of the largest count as zero): by
    Cholesky (LAPACK potrf / potrs, ~10x cheaper than an SVD here) when C is safely
    definite (det > 1e-12 trace^n, so that no eigenvalue is below 1e-12 of the largest),
    else by ``eigh``."""
    from scipy.linalg.lapack import dpotrf, dpotrs  # loaded at the first wrench

    factor, info = dpotrf(C, lower=1, clean=0)
    if info == 0 and np.prod(np.diag(factor) ** 2) > 1e-12 * np.trace(C) ** len(r):
        return float(r @ dpotrs(factor, r, lower=1)[0])
    w, U = np.linalg.eigh(C)
    large = np.abs(w) > 1e-15 * np.abs(w).max()
    projected = (U.T @ r)[large]
    return float(projected @ (projected / w[large]))


@lru_cache(maxsize=64)
def _chi_square_bound(false_alarm: float, dof: int) -> float:
    """The chi-square quantile exceeded with probability ``false_alarm`` (``chi2.isf``'s
    kernel, as ``cooperative.external_wrench.significance`` takes it: scipy.stats costs ~1 s
    to load)."""
    return float(chdtri(dof, false_alarm))


def external_wrench(
    samples: Mapping[str, GraspSample],
    model: PayloadModel,
    noise: SensorNoise | None = None,
    max_spread: float = 0.05,
    delay: float = 0.0,
) -> ExternalWrenchEstimate:
    """The external wrench on the payload from one simultaneous sample per robot (module
    docstring). ``max_spread``: largest stamp difference [s] among the samples (stamps on
    the reference clock). ``delay`` [s]: how much older the samples' content is than their
    stamps (``team_wrench``). Raises ``WrenchUnavailableError`` with the cause."""
    _check_model(model)
    absent = sorted(set(model.T_s_i) - set(samples))
    if absent:
        raise WrenchUnavailableError(f"no sample from {', '.join(absent)}")
    instant = TeamInstant.from_samples([samples[r] for r in model.T_s_i])
    return team_wrench(instant, model, noise, max_spread, delay)


class TeamInstant(NamedTuple):
    """One sample per robot of an instant as arrays, a row per robot in ``robot_ids``' order:
    stamps (reference clock), V, dV, F (N, 6), g (N, 3; read where ``has_g``), the
    ``has_torque`` flags, and the samples' own covariances F_cov, dV_cov (N, 6, 6), NaN for a
    sample without one, None when no sample carries one."""

    robot_ids: tuple[str, ...]
    stamps: np.ndarray
    V: np.ndarray
    dV: np.ndarray
    F: np.ndarray
    g: np.ndarray
    has_g: np.ndarray
    has_torque: np.ndarray
    F_cov: np.ndarray | None = None
    dV_cov: np.ndarray | None = None

    @classmethod
    def from_samples(cls, samples: Sequence[GraspSample]) -> TeamInstant:
        def covariances(name: str) -> np.ndarray | None:
            values = [getattr(s, name) for s in samples]
            if all(c is None for c in values):
                return None
            return np.array([np.full((6, 6), np.nan) if c is None else c for c in values], float)

        return cls(
            tuple(s.robot_id for s in samples),
            np.array([s.stamp for s in samples], dtype=float),
            np.array([s.V_i for s in samples], dtype=float),
            np.array([s.dV_i for s in samples], dtype=float),
            np.array([s.F_i for s in samples], dtype=float),
            np.array([np.full(3, np.nan) if s.g_i is None else s.g_i for s in samples], float),
            np.array([s.g_i is not None for s in samples]),
            np.array([s.has_torque for s in samples]),
            covariances("F_cov"),
            covariances("dV_cov"),
        )


def team_wrench(
    instant: TeamInstant,
    model: PayloadModel,
    noise: SensorNoise | None = None,
    max_spread: float = 0.05,
    delay: float = 0.0,
    vibration: np.ndarray | None = None,
) -> ExternalWrenchEstimate:
    """``external_wrench`` of an instant's arrays (robots beyond the model's are ignored).

    ``vibration`` (6,): the variance of an error of the payload's twist derivative common to
    every robot (about {s}; (rad/s^2)^2 angular first, (m/s^2)^2 linear): the part of the
    measured acceleration the robots' wrenches do not follow while they vibrate
    (``vibration.VibrationMeter``); it enters the covariance through Y as the per-robot
    noise does, without the consensus' averaging (it is the same in every robot's sample).

    The estimate is stamped with the instant it describes: the reference robot's sample
    stamp minus ``delay``, the age of the samples' content at their stamps (robot nodes
    stamp a causally low-passed sample with its own time: a 4th-order Butterworth at 5 Hz
    delays slow motion by 83 ms, the simulated Omnids' effort-based wrench ~45 ms more). A
    consumer then sees how old the wrench is (the admittance's passivity controller, a
    comparison with a force plate); stamped with the samples' time it looks fresh, and a
    delayed loop through a person's arm swings (docs/collaboration.md, 2026-11-27)."""
    _check_model(model)
    terms = _model_terms(model, noise or SensorNoise(), instant)
    if terms.order is not None:
        instant = _rows(instant, terms.order)
    _check_instant(instant, max_spread)
    F_s_ext, Y, applied, dV_s = _net_wrench(instant, model, terms)
    J_theta = terms.Ad_c @ Y
    J_theta[:3] += sp.skew(F_s_ext[3:]) @ terms.com_jacobian
    covariance = J_theta @ model.theta_covariance @ J_theta.T
    covariance += _grasp_covariance(applied, terms) + _sensor_covariance(instant, model, terms)
    if terms.gravity is not None:
        covariance += _gravity_covariance(instant, terms)
    if vibration is not None:
        covariance += (terms.motion_map * vibration) @ terms.motion_map.T
    return ExternalWrenchEstimate(
        float(instant.stamps[terms.reference]) - delay,
        terms.Ad_c @ F_s_ext,
        0.5 * (covariance + covariance.T),
        terms.p_s_c,
        terms.observable,
        terms.missing,
        dV_s,
    )


@dataclass(frozen=True)
class _Terms:
    """What the wrench needs of the model alone (module docstring), robots in the model's
    order: the maps Ad(T_i_s)^T stacked (N, 6, 6) and side by side (6, 6N), R_s_i, the
    equal-weight consensus of the payload motion, Ad_c (a wrench about {s} -> about the CoM,
    axes of {s}), d p_s_c / d theta, the grasp-covariance map (``_grasp_terms``), the sensor
    covariance about the CoM for samples without their own, the missing directions."""

    ids: tuple[str, ...]
    reference: int
    order: np.ndarray | None  # rows of the instant's robots in the model's order (None: same)
    maps: np.ndarray
    maps_side: np.ndarray
    R_s_i: np.ndarray
    adjoints: np.ndarray  # (6N, 6) Ad(T_i_s) stacked
    consensus: np.ndarray
    Ad_c: np.ndarray
    com_jacobian: np.ndarray
    grasp_map: np.ndarray
    noise_F: np.ndarray  # (6, 6) a robot's wrench noise for samples without their own
    noise_dV: np.ndarray  # (6, 6) its twist-derivative noise, likewise
    sensors: np.ndarray
    gravity: np.ndarray | None  # (6, 3) ``_gravity_map``, None without a gravity_angle
    motion_map: np.ndarray  # (6, 6) Ad_c d(Y theta) / d dV_s: a common dV_s error's wrench
    p_s_c: np.ndarray
    observable: np.ndarray
    missing: np.ndarray


# The terms of the last models (id(model), noise, the instant's robots and which transmit
# moments) -> (model, terms): computed once per model, not per wrench (a live output calls
# ~100 times a second).
_TERMS: dict[tuple, tuple[PayloadModel, _Terms]] = {}
_TERMS_KEPT = 8


def _model_terms(model: PayloadModel, noise: SensorNoise, instant: TeamInstant) -> _Terms:
    key = (id(model), noise, instant.robot_ids, instant.has_torque.tobytes())
    kept = _TERMS.get(key)
    if kept is not None and kept[0] is model:
        return kept[1]
    terms = _compute_terms(model, noise, instant)
    if len(_TERMS) >= _TERMS_KEPT:
        _TERMS.clear()
    _TERMS[key] = (model, terms)
    return terms


def _compute_terms(model: PayloadModel, noise: SensorNoise, instant: TeamInstant) -> _Terms:
    ids = tuple(model.T_s_i)
    absent = sorted(set(ids) - set(instant.robot_ids))
    if absent:
        raise WrenchUnavailableError(f"no sample from {', '.join(absent)}")
    order = None
    if instant.robot_ids != ids:
        order = np.array([instant.robot_ids.index(r) for r in ids])
    has_torque = instant.has_torque if order is None else instant.has_torque[order]
    T_s_i = np.array([model.T_s_i[r] for r in ids], dtype=float)
    maps = np.array([sp.adjoint(sp.inverse(T)).T for T in T_s_i])  # Ad(T_i_s)^T
    adjoints = stacked_adjoint(model.T_s_i, ids)
    Ad_c = sp.adjoint(sp.transform(np.eye(3), model.p_s_c)).T
    noise_F = np.diag(np.repeat([noise.moment, noise.force], 3) ** 2)
    levels = (noise.angular_acceleration, noise.linear_acceleration)
    noise_dV = np.diag(np.repeat(levels, 3) ** 2)
    n = len(ids)
    sensors = _wrench_noise(
        maps,
        consensus_map(adjoints, np.ones(6 * n)),
        has_torque,
        np.broadcast_to(noise_F, (n, 6, 6)),
        np.broadcast_to(noise_dV, (n, 6, 6)),
        model.theta,
    )
    missing = _missing_directions(maps, has_torque, Ad_c)
    observable = np.ones(6, dtype=bool)
    if not model.inertia_valid and len(missing):
        observable = np.linalg.norm(missing, axis=0) < 1e-6
    return _Terms(
        ids,
        ids.index(model.reference_id),
        order,
        maps,
        maps.transpose(1, 0, 2).reshape(6, -1),
        T_s_i[:, :3, :3],
        adjoints,
        consensus_map(adjoints, np.ones(6 * len(ids))),
        Ad_c,
        _com_jacobian(model.theta),
        _grasp_terms(model, ids, Ad_c),
        noise_F,
        noise_dV,
        Ad_c @ sensors @ Ad_c.T,
        _gravity_map(model.theta, Ad_c, noise.gravity_angle),
        _frozen(Ad_c @ regressor_noise_map(model.theta)),
        _frozen(model.p_s_c.copy()),
        _frozen(observable),
        _frozen(missing),
    )


def _frozen(x: np.ndarray) -> np.ndarray:
    """x, read-only (shared by every estimate of a model)."""
    x.flags.writeable = False
    return x


def _rows(instant: TeamInstant, order: np.ndarray) -> TeamInstant:
    """The instant's rows ``order`` (the model's robots, in its order)."""
    return TeamInstant(
        tuple(instant.robot_ids[k] for k in order),
        *(None if x is None else x[order] for x in instant[1:]),
    )


def _check_model(model: PayloadModel) -> None:
    if not (model.mass_valid and model.com_valid):
        raise WrenchUnavailableError(
            "the estimate has no valid mass and CoM yet: hold the payload still in a few "
            "orientations first (the estimate's advice says which)"
        )
    if model.theta[0] <= 0:
        raise WrenchUnavailableError(f"the estimated mass {model.theta[0]:.3g} kg is not positive")


def _check_instant(instant: TeamInstant, max_spread: float) -> None:
    spread = instant.stamps.max() - instant.stamps.min()
    if spread > max_spread:
        raise WrenchUnavailableError(
            f"the robots' newest samples are {spread:.3f} s apart (more than "
            f"{max_spread:g} s): a robot lags or its clock is off"
        )
    if not instant.has_g.any():
        raise WrenchUnavailableError("no robot reports gravity: the model's weight is unknown")
    g = instant.g if instant.has_g.all() else instant.g[instant.has_g]
    sums = instant.V.sum() + instant.dV.sum() + instant.F[:, 3:].sum() + g.sum()
    if math.isfinite(sums):  # the usual case (a sum's overflow: the checks below)
        return
    finite = np.isfinite(np.hstack([instant.V, instant.dV, instant.F[:, 3:]])).all(axis=1)
    if not finite.all():
        rid = instant.robot_ids[int(np.argmin(finite))]
        raise WrenchUnavailableError(f"{rid}'s twist, twist derivative or force is not finite")
    gravity = np.isfinite(instant.g).all(axis=1) | ~instant.has_g
    if not gravity.all():
        rid = instant.robot_ids[int(np.argmin(gravity))]
        raise WrenchUnavailableError(f"{rid}'s gravity is not finite")


def _net_wrench(
    instant: TeamInstant, model: PayloadModel, terms: _Terms
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(F_ext about {s}, Y, each robot's wrench about {s} (N, 6), dV_s): F_ext = Y theta - sum_i
    Ad(T_i_s)^T F_i, a robot's moment zero where it transmits none (as the estimator reads
    it), the payload motion the consensus of every robot's (``dynamics.payload_motion``),
    g_s the mean of R_s_i g_i over the robots that report it (``payload_gravity``)."""
    F = instant.F.copy()
    F[~(instant.has_torque & np.isfinite(F[:, :3]).all(axis=1)), :3] = 0.0
    applied = np.einsum("nij,nj->ni", terms.maps, F)
    C = terms.consensus if instant.dV_cov is None else _consensus(instant, terms)
    V_s, dV_s = C @ instant.V.ravel(), C @ instant.dV.ravel()
    has_g = instant.has_g
    R, g = (terms.R_s_i, instant.g) if has_g.all() else (terms.R_s_i[has_g], instant.g[has_g])
    g_s = np.einsum("nij,nj->i", R, g) / len(g)
    Y = _regressor(V_s, dV_s, g_s)
    return Y @ model.theta - terms.maps_side @ F.ravel(), Y, applied, dV_s


@lru_cache(maxsize=1)
def _regressor_maps() -> tuple[np.ndarray, np.ndarray]:
    """(L (60, 9), Q (60, 36)) with vec(Y) = L (dV, g) + Q vec(V V^T) for Y =
    ``body_regressor(V, dV, g)`` (linear in dV and g, quadratic in V), read off
    ``body_regressor`` at basis vectors."""
    zero, e = np.zeros(6), np.eye(6)
    L = np.stack([body_regressor(zero, x[:6], x[6:]).ravel() for x in np.eye(9)], axis=1)
    single = [body_regressor(e[i], zero).ravel() for i in range(6)]
    Q = np.zeros((60, 6, 6))
    for i in range(6):
        Q[:, i, i] = single[i]
        for j in range(i + 1, 6):
            cross = body_regressor(e[i] + e[j], zero).ravel() - single[i] - single[j]
            Q[:, i, j] = Q[:, j, i] = 0.5 * cross
    return L, Q.reshape(60, 36)


def _regressor(V: np.ndarray, dV: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``body_regressor(V, dV, g)`` of one sample (6x10) as two matrix products."""
    L, Q = _regressor_maps()
    return (L @ np.concatenate([dV, g]) + Q @ np.outer(V, V).ravel()).reshape(6, 10)


def _consensus(instant: TeamInstant, terms: _Terms) -> np.ndarray:
    """The payload motion's consensus weighted by the samples' dV covariances if every
    sample has one, else with equal weights."""
    levels = _twist_levels(instant.dV_cov)
    if levels is None:
        return terms.consensus
    return consensus_map(
        terms.adjoints, noise_precision(dict(zip(terms.ids, levels, strict=True)), terms.ids)
    )


def _twist_levels(dV_cov: np.ndarray | None) -> list[tuple[float, float]] | None:
    """(angular, linear) std per robot from the samples' dV covariances, if all have one."""
    if dV_cov is None or np.isnan(dV_cov).all(axis=(1, 2)).any():
        return None
    return [_levels(C) for C in dV_cov]


def _levels(C: np.ndarray) -> tuple[float, float]:
    d = np.diag(np.asarray(C, dtype=float))
    return float(np.sqrt(max(d[:3].mean(), 1e-30))), float(np.sqrt(max(d[3:].mean(), 1e-30)))


def _com_jacobian(theta: np.ndarray) -> np.ndarray:
    """d p_s_c / d theta (3x10) for p_s_c = h / m. The moment about the CoM moves with it:
    m_c = m_s + f x p_s_c."""
    m, h = theta[0], theta[1:4]
    J = np.zeros((3, 10))
    J[:, 0], J[:, 1:4] = -h / m**2, np.eye(3) / m
    return J


def _grasp_jacobian(F: np.ndarray) -> np.ndarray:
    """d F / d (dphi, dp) of a wrench F = (m, f) about {s} mapped through a grasp T_s_i under
    the left perturbation (dphi, dp): (dphi x m + dp x f, dphi x f)."""
    J = np.zeros((6, 6))
    J[:3, :3], J[:3, 3:], J[3:, :3] = -sp.skew(F[:3]), -sp.skew(F[3:]), -sp.skew(F[3:])
    return J


def _grasp_terms(model: PayloadModel, ids: Sequence[str], Ad_c: np.ndarray) -> np.ndarray:
    """P (36 N, 36) with sum_i Ad_c J_i Cov(T_s_i) J_i^T Ad_c^T = vec(sum_i P_i^T
    vec(F_i F_i^T)): ``_grasp_jacobian`` is linear in F_i, J_i = sum_k F_ik E_k, so each
    robot's term is sum_kl F_ik F_il Ad_c E_k Cov_i E_l^T Ad_c^T (zero for the reference,
    whose grasp is the definition of {s})."""
    E = np.array([Ad_c @ _grasp_jacobian(e) for e in np.eye(6)])
    blocks = [
        np.zeros((36, 36))
        if r == model.reference_id
        else np.einsum("kab,bc,ldc->klad", E, model.grasp_covariance[r], E).reshape(36, 36)
        for r in ids
    ]
    return np.vstack(blocks)


def _grasp_covariance(applied: np.ndarray, terms: _Terms) -> np.ndarray:
    """Covariance (about the CoM) of the robots' wrenches mapped with uncertain grasps
    (``_grasp_terms``). The payload motion's (smaller) dependence on the grasps is
    neglected."""
    outer = (applied[:, :, None] * applied[:, None, :]).ravel()
    return (outer @ terms.grasp_map).reshape(6, 6)


def _sensor_covariance(instant: TeamInstant, model: PayloadModel, terms: _Terms) -> np.ndarray:
    """Covariance (about the CoM) of the robots' wrench noise and of the dV_s noise through
    Y: the model's (``_Terms.sensors``) unless a sample carries its own covariances."""
    if instant.F_cov is None and instant.dV_cov is None:
        return terms.sensors
    F_cov = _own_or_default(instant.F_cov, terms.noise_F, len(terms.ids))
    dV_cov = _own_or_default(instant.dV_cov, terms.noise_dV, len(terms.ids))
    C = _consensus(instant, terms)
    sensors = _wrench_noise(terms.maps, C, instant.has_torque, F_cov, dV_cov, model.theta)
    return terms.Ad_c @ sensors @ terms.Ad_c.T


def _own_or_default(own: np.ndarray | None, default: np.ndarray, n: int) -> np.ndarray:
    """(n, 6, 6): the samples' own covariances (NaN where a sample has none) or ``default``."""
    if own is None:
        return np.broadcast_to(default, (n, 6, 6))
    return np.where(np.isnan(own).all(axis=(1, 2))[:, None, None], default, own)


def _wrench_noise(
    maps: np.ndarray,
    C: np.ndarray,
    has_torque: np.ndarray,
    F_cov: np.ndarray,
    dV_cov: np.ndarray,
    theta: np.ndarray,
) -> np.ndarray:
    """Covariance (about {s}) of the robots' wrench noise F_cov (N, 6, 6; the moments of a
    robot that transmits none left out) mapped by Ad(T_i_s)^T, and of the twist-derivative
    noise dV_cov (N, 6, 6) through the consensus C (6, 6N) and Y
    (``dynamics.regressor_noise_covariance``)."""
    F_cov = np.array(F_cov, dtype=float)
    F_cov[~has_torque, :3, :] = 0.0
    F_cov[~has_torque, :, :3] = 0.0
    wrench = np.einsum("nij,njk,nlk->il", maps, F_cov, maps)
    blocks = C.reshape(6, len(maps), 6).transpose(1, 0, 2)  # C's (6, 6) block per robot
    motion = np.einsum("nij,njk,nlk->il", blocks, dV_cov, blocks)
    return wrench + regressor_noise_covariance(motion, theta)


def _missing_directions(maps: np.ndarray, has_torque: np.ndarray, Ad_c: np.ndarray) -> np.ndarray:
    """Orthonormal wrench directions (about the CoM) outside the robots' grasp map."""
    blocks = [
        Ad_c @ M if torque else (Ad_c @ M)[:, 3:]
        for M, torque in zip(maps, has_torque, strict=True)
    ]
    U, s, _ = np.linalg.svd(np.hstack(blocks))
    rank = int(np.sum(s > RANGE_TOL * s[0]))
    return U[:, rank:].T


# ----- covariance terms and checks of damaged input (issue 14) --------------------------------
def _gravity_map(theta: np.ndarray, Ad_c: np.ndarray, angle_std: float) -> np.ndarray | None:
    """G (6, 3) = angle_std Ad_c d(Y theta)/d g_s: the model's weight and its moment about
    the CoM per unit of gravity in {s} (Y is linear in g), scaled by the gravity-direction
    error; None without one."""
    if angle_std <= 0:
        return None
    L, _ = _regressor_maps()
    J_g = np.stack([L[:, 6 + j].reshape(6, 10) @ theta for j in range(3)], axis=1)
    return _frozen(angle_std * (Ad_c @ J_g))


_EYE3 = _frozen(np.eye(3))


def _gravity_covariance(instant: TeamInstant, terms: _Terms) -> np.ndarray:
    """Covariance (about the CoM) of the model's weight from the robots' gravity directions,
    each off by a small rotation dphi_i (``SensorNoise.gravity_angle`` per axis, independent
    among robots): g_s = mean_i R_s_i g_i moves by -mean_i R_s_i [g_i] dphi_i, whose
    covariance is sigma^2 (|g|^2 I - g_s g_s^T) / n for n robots reporting gravity."""
    has_g = instant.has_g
    count = has_g.sum()
    g_s = np.einsum("nij,nj->i", terms.R_s_i[has_g], instant.g[has_g]) / count
    cov_g = (g_s @ g_s * _EYE3 - np.outer(g_s, g_s)) / count
    return terms.gravity @ cov_g @ terms.gravity.T


@dataclass(frozen=True)
class MotionConsistency:
    """Whether the robots agree, within their stated noise, about the payload's twist
    derivative (``motion_consistency``) or about gravity in {s} (``gravity_consistency``):
    ``chi2`` of their disagreement (the consensus residual) with ``dof`` degrees of freedom
    against its ``bound`` (0 dof: nothing to check)."""

    chi2: float
    dof: int
    bound: float
    quantity: str = "acceleration"  # or "gravity" (``gravity_consistency``)
    worst: str = ""  # the robot whose own residual is largest (in its noise's units)

    @property
    def consistent(self) -> bool:
        return self.chi2 <= self.bound

    @property
    def reason(self) -> str:
        if self.consistent:
            return ""
        what, causes = {
            "acceleration": (
                "the payload's acceleration",
                "a robot's samples are late or dropped, its grasp frame is off or its noise is "
                "larger than stated",
            ),
            "gravity": (
                "gravity in {s}",
                "a robot's base is tilted or its pose coarser than stated (declare "
                "SensorNoise.gravity_angle), or its grasp frame is off",
            ),
        }[self.quantity]
        return (
            f"the robots disagree about {what} (chi-square {self.chi2:.3g} > "
            f"{self.bound:.3g}, {self.dof} dof): {causes}; the wrench's sigma may not hold"
        )


def motion_consistency(
    samples: Mapping[str, GraspSample],
    model: PayloadModel,
    noise: SensorNoise | None = None,
    false_alarm: float = 0.01,
) -> MotionConsistency:
    """``team_motion_consistency`` of one sample per robot."""
    instant = TeamInstant.from_samples(_each_robot(samples, model))
    return team_motion_consistency(instant, model, noise, false_alarm)


def team_motion_consistency(
    instant: TeamInstant,
    model: PayloadModel,
    noise: SensorNoise | None = None,
    false_alarm: float = 0.01,
) -> MotionConsistency:
    """The robots' twist derivatives x = A dV_s + noise (A: Ad(T_i_s) stacked) leave the
    residual r = (I - A C) x of their consensus C; with the noise covariance S (the samples'
    own dV covariances, else ``noise``), r^T (P S P^T)^+ r is chi-square with 6 (N - 1) dof.
    With every S_i positive definite it equals the weighted least-squares residual
    (``_whitened_residual``: O(N), no 6N eigen-decomposition).
    A robot whose sample is late by dt adds its jerk times dt. The model's grasp
    uncertainty is neglected here (small beside the acceleration noise)."""
    terms = _model_terms(model, noise or SensorNoise(), instant)
    if terms.order is not None:
        instant = _rows(instant, terms.order)
    n = len(terms.ids)
    S = _own_or_default(instant.dV_cov, terms.noise_dV, n)
    if n < 2 or not np.any(np.diagonal(S, axis1=1, axis2=2) > 0):
        return MotionConsistency(0.0, 0, np.inf)
    dof = 6 * (n - 1)
    whitened = _whitened_residual(terms.adjoints.reshape(n, 6, 6), S, instant.dV)
    if whitened is None:  # a singular S: the consensus residual's pseudo-inverse
        P = np.eye(6 * n) - terms.adjoints @ _consensus(instant, terms)
        r = P @ instant.dV.ravel()
        blocks = np.zeros((n, 6, n, 6))
        blocks[np.arange(n), :, np.arange(n), :] = S
        w, U = np.linalg.eigh(P @ blocks.reshape(6 * n, 6 * n) @ P.T)
        w, U = w[-dof:], U[:, -dof:]
        projected = U.T @ r
        chi = float(projected @ (projected / np.maximum(w, 1e-300)))
        own = [_pinv_distance(S[i], r[6 * i : 6 * i + 6]) for i in range(n)]
    else:
        own = (whitened**2).sum(axis=1)
        chi = float(own.sum())
    worst = terms.ids[int(np.argmax(own))]
    return MotionConsistency(chi, dof, _chi_square_bound(false_alarm, dof), worst=worst)


def _whitened_residual(A: np.ndarray, S: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """The whitened residuals L_i^-1 (x_i - A_i m) (S_i = L_i L_i^T) of the weighted
    least-squares m of x_i = A_i m + e_i, e_i ~ N(0, S_i): their squared sum is chi-square
    with (number of x values - number of m values) dof, a row's its own share. None when an
    S_i is not positive definite."""
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return None
    z = np.linalg.solve(L, x[..., None])[..., 0]
    B = np.linalg.solve(L, A)
    m = np.linalg.lstsq(B.reshape(-1, A.shape[2]), z.ravel(), rcond=None)[0]
    return z - B @ m


def _each_robot(samples: Mapping[str, GraspSample], model: PayloadModel) -> list[GraspSample]:
    """The model's robots' samples in its order; ``WrenchUnavailableError`` if one is absent."""
    absent = sorted(set(model.T_s_i) - set(samples))
    if absent:
        raise WrenchUnavailableError(f"no sample from {', '.join(absent)}")
    return [samples[r] for r in model.T_s_i]


GRAVITY_ANGLE_FLOOR = 1e-3  # [rad] per axis: a gravity direction known better is not claimed


def gravity_consistency(
    samples: Mapping[str, GraspSample],
    model: PayloadModel,
    noise: SensorNoise | None = None,
    false_alarm: float = 0.01,
) -> MotionConsistency:
    """``team_gravity_consistency`` of one sample per robot."""
    instant = TeamInstant.from_samples(_each_robot(samples, model))
    return team_gravity_consistency(instant, model, noise, false_alarm)


def team_gravity_consistency(
    instant: TeamInstant,
    model: PayloadModel,
    noise: SensorNoise | None = None,
    false_alarm: float = 0.01,
) -> MotionConsistency:
    """Whether the robots agree about gravity in {s}: each robot's R_s_i g_i differs from
    their mean g_s by its direction error, [g_s] (dphi_i - mean dphi), dphi_i of covariance
    sigma^2 I (``SensorNoise.gravity_angle``, at least ``GRAVITY_ANGLE_FLOOR``) plus the
    rotation block of its grasp covariance; chi-square with 2 (n - 1) dof for the n robots
    that report gravity (the component along g_s is second order and left out; robots
    beyond the model's are ignored)."""
    noise = noise or SensorNoise()
    terms = _model_terms(model, noise, instant)
    if terms.order is not None:
        instant = _rows(instant, terms.order)
    reporting = np.flatnonzero(instant.has_g)
    n = len(reporting)
    if n < 2:
        return MotionConsistency(0.0, 0, np.inf, "gravity")
    g = np.einsum("nij,nj->ni", terms.R_s_i[reporting], instant.g[reporting])
    g_s = g.mean(axis=0)
    sigma2 = max(noise.gravity_angle, GRAVITY_ANGLE_FLOOR) ** 2
    grasp = np.array([model.grasp_covariance[terms.ids[i]][:3, :3] for i in reporting])
    angle_cov = grasp + sigma2 * np.eye(3)
    # In the plane normal to g_s (the component along it is second order): each robot's
    # gravity is the common one plus noise [g_s] dphi_i; chi-square of their disagreement.
    basis = np.linalg.svd(g_s[None, :])[2][1:].T  # (3, 2) orthonormal, normal to g_s
    KB = sp.skew(g_s).T @ basis  # B^T [g_s] = ([g_s]^T B)^T
    S = KB.T @ angle_cov @ KB
    dof = 2 * (n - 1)
    # S is positive definite (GRAVITY_ANGLE_FLOOR): the residual is never None here
    whitened = _whitened_residual(np.broadcast_to(np.eye(2), (n, 2, 2)), S, g @ basis)
    own = (whitened**2).sum(axis=1)
    chi = float(own.sum())
    worst = terms.ids[reporting[int(np.argmax(own))]]
    return MotionConsistency(chi, dof, _chi_square_bound(false_alarm, dof), "gravity", worst)


@dataclass(frozen=True)
class RestCheck:
    """The wrench over a window at rest with nobody touching the payload, where it must be
    zero within its stated sigma: ``offset`` = mean^T C^+ mean (C the mean stated
    covariance: an upper bound of the mean's, whose model part does not average out) and
    ``spread`` = sum_k (w_k - mean)^T C^+ (w_k - mean) (the sensors' part, which does), each
    with its chi-square ``*_bound``, on the observable components; ``mean`` the window's
    mean wrench (m, f), every component."""

    offset: float
    offset_bound: float
    spread: float
    spread_bound: float
    samples: int
    mean: np.ndarray

    @property
    def noise_factor(self) -> float:
        """How many times the wrench scatters beyond its stated noise (sqrt of the ratio)."""
        return float(np.sqrt(self.spread / max(self.spread_bound, 1e-300)))

    @property
    def zero(self) -> bool:
        return self.offset <= self.offset_bound

    @property
    def noise_within(self) -> bool:
        return self.spread <= self.spread_bound

    @property
    def reason(self) -> str:
        causes = []
        if not self.zero:
            causes.append(
                f"the wrench at rest is not zero (chi-square {self.offset:.3g} > "
                f"{self.offset_bound:.3g}): an F/T sensor not re-zeroed (bias) or a model "
                "off by more than its sigma; re-zero the sensors, let the estimate converge"
            )
        if not self.noise_within:
            causes.append(
                f"the wrench at rest scatters {self.noise_factor:.2g}x beyond its stated "
                "noise: the sensors are noisier than stated"
            )
        return "; ".join(causes)


def rest_check(estimates: Sequence[ExternalWrenchEstimate], false_alarm: float = 0.01) -> RestCheck:
    """``RestCheck`` of wrenches taken at rest with no one touching the payload (at least 2)."""
    if len(estimates) < 2:
        raise ValueError("the rest check needs at least 2 wrenches")
    keep = np.logical_and.reduce([e.observable for e in estimates])
    W = np.array([e.wrench[keep] for e in estimates])
    C = np.mean([e.covariance[np.ix_(keep, keep)] for e in estimates], axis=0)
    mean, k = W.mean(axis=0), int(keep.sum())
    deviations = W - mean
    spread = sum(_pinv_distance(C, d) for d in deviations)
    return RestCheck(
        _pinv_distance(C, mean),
        _chi_square_bound(false_alarm, k),
        float(spread),
        _chi_square_bound(false_alarm, k * (len(W) - 1)),
        len(W),
        np.mean([e.wrench for e in estimates], axis=0),
    )
