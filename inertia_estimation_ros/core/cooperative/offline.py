"""Batch (offline) API: paper 000's pipeline as published, and the project's estimator.

Paper pipeline (Secs. III-B to III-D), one function per stage, for recorded data whose
robots share one time base:
* ``paper_grasps``: pairwise Kabsch + least squares (Eqs. 1-8), then BFGS over all pairs;
* ``paper_mass_com``: Eqs. 9-16 on static holds, gravity from the reference robot;
* ``paper_inertia``: Eqs. 17-33 about that CoM, with the reference robot's omega and alpha.

Project estimator, ``estimate_offline``: the same statistics as ``TeamEstimator``, filled
from whole recordings and solved once, with per-sample robust reweighting of the grasp fit
and with the final grasps used for the consensus motion in every regressor. The wrench
segments are judged for unmeasured external wrenches (``external_wrench``) twice: a first
fit gives the residuals whose autocorrelation the second judgement uses. It returns the same
``TeamEstimate``. Each ``Recording`` is one contiguous, synchronized stretch (dict of
``GraspSeries``); its phase is "static", "moving" or "auto" (detected).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..regressor import body_regressor
from ..samples import GraspSeries
from . import dynamics as dy
from . import grasp_kinematics as gk
from . import statics as st
from .correlated_noise import pooled_inflation, variance_inflation
from .estimate import Evidence, TeamEstimate, assemble_estimate
from .external_wrench import SegmentStore, judge_segments, judgement_evidence
from .online import PHASE_NAMES, _PhaseDetector
from .settings import EstimatorSettings


# ----- paper 000 ----------------------------------------------------------------------------
def paper_grasps(series: Mapping[str, GraspSeries], reference_id: str) -> dict[str, np.ndarray]:
    """T_s_i by the paper's pairwise solutions (Eqs. 3-8) refined over all pairs with BFGS."""
    moments = gk.twist_moments({r: s.V_i for r, s in series.items()})
    return gk.paper_refinement(moments, reference_id, gk.pairwise_grasps(moments, reference_id))


def paper_mass_com(
    series: Mapping[str, GraspSeries], T_s_i: Mapping[str, np.ndarray], reference_id: str
) -> tuple[float, np.ndarray]:
    """(m, p_s_c) from static holds (Eqs. 9-16), gravity in {s} from the reference robot."""
    force, moment = st.net_force_and_moment({r: s.F_i for r, s in series.items()}, T_s_i)
    g_s = series[reference_id].g_i
    mass = st.estimate_mass(force, g_s)
    return mass, st.estimate_com(mass, moment, g_s)


