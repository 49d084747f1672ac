"""Payload identification in flight (beyond paper 002): with no one touching the payload, the
cable tension vectors are wrenches at known attach points, so the team identifies the
payload's mass, CoM and inertia with the package's rigid-body regressor and its physically
consistent identification (``core.regressor``, ``core.identification``).

Frame {b} is the payload's mocap frame L (the attach points rho_k are given in it). Per sample
the wrench the cables apply about its origin, in {b}, moment first (``core/spatial.py``):
``(sum rho_k x mu_k^L, sum mu_k^L)`` with mu_k^L = R_L^T (-|mu_k| xi_k), equals
Y(V, dV, g) theta (``body_regressor``) for the body twist V = (Omega, R^T v), its derivative
dV = (Omega_dot, R^T a - Omega x R^T v) and gravity g = R^T (0, 0, -g). The samples are
weighted by the covariance of their residuals, estimated from the data (feasible generalized
least squares), not by the covariances the UKFs and the motion filter state: those were 8-25
times too large on MuJoCo flights, in proportions of their own, and weighted by them the
payload acceleration's noise pulled the CoM's height 10-13 mm low (``InFlightIdentification``;
docs/aerial-teams.md). Clusters of samples whose residuals
are outliers (a gust on a robot, a UKF coasting unflagged) are left out. The online
identification pairs each sample's tensions with the payload's motion at their instant,
smoothed over a fixed lag (the filter's accelerations are the truth delayed,
``PayloadMotionFilter.lag``, and noisy). Both the UKFs' tensions and the filtered motion
are correlated in time, so that the samples are not independent: the stated covariance adds
what the scores of consecutive clusters of samples disagree beyond the noise model
(Newey-West, ``score_overdispersion``, as the ground team's estimator does).

``OnlinePayloadIdentification`` is what the coordinator runs: samples while nobody touches
the payload, a weak prior around the team description (so that a hover still gives the mass
and the parts the motion did not excite stay at the description, flagged), and the result as
a ``TeamEstimate`` (msg/PayloadEstimate) and as the parameters of the human-wrench estimator.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from ..cooperative.diagnostics import scaled_condition_number
from ..cooperative.dynamics import score_overdispersion
from ..cooperative.estimate import GraspFrameEstimate, Stage, TeamEstimate, _keep_valid
from ..cooperative.payload_properties import payload_properties
from ..cooperative.settings import EstimatorSettings
from ..identification import ConsistentIdentification, ExcitationError, RegressionData
from ..inertial import InertialParameters
from ..regressor import body_regressor
from ..spatial import skew
from .allocation import E3, GRAVITY
from .human_wrench import tension_vector_covariance
from .payload_motion import PayloadMotionFilter, acceleration_covariance
from .team_estimation import AerialTeamEstimate, AerialTeamModel


@dataclass(frozen=True)
class IdentifiedPayload:
    """theta (``InertialParameters`` in {b}) and its 10x10 covariance (the inverse Fisher
    information of the whitened rows, plus the prior's if one was used), how many samples it
    rests on, and what the motion did not excite (empty: everything was)."""

    params: InertialParameters
    covariance: np.ndarray
    samples: int
    advice: tuple[str, ...] = ()

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.diag(self.covariance))


class InFlightIdentification:
    """Accumulates no-contact samples of the team; ``solve`` identifies the payload or raises
    ``ExcitationError`` naming the parameters the motion did not excite.

    The samples are weighted by the covariance of their wrench residuals estimated from the
    data (feasible generalized least squares: fit, residual covariance, refit), one 6x6 in
    L for all. The covariances the samples state (the UKFs' tensions, ``direction_floor``,
    the motion's through the spatial inertia of ``linearization``) weight only the first
    fit, and every fit while there are fewer than ``min_samples``: on MuJoCo flights they
    were 8-25 times the residuals' variance, in proportions of their own, and weighted by
    them the payload acceleration's noise (in the regressor and, as m da, in the force
    residual) pulled the CoM 13 mm low, under 1 mm weighted by the residuals' own
    covariance (docs/aerial-teams.md).
    A fit leaves out the clusters whose mean squared whitened residual exceeds
    ``outlier_ratio`` times the clusters' median (``rejected`` counts their samples; clean
    flights stay within 1.7 times it, a 3 N gust on a robot gives 30-90). The data are kept
    as moments of [Y | w] per cluster of ``cluster_samples`` consecutive samples (the
    Newey-West covariance's clusters; beyond ``max_clusters`` neighbours merge and clusters
    double), so that any weight applies to all of them. ``tension_bias`` [N]: a bias of each
    robot's tension that every sample shares, added to the covariance (on MuJoCo the UKFs'
    mean tension errors were -0.002 to 0.005 N per cable over 6 flights, RMS 0.0024 N; taken
    as 0 the mass's |error|/sigma RMS was 1.25 over those flights)."""

    def __init__(
        self,
        rho_L: np.ndarray,
        direction_floor: float = 0.01,
        linearization: InertialParameters | None = None,
        cluster_samples: int = 20,
        min_samples: int = 60,
        max_clusters: int = 128,
        outlier_ratio: float = 3.0,
        tension_bias: float = 0.003,
    ):
        self.rho_L = np.asarray(rho_L, dtype=float)
        self.direction_floor = float(direction_floor)
        self._map_solver: ConsistentIdentification | None = None
        self._map = np.vstack([np.hstack(list(skew(self.rho_L))), np.tile(np.eye(3), len(rho_L))])
        self._inertia = None if linearization is None else linearization.spatial_inertia
        self.cluster_samples = int(cluster_samples)
        self.min_samples = int(min_samples)
        self.max_clusters = int(max_clusters)
        self.outlier_ratio = float(outlier_ratio)
        self.tension_bias = float(tension_bias)
        self._kept: list[bool] = []  # per cluster: in the last fit (not an outlier)
        self.rejected = 0  # samples the last fit left out (in clusters of outliers)
        self._clusters: list[list] = []  # [moments (66, 66) of vec [Y | w], samples, the
        # moments (6, 10, 6, n) of Y and d wrench / d tension] each
        self._stated = np.zeros((6, 6))  # the sum of the samples' stated covariances
        self.samples = 0
        self.weight = np.eye(6)  # the last fit's (inverse residual covariance)
        self.data: RegressionData | None = None  # the last fit's weighted data

    def add(
        self,
        R_L: np.ndarray,
        tension: np.ndarray,
        xi: np.ndarray,
        cable_covariances: np.ndarray,
        v: np.ndarray,
        accel: np.ndarray,
        Omega: np.ndarray,
        Omega_dot: np.ndarray,
        motion_covariance: np.ndarray | None = None,
    ) -> None:
        """One sample: the payload's attitude, the robots' tensions (n,), cable directions
        (n, 3) and (xi, mu) covariances (n, 4, 4), its velocity and acceleration (in I) and
        body rate and angular acceleration (in L), and optionally the 6x6 covariance of
        (acceleration, angular acceleration) (``PayloadMotionFilter.covariance``; used with
        a ``linearization``)."""
        blocks = np.kron(np.eye(len(self.rho_L)), R_L.T)  # tension vectors I -> L
        mu_L = blocks @ (-(np.asarray(tension)[:, None] * np.asarray(xi))).ravel()
        wrench = self._map @ mu_L
        cable_covariances = np.array(cable_covariances, dtype=float)
        cable_covariances[:, :3, :3] += self.direction_floor**2 * np.eye(3)
        covariance = self._map @ blocks @ tension_vector_covariance(tension, xi, cable_covariances)
        covariance = covariance @ blocks.T @ self._map.T
        if motion_covariance is not None and self._inertia is not None:
            D = self._inertia @ np.block([[np.zeros((3, 3)), np.eye(3)], [R_L.T, np.zeros((3, 3))]])
            covariance = covariance + D @ motion_covariance @ D.T
        v_b = R_L.T @ v
        V = np.concatenate([Omega, v_b])
        dV = np.concatenate([Omega_dot, R_L.T @ accel - np.cross(Omega, v_b)])
        Y = body_regressor(V, dV, R_L.T @ (-GRAVITY * E3))
        row = np.hstack([Y, wrench[:, None]]).ravel()
        if not np.all(np.isfinite(row)) or not np.all(np.isfinite(covariance)):
            raise ValueError("in-flight identification: a sample with NaN or Inf; drop it")
        per_tension = np.stack(
            [self._map[:, 3 * k : 3 * k + 3] @ R_L.T @ -x for k, x in enumerate(np.asarray(xi))],
            axis=1,
        )  # d wrench / d tension_k
        self._add_to_cluster(np.outer(row, row), np.einsum("ia,jb->iajb", Y, per_tension))
        self._stated += covariance
        self.samples += 1

    def _add_to_cluster(self, moments: np.ndarray, bias: np.ndarray) -> None:
        if not self._clusters or self._clusters[-1][1] >= self.cluster_samples:
            if len(self._clusters) >= self.max_clusters:  # neighbours merge: memory stays bounded
                pairs = zip(self._clusters[::2], self._clusters[1::2], strict=True)
                self._clusters = [[x + y for x, y in zip(a, b, strict=True)] for a, b in pairs]
                self.cluster_samples *= 2
            self._clusters.append([np.zeros((66, 66)), 0, np.zeros_like(bias)])
        cluster = self._clusters[-1]
        cluster[0] += moments
        cluster[1] += 1
        cluster[2] += bias

    @staticmethod
    def _gram(weight: np.ndarray, moments: np.ndarray) -> np.ndarray:
        """[W Y | W w]^T [W Y | W w] of the samples whose moments these are, W^T W = weight."""
        return np.einsum("ij,iajb->ab", weight, moments.reshape(6, 11, 6, 11))

    def _kept_moments(self) -> tuple[np.ndarray, int]:
        """The moments and the number of the samples in the clusters kept."""
        kept = [c for c, keep in zip(self._clusters, self._kept, strict=True) if keep]
        return sum(c[0] for c in kept), sum(c[1] for c in kept)

    def _data(self, weight: np.ndarray) -> RegressionData:
        moments, samples = self._kept_moments()
        return RegressionData.from_gram(self._gram(weight, moments), 6 * samples)

    def _reweighted(self, theta: np.ndarray) -> np.ndarray:
        """The inverse covariance of the residuals w - Y theta of the clusters kept."""
        moments, samples = self._kept_moments()
        u = np.append(theta, -1.0)
        residual = np.einsum("iajb,a,b->ij", moments.reshape(6, 11, 6, 11), u, u) / samples
        return np.linalg.inv(residual + 1e-12 * np.eye(6))

    def _typical(self, theta: np.ndarray) -> list[bool]:
        """Per cluster: whether its mean squared whitened residual (about 6 per sample under
        ``weight``) is within ``outlier_ratio`` times the clusters' median."""
        u = np.append(theta, -1.0)
        spread = np.array([u @ self._gram(self.weight, m) @ u / n for m, n, _ in self._clusters])
        return list(spread <= self.outlier_ratio * np.median(spread))

    def _stated_data(self) -> RegressionData:
        """All samples weighted by the mean of the covariances they state."""
        if self.samples == 0:
            raise ValueError("in-flight identification: no samples yet")
        self._kept = [True] * len(self._clusters)
        self.weight = np.linalg.inv(self._stated / self.samples)
        return self._data(self.weight)

    def _fit(self, solve_theta, iterations: int = 3) -> tuple[np.ndarray, RegressionData]:  # noqa: ANN001
        """theta = ``solve_theta(data)`` of the data weighted by the stated covariances, then
        ``iterations`` times by the covariance of the last fit's residuals, leaving out the
        clusters whose residuals are outliers under it (``_typical``)."""
        data = self._stated_data()
        theta = solve_theta(data)
        for _ in range(iterations if self.samples >= self.min_samples else 0):
            self.weight = self._reweighted(theta)
            self._kept = self._typical(theta)
            self.weight = self._reweighted(theta)
            data = self._data(self.weight)
            theta = solve_theta(data)
        self.data = data
        self.rejected = self.samples - self._kept_moments()[1]
        return theta, data

    def _correlation_covariance(
        self, theta: np.ndarray, information: np.ndarray, data: RegressionData
    ) -> np.ndarray:
        """What the clusters' scores add to the covariance (``score_overdispersion``); the
        parameters the data fit: tr(H^-1 I_data), fewer than 10 under a prior."""
        scores = []
        for (moments, *_), keep in zip(self._clusters, self._kept, strict=True):
            if not keep:
                continue
            gram = self._gram(self.weight, moments)
            scores.append((gram[:10, 10] - gram[:10, :10] @ theta, gram[:10, :10]))
        fitted = float(np.trace(np.linalg.solve(information, data.information)))
        return score_overdispersion([scores], information, fitted=fitted)

    def _tension_bias_covariance(self, information: np.ndarray) -> np.ndarray:
        """What a bias of ``tension_bias`` [N] in each robot's tension, independent between
        robots and the same in every sample, moves theta by (the weighted fit's response
        H^-1 sum Y^T W d wrench / d tension_k, squared): no number of samples averages it."""
        kept = [c[2] for c, keep in zip(self._clusters, self._kept, strict=True) if keep]
        response = np.einsum("ij,iajb->ab", self.weight, sum(kept))
        A = np.linalg.solve(information, response) * self.tension_bias
        return A @ A.T

    def solve(self) -> IdentifiedPayload:
        """The consistent optimum (paper 003's SDP, Clarabel with SCS fallback) and its
        covariance; ExcitationError names what the motion did not excite."""
        self._stated_data().check_excitation(max_condition=1e8)
        solver = ConsistentIdentification(1)
        theta, data = self._fit(lambda data: solver.solve(data).params.vec)
        information = data.information
        covariance = np.linalg.inv(information)
        covariance += self._correlation_covariance(theta, information, data)
        covariance += self._tension_bias_covariance(information)
        return IdentifiedPayload(InertialParameters(theta), covariance, self.samples)

    def solve_with_prior(
        self, nominal: InertialParameters, information: np.ndarray
    ) -> IdentifiedPayload:
        """The consistent MAP estimate under a Gaussian prior (mean ``nominal``, 10x10
        ``information``) and its posterior covariance; never refuses: what the motion did not
        excite stays near the prior (its std says so) and is named in ``advice``. The MAP
        least-squares solution when its pseudo-inertia is positive definite (then it is
        also the SDP's optimum, found in microseconds), else paper 003's SDP with the prior."""

        def map_estimate(data: RegressionData) -> np.ndarray:
            R = data.R
            theta = np.linalg.solve(
                data.information + information, R[:, :-1].T @ R[:, -1] + information @ nominal.vec
            )
            if InertialParameters(theta).consistency_margin() > 0.0:
                return theta
            if self._map_solver is None:  # the cvxpy problem, built once
                self._map_solver = ConsistentIdentification(1, regularizer="euclidean")
            return self._map_solver.solve(data, prior=nominal, gamma=information).params.vec

        theta, data = self._fit(map_estimate)
        try:
            data.check_excitation(max_condition=1e8)
            advice: tuple[str, ...] = ()
        except ExcitationError as error:
            advice = (f"in-flight identification: {error}",)
        posterior = data.information + information
        covariance = np.linalg.inv(posterior)
        covariance += self._correlation_covariance(theta, posterior, data)
        covariance += self._tension_bias_covariance(posterior)
        return IdentifiedPayload(InertialParameters(theta), covariance, self.samples, advice)


