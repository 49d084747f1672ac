"""Unmeasured external wrenches on the payload (a human hand): found and set aside.

The one-stage wrench model (``dynamics``) takes the robots' wrenches as the only ones on
the payload. A human who guides it (paper 000's kinematics trials are human-guided) or
leans on it during a static hold adds a wrench F_ext that no robot measures:
    sum_i Ad(T_i_s)^T F_i = Y theta - F_ext.
Samples with F_ext != 0 would bias mass, CoM and inertia, so they are found and kept out
of that fit. They still serve grasp kinematics: twists and poses do not see wrenches.

Statistics per segment (``SegmentStore``, constant memory). The wrench statistics
(``WrenchMoments``) are kept per contiguous segment of one group of at most
``segment_seconds``: the phase group ("static" or "dynamic"), marked "/own" while the
payload motion in the regressors is the reference robot's own (online, before the first
grasp estimate: noisier). Beyond ``max_segments`` segments, two of one group and one verdict
merge (neighbours first, the pair with the fewest samples). For any
theta the residual moment R_j(theta) = sum_k r_k r_k^T, r_k = F_s,k - Y_k theta, of a
segment is a quadratic form of its statistics, so segments are judged at solve time with
the current grasps and parameters, also those that arrived before the parameters were known.

Judging (``judge_segments``), the physics with the fewest unknowns first:
1. static segments, all rows; unknowns m and h (a static hold carries the weight; each
   segment also fits its own inertia, for the slow ends of moves that count as static);
2. dynamic segments, force rows only (the net force depends on m and h alone), with the
   holds of step 1 as the reference: nothing is left to fit;
3. every segment still in, all rows, all 10 parameters.
Each step is a robust consensus by backward elimination: fit theta on the segments in use,
test each segment against the fit of the others (leave one out; directions that only the
segment itself determines take its own fit), set aside the worst one that fails, repeat;
then re-admit set-aside segments that pass against the final fit.

The test. T_j = tr(W R_j(theta_ref)) is the segment's whitened residual sum of squares,
W the inverse of its group's noise covariance per sample. Without an external wrench and
with Gaussian noise, T_j is a Gaussian quadratic form; it is approximated by s chi2(d)
with matched mean and variance (Satterthwaite):
    mean = mu n_j + (mu / r)(t_j - q_j),   variance = 2 kappa nu n_j + 2 (mu / r)^2 t_j,
mu = tr(S) and nu = tr(S^2) per sample for S = W Sigma (Sigma the residual covariance per
sample), r the rows, kappa the residual-autocorrelation inflation (``correlated_noise``),
t_j = tr(A_j Cov(theta_ref)) the reference's own uncertainty and q_j the directions fitted
on the segment itself. T_j above the (1 - alpha) quantile is significant: the false-alarm
rate is alpha = ``external_wrench_false_alarm`` per segment and step for Gaussian noise.
Sigma: once static holds are in use (steps 2 and 3), the sensors' noise found in the holds
(their residuals less the regressor noise) plus each group's regressor noise, which the
robots' disagreement on dV shows (predicted); otherwise the noise level fitted to the group, made
robust as the weighted median over its segments of their own lack of fit per sample (each
segment fitted alone: a hand resting on it does not raise that).

A significant segment is set aside only if the external wrench it implies (its residual
power beyond the noise's) also exceeds ``external_wrench_floor`` times the weight m g, or,
for moments, that times the grasps' RMS distance from the CoM. So model errors that no
noise model holds (compliance, unmodelled damping) cannot set clean data aside.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import chdtri  # chi2.isf's kernel: scipy.stats loads in ~1 s

from .correlated_noise import BlockSums, ResidualCorrelation
from .dynamics import (
    WrenchMoments,
    regressor_noise_covariance,
    regressor_noise_power,
    wrench_noise,
    wrench_rows,
)
from .settings import EstimatorSettings

GROUPS = ("static", "dynamic")  # phase groups: their noise differs
OWN_MOTION = "/own"  # group suffix: regressors from the reference robot's own motion
MASS_AND_FIRST_MOMENT = np.arange(4)
ALL_PARAMETERS = np.arange(10)
FORCE_ROWS = np.array([False, False, False, True, True, True])
ALL_ROWS = np.ones(6, dtype=bool)
RCOND = 1e-10
# [relative to the net wrench's RMS] the smallest noise level the residual statistics can
# resolve: R_j = P_j - C_j - C_j^T + theta^T YY_j theta cancels to about 1e-15 of P_j (a few
# float64 epsilons), so a residual power per sample below ~1e-13 of tr(P_j) / n_j is round-off
# (noise-free data: 1e-11 N^2 at 300 N, negative on some diagonals) and differs between BLAS
# builds (numpy 1.26's and 2.x's wheels: P_j one ulp apart). The noise levels in the test never
# go below this (1e-6 of 300 N is 0.3 mN; real force sensors: 1-100 mN).
NOISE_RESOLUTION = 1e-6


def phase_group(group: str) -> str:
    """ "static" or "dynamic" of a segment group name."""
    return group.removesuffix(OWN_MOTION)


# ----- statistics per segment ---------------------------------------------------------------
@dataclass
class WrenchSegment:
    """Wrench statistics of one contiguous stretch of one phase group, and its verdict."""

    group: str  # "static" or "dynamic", with OWN_MOTION if its motion is one robot's
    start: float  # stamp of the first sample [s]
    end: float  # stamp of the last sample [s]
    moments: WrenchMoments
    correlation: ResidualCorrelation
    used: bool | None = None  # verdict of the last judgement; None: not judged yet
    external_force: float = 0.0  # RMS external force found by that judgement [N]
    external_moment: float = 0.0  # RMS external moment about {s} [N m]
    blocks: BlockSums | None = None  # batch means of stacked [vec Y_k, F_k] (``wrench_blocks``)
    # the same samples in consecutive clusters of at most CLUSTER_SECONDS, oldest first, with
    # their first stamps: the clusters of the parameters' sandwich covariance
    clusters: list[WrenchMoments] = field(default_factory=list)
    cluster_starts: list[float] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return self.moments.samples

    def cluster_for(self, stamp: float) -> WrenchMoments:
        """The cluster that takes a sample at ``stamp`` (a new one every CLUSTER_SECONDS)."""
        if not self.clusters or stamp - self.cluster_starts[-1] >= CLUSTER_SECONDS:
            self.clusters.append(
                WrenchMoments.empty(self.moments.robot_ids, self.moments.has_torque)
            )
            self.cluster_starts.append(stamp)
        return self.clusters[-1]

    def absorb(self, other: WrenchSegment) -> None:
        """Merge another segment of the same group (and verdict) into this one."""
        n, m = self.samples, other.samples
        for name in ("external_force", "external_moment"):
            setattr(self, name, merged_rms(n, getattr(self, name), m, getattr(other, name)))
        self.moments = self.moments + other.moments
        order = np.argsort([*self.cluster_starts, *other.cluster_starts], kind="stable")
        clusters = [*self.clusters, *other.clusters]
        starts = [*self.cluster_starts, *other.cluster_starts]
        self.clusters = [clusters[k] for k in order]
        self.cluster_starts = [starts[k] for k in order]
        while len(self.clusters) > MAX_CLUSTERS:  # merge the neighbours with the fewest samples
            k = min(
                range(len(self.clusters) - 1),
                key=lambda j: self.clusters[j].samples + self.clusters[j + 1].samples,
            )
            self.clusters[k : k + 2] = [self.clusters[k] + self.clusters[k + 1]]
            del self.cluster_starts[k + 1]
        self.correlation.absorb(other.correlation)
        if self.blocks is not None and other.blocks is not None:
            self.blocks.absorb(other.blocks)
        self.start, self.end = min(self.start, other.start), max(self.end, other.end)


def _count_before(elapsed: np.ndarray, limit: float) -> int:
    """How many leading samples have ``elapsed < limit`` (at least one: the first opens)."""
    over = np.flatnonzero(elapsed >= limit)
    return max(int(over[0]) if len(over) else len(elapsed), 1)


CLUSTER_SECONDS = 0.2  # [s] longest cluster of the sandwich covariance
# [s] before and after a set-aside segment, the stretch whose samples the fit leaves out: a
# hand takes hold of the payload before it moves or leans on it and rests on it meanwhile, too
# little for the test on a short stretch, and the fit would take it for the payload's (the
# demo's guide holds the payload from 0.7 s before its first trial and between trials, 0.3-0.5 s
# at about 2 N: the online mass during guidance was 1.8 % low at 2-7 sigma). After a segment,
# the guard covers the stretch before the next one is found online; it stays shorter than a
# transition and hold that follow a hand (test_graph: 0.4 s and 0.6 s; 1 s lost its inertia).
HAND_GUARD_SECONDS = (1.0, 0.5)
MAX_CLUSTERS = 10  # clusters kept per segment (neighbours merge beyond)
SEGMENT_BLOCK_SECONDS = (0.1, 0.2, 0.4)  # batch-means block lengths within segments of <= 1 s


def wrench_blocks(segment: WrenchSegment, rate_hz: float) -> BlockSums:
    """The segment's batch-means accumulator of x_k = [vec Y_k (row-major), F_k (N x 6)],
    made on first use: r_k = sum_i M_i F_i,k - Y_k theta is linear in x_k."""
    if segment.blocks is None:
        dim = 60 + segment.moments.FF.shape[0]
        segment.blocks = BlockSums(dim, rate_hz, SEGMENT_BLOCK_SECONDS)
    return segment.blocks


def wrench_residual_map(
    T_s_i: Mapping[str, np.ndarray],
    group: WrenchMoments,
    theta: np.ndarray,
    noise: tuple[float, float],
) -> np.ndarray:
    """P (6, 60 + 6N) with P x_k the whitened net-wrench residual of ``wrench_blocks``' x_k."""
    M = group.wrench_maps(T_s_i)
    A = np.hstack([-np.kron(np.eye(6), theta[None, :]), np.concatenate(list(M), axis=1)])
    A_f, A_m = group.noise_structure(T_s_i)
    C = noise[0] ** 2 * A_f + noise[1] ** 2 * A_m
    return np.linalg.solve(np.linalg.cholesky(C + 1e-12 * np.trace(C) * np.eye(6)), A)