def paper_inertia(
    series: Mapping[str, GraspSeries],
    T_s_i: Mapping[str, np.ndarray],
    p_s_c: np.ndarray,
    reference_id: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(I_b, principal moments ascending, R_s_c) about the given CoM (Eqs. 17-33)."""
    ref = series[reference_id]
    y = dy.moment_about_com({r: s.F_i for r, s in series.items()}, T_s_i, p_s_c)
    I_b = dy.estimate_inertia_about_com(ref.V_i[:, :3], ref.dV_i[:, :3], y)
    moments, R_s_c = dy.principal_axes(I_b)
    return I_b, moments, R_s_c


# ----- project ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recording:
    """One contiguous synchronized stretch of every robot's data, and its phase."""

    series: Mapping[str, GraspSeries]
    phase: str = "auto"  # "static", "moving" or "auto"


def detect_phases(series: Mapping[str, GraspSeries], settings: EstimatorSettings) -> np.ndarray:
    """Phase of every sample ("static", "moving", "transition"), as the online estimator does."""
    detector = _PhaseDetector(settings)
    ids = list(series)
    V = np.stack([series[r].V_i for r in ids], axis=1)
    dV = np.stack([series[r].dV_i for r in ids], axis=1)
    return PHASE_NAMES[detector(V, dV)]


def _phases(recording: Recording, settings: EstimatorSettings) -> np.ndarray:
    n = len(next(iter(recording.series.values())))
    if recording.phase == "auto":
        return detect_phases(recording.series, settings)
    if recording.phase not in ("static", "moving"):
        raise ValueError(f"phase {recording.phase!r} is not 'static', 'moving' or 'auto'")
    return np.full(n, recording.phase)


def _grasps(
    recordings: list[Recording],
    phases: list[np.ndarray],
    reference_id: str,
    settings: EstimatorSettings,
) -> gk.GraspKinematics:
    ids = tuple(recordings[0].series)
    cat = {
        field: {
            r: np.concatenate([getattr(rec.series[r], field) for rec in recordings]) for r in ids
        }
        for field in ("V_i", "T_i0_i", "g_i")
    }
    moving = np.concatenate(phases) == "moving"
    twists = {r: cat["V_i"][r][moving] for r in ids}
    if settings.kinematics_source == "twists":
        return gk.fit_grasps(twists, reference_id, loss=settings.robust_loss)
    has_g = all(rec.series[r].g_i is not None for rec in recordings for r in ids)
    return gk.fit_grasps(
        twists,
        reference_id,
        poses=cat["T_i0_i"],
        gravity=cat["g_i"] if has_g else None,
        loss=settings.robust_loss,
        scale=settings.robust_scale,
        gravity_floor=settings.gravity_direction_floor,
    )


def _quantized(
    recordings: list[Recording],
    phases: list[np.ndarray],
    kinematics: gk.GraspKinematics,
    settings: EstimatorSettings,
) -> gk.GraspKinematics:
    """The fit with the quantization of the poses in its covariance (the static sets of each
    recording one still stretch; ``grasp_kinematics.quantization_covariance``)."""
    resolution = (settings.pose_angle_resolution, settings.pose_position_resolution)
    if kinematics.source != "poses" or not any(resolution):
        return kinematics
    ids = kinematics.robot_ids
    rows = [gk.pose_rows({r: rec.series[r].T_i0_i for r in ids}, ids) for rec in recordings]
    moments = gk.StackedMoments.from_rows(ids, np.concatenate(rows))
    still = [Y[p == "static"].sum(axis=0) for Y, p in zip(rows, phases, strict=True)]
    still = [total for total in still if total[-1] > 0]
    extra = gk.quantization_covariance(kinematics, resolution, moments, still)
    return kinematics.with_added_covariance(extra)


def _kinematic_inflation(
    recordings: list[Recording], kinematics: gk.GraspKinematics, settings: EstimatorSettings
) -> float:
    """Residual autocorrelation of the grasp fit, averaged over recordings by length."""
    ids = kinematics.robot_ids
    if kinematics.source == "twists":
        P = gk.residual_map_of(kinematics)
        rows = [gk.twist_rows({r: rec.series[r].V_i for r in ids}, ids) for rec in recordings]
    else:
        rows = [gk.pose_rows({r: rec.series[r].T_i0_i for r in ids}, ids) for rec in recordings]
        P = gk.residual_map_of(kinematics, gk.StackedMoments.from_rows(ids, np.vstack(rows)))
    lags = settings.residual_correlation_lags
    kappas = [(len(x), variance_inflation(x @ P.T, lags)) for x in rows]
    return sum(n * k for n, k in kappas) / sum(n for n, _ in kappas)


def estimate_offline(
    recordings: Sequence[Recording | Mapping[str, GraspSeries]],
    reference_id: str,
    settings: EstimatorSettings | None = None,
) -> TeamEstimate:
    """The project's estimate from whole recordings (see the module docstring)."""
    settings = settings or EstimatorSettings()
    recordings = [r if isinstance(r, Recording) else Recording(r) for r in recordings]
    ids = tuple(recordings[0].series)
    phases = [_phases(rec, settings) for rec in recordings]
    kinematics = _grasps(recordings, phases, reference_id, settings)
    kinematics = kinematics.inflated(_kinematic_inflation(recordings, kinematics, settings))
    kinematics = _quantized(recordings, phases, kinematics, settings)
    store, fit = _judge_and_fit(
        _WrenchData.of(recordings, phases, kinematics), kinematics, settings
    )
    all_phases = np.concatenate(phases)
    moving = all_phases == "moving"
    V_ref = np.concatenate([rec.series[reference_id].V_i for rec in recordings])[moving]
    dV_ref = np.concatenate([rec.series[reference_id].dV_i for rec in recordings])[moving]
    g_static = [
        dy.payload_gravity({r: rec.series[r].g_i[ph == "static"] for r in ids}, kinematics.T_s_i)
        for rec, ph in zip(recordings, phases, strict=True)
    ]
    g_static = np.vstack(g_static)
    unit = g_static / np.linalg.norm(g_static, axis=1, keepdims=True) if len(g_static) else g_static
    evidence = Evidence(
        robot_ids=ids,
        reference_id=reference_id,
        stamp=float(recordings[-1].series[reference_id].t[-1]),
        kinematics=kinematics,
        fit=fit,
        static_information=_information(fit, "static"),
        dynamic_information=_information(fit, "dynamic"),
        omega_moment=V_ref[:, :3].T @ V_ref[:, :3],
        alpha_moment=dV_ref[:, :3].T @ dV_ref[:, :3],
        gravity_moment=unit.T @ unit,
        samples_kinematics=int(moving.sum()),
        samples_static=int((all_phases == "static").sum()),
        samples_dynamic=int((all_phases != "static").sum()),
        residual_rms_angular_velocity=_angular_rms(recordings, kinematics),
        **judgement_evidence(store, settings),
    )
    return assemble_estimate(evidence, settings)


def _judge_and_fit(
    wrenches: _WrenchData, kinematics: gk.GraspKinematics, settings: EstimatorSettings
) -> tuple[SegmentStore, dy.ParameterFit | None]:
    """Judge the wrench segments and fit theta on those in use, twice: the first fit gives
    the residuals whose autocorrelation the second judgement and the covariance use."""
    T, fit = kinematics.T_s_i, None
    for final in (False, True):
        store = wrenches.segments(settings, fit)
        judgement = judge_segments(store.segments, T, wrenches.dV_covariance, settings)
        store.record(judgement)
        groups = store.pooled(judgement.used, wrenches.dV_covariance)
        if not groups:
            return store, None
        inflation = pooled_inflation(s.correlation for s in store.segments if s.used)
        grasp_covariance = kinematics.covariance if final else None
        fit = dy.fit_parameters(groups, T, kinematics.reference_id, grasp_covariance, inflation)
    return store, fit


def _information(fit: dy.ParameterFit | None, group: str) -> np.ndarray:
    if fit is None or group not in fit.group_information:
        return np.zeros((10, 10))
    return fit.group_information[group]


@dataclass(frozen=True)
class _WrenchData:
    """Per recording: stamps, regressors Y (consensus motion of the final grasps), robot
    wrenches F and the static mask; and per group the noise covariance of the consensus dV_s
    (from the robots' disagreement in that group's samples)."""

    robot_ids: tuple[str, ...]
    has_torque: tuple[bool, ...]
    T_s_i: Mapping[str, np.ndarray]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    dV_covariance: dict[str, np.ndarray]  # per group: noise covariance of the consensus dV_s

    @classmethod
    def of(
        cls, recordings: list[Recording], phases: list[np.ndarray], kinematics: gk.GraspKinematics
    ) -> _WrenchData:
        ids, T = kinematics.robot_ids, kinematics.T_s_i
        torque = tuple(bool(recordings[0].series[r].has_torque) for r in ids)
        parts, dV_rows = [], {"static": [], "dynamic": []}
        for rec, phase in zip(recordings, phases, strict=True):
            series = rec.series
            V, dV = dy.payload_motion(
                {r: s.V_i for r, s in series.items()},
                {r: s.dV_i for r, s in series.items()},
                T,
                kinematics.twist_noise,
            )
            g = dy.payload_gravity({r: s.g_i for r, s in series.items()}, T)
            F = dy.stack_wrenches({r: s.F_i for r, s in series.items()}, ids)
            F = np.nan_to_num(F, nan=0.0, posinf=0.0, neginf=0.0)
            F[:, ~np.array(torque), :3] = 0.0
            t = np.asarray(series[kinematics.reference_id].t, dtype=float)
            parts.append((t, body_regressor(V, dV, g), F, phase == "static"))
            for group, phase_name in (("static", "static"), ("dynamic", "moving")):
                rows = np.concatenate([series[r].dV_i[phase == phase_name] for r in ids], 1)
                dV_rows[group].append(rows)
        dV_covariance = {}
        for group, rows in dV_rows.items():
            rows = np.vstack(rows)
            if len(rows) > 1 and np.any(rows):
                moments = gk.StackedMoments.from_rows(ids, rows)
                noise = gk.consensus_noise(moments, T)
                dV_covariance[group] = dy.consensus_covariance(T, kinematics.twist_noise, noise)
        return cls(ids, torque, T, parts, dV_covariance)

    def segments(self, settings: EstimatorSettings, fit: dy.ParameterFit | None) -> SegmentStore:
        """The segment statistics; with a fit, also each segment's whitened residuals'
        autocorrelation (each group whitened with its own noise)."""
        store = SegmentStore(self.robot_ids, self.has_torque, settings)
        moments = dy.WrenchMoments.empty(self.robot_ids, self.has_torque)
        M = moments.wrench_maps(self.T_s_i)
        A_f, A_m = moments.noise_structure(self.T_s_i)
        for t, Y, F, static in self.parts:
            for run in np.split(np.arange(len(t)), np.flatnonzero(np.diff(static)) + 1):
                if not len(run):
                    continue
                group = "static" if static[run[0]] else "dynamic"
                residuals = None
                if fit is not None:
                    sigma_f, sigma_m = fit.noise.get(group) or next(iter(fit.noise.values()))
                    C = sigma_f**2 * A_f + sigma_m**2 * A_m
                    whitener = np.linalg.inv(
                        np.linalg.cholesky(C + 1e-12 * np.trace(C) * np.eye(6))
                    )
                    r = np.einsum("iab,kib->ka", M, F[run]) - Y[run] @ fit.theta
                    residuals = r @ whitener.T
                store.add_run(t[run], group, Y[run], F[run], residuals)
            store.close()
        return store


def _angular_rms(recordings: list[Recording], kinematics: gk.GraspKinematics) -> float:
    ids = kinematics.robot_ids
    Z = np.vstack([gk.twist_rows({r: rec.series[r].V_i for r in ids}, ids) for rec in recordings])
    A = gk.stacked_adjoint(kinematics.T_s_i, ids)
    C = gk.consensus_map(A, gk.noise_precision(kinematics.twist_noise, ids))
    residual = (Z - Z @ C.T @ A.T).reshape(len(Z), len(ids), 2, 3)[:, :, 0]
    return float(np.sqrt(np.mean(residual**2)))