def prior_information(
    nominal: InertialParameters, mass_ratio: float = 0.5, com_std: float = 0.1
) -> np.ndarray:
    """The information (inverse covariance) of a weak prior around the description: mass
    +- ``mass_ratio`` of it, h = m c +- m ``com_std`` [m], each inertia entry about the
    origin +- its largest principal moment plus m com_std^2."""
    m = nominal.mass
    top = float(np.linalg.eigvalsh(nominal.inertia_about_com)[-1]) + m * com_std**2
    stds = np.r_[mass_ratio * m, [m * com_std] * 3, [top] * 6]
    return np.diag(stds**-2.0)


class OnlinePayloadIdentification:
    """The coordinator's identification in flight: ``add`` a team estimate while nobody
    touches the payload, ``solve`` (periodically) for a ``TeamEstimate`` in L (the payload's
    mocap frame, the robots' "grasps" at their attach points) and the parameters to use:
    identified where valid by the thresholds of ``EstimatorSettings``, the description
    elsewhere. Each sample pairs an estimate's tensions with the motion of its instant:
    smoothed (RTS) over the ``smoothing_lag`` [s] of mocap that followed it, or with 0 the
    filtered motion with its accelerations read ``motion.lag`` later; interpolated between
    posteriors, none across a gap in the mocap longer than ``max_gap`` [s].

    Degraded estimates are offered too: counted (``degraded`` of ``offered``), never samples.
    With the UKFs' update counters (``AerialTeamEstimator.robot_counters``) ``add`` also
    counts their accepted and gated updates between the first and the last estimate offered.
    Where more than ``max_degraded_share`` of the estimates were degraded or the UKFs gated
    more than ``max_gated_share`` of their updates, ``solve`` refuses mass, CoM and inertia
    with advice naming both: the tensions of the estimates left are biased too (tripled ESC
    noise on MuJoCo flights: 58-96 % degraded, 0.01-0.03 N per cable, the CoM 87 mm low at
    |error|/sigma up to 9.5), which no weighting of the samples can see (docs/aerial-teams.md).
    """

    def __init__(
        self,
        model: AerialTeamModel,
        settings: EstimatorSettings | None = None,
        max_gap: float = 0.05,
        smoothing_lag: float = 0.2,
        max_degraded_share: float = 0.5,
        max_gated_share: float = 0.2,
    ):
        self.model = model
        self.settings = settings or EstimatorSettings()
        self.nominal = InertialParameters.from_mass_com_inertia(
            model.payload_mass, np.zeros(3), model.payload_inertia
        )
        self.identification = InFlightIdentification(
            model.attach_points, linearization=self.nominal
        )
        self.information = prior_information(self.nominal)
        self.stamp = -np.inf
        self.max_gap = float(max_gap)
        self.dropped = 0  # samples whose motion had a gap (contact, degraded sources)
        self.smoothing_lag = float(smoothing_lag)
        self._pending: deque = deque()  # estimates awaiting their motion
        self._motion: PayloadMotionFilter | None = None  # the last one given to ``add``
        self.max_degraded_share = float(max_degraded_share)
        self.max_gated_share = float(max_gated_share)
        self.offered = 0  # valid estimates offered to ``add``
        self.degraded = 0  # of them, flagged degraded (counted, not samples)
        self.updates = np.zeros(2, dtype=int)  # the UKFs' (accepted, gated) updates meanwhile
        self._counted: np.ndarray | None = None  # the counters' totals at the last ``add``

    @property
    def samples(self) -> int:
        return self.identification.samples

    def add(
        self,
        estimate: AerialTeamEstimate,
        motion: PayloadMotionFilter,
        counters: dict[str, dict[str, int]] | None = None,
    ) -> bool:
        """A valid estimate with the payload's motion filter and optionally the UKFs'
        counters; False if there was none to take (a degraded one is counted, not taken).
        Its sample is formed once ``smoothing_lag`` seconds of mocap have followed it, with
        the motion smoothed over them at its instant (with 0: the filtered motion, its
        accelerations read ``motion.lag`` later; paired as they stand, the accelerations
        of 51 ms earlier biased the CoM's height by about one sigma)."""
        if counters is not None:
            self._count_updates(counters)
        if not (estimate.valid and motion.ready) or estimate.stamp <= self.stamp:
            return False
        self.stamp = estimate.stamp
        self.offered += 1
        if estimate.degraded:
            self.degraded += 1
            return False
        self._pending.append(estimate)
        self._motion = motion
        self._release(motion)
        return True

    def _count_updates(self, counters: dict[str, dict[str, int]]) -> None:
        """Adds the UKFs' accepted and gated updates since the last counters given."""
        totals = np.array(
            [
                sum(n for c in counters.values() for key, n in c.items() if key.endswith(end))
                for end in (".accepted", ".gated")
            ]
        )
        if self._counted is not None:
            self.updates += np.maximum(totals - self._counted, 0)
        self._counted = totals

    def damage_refusal(self) -> str | None:
        """Why the samples cannot be trusted (too many estimates degraded or UKF updates
        gated while sampling), or None."""
        degraded = self.degraded / max(self.offered, 1)
        gated = self.updates[1] / max(self.updates.sum(), 1)
        if degraded <= self.max_degraded_share and gated <= self.max_gated_share:
            return None
        return (
            f"in flight: refused, most tension estimates were degraded ({degraded:.0%} of "
            f"{self.offered} estimates without contact; the UKFs gated {gated:.0%} of "
            f"{self.updates.sum()} mocap updates; limits {self.max_degraded_share:.0%} and "
            f"{self.max_gated_share:.0%}): the tensions left are biased; check the rotor-speed "
            "noise and the UKFs' process noise"
        )

    def _release(self, motion: PayloadMotionFilter) -> None:
        """The samples whose motion is in; those with a gap of the mocap longer than
        ``max_gap`` between their instant and the end of their wait (or before the kept
        history) are dropped: their motion would be the filter's, not smoothed."""
        smooth = self.smoothing_lag > 0.0
        lag = (0.0, 0.0) if smooth else motion.lag
        wait = self.smoothing_lag if smooth else max(lag)
        if not self._pending or self._pending[0].stamp + wait > motion.time + 1e-9:
            return
        linear, angular = motion.states(self._pending[0].stamp, smooth)
        while self._pending and self._pending[0].stamp + wait <= motion.time + 1e-9:
            estimate = self._pending.popleft()
            t = estimate.stamp
            covered = [
                _covered(states[0], t, t + wait, self.max_gap) for states in (linear, angular)
            ]
            if not all(covered):
                self.dropped += 1
                continue
            pairs = ((linear, 0.0), (linear, lag[0]), (angular, 0.0), (angular, lag[1]))
            parts = [_interpolated(*states, t + delay) for states, delay in pairs]
            (v, _), (a, P_a), (Omega, _), (Omega_dot, P_w) = parts
            self.identification.add(
                estimate.payload_R, estimate.tension, estimate.xi, estimate.cable_covariance,
                v[1], a[2], Omega[0], Omega_dot[1], acceleration_covariance(P_a, P_w),
            )  # fmt: skip

    def solve(self) -> tuple[TeamEstimate, InertialParameters]:
        """(the estimate for msg/PayloadEstimate, the parameters for the human wrench);
        first forms the samples whose wait has passed since the last ``add`` (after a
        contact began, say)."""
        if self._motion is not None:
            self._release(self._motion)
        refusal = self.damage_refusal()
        if refusal is not None and self.samples == 0:
            result = IdentifiedPayload(self.nominal, np.linalg.inv(self.information), 0)
        else:
            result = self.identification.solve_with_prior(self.nominal, self.information)
        if refusal is not None:
            result = replace(result, advice=(*result.advice, refusal))
            valid = (False, False, False)
        else:
            props = payload_properties(result.params.vec, result.covariance)
            valid = self._validity(props, excited=not result.advice)
        use = InertialParameters.from_mass_com_inertia(
            props.mass if valid[0] else self.nominal.mass,
            props.p_s_c if valid[1] else self.nominal.com,
            props.inertia_about_com if valid[2] else self.nominal.inertia_about_com,
        )
        return self._team_estimate(result, valid, refused=refusal is not None), use

    def description_estimate(self) -> TeamEstimate:
        """The team description's payload as the estimate, declared valid (the operator turned
        identification off: the description is the model, e.g. for the admittance), with
        the weak prior's covariance (mass +- 50 %, CoM +- 0.1 m: not identified)."""
        result = IdentifiedPayload(
            self.nominal,
            np.linalg.inv(self.information),
            0,
            ("the team description's payload (identification off): not identified",),
        )
        return self._team_estimate(result, (True, True, True))

    def _validity(self, props, excited: bool) -> tuple[bool, bool, bool]:  # noqa: ANN001
        s = self.settings
        mass = props.mass > 0 and np.sqrt(props.mass_variance) <= s.max_mass_relative_std * (
            props.mass
        )
        com = mass and np.sqrt(np.linalg.eigvalsh(props.p_s_c_covariance)[-1]) <= s.max_com_std
        top = props.principal_moments[-1]
        spread = np.sqrt(np.linalg.eigvalsh(props.principal_moments_covariance)[-1])
        inertia = com and excited and spread <= s.max_inertia_relative_std * top
        return bool(mass), bool(com), bool(inertia)

    def _condition_number(self) -> float:
        data = self.identification.data
        return 0.0 if data is None else scaled_condition_number(data.information)

    def _team_estimate(
        self, result: IdentifiedPayload, valid: tuple[bool, bool, bool], refused: bool = False
    ) -> TeamEstimate:
        props, theta, covariance = _keep_valid(result.params.vec, result.covariance, valid)
        margin = InertialParameters(theta).consistency_margin() if valid[0] else 0.0
        grasps = tuple(
            GraspFrameEstimate(rid, _translation(rho), np.zeros((6, 6)))
            for rid, rho in zip(self.model.robot_ids, self.model.attach_points, strict=True)
        )
        names = ("mass", "CoM", "inertia")
        missing = [n for n, ok in zip(names, valid, strict=True) if not ok]
        advice = list(result.advice)
        if missing and not refused:
            advice.append(
                f"in flight: {', '.join(missing)} not determined yet from {result.samples} "
                "samples without contact; the human-wrench estimate uses the team description's"
            )
        stage = Stage.DYNAMICS if valid[2] else Stage.STATICS if valid[0] else Stage.KINEMATICS
        return TeamEstimate(
            stamp=self.stamp, reference_robot_id="", stage=stage, grasps_valid=True,
            mass_valid=valid[0], com_valid=valid[1], inertia_valid=valid[2], theta=theta,
            theta_covariance=covariance, grasps=grasps, mass=props.mass,
            mass_variance=props.mass_variance, p_s_c=props.p_s_c,
            p_s_c_covariance=props.p_s_c_covariance, inertia_about_com=props.inertia_about_com,
            inertia_about_com_covariance=props.inertia_about_com_covariance, R_s_c=props.R_s_c,
            R_s_c_covariance=props.R_s_c_covariance, principal_moments=props.principal_moments,
            principal_moments_covariance=props.principal_moments_covariance, T_i_c={},
            physically_consistent=bool(valid[0] and margin > 0),
            consistency_margin=float(margin), kinematics_condition_number=0.0,
            statics_condition_number=0.0,
            dynamics_condition_number=self._condition_number(),
            advice=tuple(advice), residual_rms_angular_velocity=0.0,
            residual_rms_force=0.0, residual_rms_moment=0.0, samples_kinematics=0,
            samples_static=0, samples_dynamic=result.samples, samples_rejected=0,
        )  # fmt: skip


def _covered(times: np.ndarray, start: float, end: float, max_gap: float) -> bool:
    """Whether posteriors at most ``max_gap`` apart cover [start, end]."""
    first = int(np.searchsorted(times, start, side="right")) - 1
    last = int(np.searchsorted(times, end - 1e-9))
    if first < 0 or last >= len(times):
        return False
    return bool(np.diff(times[first : last + 1]).max(initial=0.0) <= max_gap)


def _interpolated(
    times: np.ndarray, x: np.ndarray, P: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray]:
    """(state, covariance) at t, linear between the neighbouring posteriors."""
    right = min(int(np.searchsorted(times, t - 1e-9)), len(times) - 1)
    left = max(right - 1, 0)
    share = (t - times[left]) / (times[right] - times[left]) if right > left else 0.0
    share = min(max(share, 0.0), 1.0)
    return x[left] + share * (x[right] - x[left]), P[left] + share * (P[right] - P[left])


def _translation(p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T
