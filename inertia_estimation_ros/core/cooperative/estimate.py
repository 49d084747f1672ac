"""The team's estimate of the payload: one value type that maps 1:1 to msg/PayloadEstimate.

``TeamEstimate`` is what ``TeamEstimator.estimate()`` and ``estimate_offline`` return.
Everything is in {s}, the reference robot's grasp frame, with core conventions
(angular first). Field by field, against msg/PayloadEstimate.msg:

* ``stage`` -> stage (``Stage`` has the message's constant values);
* ``grasps_valid``, ``mass_valid``, ``com_valid``, ``inertia_valid`` -> the four flags;
  a False flag means that quantity (and its covariance) is zero here, never a guess;
* ``theta`` (10) and ``theta_covariance`` (10x10) -> parameters, parameter_covariance;
* ``grasps`` -> grasps: ``GraspFrameEstimate`` (robot_id, T_s_i, covariance). The
  covariance is 6x6 of (dphi, dp) with R_s_i = exp([dphi]) R_hat_s_i, both in {s};
  msg/GraspFrame lists (dp, dphi): ``ros.conversions.to_covariance`` does that swap;
* ``mass``, ``p_s_c``, ``inertia_about_com`` -> inertia (geometry_msgs/Inertia);
  ``R_s_c`` -> principal_axes; ``principal_moments`` -> principal_moments (ascending).
  ``mass_variance``, ``p_s_c_covariance`` and ``principal_moments_covariance`` ->
  mass_variance, com_covariance, principal_moments_covariance; the others
  (``inertia_about_com_covariance`` over [Ixx, Ixy, Ixz, Iyy, Iyz, Izz], ``R_s_c_covariance``
  of dphi in {s}) only through parameter_covariance;
* ``physically_consistent``, ``consistency_margin`` -> the same fields;
* ``kinematics_condition_number``, ``statics_condition_number``,
  ``dynamics_condition_number``, ``advice``, the three ``residual_rms_*`` and the four
  ``samples_*`` -> the same fields. ``samples_static`` and ``samples_dynamic`` count every
  wrench sample, also those set aside;
* ``T_i_c``: the principal-axes frame seen from every grasp (no message field);
* ``samples_external_wrench`` (no message field): samples left out of mass, CoM and inertia
  because an unmeasured external wrench (a human hand) acted on the payload; their stretches
  of time and sizes are in ``external_wrench_spans`` and summarized in ``advice``; stretches
  left out whose wrench could not be sized yet are ``undecided_spans`` (a refusal, no size).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

import numpy as np

from ..consistency import ConsistencyError, project_to_consistent
from ..inertial import InertialParameters
from . import diagnostics as dg
from .dynamics import ParameterFit
from .external_wrench import (
    ExternalWrenchSpan,
    UndecidedSpan,
    external_wrench_advice,
    phase_group,
)
from .grasp_kinematics import GraspKinematics
from .payload_properties import PayloadProperties, com_frames, payload_properties
from .settings import EstimatorSettings


class Stage(IntEnum):
    """msg/PayloadEstimate STAGE_* values."""

    WAITING = 0
    KINEMATICS = 1
    STATICS = 2
    DYNAMICS = 3
    FROZEN = 4


@dataclass(frozen=True)
class GraspFrameEstimate:
    """T_s_i of one robot; covariance 6x6 of (dphi, dp) in {s} (angular first)."""

    robot_id: str
    T_s_i: np.ndarray
    covariance: np.ndarray


@dataclass(frozen=True)
class TeamEstimate:
    """The payload estimate in {s}; see the module docstring for the message mapping."""

    stamp: float
    reference_robot_id: str
    stage: Stage
    grasps_valid: bool
    mass_valid: bool
    com_valid: bool
    inertia_valid: bool
    theta: np.ndarray
    theta_covariance: np.ndarray
    grasps: tuple[GraspFrameEstimate, ...]
    mass: float
    mass_variance: float
    p_s_c: np.ndarray
    p_s_c_covariance: np.ndarray
    inertia_about_com: np.ndarray
    inertia_about_com_covariance: np.ndarray
    R_s_c: np.ndarray
    R_s_c_covariance: np.ndarray
    principal_moments: np.ndarray
    principal_moments_covariance: np.ndarray
    T_i_c: dict[str, np.ndarray]
    physically_consistent: bool
    consistency_margin: float
    kinematics_condition_number: float
    statics_condition_number: float
    dynamics_condition_number: float
    advice: tuple[str, ...]
    residual_rms_angular_velocity: float
    residual_rms_force: float
    residual_rms_moment: float
    samples_kinematics: int
    samples_static: int
    samples_dynamic: int
    samples_rejected: int
    samples_external_wrench: int = 0
    external_wrench_spans: tuple[ExternalWrenchSpan, ...] = ()
    undecided_spans: tuple[UndecidedSpan, ...] = ()

    def grasp(self, robot_id: str) -> GraspFrameEstimate:
        return next(g for g in self.grasps if g.robot_id == robot_id)


@dataclass
class Evidence:
    """What an estimate rests on: fits, excitation second moments (in {s}) and counts."""

    robot_ids: tuple[str, ...]
    reference_id: str
    stamp: float = 0.0
    kinematics: GraspKinematics | None = None
    fit: ParameterFit | None = None
    static_information: np.ndarray = field(default_factory=lambda: np.zeros((10, 10)))
    dynamic_information: np.ndarray = field(default_factory=lambda: np.zeros((10, 10)))
    omega_moment: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    alpha_moment: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    gravity_moment: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    samples_kinematics: int = 0
    samples_static: int = 0
    samples_dynamic: int = 0
    samples_rejected: int = 0
    residual_rms_angular_velocity: float = 0.0
    notes: tuple[str, ...] = ()  # extra advice, e.g. robots that report no force
    frozen: bool = False
    external_wrench_spans: tuple[ExternalWrenchSpan, ...] = ()
    undecided_spans: tuple[UndecidedSpan, ...] = ()
    samples_external_static: int = 0  # static samples set aside (an external wrench acted)
    samples_external_dynamic: int = 0


def _std(C: np.ndarray) -> float:
    """sqrt of the largest eigenvalue of a covariance."""
    return float(np.sqrt(max(np.linalg.eigvalsh(np.atleast_2d(C))[-1], 0.0)))


def _grasps(evidence: Evidence, settings: EstimatorSettings) -> tuple[bool, list, list[str]]:
    frame = dg.frame_phrase(evidence.reference_id)
    advice = dg.rotation_advice(evidence.omega_moment, frame, settings.excitation_ratio)
    kin = evidence.kinematics
    if kin is None or evidence.samples_kinematics < settings.min_kinematics_samples:
        advice.append(
            f"grasp kinematics needs {settings.min_kinematics_samples} moving samples, has "
            f"{evidence.samples_kinematics}: move the payload, rotating it about several axes"
        )
        grasps = [GraspFrameEstimate(r, np.eye(4), np.zeros((6, 6))) for r in evidence.robot_ids]
        return False, grasps, advice
    covariances = {r: kin.grasp_covariance(r) for r in evidence.robot_ids}
    refusals = dg.grasp_refusals(
        list(evidence.robot_ids),
        covariances,
        np.deg2rad(settings.max_rotation_std_deg),
        settings.max_position_std,
    )
    grasps = [GraspFrameEstimate(r, kin.T_s_i[r], covariances[r]) for r in evidence.robot_ids]
    return not refusals, grasps, advice + refusals


def _consistent(
    theta: np.ndarray, covariance: np.ndarray, settings: EstimatorSettings
) -> tuple[np.ndarray, list[str]]:
    """theta projected onto J(theta) >= margin, weighted by its information (paper 003)."""
    try:
        weight = np.linalg.pinv(covariance, hermitian=True)
        projection = project_to_consistent(theta, weight, settings.consistency_margin)
    except ConsistencyError as error:
        return theta, [f"no physically consistent inertia could be certified ({error})"]
    return projection.params.vec, []


def _validity(
    props: PayloadProperties, fit: ParameterFit, settings: EstimatorSettings
) -> tuple[bool, bool, bool]:
    mass_ok = props.mass > 0 and np.sqrt(props.mass_variance) <= (
        settings.max_mass_relative_std * props.mass
    )
    com_ok = mass_ok and _std(props.p_s_c_covariance) <= settings.max_com_std
    top = max(props.principal_moments[-1], 0.0)
    moving = sum(n for group, n in fit.samples.items() if phase_group(group) == "dynamic")
    inertia_ok = (
        com_ok
        and moving > 0
        and props.principal_moments[0] > 0
        and _std(props.principal_moments_covariance) <= settings.max_inertia_relative_std * top
    )
    return bool(mass_ok), bool(com_ok), bool(inertia_ok)


def _quantity_advice(
    props: PayloadProperties,
    valid: tuple[bool, bool, bool],
    evidence: Evidence,
    settings: EstimatorSettings,
) -> list[str]:
    frame = dg.frame_phrase(evidence.reference_id)
    advice = []
    if not valid[0]:
        advice.append(
            f"the mass is not determined yet (std {np.sqrt(max(props.mass_variance, 0)):.3g} kg)"
            ": hold the payload still for a second"
        )
    if not valid[1]:
        advice += dg.tilt_advice(evidence.gravity_moment, evidence.samples_static, frame)
        advice.append(f"the CoM is not determined yet (std {_std(props.p_s_c_covariance):.3g} m)")
    if not valid[1]:
        advice += _hands_off(evidence, static=True)
    if not valid[2]:
        advice += dg.acceleration_advice(evidence.alpha_moment, frame, settings.excitation_ratio)
        advice.append(
            "the inertia is not determined yet (principal-moment std "
            f"{_std(props.principal_moments_covariance):.3g} kg m^2)"
        )
    if not valid[2]:
        advice += _hands_off(evidence, static=False)
    return advice


def _hands_off(evidence: Evidence, static: bool) -> list[str]:
    """Advice when samples were set aside for an external wrench and too few remain."""
    if static and evidence.samples_external_static:
        return [
            f"an external wrench acted on {evidence.samples_external_static} of "
            f"{evidence.samples_static} static samples: let go of the payload during the "
            "static holds"
        ]
    if not static and evidence.samples_external_dynamic:
        return [
            f"an external wrench acted on {evidence.samples_external_dynamic} of "
            f"{evidence.samples_dynamic} moving samples: let the robots move the payload "
            "without a hand on it"
        ]
    return []


def assemble_estimate(evidence: Evidence, settings: EstimatorSettings) -> TeamEstimate:
    """Validity, refusals with advice, consistency projection and stage of the evidence."""
    grasps_valid, grasps, advice = _grasps(evidence, settings)
    advice += list(evidence.notes)
    advice += external_wrench_advice(evidence.external_wrench_spans, evidence.undecided_spans)
    fit = evidence.fit if grasps_valid else None
    valid = (False, False, False)
    theta, covariance = np.zeros(10), np.zeros((10, 10))
    if fit is None and grasps_valid:
        advice += _hands_off(evidence, static=True) + _hands_off(evidence, static=False)
    if fit is not None:
        theta, covariance = fit.theta, fit.covariance
        props = payload_properties(theta, covariance)
        valid = _validity(props, fit, settings)
        if valid[2]:
            theta, extra = _consistent(theta, covariance, settings)
            advice += extra
            props = payload_properties(theta, covariance)
        advice += _quantity_advice(props, valid, evidence, settings)
    props, theta, covariance = _keep_valid(theta, covariance, valid)
    body = InertialParameters(theta)
    margin = body.consistency_margin() if valid[0] else 0.0
    stage = (
        Stage.FROZEN
        if evidence.frozen
        else Stage.DYNAMICS
        if valid[2]
        else Stage.STATICS
        if valid[0]
        else Stage.KINEMATICS
        if grasps_valid
        else Stage.WAITING
    )
    T_s_i = {g.robot_id: g.T_s_i for g in grasps}
    return TeamEstimate(
        stamp=evidence.stamp,
        reference_robot_id=evidence.reference_id,
        stage=stage,
        grasps_valid=grasps_valid,
        mass_valid=valid[0],
        com_valid=valid[1],
        inertia_valid=valid[2],
        theta=theta,
        theta_covariance=covariance,
        grasps=tuple(grasps),
        mass=props.mass,
        mass_variance=props.mass_variance,
        p_s_c=props.p_s_c,
        p_s_c_covariance=props.p_s_c_covariance,
        inertia_about_com=props.inertia_about_com,
        inertia_about_com_covariance=props.inertia_about_com_covariance,
        R_s_c=props.R_s_c,
        R_s_c_covariance=props.R_s_c_covariance,
        principal_moments=props.principal_moments,
        principal_moments_covariance=props.principal_moments_covariance,
        T_i_c=com_frames(T_s_i, props.p_s_c, props.R_s_c) if valid[2] else {},
        physically_consistent=bool(valid[2] and margin > 0),
        consistency_margin=float(margin),
        kinematics_condition_number=(
            dg.scaled_condition_number(evidence.kinematics.information)
            if evidence.kinematics is not None
            else 0.0
        ),
        statics_condition_number=dg.scaled_condition_number(evidence.static_information[:4, :4]),
        dynamics_condition_number=dg.scaled_condition_number(evidence.dynamic_information),
        advice=tuple(dict.fromkeys(advice)),
        residual_rms_angular_velocity=evidence.residual_rms_angular_velocity,
        residual_rms_force=fit.residual_rms["force"] if fit is not None else 0.0,
        residual_rms_moment=fit.residual_rms["moment"] if fit is not None else 0.0,
        samples_kinematics=evidence.samples_kinematics,
        samples_static=evidence.samples_static,
        samples_dynamic=evidence.samples_dynamic,
        samples_rejected=evidence.samples_rejected,
        samples_external_wrench=(
            evidence.samples_external_static + evidence.samples_external_dynamic
        ),
        external_wrench_spans=evidence.external_wrench_spans,
        undecided_spans=evidence.undecided_spans,
    )


def _keep_valid(
    theta: np.ndarray, covariance: np.ndarray, valid: tuple[bool, bool, bool]
) -> tuple[PayloadProperties, np.ndarray, np.ndarray]:
    """Zero what is not valid: theta keeps m (mass valid), h (CoM valid), I (inertia valid);
    without a valid inertia, theta's inertia is that of a point mass at the CoM."""
    keep = np.zeros(10, dtype=bool)
    keep[0], keep[1:4], keep[4:] = valid[0], valid[1], valid[2]
    theta = np.where(keep, theta, 0.0)
    covariance = covariance * np.outer(keep, keep)
    if valid[0] and not valid[2]:
        com = theta[1:4] / theta[0]
        theta = InertialParameters.from_mass_com_inertia(theta[0], com, np.zeros((3, 3))).vec
    if valid[2]:
        return payload_properties(theta, covariance), theta, covariance
    props = _no_properties()
    if valid[0]:
        known = payload_properties(theta, covariance)
        props = replace(
            props,
            mass=known.mass,
            mass_variance=known.mass_variance,
            p_s_c=known.p_s_c,
            p_s_c_covariance=known.p_s_c_covariance,
        )
    return props, theta, covariance


def _no_properties() -> PayloadProperties:
    return PayloadProperties(
        0.0,
        0.0,
        np.zeros(3),
        np.zeros((3, 3)),
        np.zeros((3, 3)),
        np.zeros((6, 6)),
        np.zeros(3),
        np.zeros((3, 3)),
        np.eye(3),
        np.zeros((3, 3)),
    )