class SegmentStore:
    """At most ``max_segments`` WrenchSegments in time order: constant memory."""

    def __init__(
        self, robot_ids: Sequence[str], has_torque: Sequence[bool], settings: EstimatorSettings
    ) -> None:
        self.robot_ids = tuple(robot_ids)
        self.has_torque = tuple(bool(h) for h in has_torque)
        self.settings = settings
        self.segments: list[WrenchSegment] = []
        self._open = False  # whether the last segment may still grow

    def close(self) -> None:
        """The next sample starts a new segment (e.g. at the end of a recording)."""
        self._open = False

    def add(self, stamp: float, group: str, Y: np.ndarray, F: np.ndarray) -> WrenchSegment:
        """One sample (``WrenchMoments.add``); returns the segment that holds it."""
        segment = self._segment_for(stamp, group)
        segment.moments.add(Y, F)
        segment.cluster_for(stamp).add(Y, F)
        segment.end = stamp
        return segment

    def add_run(
        self,
        t: np.ndarray,
        group: str,
        Y: np.ndarray,
        F: np.ndarray,
        residuals: np.ndarray | None = None,
        block_rate_hz: float | None = None,
    ) -> None:
        """Consecutive samples of one group: stamps t (Q,), Y (Q, 6, 10), F (Q, N, 6), and
        optionally their whitened residuals (Q, 6) for the autocorrelation; with
        ``block_rate_hz`` also their batch means (``wrench_blocks``). Segments and clusters
        are cut where ``add`` cuts them, sample for sample."""
        k, X, raw = 0, None, None
        while k < len(t):
            segment = self._segment_for(float(t[k]), group)
            if X is None:  # rows of cleaned wrenches, as ``add_batch`` cleans them
                cleaned = segment.moments.clean(F)
                X = wrench_rows(Y, cleaned)
                # the batch means take the wrenches as given: the same rows if cleaning
                # changed nothing (finite, the moments of robots without torque sensing
                # zero; a zero's sign changes no product's value, nor any sum in BlockSums)
                if block_rate_hz is not None:
                    raw = X if self._cleaned(F) else wrench_rows(Y, F)
            stop = k + _count_before(t[k:] - segment.start, self.settings.segment_seconds)
            rows = X[k:stop]
            S = rows.T @ rows  # ``WrenchMoments.add_rows``' product, shared with its cluster
            segment.moments.add_product(S, stop - k)
            j = k
            while j < stop:
                cluster = segment.cluster_for(float(t[j]))
                end = j + _count_before(t[j:stop] - segment.cluster_starts[-1], CLUSTER_SECONDS)
                if j == k and end == stop:
                    cluster.add_product(S, stop - k)
                else:
                    cluster.add_rows(X[j:end])
                j = end
            if residuals is not None:
                segment.correlation.add_batch(residuals[k:stop])
            if block_rate_hz is not None:
                shared = S if raw is X else None  # the rows' product, computed above
                wrench_blocks(segment, block_rate_hz).add_rows(raw[k:stop], shared)
            segment.end = float(t[stop - 1])
            k = stop

    def _cleaned(self, F: np.ndarray) -> bool:
        """Whether robot wrenches (Q, N, 6) are as ``WrenchMoments.clean`` leaves them, but
        for the signs of zeros."""
        if not np.isfinite(F).all():
            return False
        return all(self.has_torque) or not F[:, ~np.array(self.has_torque), :3].any()

    def _segment_for(self, stamp: float, group: str) -> WrenchSegment:
        last = self.segments[-1] if self.segments and self._open else None
        if (
            last is not None
            and last.group == group
            and stamp - last.start < self.settings.segment_seconds
        ):
            return last
        if len(self.segments) >= self.settings.max_segments:
            self._merge_one()
        segment = WrenchSegment(
            group,
            float(stamp),
            float(stamp),
            WrenchMoments.empty(self.robot_ids, self.has_torque),
            ResidualCorrelation(self.settings.residual_correlation_lags),
        )
        self.segments.append(segment)
        self._open = True
        return segment

    def _merge_one(self) -> None:
        """Merge two segments of one group and one verdict: neighbours if any, the pair with
        the fewest samples; otherwise any pair, set-aside ones last (their spans are reported).
        With at least 8 segments such a pair exists (2 groups x 3 verdicts)."""
        segs = self.segments
        kinds = [(s.group, s.used) for s in segs]
        sizes = [s.samples for s in segs]

        def alike(i: int, j: int) -> bool:
            return kinds[i] == kinds[j]

        def size(pair: tuple[int, int]) -> int:
            return sizes[pair[0]] + sizes[pair[1]]

        neighbours = [(i, i + 1) for i in range(len(segs) - 1) if kinds[i] == kinds[i + 1]]
        if neighbours:
            i, j = min(neighbours, key=size)
        else:
            pairs = [(i, j) for i in range(len(segs)) for j in range(i + 1, len(segs))]
            i, j = min(
                (p for p in pairs if alike(*p)), key=lambda p: (segs[p[0]].used is False, size(p))
            )
        segs[i].absorb(segs[j])
        del segs[j]

    def record(self, judgement: Judgement) -> None:
        """Keep a judgement's verdicts (they steer later merges) and findings."""
        for k, segment in enumerate(self.segments):
            segment.used = bool(judgement.used[k])
            segment.external_force = float(judgement.external_force[k])
            segment.external_moment = float(judgement.external_moment[k])

    def fitted_clusters(
        self, used: np.ndarray, guard: tuple[float, float] = HAND_GUARD_SECONDS
    ) -> list[list[WrenchMoments]]:
        """Per segment, the clusters the fit uses: none of a set-aside segment; of a used
        one, all but the first when the segment before it was set aside and all but the last
        when the one after it was. Those samples' central-difference accelerations reach into
        the external wrench's samples, whose onset or release then shows as an acceleration
        error of half the jump (test_graph: 1.5 N RMS over the next second, Izz 9 sigma off).
        Nor the clusters within ``guard`` = (before, after) seconds of a set-aside segment: a
        hand takes hold of the payload before it moves or leans on it (``HAND_GUARD_SECONDS``)."""
        out = []
        last = len(self.segments) - 1
        before, after = guard
        aside = [
            (s.start - before, s.end + after)
            for s, v in zip(self.segments, used, strict=True)
            if not v
        ]
        for k, (segment, verdict) in enumerate(zip(self.segments, used, strict=True)):
            first = int(k > 0 and not used[k - 1])
            end = len(segment.clusters) - int(k < last and not used[k + 1])
            ends = [*segment.cluster_starts[1:], segment.end]
            kept = [
                cluster
                for cluster, a, b in list(
                    zip(segment.clusters, segment.cluster_starts, ends, strict=True)
                )[first:end]
                if not any(a <= hi and b >= lo for lo, hi in aside)
            ]
            out.append(kept if verdict else [])
        return out

    def pooled(
        self, used: np.ndarray, dV_covariance: Mapping[str, np.ndarray]
    ) -> dict[str, WrenchMoments]:
        """Every group's statistics over the clusters in use (``fitted_clusters``, for
        ``fit_parameters``), with the group's dV_s noise covariance for the
        errors-in-variables correction."""
        members: dict[str, list[WrenchMoments]] = {}
        for segment, clusters in zip(self.segments, self.fitted_clusters(used), strict=True):
            if clusters:
                members.setdefault(segment.group, []).extend(clusters)
        return {
            name: WrenchMoments(
                self.robot_ids,
                self.has_torque,
                np.sum([c.YY for c in clusters], axis=0),
                np.sum([c.K for c in clusters], axis=0),
                np.sum([c.FF for c in clusters], axis=0),
                sum(c.samples for c in clusters),
                dV_covariance.get(name),
            )
            for name, clusters in members.items()
        }


