"""The human's (external) wrench on a ground team's payload, from the estimated model (issue 14).

Newton-Euler of the payload about the origin of {s} (``core.regressor``, as the estimator
writes it in ``core.cooperative.dynamics``), with an unmeasured wrench F_ext added:
    sum_i Ad(T_i_s)^T F_i + F_ext = Y(V_s, dV_s, g_s) theta,
so F_ext = Y theta - sum_i Ad(T_i_s)^T F_i: what the estimated model says the payload needs
(weight and inertia, at the measured twist and acceleration) minus what the robots apply.
The result is reported about the estimated CoM, axes of {s}, moment first (``core.spatial``):
F_c = Ad(T_s_c)^T F_ext with T_s_c = (I, p_s_c), p_s_c = h / m.

Covariance, first order, three independent sources:
* the parameters: J_theta Cov(theta) J_theta^T, J_theta analytic (Y, and the CoM shift);
* the grasp frames: J_g blkdiag(Cov(T_s_i)) J_g^T through the map of each robot's wrench
  to {s}; the cross-covariance of grasps and theta is not in the estimate and is neglected;
* the sensors: each robot's wrench noise mapped to {s}, and the twist-derivative noise of
  the payload motion through Y (``dynamics.regressor_noise_covariance``). Per-sample
  covariances (``GraspSample.F_cov``, ``dV_cov``) are used where given; otherwise
  ``SensorNoise`` levels (the coordinator passes the estimate's net-wrench residual RMS,
  which holds every noise source at once).

Observability. Robots measure (and can apply) the wrenches in the range of the grasp map
G = [Ad(T_i_s)^T restricted to what robot i transmits]. Force-only (gimbal) robots transmit
no moment: with two of them, the moment about the line through the grasps is outside the
range, so the robots read nothing of a human moment about that line; it shows only through
the payload's rotational acceleration, i.e. through the estimated inertia. Such directions
are ``observable`` only when the inertia is valid. With three or more non-collinear
gimbals, or one robot that measures moments, every component is measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import chi2 as chi_square

from .. import spatial as sp
from ..cooperative.dynamics import payload_gravity, payload_motion, regressor_noise_covariance
from ..cooperative.estimate import TeamEstimate
from ..cooperative.grasp_kinematics import consensus_map, noise_precision
from ..regressor import body_regressor
from ..samples import GraspSample

RANGE_TOL = 1e-8  # relative singular value below which a grasp-map direction is missing


class WrenchUnavailableError(ValueError):
    """The model or the samples cannot give the external wrench; the message says why."""


@dataclass(frozen=True)
class SensorNoise:
    """Noise standard deviations of each robot's measurements, used where a sample carries
    no covariance: wrench (moment [N m], force [N]) and twist derivative (angular [rad/s^2],
    linear [m/s^2])."""

    moment: float = 0.0
    force: float = 0.0
    angular_acceleration: float = 0.0
    linear_acceleration: float = 0.0

    def __post_init__(self) -> None:
        values = (self.moment, self.force, self.angular_acceleration, self.linear_acceleration)
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
        r = self.wrench[keep]
        distance = float(r @ np.linalg.pinv(self.covariance[np.ix_(keep, keep)]) @ r)
        return bool(distance > _chi_square_bound(false_alarm, int(keep.sum())))


@lru_cache(maxsize=64)
def _chi_square_bound(false_alarm: float, dof: int) -> float:
    """The chi-square quantile of the contact test (scipy's ppf costs ~0.4 ms a call)."""
    return float(chi_square.ppf(1.0 - false_alarm, dof))


def external_wrench(
    samples: Mapping[str, GraspSample],
    model: PayloadModel,
    noise: SensorNoise | None = None,
    max_spread: float = 0.05,
) -> ExternalWrenchEstimate:
    """The external wrench on the payload from one simultaneous sample per robot (module
    docstring). ``max_spread``: largest stamp difference [s] among the samples (stamps on
    the reference clock). Raises ``WrenchUnavailableError`` with the cause."""
    _check(samples, model, max_spread)
    maps, Ad_c, sensors, missing = _model_terms(samples, model, noise or SensorNoise())
    applied = {r: maps[r] @ _robot_wrench(samples[r]) for r in model.T_s_i}  # about {s}
    Y = body_regressor(*_motion(samples, model.T_s_i))
    F_s_ext = Y @ model.theta - sum(applied.values())
    J_theta = Ad_c @ Y
    J_theta[:3] += sp.skew(F_s_ext[3:]) @ _com_jacobian(model.theta)
    covariance = J_theta @ model.theta_covariance @ J_theta.T
    sensors = sensors + _grasp_covariance(model, applied)
    covariance += Ad_c @ sensors @ Ad_c.T
    observable = np.ones(6, dtype=bool)
    if not model.inertia_valid and len(missing):
        observable = np.linalg.norm(missing, axis=0) < 1e-6
    return ExternalWrenchEstimate(
        float(samples[model.reference_id].stamp),
        Ad_c @ F_s_ext,
        0.5 * (covariance + covariance.T),
        model.p_s_c.copy(),
        observable,
        missing,
    )


# The terms of the last models (id(model), noise, which robots transmit moments) -> (model,
# terms): computed once per model, not per wrench (a live output calls ~100 times a second).
_TERMS: dict[tuple, tuple[PayloadModel, tuple]] = {}
_TERMS_KEPT = 8


def _model_terms(
    samples: Mapping[str, GraspSample], model: PayloadModel, noise: SensorNoise
) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
    """What depends on the model, not on the samples' values: the maps Ad(T_i_s)^T, Ad_c (a
    wrench about {s} -> about the CoM, axes of {s}), the sensor covariance (about {s}) and
    the missing directions; kept per model unless the samples carry their own covariances."""
    ids = list(model.T_s_i)
    key = (id(model), noise, tuple(bool(samples[r].has_torque) for r in ids))
    own = any(samples[r].F_cov is not None or samples[r].dV_cov is not None for r in ids)
    kept = _TERMS.get(key)
    if kept is not None and kept[0] is model and not own:
        return kept[1]
    maps = {r: sp.adjoint(sp.inverse(model.T_s_i[r])).T for r in ids}  # Ad(T_i_s)^T
    Ad_c = sp.adjoint(sp.transform(np.eye(3), model.p_s_c)).T
    sensors = _sensor_covariance(samples, model, maps, noise)
    terms = (maps, Ad_c, sensors, _missing_directions(samples, ids, maps, Ad_c))
    if not own:
        if len(_TERMS) >= _TERMS_KEPT:
            _TERMS.clear()
        _TERMS[key] = (model, terms)
    return terms


def _check(samples: Mapping[str, GraspSample], model: PayloadModel, max_spread: float) -> None:
    if not (model.mass_valid and model.com_valid):
        raise WrenchUnavailableError(
            "the estimate has no valid mass and CoM yet: hold the payload still in a few "
            "orientations first (the estimate's advice says which)"
        )
    if model.theta[0] <= 0:
        raise WrenchUnavailableError(f"the estimated mass {model.theta[0]:.3g} kg is not positive")
    absent = sorted(set(model.T_s_i) - set(samples))
    if absent:
        raise WrenchUnavailableError(f"no sample from {', '.join(absent)}")
    stamps = [samples[r].stamp for r in model.T_s_i]
    if max(stamps) - min(stamps) > max_spread:
        raise WrenchUnavailableError(
            f"the robots' newest samples are {max(stamps) - min(stamps):.3f} s apart (more than "
            f"{max_spread:g} s): a robot lags or its clock is off"
        )
    if not any(samples[r].g_i is not None for r in model.T_s_i):
        raise WrenchUnavailableError("no robot reports gravity: the model's weight is unknown")
    for rid in model.T_s_i:
        s = samples[rid]
        if not all(np.all(np.isfinite(x)) for x in (s.V_i, s.dV_i, s.F_i[3:])):
            raise WrenchUnavailableError(f"{rid}'s twist, twist derivative or force is not finite")


def _twist_weights(samples: Mapping[str, GraspSample], ids: Sequence[str]) -> dict:
    """(angular, linear) std per robot for the consensus of the payload motion: from the
    samples' dV covariances if all have one, else equal."""
    if all(samples[r].dV_cov is not None for r in ids):
        return {r: _levels(samples[r].dV_cov) for r in ids}
    return {r: (1.0, 1.0) for r in ids}


def _levels(C: np.ndarray) -> tuple[float, float]:
    d = np.diag(np.asarray(C, dtype=float))
    return float(np.sqrt(max(d[:3].mean(), 1e-30))), float(np.sqrt(max(d[3:].mean(), 1e-30)))


def _robot_wrench(sample: GraspSample) -> np.ndarray:
    """F_i with the moment zero for a robot that transmits none (as the estimator reads it)."""
    F = np.array(sample.F_i, dtype=float)
    if not sample.has_torque or not np.all(np.isfinite(F[:3])):
        F[:3] = 0.0
    return F


def _motion(
    samples: Mapping[str, GraspSample], T_s_i: Mapping[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(V_s, dV_s, g_s) of the payload from every robot (``dynamics.payload_motion``)."""
    ids = list(T_s_i)
    V, dV = payload_motion(
        {r: samples[r].V_i[None] for r in ids},
        {r: samples[r].dV_i[None] for r in ids},
        T_s_i,
        _twist_weights(samples, ids),
    )
    gravity = {r: samples[r].g_i[None] for r in ids if samples[r].g_i is not None}
    return V[0], dV[0], payload_gravity(gravity, {r: T_s_i[r] for r in gravity})[0]


def _com_jacobian(theta: np.ndarray) -> np.ndarray:
    """d p_s_c / d theta (3x10) for p_s_c = h / m. The moment about the CoM moves with it:
    m_c = m_s + f x p_s_c."""
    m, h = theta[0], theta[1:4]
    J = np.zeros((3, 10))
    J[:, 0], J[:, 1:4] = -h / m**2, np.eye(3) / m
    return J


def _grasp_covariance(model: PayloadModel, applied: Mapping[str, np.ndarray]) -> np.ndarray:
    """Covariance (about {s}) of the robots' wrenches mapped with uncertain grasps: for the
    left perturbation (dphi, dp) of T_s_i, the mapped wrench (m, f) changes by
    (dphi x m + dp x f, dphi x f), m about {s}. The payload motion's (smaller) dependence
    on the grasps is neglected."""
    total = np.zeros((6, 6))
    for rid, F in applied.items():
        if rid == model.reference_id:
            continue
        m, f = F[:3], F[3:]
        J = np.zeros((6, 6))
        J[:3, :3], J[:3, 3:], J[3:, :3] = -sp.skew(m), -sp.skew(f), -sp.skew(f)
        total += J @ model.grasp_covariance[rid] @ J.T
    return total


def _sensor_covariance(
    samples: Mapping[str, GraspSample],
    model: PayloadModel,
    maps: Mapping[str, np.ndarray],
    noise: SensorNoise,
) -> np.ndarray:
    """Covariance (about {s}) of the robots' wrench noise and of the dV_s noise through Y."""
    ids = list(model.T_s_i)
    default_F = np.diag(np.repeat([noise.moment, noise.force], 3) ** 2)
    total = np.zeros((6, 6))
    for rid in ids:
        s = samples[rid]
        C = np.array(s.F_cov, dtype=float) if s.F_cov is not None else default_F.copy()
        if not s.has_torque:
            C[:3, :] = C[:, :3] = 0.0
        total += maps[rid] @ C @ maps[rid].T
    levels = (noise.angular_acceleration, noise.linear_acceleration)
    C_map = consensus_map(
        np.vstack([np.linalg.inv(maps[r].T) for r in ids]),  # Ad(T_i_s)
        noise_precision(_twist_weights(samples, ids), ids),
    )
    dV_noise = np.zeros((6 * len(ids), 6 * len(ids)))
    for k, rid in enumerate(ids):
        cov = samples[rid].dV_cov
        block = np.diag(np.repeat(levels, 3) ** 2) if cov is None else np.asarray(cov)
        dV_noise[6 * k : 6 * k + 6, 6 * k : 6 * k + 6] = block
    return total + regressor_noise_covariance(C_map @ dV_noise @ C_map.T, model.theta)


def _missing_directions(
    samples: Mapping[str, GraspSample],
    ids: Sequence[str],
    maps: Mapping[str, np.ndarray],
    Ad_c: np.ndarray,
) -> np.ndarray:
    """Orthonormal wrench directions (about the CoM) outside the robots' grasp map."""
    blocks = [Ad_c @ maps[r] if samples[r].has_torque else (Ad_c @ maps[r])[:, 3:] for r in ids]
    U, s, _ = np.linalg.svd(np.hstack(blocks))
    rank = int(np.sum(s > RANGE_TOL * s[0]))
    return U[:, rank:].T