# ----- judging ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Judgement:
    """Which segments the mass, CoM and inertia fit uses, and what the others showed."""

    used: np.ndarray  # (J,) bool, in the order of the segments judged
    step: np.ndarray  # (J,) 0: used; else the judging step (1, 2, 3) that set it aside
    external_force: np.ndarray  # (J,) RMS external force beyond the noise [N]; NaN: unsized
    external_moment: np.ndarray  # (J,) RMS external moment about {s} [N m]; NaN: unsized
    static_reference: bool = False  # static holds gave the noise level of dynamic segments


@dataclass(frozen=True)
class _Segments:
    """Every segment's residual statistics at the current grasps, stacked (J segments):
    R_j(theta) = P_j - C_j - C_j^T + theta^T YY_j theta with C_j = sum_a theta_a K_j[a]."""

    P: np.ndarray  # (J, 6, 6) sum F_s F_s^T
    K: np.ndarray  # (J, 10, 6, 6) sum_k Y_k[b, a] F_s,k[c]
    YY: np.ndarray  # (J, 6, 6, 10, 10)
    n: np.ndarray  # (J,) samples
    group: np.ndarray  # (J,) group names
    static: np.ndarray  # (J,) bool: a static group
    kappa: np.ndarray  # (J,) residual autocorrelation inflation, nan when unknown
    A_f: np.ndarray  # (6, 6) net-wrench covariance of unit force noise per robot
    A_m: np.ndarray  # (6, 6) ... of unit moment noise (robots with torque sensing)
    lever: np.ndarray  # (N, 3) grasp origins in {s}

    @classmethod
    def of(cls, segments: Sequence[WrenchSegment], T_s_i: Mapping[str, np.ndarray]) -> _Segments:
        first = segments[0].moments
        M = first.wrench_maps(T_s_i)
        M_flat = np.concatenate(list(M), axis=1)
        A_f, A_m = first.noise_structure(T_s_i)
        kappa = [
            s.correlation.inflation() if s.correlation.count > s.correlation.lags else np.nan
            for s in segments
        ]
        FF = np.stack([s.moments.FF for s in segments])
        K = np.stack([s.moments.K for s in segments])  # (J, N, 10, 6, 6)
        J, n = K.shape[:2]
        K_s = K.transpose(0, 2, 3, 1, 4).reshape(J * 60, 6 * n) @ M_flat.T  # sum_i K_i M_i^T
        return cls(
            P=M_flat @ FF @ M_flat.T,
            K=K_s.reshape(J, 10, 6, 6),
            YY=np.stack([s.moments.YY for s in segments]),
            n=np.array([s.samples for s in segments], dtype=float),
            group=np.array([s.group for s in segments]),
            static=np.array([phase_group(s.group) == GROUPS[0] for s in segments]),
            kappa=np.array(kappa, dtype=float),
            A_f=A_f,
            A_m=A_m,
            lever=np.stack([T_s_i[r][:3, 3] for r in first.robot_ids]),
        )

    def residual_moments(self, theta: np.ndarray, index: np.ndarray) -> np.ndarray:
        """R_j(theta_j) (..., len(index), 6, 6) for per-segment parameters theta
        (..., len(index), 10): several sets of them share one gather of the moments."""
        J, lead = len(index), theta.shape[:-2]
        C = (theta[..., None, :] @ self.K[index].reshape(J, 10, 36)).reshape(*lead, J, 6, 6)
        YY_theta = self.YY[index].reshape(J, 360, 10) @ theta[..., None]
        fitted = (YY_theta.reshape(*lead, J, 36, 10) @ theta[..., None]).reshape(*lead, J, 6, 6)
        return self.P[index] - C - np.swapaxes(C, -1, -2) + fitted


@dataclass
class _Level:
    """A segment group's noise in one view: per-sample whitened mean mu = tr(S) and shape
    nu / mu^2 = tr(S^2) / tr(S)^2 (S = W Sigma), the unwhitened noise covariance Sigma per
    sample, and the autocorrelation inflation kappa."""

    weight: np.ndarray  # (6, 6) W, zero outside the view's rows
    predicted: np.ndarray | None  # Sigma if predicted; None: robust (median) level
    kappa: float
    mu: float = 0.0
    shape: float = 0.0
    noise: np.ndarray = field(default_factory=lambda: np.zeros((6, 6)))


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, 0.5 * cumulative[-1])])


def _inverse_on(C: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """W = C[rows, rows]^-1 embedded in 6x6 zeros (a tiny ridge keeps it finite)."""
    block = C[np.ix_(rows, rows)]
    ridge = 1e-12 * max(np.trace(block), 1e-300) * np.eye(len(block))
    W = np.zeros((6, 6))
    W[np.ix_(rows, rows)] = np.linalg.inv(block + ridge)
    return W


class _View:
    """The segments ``index`` seen through some rows (W) and parameters, with fixed
    ``trusted`` information (from an earlier step) that is never judged here. With
    ``nuisance``, the other parameters are fitted per segment (profiled out) instead of
    being zero."""

    def __init__(
        self,
        data: _Segments,
        index: np.ndarray,
        params: np.ndarray,
        rows: np.ndarray,
        levels: dict[str, _Level],
        dV_covariance: Mapping[str, np.ndarray],
        trusted: tuple[np.ndarray, np.ndarray] | None = None,
        nuisance: bool = False,
    ) -> None:
        self.data, self.index, self.params, self.rows = data, index, params, rows
        self.levels = levels
        self.group = data.group[index]
        J, p = len(index), len(params)
        W = np.stack([levels[g].weight for g in self.group])
        A = (W.reshape(J, 1, 36) @ data.YY[index].reshape(J, 36, 100)).reshape(J, 10, 10)
        b = (data.K[index].reshape(J, 10, 36) @ W.reshape(J, 36, 1))[:, :, 0]
        self.c = np.einsum("jbc,jbc->j", W, data.P[index])
        self.A, self.b = A[:, params][:, :, params], b[:, params]
        self.n = data.n[index]
        self.own = np.zeros(J)  # nuisance directions fitted on each segment itself
        self.correction = np.zeros((J, p, p))
        self.nuisance = None
        if nuisance:
            drop = np.setdiff1d(ALL_PARAMETERS, params)
            inverse = np.linalg.pinv(A[:, drop][:, :, drop], rcond=1e-8, hermitian=True)
            A_dk, b_d = A[:, drop][:, :, params], b[:, drop]
            self.nuisance = (drop, inverse, A_dk, b_d)
            self.A = self.A - np.swapaxes(A_dk, 1, 2) @ inverse @ A_dk
            self.b = self.b - np.einsum("jda,jde,je->ja", A_dk, inverse, b_d)
            self.c = self.c - np.einsum("jd,jde,je->j", b_d, inverse, b_d)
            self.own = _rank(A[:, drop][:, :, drop]).astype(float)
        else:
            for group, level in levels.items():
                covariance = dV_covariance.get(group)
                if covariance is not None:
                    power = regressor_noise_power(covariance, level.weight)[np.ix_(params, params)]
                    mine = self.group == group
                    self.correction[mine] = self.n[mine, None, None] * power
        self.lack_of_fit, self.rank = self._own_fits()
        self.trusted = trusted or (np.zeros((p, p)), np.zeros(p))
        total = self.trusted[0] + self.A.sum(0)
        diagonal = np.sqrt(np.clip(np.diag(total), 0.0, None))
        self.scale = np.where(diagonal > 0, 1.0 / np.where(diagonal > 0, diagonal, 1.0), 0.0)

    def _own_fits(self) -> tuple[np.ndarray, np.ndarray]:
        """(lack of fit, rank) of every block fitted on its own: min_theta RSS_j(theta), which
        a constant external wrench leaves at the noise (it is absorbed by theta)."""
        diagonal = np.sqrt(np.clip(np.einsum("jaa->ja", self.A), 0.0, None))
        d = np.where(diagonal > 0, 1.0 / np.where(diagonal > 0, diagonal, 1.0), 0.0)
        scaled = d[:, :, None] * self.A * d[:, None, :]
        db = d * self.b
        solution = np.einsum("jab,jb->ja", np.linalg.pinv(scaled, rcond=1e-8, hermitian=True), db)
        lack_of_fit = np.maximum(self.c - np.einsum("ja,ja->j", db, solution), 0.0)
        return lack_of_fit, _rank(scaled)

    def information(self, used: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """Trusted plus used blocks' normal equations, errors-in-variables corrected when that
        keeps them positive semidefinite (as ``WrenchMoments.normal_equations``); and
        whether they are corrected."""
        A = self.trusted[0] + self.A[used].sum(0)
        corrected = A - self.correction[used].sum(0)
        ok = np.linalg.eigvalsh(corrected)[0] >= -1e-9 * max(np.abs(A).max(), 1e-300)
        return (corrected if ok else A), self.trusted[1] + self.b[used].sum(0), bool(ok)

    def fit(self, used: np.ndarray) -> np.ndarray:
        A, b, _ = self.information(used)
        d = self.scale
        return d * (np.linalg.pinv(d[:, None] * A * d, rcond=RCOND, hermitian=True) @ (d * b))

    def references(self, used: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(theta_ref (J, p), t (J,), q (J,)): each block's reference is the fit of the other
        data (leave one out for used blocks); directions those leave undetermined take the
        block's own fit (q of them); t = tr(A_j Cov(theta_ref)) in units of the noise."""
        A, b, corrected = self.information(used)
        own = self.A - self.correction if corrected else self.A
        A_minus = A[None] - used[:, None, None] * own
        b_minus = b[None] - used[:, None] * self.b
        d = self.scale
        lam, U = np.linalg.eigh(d[:, None] * A_minus * d)
        known = lam > RCOND * np.maximum(lam[:, -1:], 1e-300)
        inverse = np.where(known, 1.0 / np.where(known, lam, 1.0), 0.0)
        covariance = (U * inverse[:, None, :]) @ np.swapaxes(U, 1, 2)  # scaled coordinates
        x = np.einsum("jab,jb->ja", covariance, d * b_minus)
        As = d[:, None] * self.A * d  # each block's own information, scaled coordinates
        G = np.swapaxes(U, 1, 2) @ As @ U
        free = ~known
        G = G * (free[:, :, None] & free[:, None, :])
        rhs = np.einsum("jba,jb->ja", U, d * self.b - np.einsum("jab,jb->ja", As, x)) * free
        z = np.einsum("jab,jb->ja", np.linalg.pinv(G, rcond=1e-8, hermitian=True), rhs)
        q = _rank(G)
        x = x + np.einsum("jab,jb->ja", U, z)
        t = np.einsum("jab,jba->j", As, covariance)
        return d * x, t, q.astype(float)

    def rss(self, theta: np.ndarray) -> np.ndarray:
        """tr(W R_j(theta_j)) for per-block parameters (J, p)."""
        return (
            np.einsum("ja,jab,jb->j", theta, self.A, theta)
            - 2 * np.einsum("ja,ja->j", self.b, theta)
            + self.c
        )

    def full(self, theta: np.ndarray) -> np.ndarray:
        """Per-block parameters (J, p) as 10-vectors (J, 10): the others zero, or with
        ``nuisance`` each block's own fit of them."""
        theta = np.broadcast_to(theta, (len(self.index), len(self.params)))
        out = np.zeros((len(self.index), 10))
        out[:, self.params] = theta
        if self.nuisance is not None:
            drop, inverse, A_dk, b_d = self.nuisance
            rest = b_d - np.einsum("jda,ja->jd", A_dk, theta)
            out[:, drop] = np.einsum("jde,je->jd", inverse, rest)
        return out


@dataclass
class _Evaluation:
    theta: np.ndarray  # the fit of the used blocks (p,)
    flagged: np.ndarray  # (J,) significant and above the floor
    severity: np.ndarray  # (J,) T_j / threshold_j
    force: np.ndarray  # (J,) external force beyond the noise [N]
    moment: np.ndarray  # (J,) [N m]
    sized: np.ndarray  # (J,) bool: force and moment well above the reference's uncertainty


def _evaluate(view: _View, used: np.ndarray, settings: EstimatorSettings) -> _Evaluation:
    """Test every block of the view against the fit of the others (module docstring)."""
    theta = view.fit(used)
    reference, t, q = view.references(used)
    T = view.rss(reference)
    both = np.stack([view.full(reference), view.full(theta)])
    R, fitted = view.data.residual_moments(both, view.index)
    q = q + view.own
    r = float(view.rows.sum())
    mean, variance = np.zeros(len(T)), np.zeros(len(T))  # of T / mu
    noise_f, noise_m = np.zeros(len(T)), np.zeros(len(T))
    for group, level in view.levels.items():
        mine = view.group == group
        if not mine.any():
            continue
        _set_level(level, view, fitted, used & mine if (used & mine).any() else mine)
        T[mine] = T[mine] / max(level.mu, 1e-300)
        mean[mine] = view.n[mine] + (t[mine] - q[mine]) / r
        variance[mine] = 2 * level.kappa * level.shape * view.n[mine] + 2 * t[mine].clip(0) / r**2
        noise_f[mine] = np.trace(level.noise[3:, 3:])
        noise_m[mine] = np.trace(level.noise[:3, :3])
    significant, severity = significance(T, mean, variance, settings.external_wrench_false_alarm)
    power_f = np.trace(R[:, 3:, 3:], axis1=1, axis2=2) / view.n
    power_m = np.trace(R[:, :3, :3], axis1=1, axis2=2) / view.n
    force = np.sqrt(np.maximum(power_f - noise_f, 0.0)) * view.rows[3]
    moment = np.sqrt(np.maximum(power_m - noise_m, 0.0)) * view.rows[0]
    floor_force, floor_moment = _floors(view, theta[:4], settings)  # params start with m, h
    relevant = (force > floor_force) | (moment > floor_moment)
    # What the reference's own uncertainty (t noise units over n r) adds to the residual: a
    # size is stated when it exceeds twice that, so that the hand, not a reference fitted
    # on too little data, makes it.
    spread = t.clip(0) / (view.n * r)
    sized = (force >= 2 * np.sqrt(spread * noise_f.clip(0)) * view.rows[3]) & (
        moment >= 2 * np.sqrt(spread * noise_m.clip(0)) * view.rows[0]
    )
    return _Evaluation(theta, significant & relevant, severity, force, moment, sized)


MIN_DEGREES_OF_FREEDOM = 0.5  # of a segment's residual: fewer, and it cannot be tested


def significance(
    T: np.ndarray, mean: np.ndarray, variance: np.ndarray, false_alarm: float
) -> tuple[np.ndarray, np.ndarray]:
    """(significant, T / threshold) of residual statistics T ~ scale chi2(mean / scale)
    (module docstring) at the level ``false_alarm``. A segment whose residual keeps fewer
    than ``MIN_DEGREES_OF_FREEDOM`` (its own fit absorbs it) shows nothing: not significant,
    severity 0. (Its chi2 quantile underflows to a threshold of 0, which flagged any
    residual and divided by zero.)"""
    mean = np.maximum(mean, 1e-9)
    variance = np.maximum(variance, 1e-9)
    scale = variance / (2 * mean)
    dof = mean / scale
    testable = dof >= MIN_DEGREES_OF_FREEDOM
    threshold = scale * chdtri(np.where(testable, dof, 1.0), false_alarm)  # chi2.isf
    severity = np.where(testable, T / np.where(testable, threshold, 1.0), 0.0)
    return testable & (T > threshold), severity


def _set_level(level: _Level, view: _View, fitted: np.ndarray, basis: np.ndarray) -> None:
    """mu, shape and the noise covariance of one group: predicted, or robust over ``basis``:
    mu is the weighted median of the segments' own lack of fit per sample, which external
    wrenches that stay constant over a segment (a hand resting on it) leave at the noise.
    Fitting p parameters costs a residual about kappa p / r samples (they absorb the slow
    part of correlated noise)."""
    rows = np.abs(level.weight).sum(axis=0) > 0
    if level.predicted is not None:
        level.mu, level.shape = float(rows.sum()), 1.0 / rows.sum()
        level.noise = level.predicted * np.outer(rows, rows)
        return
    n = view.n[basis]
    lost = level.kappa * (view.rank[basis] + view.own[basis]) / rows.sum()
    per_sample = view.lack_of_fit[basis] / np.maximum(n - lost, 0.5 * n)
    resolution = resolution_noise(view.data, view.index[basis])
    level.mu = max(_weighted_median(per_sample, n), float(np.trace(level.weight @ resolution)))
    pooled = fitted[basis].sum(0) / n.sum()
    S = level.weight @ pooled
    level.shape = np.trace(S @ S) / max(np.trace(S) ** 2, 1e-300)
    level.noise = pooled * np.outer(rows, rows) * level.mu / max(np.trace(S), 1e-300)


def _floors(
    view: _View, mass_moment: np.ndarray, settings: EstimatorSettings
) -> tuple[float, float]:
    """(force [N], moment [N m]) below which an external wrench is not set aside: the floor
    times the weight m g, and for moments times the grasps' RMS distance from the CoM."""
    mass = mass_moment[0]
    if not mass > 0:
        return 0.0, 0.0
    data = view.data
    gravity = np.sqrt(np.trace(data.YY[:, 3:, 3:, 0, 0], axis1=1, axis2=2).sum() / data.n.sum())
    weight = settings.external_wrench_floor * mass * gravity
    distance = np.sqrt(np.mean(np.sum((data.lever - mass_moment[1:4] / mass) ** 2, axis=1)))
    return weight, weight * distance


def _eliminate(view: _View, settings: EstimatorSettings) -> tuple[np.ndarray, _Evaluation]:
    """Backward elimination (module docstring), then one re-admission pass."""
    used = np.ones(len(view.index), dtype=bool)
    evaluation = _evaluate(view, used, settings)
    while (evaluation.flagged & used).any():
        failing = evaluation.flagged & used
        used[np.argmax(np.where(failing, evaluation.severity, -np.inf))] = False
        evaluation = _evaluate(view, used, settings)
    readmit = ~used & ~evaluation.flagged
    if readmit.any():
        used |= readmit
        evaluation = _evaluate(view, used, settings)
    return used, evaluation


def _group_kappa(data: _Segments, mask: np.ndarray) -> float:
    """Weighted median of the segments' autocorrelation inflation (1 when none is known)."""
    known = mask & np.isfinite(data.kappa)
    if not known.any():
        return 1.0
    return max(_weighted_median(data.kappa[known], data.n[known]), 1.0)


def _noise_covariance(
    data: _Segments,
    index: np.ndarray,
    params: np.ndarray,
    rows: np.ndarray,
    dV: Mapping[str, np.ndarray],
    nuisance: bool = False,
) -> np.ndarray:
    """The sensors' noise Sigma = sigma_f^2 A_f + sigma_m^2 A_m: per-robot levels fitted
    (``dynamics.wrench_noise``) to the residuals of a plain fit over the segments ``index``,
    less the part that the known regressor noise (noise on dV_s) explains."""
    unit = _Level(_inverse_on(data.A_f + data.A_m, rows), None, 1.0)
    groups = np.unique(data.group[index])
    view = _View(data, index, params, rows, dict.fromkeys(groups, unit), dV, nuisance=nuisance)
    fit = view.fit(np.ones(len(index), dtype=bool))
    theta = view.full(fit)
    samples = data.n[index].sum()
    fitted = len(params) + view.own.sum()  # parameters fitted: a residual loses that many dof
    R = data.residual_moments(theta, index).sum(0) / max(samples - fitted / rows.sum(), 1.0)
    own = np.zeros(10)
    own[params] = fit  # nuisance parameters are fitted per segment: their part is absorbed
    for group in groups:
        share = data.n[index][data.group[index] == group].sum() / samples
        covariance = dV.get(group)
        if covariance is not None:
            R = R - share * regressor_noise_covariance(covariance, own)
    floor = NOISE_RESOLUTION * np.sqrt(np.trace(data.P[index].sum(0)) / samples + 1e-300)
    if not rows[0]:  # force rows only: the moment block was not fitted
        variance = max(np.trace(R[3:, 3:]) / np.trace(data.A_f[3:, 3:]), floor**2)
        return variance * data.A_f
    sigma_f, sigma_m = wrench_noise(R, data.A_f, data.A_m, floor)
    return sigma_f**2 * data.A_f + sigma_m**2 * data.A_m


def resolution_noise(data: _Segments, index: np.ndarray) -> np.ndarray:
    """The net-wrench noise covariance per sample below which the segments ``index`` show only
    round-off (``NOISE_RESOLUTION`` of their net wrench's RMS on every robot's sensors)."""
    power = np.trace(data.P[index].sum(0)) / max(data.n[index].sum(), 1.0)
    return NOISE_RESOLUTION**2 * power * (data.A_f + data.A_m)


def _robust_levels(
    data: _Segments,
    index: np.ndarray,
    params: np.ndarray,
    rows: np.ndarray,
    dV: Mapping[str, np.ndarray],
    nuisance: bool = False,
    noise: np.ndarray | None = None,
) -> dict[str, _Level]:
    """Robust (median) levels for the groups of the segments ``index``, all weighted by the
    inverse of ``noise`` (default: the noise fitted on those segments)."""
    if noise is None:
        noise = _noise_covariance(data, index, params, rows, dV, nuisance)
    weight = _inverse_on(noise, rows)
    return {
        g: _Level(weight, None, _group_kappa(data, data.group == g))
        for g in np.unique(data.group[index])
    }


def _predicted_levels(
    data: _Segments,
    groups: Sequence[str],
    rows: np.ndarray,
    sensors: np.ndarray,
    dV: Mapping[str, np.ndarray],
    theta: np.ndarray,
) -> dict[str, _Level]:
    """Predicted levels: the sensors' noise plus each group's regressor noise at ``theta``."""
    levels = {}
    for group in groups:
        covariance = dV.get(group)
        noise = sensors + (
            0.0 if covariance is None else regressor_noise_covariance(covariance, theta)
        )
        levels[group] = _Level(
            _inverse_on(noise, rows), noise, _group_kappa(data, data.group == group)
        )
    return levels


@dataclass(frozen=True)
class _Holds:
    """The static holds in use: their information on (m, h), their fit (10-vector) and the
    net-wrench noise covariance per sample they show (the sensors' noise)."""

    information: tuple[np.ndarray, np.ndarray]
    theta: np.ndarray
    noise: np.ndarray


def judge_segments(
    segments: Sequence[WrenchSegment],
    T_s_i: Mapping[str, np.ndarray],
    dV_covariance: Mapping[str, np.ndarray],
    settings: EstimatorSettings,
) -> Judgement:
    """Which segments may serve the mass, CoM and inertia fit (module docstring).

    ``dV_covariance``: per segment group (missing: unknown) the noise covariance (6x6) of
    the twist derivative dV_s in its regressors, for the errors-in-variables correction and
    the predicted regressor noise.
    """
    J = len(segments)
    used, step = np.ones(J, dtype=bool), np.zeros(J, dtype=int)
    if J == 0 or not settings.detect_external_wrench:
        return Judgement(used, step, np.zeros(J), np.zeros(J))
    data = _Segments.of(segments, T_s_i)
    static, dynamic = np.flatnonzero(data.static), np.flatnonzero(~data.static)
    holds = None
    if len(static):
        ok, holds = _judge_holds(data, static, dV_covariance, settings)
        used[static], step[static[~ok]] = ok, 1
    if len(dynamic):
        ok = _judge_net_force(data, dynamic, holds, dV_covariance, settings)
        used[dynamic], step[dynamic[~ok]] = ok, 2
    index = np.flatnonzero(used)
    if len(index):
        levels = _levels(data, index, holds, dV_covariance)
        view = _View(data, index, ALL_PARAMETERS, ALL_ROWS, levels, dV_covariance)
        ok, _ = _eliminate(view, settings)
        used[index], step[index[~ok]] = ok, 3
    everything = np.arange(J)
    levels = _levels(data, everything[used] if used.any() else everything, holds, dV_covariance)
    view = _View(data, everything, ALL_PARAMETERS, ALL_ROWS, levels, dV_covariance)
    report = _evaluate(view, used, settings)
    return Judgement(
        used,
        step,
        np.where(used, 0.0, np.where(report.sized, report.force, np.nan)),
        np.where(used, 0.0, np.where(report.sized, report.moment, np.nan)),
        holds is not None,
    )


def _judge_holds(
    data: _Segments, static: np.ndarray, dV: Mapping[str, np.ndarray], settings: EstimatorSettings
) -> tuple[np.ndarray, _Holds | None]:
    """Step 1: static segments, all rows, unknowns m and h. Holds include the slow ends of
    moves (detection allows some motion), so each segment fits its own inertia (nuisance)."""
    levels = _robust_levels(data, static, MASS_AND_FIRST_MOMENT, ALL_ROWS, dV, True)
    view = _View(data, static, MASS_AND_FIRST_MOMENT, ALL_ROWS, levels, dV, nuisance=True)
    ok, evaluation = _eliminate(view, settings)
    if not ok.any():
        return ok, None
    A, b, _ = view.information(ok)
    noise = _noise_covariance(data, static[ok], MASS_AND_FIRST_MOMENT, ALL_ROWS, dV, True)
    theta = np.zeros(10)
    theta[MASS_AND_FIRST_MOMENT] = evaluation.theta
    return ok, _Holds((A, b), theta, noise)


def _judge_net_force(
    data: _Segments,
    dynamic: np.ndarray,
    holds: _Holds | None,
    dV: Mapping[str, np.ndarray],
    settings: EstimatorSettings,
) -> np.ndarray:
    """Step 2: the net force of dynamic segments, which depends on m and h only; with holds
    in use, against their m and h and their noise plus the regressor noise."""
    params, rows = MASS_AND_FIRST_MOMENT, FORCE_ROWS
    if holds is not None:
        groups = np.unique(data.group[dynamic])
        levels = _predicted_levels(data, groups, rows, holds.noise, dV, holds.theta)
        view = _View(data, dynamic, params, rows, levels, dV, holds.information)
    else:
        view = _View(
            data, dynamic, params, rows, _robust_levels(data, dynamic, params, rows, dV), dV
        )
    return _eliminate(view, settings)[0]


def _levels(
    data: _Segments, index: np.ndarray, holds: _Holds | None, dV: Mapping[str, np.ndarray]
) -> dict[str, _Level]:
    """Levels for all rows, of every group: with holds in use, their sensors' noise plus each
    group's regressor noise at a provisional fit over ``index`` (predicted); else robust
    levels weighted by the noise fitted per phase group on ``index``."""
    if holds is not None:
        theta = _provisional_fit(data, index, holds.noise, dV)
        return _predicted_levels(data, np.unique(data.group), ALL_ROWS, holds.noise, dV, theta)
    levels = {}
    for static in (True, False):
        phase = data.static == static
        basis = index[phase[index]] if phase[index].any() else np.flatnonzero(phase)
        if not len(basis):
            continue
        found = _robust_levels(data, basis, ALL_PARAMETERS, ALL_ROWS, dV)
        weight = next(iter(found.values())).weight
        for group in np.unique(data.group[phase]):
            kappa = _group_kappa(data, data.group == group)
            levels[group] = found.get(group) or _Level(weight, None, kappa)
    return levels


def _provisional_fit(
    data: _Segments, index: np.ndarray, noise: np.ndarray, dV: Mapping[str, np.ndarray]
) -> np.ndarray:
    """theta fitted on the segments ``index``, all weighted by the inverse of ``noise``."""
    unit = _Level(_inverse_on(noise, ALL_ROWS), None, 1.0)
    levels = dict.fromkeys(np.unique(data.group[index]), unit)
    view = _View(data, index, ALL_PARAMETERS, ALL_ROWS, levels, dV)
    return view.fit(np.ones(len(index), dtype=bool))


# ----- reporting ----------------------------------------------------------------------------
def merged_rms(n: int, x: float, m: int, y: float) -> float:
    """The RMS of n values of RMS x and m of RMS y; an unsized (NaN) part is left out."""
    if not np.isfinite(x):
        return float(y)
    if not np.isfinite(y):
        return float(x)
    return float(np.sqrt((n * x**2 + m * y**2) / (n + m)))


@dataclass(frozen=True)
class ExternalWrenchSpan:
    """A stretch of time in which an unmeasured external wrench acted on the payload; its
    samples are not used for mass, CoM and inertia (they still serve grasp kinematics). Its
    size is always stated (finite): stretches that could not be sized are ``UndecidedSpan``s."""

    start: float  # [s] first sample (the reference robot's clock)
    end: float  # [s] last sample
    samples: int
    force: float  # RMS external force beyond the noise [N]
    moment: float  # RMS external moment about {s} beyond the noise [N m]


@dataclass(frozen=True)
class UndecidedSpan:
    """A stretch set aside from mass, CoM and inertia whose residual disagrees with the fit of
    the other samples, but from which no external wrench can be sized yet: what it implies does
    not stand out from the uncertainty of that fit. Not a detection: a refusal to use the
    samples until the fit is good enough to tell."""

    start: float  # [s] first sample (the reference robot's clock)
    end: float  # [s] last sample
    samples: int


def external_wrench_spans(
    segments: Sequence[WrenchSegment], gap: float
) -> tuple[tuple[ExternalWrenchSpan, ...], tuple[UndecidedSpan, ...]]:
    """(detections, undecided): the set-aside segments in time order, joined where one starts
    within ``gap`` seconds of the previous one's end; a stretch with no sized part is
    undecided, the size of one with some is that part's RMS."""
    joined: list[ExternalWrenchSpan] = []
    for s in sorted((s for s in segments if s.used is False), key=lambda s: s.start):
        if joined and s.start - joined[-1].end <= gap:
            last = joined.pop()
            n = last.samples + s.samples
            force = merged_rms(last.samples, last.force, s.samples, s.external_force)
            moment = merged_rms(last.samples, last.moment, s.samples, s.external_moment)
            s_span = ExternalWrenchSpan(last.start, max(last.end, s.end), n, force, moment)
        else:
            s_span = ExternalWrenchSpan(
                s.start, s.end, s.samples, s.external_force, s.external_moment
            )
        joined.append(s_span)
    sized = [bool(np.isfinite(s.force) and np.isfinite(s.moment)) for s in joined]
    return (
        tuple(s for s, ok in zip(joined, sized, strict=True) if ok),
        tuple(
            UndecidedSpan(s.start, s.end, s.samples)
            for s, ok in zip(joined, sized, strict=True)
            if not ok
        ),
    )


def _rounded(x: float) -> str:
    """Two significant digits, no exponent: 12.34 -> '12', 0.0456 -> '0.046'."""
    return f"{float(f'{x:.2g}'):g}"


def external_wrench_advice(
    spans: Sequence[ExternalWrenchSpan], undecided: Sequence[UndecidedSpan] = (), listed: int = 3
) -> list[str]:
    """One sentence per span (the ``listed`` longest), e.g. 'an external wrench of about 12 N
    acted on the payload during 3.1-13.0 s (a human hand?); ...', and one for the undecided
    stretches, which are refused, not reported as wrenches."""
    longest = sorted(spans, key=lambda s: -s.samples)[:listed]
    out = []
    for span in sorted(longest, key=lambda s: s.start):
        what = f"an external wrench of about {_rounded(span.force)} N"
        if span.moment > 0:
            what += f" and {_rounded(span.moment)} N m"
        out.append(
            f"{what} acted on the payload during {span.start:.1f}-"
            f"{span.end:.1f} s (a human hand?); those samples are not used for mass, CoM "
            "and inertia"
        )
    if len(spans) > listed:
        out.append(f"external wrenches also acted in {len(spans) - listed} shorter stretches")
    if undecided:
        stretches = ", ".join(f"{s.start:.1f}-{s.end:.1f} s" for s in undecided[:listed])
        more = f" and {len(undecided) - listed} more" if len(undecided) > listed else ""
        out.append(
            f"{sum(s.samples for s in undecided)} samples ({stretches}{more}) disagree with "
            "the others' fit, but no external wrench can be sized from them against that "
            "fit's uncertainty: they are not used for mass, CoM and inertia until more data "
            "(static holds, moves) decide"
        )
    return out


def judgement_evidence(
    store: SegmentStore | None, settings: EstimatorSettings
) -> dict[str, object]:
    """What the last judgement found, as ``estimate.Evidence`` fields."""
    if store is None:
        return {}
    spans, undecided = external_wrench_spans(store.segments, 1.5 / settings.sample_rate_hz)
    out: dict[str, object] = {"external_wrench_spans": spans, "undecided_spans": undecided}
    for group in GROUPS:
        out[f"samples_external_{group}"] = sum(
            s.samples for s in store.segments if s.used is False and phase_group(s.group) == group
        )
    return out


def _rank(M: np.ndarray) -> np.ndarray:
    """Numerical rank of each symmetric matrix of a stack: eigenvalues above 1e-8 of the largest
    (numpy >= 2's ``matrix_rank(M, rtol=1e-8, hermitian=True)``, also on numpy 1.26)."""
    s = np.abs(np.linalg.eigvalsh(M))
    return np.count_nonzero(s > 1e-8 * s.max(-1, keepdims=True, initial=0.0), axis=-1)
