"""Online team estimator: feed synchronized sample sets, read the payload estimate any time.

This is the API the coordinator node uses (paper 000's whole method, made recursive):

    from inertia_estimation_ros.core.cooperative import EstimatorSettings, TeamEstimator
    estimator = TeamEstimator(["robot_1", "robot_2", "robot_3"], "robot_1", EstimatorSettings())
    result = estimator.update({rid: grasp_sample, ...})  # one GraspSample per robot, same time
    if not result.accepted: log(result.reason)            # bad data is counted, never raised
    estimate = estimator.estimate()                       # TeamEstimate (core.cooperative.estimate)

* ``update`` costs well under 1 ms for N = 3 and keeps constant memory: it only
  accumulates sufficient statistics (second moments of the stacked twists, poses and twist
  derivatives, the one-stage wrench tensors, excitation moments and counts). Samples are
  checked first; a set with NaN/Inf, an unknown or missing robot, a malformed pose, stamps
  further apart than ``sync_tolerance`` or not after the previous set is rejected with a
  reason (``UpdateResult.reason``, totals in ``rejection_reasons``).
* Phases are detected from the signals: a set is "static" when every robot's causally
  filtered speeds and accelerations stay below the thresholds for ``static_min_duration``,
  "moving" when the angular speed exceeds ``moving_angular_speed``, else "transition".
  The phase picks the set's noise group in the one-stage wrench fit (static sets are far
  less noisy), the counts, and whether it feeds the twist fit (moving sets only). The
  regressor always uses the measured motion, so a misclassified set costs no model error.
  Its motion is the reference robot's own (not a consensus through the latest grasps,
  which would make the statistics, and so the final solve, depend on when the solves
  before it ran), whose noise those sets' segments ("/own" groups) are judged and weighted
  with.
* ``estimate()`` solves from the statistics when new data arrived since the last solve
  (warm-started; tens to a few hundred ms), else returns the cached estimate.
  ``estimate_now()`` forces a full solve from scratch. Call them from a timer, not per sample.
* ``snapshot()`` copies the estimator for a solve on another thread while ``update`` goes on;
  ``adopt(solved)`` takes that solve's grasps, fit and per-sample maps back (the coordinator
  solves beside its update path this way; ``estimate`` alone solves in place).
* ``freeze()`` stops accumulation (stage FROZEN, estimate kept); ``unfreeze()`` resumes;
  ``reset()`` forgets everything.
* Robust loss: each set's kinematic residual (with the latest fit) sets its weight
  (Huber or Cauchy); the covariances are inflated for residual autocorrelation.
* External wrenches: the wrench statistics are kept per segment (``external_wrench``);
  each solve judges every segment, and those an unmeasured wrench (a human hand) acted on
  are left out of mass, CoM and inertia, counted and reported with advice.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..regressor import body_regressor
from ..samples import GraspSample, SetBlock
from ..signals import CausalLowpass
from .correlated_noise import BlockSums, pooled_block_inflation
from .diagnostics import covariance_from_information
from .dynamics import (
    ParameterFit,
    WrenchMoments,
    consensus_covariance,
    fit_parameters,
    segment_overdispersion,
)
from .estimate import Evidence, Stage, TeamEstimate, assemble_estimate
from .external_wrench import (
    OWN_MOTION,
    SegmentStore,
    judge_segments,
    judgement_evidence,
    phase_group,
    wrench_residual_map,
)
from .grasp_kinematics import (
    GraspKinematics,
    HomeGravity,
    StackedMoments,
    clock_sensitivity,
    consensus_map,
    consensus_noise,
    gravity_units,
    noise_precision,
    pose_rate_rows,
    quantization_covariance,
    refine_grasps,
    refine_grasps_from_poses,
    residual_map_of,
    robust_weights,
    sample_gravity_units,
    stacked_adjoint,
)
from .settings import EstimatorSettings

PHASES = ("static", "moving", "transition")
STATIC, MOVING, TRANSITION, REJECTED = range(4)  # phase codes: PHASE_NAMES[code]
PHASE_NAMES = np.array([*PHASES, "rejected"])
PHASE_GROUPS = ("static", "dynamic")  # noise groups of the wrench fit
MAX_STILL_STRETCHES = 64  # still stretches kept apart for the quantization covariance


@dataclass(frozen=True)
class BlockResult:
    """Outcome of one ``update_block``: per set, accepted or not, and its phase ("rejected"
    for a refused set, counted in ``rejection_reasons``)."""

    accepted: np.ndarray  # (Q,) bool
    phases: np.ndarray  # (Q,) str


@dataclass(frozen=True)
class Solution:
    """What a solve leaves for ``TeamEstimator.adopt`` (``TeamEstimator.solution``): a few
    hundred kB at N = 16 where the estimator's statistics are megabytes, so that a solve in
    another process sends back only this. ``verdicts`` maps a wrench segment's (group, start)
    to its judgement (used, RMS external force, RMS external moment)."""

    kinematics: GraspKinematics | None
    fit: object  # the parameters' fit, or None
    groups: dict[str, WrenchMoments]
    maps: dict[str, np.ndarray]
    estimate: TeamEstimate | None
    verdicts: dict[tuple[str, float], tuple[bool, float, float]]


@dataclass(frozen=True)
class UpdateResult:
    """Outcome of one ``update``: accepted or the reason it was not; the detected phase."""

    accepted: bool
    reason: str = ""
    phase: str = ""


class _PhaseDetector:
    """Static / moving / transition from every robot's causally filtered speed norms."""

    def __init__(self, settings: EstimatorSettings) -> None:
        self.settings = settings
        self.lowpass = CausalLowpass(settings.sample_rate_hz, settings.detection_cutoff_hz)
        self.limits = np.array(
            [
                settings.static_angular_speed,
                settings.static_linear_speed,
                settings.static_angular_acceleration,
                settings.static_linear_acceleration,
            ]
        )
        self.needed = max(int(round(settings.static_min_duration * settings.sample_rate_hz)), 1)
        self.still = 0

    def __call__(self, V: np.ndarray, dV: np.ndarray) -> np.ndarray:
        """Phase codes (Q,) of consecutive sets (STATIC, MOVING, TRANSITION): V, dV (Q, N, 6),
        oldest first."""
        parts = np.concatenate([V, dV], axis=2).reshape(V.shape[0], V.shape[1], 4, 3)
        norms = np.sqrt(np.einsum("qrkj,qrkj->qrk", parts, parts))  # (omega, v, alpha, a)
        speeds = np.abs(self.lowpass.block(norms)).max(axis=1)
        calm = np.all(speeds < self.limits, axis=1)
        rows = np.arange(len(calm))
        restart = np.maximum.accumulate(np.where(calm, -1, rows))  # last set not calm
        still = np.where(restart < 0, self.still + rows + 1, rows - restart)
        self.still = int(still[-1]) if len(still) else self.still
        moving = speeds[:, 0] > self.settings.moving_angular_speed
        return np.where(still >= self.needed, STATIC, np.where(moving, MOVING, TRANSITION))


_LARGEST = np.finfo(float).max


def _rotation_checks(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per set of poses (Q, N, 4, 4): max |R^T R - I| over its rotations (Q,) (the bits of
    ``np.einsum("...ji,...jl->...il")``: (R_0i R_0l + R_1i R_1l) + R_2i R_2l), and each
    rotation's determinant (Q, N), as products of long rows: every rotation's entry (j, i)
    in one row (poses as the last axis), since products of 3-long rows cost ~0.1 ms a cycle."""
    q, n = T.shape[:2]
    C = np.ascontiguousarray(T[:, :, :3, :3].reshape(q * n, 9).T).reshape(3, 3, q * n)
    gram = C[0, :, None] * C[0, None] + C[1, :, None] * C[1, None]
    gram += C[2, :, None] * C[2, None]
    diagonal = gram.reshape(9, -1)[::4]  # a view
    diagonal -= 1.0
    error = np.abs(gram, out=gram).reshape(9, q, n).max(axis=(0, 2))
    (x0, x1, x2), (y0, y1, y2), (z0, z1, z2) = C
    det = x0 * (y1 * z2 - y2 * z1) + x1 * (y2 * z0 - y0 * z2) + x2 * (y0 * z1 - y1 * z0)
    return error, det.reshape(q, n)


def _finite_sets(block: SetBlock) -> np.ndarray:
    """Per set (Q,): whether every value ``_check`` needs finite is finite (the wrenches as
    sensed, gravity where reported and of size >= 1e-6). One sum of all values first: if it
    is finite, so is every value, and no set is checked alone."""
    q = len(block)
    has_g = block.has_g[0]
    total = block.T_i0_i.sum() + block.V_i.sum() + block.dV_i.sum() + block.F_i.sum()
    if np.isfinite(total + block.stamps.sum()):
        finite = np.ones(q, dtype=bool)
    else:
        sensed = np.repeat(np.stack([block.has_torque[0], block.has_force[0]], axis=-1), 3, -1)
        values = [block.T_i0_i, block.V_i, block.dV_i, np.where(sensed, block.F_i, 0.0)]
        values = np.concatenate([v.reshape(q, -1) for v in values] + [block.stamps], axis=1)
        finite = np.isfinite(values).all(axis=1)
    g = block.g_i if has_g.all() else np.where(has_g[:, None], block.g_i, 1.0)
    g_size = np.abs(g).sum(axis=2)
    return finite & ((g_size >= 1e-6) & (g_size < np.inf)).all(axis=1)


def _runs(flags: np.ndarray) -> list[slice]:
    """The stretches of equal consecutive values of ``flags`` (Q,), oldest first."""
    edges = [0, *(np.flatnonzero(flags[1:] != flags[:-1]) + 1).tolist(), len(flags)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _finite_copy(x: np.ndarray) -> np.ndarray:
    """``np.nan_to_num(x, nan=0.0)`` (NaN 0, infinities the largest finite values), in
    fewer numpy calls."""
    out = x.copy()
    np.copyto(out, 0.0, where=np.isnan(out))
    np.minimum(out, _LARGEST, out=out)
    return np.maximum(out, -_LARGEST, out=out)


class TeamEstimator:
    """Recursive (information-form) estimator of grasps, mass, CoM and inertia of one payload."""

    def __init__(
        self,
        robot_ids: Sequence[str],
        reference_id: str,
        settings: EstimatorSettings | None = None,
    ) -> None:
        ids = tuple(robot_ids)
        if len(ids) < 2 or len(set(ids)) != len(ids) or not all(isinstance(r, str) for r in ids):
            raise ValueError("robot_ids must be at least two distinct strings: add a robot")
        if reference_id not in ids:
            raise ValueError(f"reference robot {reference_id!r} is not in robot_ids {ids}")
        self.robot_ids = ids
        self.reference_id = reference_id
        self.settings = settings or EstimatorSettings()
        self._s = ids.index(reference_id)
        self.reset()

    # ----- life cycle ---------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget all data and estimates."""
        n, settings = len(self.robot_ids), self.settings
        self._twists = StackedMoments.empty(self.robot_ids, 6 * n)
        # twist derivatives of moving and of static sets: the robots' disagreement is dV noise
        self._dtwists = {g: StackedMoments.empty(self.robot_ids, 6 * n) for g in PHASE_GROUPS}
        self._poses = StackedMoments.empty(self.robot_ids, 12 * n + 1)
        self._gravity = {
            r: HomeGravity.empty(settings.gravity_direction_floor) for r in self.robot_ids
        }
        self._segments: SegmentStore | None = None  # wrench statistics per segment
        self._groups: dict[str, WrenchMoments] = {}  # pooled over the segments in use
        self._omega = np.zeros((3, 3))
        self._alpha = np.zeros((3, 3))
        self._tilts = np.zeros((3, 3))
        self._counts = Counter()
        self.rejection_reasons: Counter = Counter()
        self._detector = _PhaseDetector(settings)
        cutoff = settings.input_cutoff_hz
        self._input_filter = CausalLowpass(settings.sample_rate_hz, cutoff) if cutoff else None
        dim = 12 * n + 1 if settings.kinematics_source == "poses" else 6 * n
        self._kinematic_blocks = BlockSums(dim, settings.sample_rate_hz)
        self._resolution = (settings.pose_angle_resolution, settings.pose_position_resolution)
        self._still: list[np.ndarray] = []  # per still stretch: its weighted sum of pose rows
        self._still_open = False  # the last set was static: its stretch goes on
        self._clock_sigma: dict[str, float] = {}  # std of each robot's clock offset [s]
        self._pose_rates: dict[str, np.ndarray] = {}  # sum_k w [y_k; ydot_i,k] ydot_i,k^T
        self._kinematics: GraspKinematics | None = None
        self._fit = None
        self._maps: dict[str, np.ndarray] = {}
        self._no_force: set[str] = set()
        self._last_stamp = -np.inf
        self._dirty = True
        self._frozen = False
        self._estimate: TeamEstimate | None = None

    def set_clock_sigma(self, sigma: Mapping[str, float]) -> None:
        """Std [s] of the clock offsets used to align each robot's samples: from now on the
        grasp covariance includes what they move the grasps (``clock_sensitivity``)."""
        self._clock_sigma = {
            r: float(v) for r, v in sigma.items() if r != self.reference_id and v > 0
        }
        dim = 12 * len(self.robot_ids) + 1
        for rid in self._clock_sigma:
            self._pose_rates.setdefault(rid, np.zeros((dim + 12, 12)))

    def freeze(self) -> None:
        """Stop accumulating; the estimate stays as it is, with stage FROZEN."""
        self._frozen = True

    def unfreeze(self) -> None:
        self._frozen = False
        self._dirty = True

    @property
    def frozen(self) -> bool:
        return self._frozen

    # ----- input ----------------------------------------------------------------------------------
    def _reject(self, reason: str) -> UpdateResult:
        self.rejection_reasons[reason.split(":")[0]] += 1
        self._counts["rejected"] += 1
        return UpdateResult(False, reason, "rejected")

    def _check(self, samples: Mapping[str, GraspSample]) -> str:
        unknown = sorted(set(samples) - set(self.robot_ids))
        if unknown:
            return f"unknown robot: {unknown}"
        missing = [r for r in self.robot_ids if r not in samples]
        if missing:
            return f"missing robot: {missing} (feed one synchronized sample per robot)"
        if not _all_plausible(list(samples.values())):
            for rid, sample in samples.items():
                problem = _sample_problem(sample)
                if problem:
                    return f"bad sample: {rid} {problem}"
        stamps = np.array([s.stamp for s in samples.values()], dtype=float)
        if not np.all(np.isfinite(stamps)):
            return "bad stamp: not finite"
        if stamps.max() - stamps.min() > self.settings.sync_tolerance:
            return (
                f"unsynchronized stamps: spread {stamps.max() - stamps.min():.4g} s exceeds "
                f"sync_tolerance (align clocks with core.cooperative.clock)"
            )
        if stamps[self._s] <= self._last_stamp:
            return "non-monotonic stamp: not after the previous set"
        return ""

    def update(self, samples: Mapping[str, GraspSample] | Iterable[GraspSample]) -> UpdateResult:
        """Accumulate one synchronized set (a GraspSample per robot). Never raises for bad data."""
        if not isinstance(samples, Mapping):
            samples = list(samples)
            if len({s.robot_id for s in samples}) != len(samples):
                return self._reject("duplicate robot: one sample per robot")
            samples = {s.robot_id: s for s in samples}
        if self._frozen:
            return UpdateResult(False, "frozen: estimation is frozen", "frozen")
        try:
            reason = self._check(samples)
        except (AttributeError, TypeError, ValueError) as error:
            reason = f"bad sample: {error}"
        if reason:
            return self._reject(reason)
        phase = self._accumulate(SetBlock.from_sets([samples], self.robot_ids))[0]
        return UpdateResult(True, "", PHASES[phase])

    def update_block(self, block: SetBlock) -> BlockResult:
        """``update`` for Q sets at once (``SetBlock``, robots in this estimator's order): the
        same checks, refusals and statistics as Q calls of ``update`` (to rounding), with the
        accumulation done per block as array operations. Never raises for bad data."""
        if tuple(block.robot_ids) != self.robot_ids:
            reason = f"robot order: {block.robot_ids}, not {self.robot_ids}"
            for _ in range(len(block)):
                self._reject(reason)
            return BlockResult(np.zeros(len(block), bool), np.full(len(block), "rejected"))
        if self._frozen:
            return BlockResult(np.zeros(len(block), bool), np.full(len(block), "frozen"))
        accepted = np.zeros(len(block), dtype=bool)
        phases = np.full(len(block), REJECTED)
        start = 0
        while start < len(block):
            rest = block.rows(slice(start, None)) if start else block
            good = self._acceptable(rest)
            if good[0]:
                run = len(good) if good.all() else int(np.argmin(good))
                part = rest.rows(slice(0, run)) if run < len(rest) else rest
                phases[start : start + run] = self._accumulate(part)
                accepted[start : start + run] = True
            else:  # through ``update``: its reason, or accepted if only the fast check failed
                result, run = self.update(rest.set_at(0)), 1
                accepted[start] = result.accepted
                phases[start] = PHASES.index(result.phase) if result.accepted else REJECTED
            start += run
        return BlockResult(accepted, PHASE_NAMES[phases])

    def _acceptable(self, block: SetBlock) -> np.ndarray:
        """Per set, as array operations: it passes every check of ``_check`` and has the
        first set's flags (False where unsure: ``update`` then checks that set alone)."""
        with np.errstate(invalid="ignore", over="ignore"):
            error, det = _rotation_checks(block.T_i0_i)
            rotation = (error < 1e-6) & (det >= 0).all(axis=1)
            spread = block.stamps.max(axis=1) - block.stamps.min(axis=1)
            ok = _finite_sets(block) & rotation & (spread <= self.settings.sync_tolerance)
        flags = np.concatenate([block.has_g, block.has_force, block.has_torque], axis=1)
        ok &= np.all(flags == flags[0], axis=1)
        reference = np.where(ok, block.stamps[:, self._s], -np.inf)
        before = np.maximum.accumulate(np.concatenate([[self._last_stamp], reference[:-1]]))
        return ok & (block.stamps[:, self._s] > before)

    def _signals(self, block: SetBlock) -> tuple:
        """V, dV, F, g (Q, N, 6/6/6/3) as the statistics take them (input filter applied)."""
        V, dV = block.V_i, block.dV_i
        F = _finite_copy(block.F_i)
        F[:, :, :3] *= block.has_torque[..., None]
        g = np.where(block.has_g[..., None], block.g_i, 0.0)
        if self._input_filter is not None:
            packed = self._input_filter.block(np.concatenate([V, dV, F, g], axis=2))
            V, dV, F, g = (packed[..., a:b] for a, b in ((0, 6), (6, 12), (12, 18), (18, 21)))
        return V, dV, F, g

    def _accumulate(self, block: SetBlock) -> np.ndarray:
        """The statistics of sets that passed the checks, all of the same flags (paper 000's
        moments, per block as matrix products); their phase codes."""
        q, n = len(block), len(self.robot_ids)
        V, dV, F, g = self._signals(block)
        T = block.T_i0_i
        phases = self._detector(V, dV)
        moving, static = phases == MOVING, phases == STATIC
        z, dz = V.reshape(q, 6 * n), dV.reshape(q, 6 * n)
        poses = np.concatenate([T[:, :, :3, :3].reshape(q, n, 9), T[:, :, :3, 3]], axis=2)
        y = np.concatenate([poses.reshape(q, 12 * n), np.ones((q, 1))], axis=1)
        movers = int(np.count_nonzero(moving))
        if movers:
            rows = slice(None) if movers == q else moving  # views when every set moves
            self._add_kinematic("twists", z[rows])
            moved = dz[rows]  # unit weights: the weighted rows are the rows
            self._dtwists["dynamic"].add_rows(moved, np.ones(movers), moved)
            omega, alpha = V[rows, self._s, :3], dV[rows, self._s, :3]
            self._omega += omega.T @ omega
            self._alpha += alpha.T @ alpha
            self._counts["kinematics"] += movers
        if static.any():
            still = dz[static]
            self._dtwists["static"].add_rows(still, np.ones(len(still)), still)
        weights = self._add_kinematic("poses", y)
        if any(self._resolution):
            self._add_still(y, weights, static)
        for rid, D in self._pose_rates.items():
            k = self.robot_ids.index(rid)
            rate = pose_rate_rows(T[:, k], V[:, k])
            D += (weights[:, None] * np.concatenate([y, rate], axis=1)).T @ rate
        has_g = block.has_g[0]
        self._add_gravity(T, g, has_g)
        if not block.has_force[0].all():
            self._no_force |= {
                r for r, f in zip(self.robot_ids, block.has_force[0], strict=True) if not f
            }
        self._last_stamp = float(block.stamps[-1, self._s])
        self._dirty = True
        if not self._no_force and has_g.any():
            self._add_wrench(block, phases, V, dV, F, g)
        return phases

    def _add_gravity(self, T: np.ndarray, g: np.ndarray, has_g: np.ndarray) -> None:
        """Every robot's gravity directions in its home frame (``HomeGravity``), at once."""
        robots = np.flatnonzero(has_g)
        if len(T) == 1:  # one set: rounded as ``HomeGravity.add`` rounds it
            totals = sample_gravity_units(T[0, robots], g[0, robots])
            outers = totals[:, :, None] * totals[:, None, :]
        else:
            units = gravity_units(T[:, robots].swapaxes(0, 1), g[:, robots].swapaxes(0, 1))
            totals, outers = units.sum(axis=1), np.matmul(units.transpose(0, 2, 1), units)
        for k, total, outer in zip(robots.tolist(), totals, outers, strict=True):
            self._gravity[self.robot_ids[k]].add_sums(total, outer, len(T))  # ``add_units``

    def _add_kinematic(self, kind: str, X: np.ndarray) -> np.ndarray:
        """Twist or pose rows (Q, dim) into their moments (and, for the fit's source, the
        block sums); returns their robust weights."""
        weights = self._kinematic_weights(kind, X)
        weighted = X * weights[:, None]  # the moments' and the block sums' rows
        product = None  # one row of unit weight: both take its products x x^T, made once
        if len(X) == 1 and weights[0] == 1.0:
            product = weighted.T @ X
        moments = self._twists if kind == "twists" else self._poses
        moments.add_rows(X, weights, weighted, product)
        if kind == self.settings.kinematics_source and self.settings.residual_correlation_lags:
            self._kinematic_blocks.add_rows(weighted, product)
        return weights

    def _add_still(self, y: np.ndarray, weights: np.ndarray, static: np.ndarray) -> None:
        """The weighted sums of the pose rows of each still stretch (static sets), where a
        quantized pose keeps one error (``quantization_covariance``). Beyond
        ``MAX_STILL_STRETCHES`` the two oldest merge (one error for both: conservative)."""
        for run in _runs(static):
            if not static[run.start]:
                continue
            total = weights[run] @ y[run]
            if run.start == 0 and self._still_open:
                self._still[-1] = self._still[-1] + total
            else:
                self._still.append(total)
        self._still_open = bool(static[-1])
        while len(self._still) > MAX_STILL_STRETCHES:
            self._still[:2] = [self._still[0] + self._still[1]]

    def _kinematic_weights(self, kind: str, X: np.ndarray) -> np.ndarray:
        """Robust weights of twist or pose rows from their residuals with the latest fit."""
        P = self._maps.get(kind)
        if P is None:
            return np.ones(len(X))
        norms = np.linalg.norm(X @ P.T, axis=1)
        dof = P.shape[0] - (6 if kind == "twists" else 0)
        loss, scale = self.settings.robust_loss, self.settings.robust_scale
        return robust_weights(norms, np.sqrt(dof), loss, scale)

    def _payload_motion(
        self, V: np.ndarray, dV: np.ndarray, g: np.ndarray, has_g: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """V_s, dV_s, g_s (Q, ...) of the wrench regressor: the reference robot's own, always.

        Not the consensus of all robots with the latest grasps: the statistics never
        forget, so a consensus through the grasps of whichever solve came last would bake
        that solve's errors into them, and the final solve from scratch would depend on the
        schedule of the solves before it (issue 15: test_graph's mass 14 sigma off when
        solved every 0.5 s, right when solved every 5 s). Only if the reference robot reports
        no gravity is another robot's rotated in with the latest grasps."""
        V_s, dV_s = V[:, self._s], dV[:, self._s]
        if has_g[self._s]:
            return V_s, dV_s, g[:, self._s]
        R = self._maps.get("R_s_i")
        if R is None:
            return V_s, dV_s, None
        return V_s, dV_s, np.einsum("kij,qkj->qi", R[has_g], g[:, has_g]) / has_g.sum()

    def _add_wrench(
        self,
        block: SetBlock,
        phases: np.ndarray,
        V: np.ndarray,
        dV: np.ndarray,
        F: np.ndarray,
        g: np.ndarray,
    ) -> None:
        """The wrench statistics of the sets (regressor rows, Eq. 8.42 batched), cut into
        segments by phase group as ``SegmentStore.add`` cuts them."""
        V_s, dV_s, g_s = self._payload_motion(V, dV, g, block.has_g[0])
        if g_s is None:
            return
        if self._segments is None:
            self._segments = SegmentStore(self.robot_ids, block.has_torque[0], self.settings)
        Y = body_regressor(V_s, dV_s, g_s)
        static = phases == STATIC
        statics = int(np.count_nonzero(static))
        if statics:
            tilt = g_s[static]
            self._tilts += (tilt / np.einsum("qi,qi->q", tilt, tilt)[:, None]).T @ tilt
        self._counts["static"] += statics
        self._counts["dynamic"] += len(static) - statics
        residuals = None
        if "wrench_maps" in self._maps:
            r = np.einsum("iab,qib->qa", self._maps["wrench_maps"], F) - Y @ self._fit.theta
            residuals = r @ self._maps["wrench_whitener"].T
        rate = self.settings.sample_rate_hz if self.settings.residual_correlation_lags else None
        stamps = block.stamps[:, self._s]
        for run in _runs(static):
            group = ("static" if static[run.start] else "dynamic") + OWN_MOTION
            part = None if residuals is None else residuals[run]
            self._segments.add_run(stamps[run], group, Y[run], F[run], part, rate)

    # ----- output -------------------------------------------------------------------------------
    def estimate(self) -> TeamEstimate:
        """The current estimate; solves (warm-started) only if data arrived since the last one."""
        if self._estimate is not None and (self._frozen or not self._dirty):
            return self._stamped(self._estimate)
        return self._solve(full=False)

    def estimate_now(self) -> TeamEstimate:
        """Force a full solve from scratch now (also while frozen)."""
        return self._solve(full=True)

    def snapshot(self, deep: bool = True) -> TeamEstimator:
        """A copy of this estimator to solve on another thread (``estimate``/``estimate_now``)
        while this one goes on accumulating; hand it back to ``adopt``. This one counts as
        solved from now on (``mark_unsolved`` if the copy's solve fails). Not ``deep``: a
        shallow copy that shares the statistics, for a caller that copies it at once (pickles
        it for a process) before this one takes another sample."""
        copied = copy.deepcopy(self) if deep else copy.copy(self)
        self._dirty = False
        return copied

    def mark_unsolved(self) -> None:
        """The last snapshot's solve did not come back: solve again next time."""
        self._dirty = True

    def solution(self) -> Solution:
        """What ``adopt`` takes from this estimator's last solve."""
        segments = self._segments.segments if self._segments is not None else []
        verdicts = {
            (s.group, s.start): (s.used, s.external_force, s.external_moment)
            for s in segments
            if s.used is not None
        }
        return Solution(
            self._kinematics, self._fit, self._groups, self._maps, self._estimate, verdicts
        )

    def adopt(self, solved: TeamEstimator | Solution) -> None:
        """Take a snapshot's solve (or its ``solution``): the grasps and fit (warm start of the
        next solve), the maps that weight the samples from now on, the estimate, and the
        wrench segments' verdicts (matched by group and start: segments may have merged
        meanwhile)."""
        if isinstance(solved, TeamEstimator):
            solved = solved.solution()
        self._kinematics, self._fit = solved.kinematics, solved.fit
        self._groups, self._maps, self._estimate = solved.groups, solved.maps, solved.estimate
        if self._segments is None:
            return
        for segment in self._segments.segments:
            judged = solved.verdicts.get((segment.group, segment.start))
            if judged is not None:
                segment.used, segment.external_force, segment.external_moment = judged

    def _stamped(self, estimate: TeamEstimate) -> TeamEstimate:
        stage = Stage.FROZEN if self._frozen else estimate.stage
        rejected = self._counts["rejected"]
        return replace(estimate, stage=stage, samples_rejected=rejected)

    def _solve(self, full: bool) -> TeamEstimate:
        notes = []
        try:
            self._kinematics = self._solve_kinematics(full)
        except (np.linalg.LinAlgError, ValueError) as error:
            self._kinematics = None
            notes.append(f"grasp kinematics failed ({error}): move the payload about more axes")
        self._fit = None
        if self._kinematics is not None and self._segments is not None:
            self._fit = self._solve_parameters()
        if self._no_force:
            notes.append(
                f"{sorted(self._no_force)} report no force: mass and inertia need every robot's "
                "wrench"
            )
        if self._poses.samples and not any(h.count for h in self._gravity.values()):
            notes.append("no robot reports gravity: mass and CoM need the gravity direction")
        self._cache_maps()
        external = judgement_evidence(self._segments, self.settings)
        evidence = Evidence(
            robot_ids=self.robot_ids,
            reference_id=self.reference_id,
            stamp=float(self._last_stamp) if np.isfinite(self._last_stamp) else 0.0,
            kinematics=self._kinematics,
            fit=self._fit,
            static_information=self._group_information("static"),
            dynamic_information=self._group_information("dynamic"),
            omega_moment=self._omega,
            alpha_moment=self._alpha,
            gravity_moment=self._tilts,
            samples_kinematics=self._counts["kinematics"],
            samples_static=self._counts["static"],
            samples_dynamic=self._counts["dynamic"],
            samples_rejected=self._counts["rejected"],
            residual_rms_angular_velocity=self._angular_residual_rms(),
            notes=tuple(notes),
            frozen=self._frozen,
            **external,
        )
        self._estimate = assemble_estimate(evidence, self.settings)
        self._dirty = False
        return self._estimate

    def _solve_kinematics(self, full: bool) -> GraspKinematics | None:
        if self._twists.samples < self.settings.min_kinematics_samples:
            return None
        last = None if full else self._kinematics
        twist_fit = refine_grasps(
            self._twists,
            self.reference_id,
            last.T_s_i if last else None,
            last.twist_noise if last else None,
            1 if last else 3,
        )
        if self.settings.kinematics_source == "twists":
            return twist_fit.inflated(self._kinematic_inflation(twist_fit, self._twists))
        gravity = self._gravity if all(h.count for h in self._gravity.values()) else None
        fit = refine_grasps_from_poses(
            self._poses,
            self.reference_id,
            twist_fit,
            last.pose_noise if last and last.pose_noise else None,
            1 if last else 2,
            last.T_s0_i0 if last and last.T_s0_i0 else None,
            gravity,
        )
        fit = fit.inflated(self._kinematic_inflation(fit, self._poses))
        quantized = quantization_covariance(
            fit, self._resolution, self._poses, self._still, gravity
        )
        return fit.with_added_covariance(self._clock_covariance(fit, gravity) + quantized)

    def _clock_covariance(self, fit: GraspKinematics, gravity: object) -> np.ndarray:
        """sum_i sigma_i^2 J_i J_i^T: the grasps' uncertainty from the clock offsets."""
        extra = np.zeros_like(fit.covariance)
        if not self._clock_sigma or not self._poses.samples:
            return extra
        J = clock_sensitivity(self._poses, self._pose_rates, fit, gravity)
        for rid, sigma in self._clock_sigma.items():
            extra += sigma**2 * np.outer(J[rid], J[rid])
        return extra

    def _kinematic_inflation(self, fit: GraspKinematics, moments: StackedMoments) -> float:
        """Batch-means inflation of the fit's own residuals (``BlockSums``)."""
        return self._kinematic_blocks.inflation(residual_map_of(fit, moments))

    def _solve_parameters(self) -> ParameterFit | None:
        """Judge the wrench segments, then fit theta on those in use (None if none is)."""
        kin, segments = self._kinematics, self._segments
        dV_covariance = {}
        for group, moments in self._dtwists.items():
            if moments.samples > 1 and np.trace(moments.S) > 0:
                noise = consensus_noise(moments, kin.T_s_i)
                dV_covariance[group] = consensus_covariance(kin.T_s_i, kin.twist_noise, noise)
                angular, linear = noise[self.reference_id]
                own = np.repeat([angular**2, linear**2], 3)
                dV_covariance[group + OWN_MOTION] = np.diag(own)
        judgement = judge_segments(segments.segments, kin.T_s_i, dV_covariance, self.settings)
        segments.record(judgement)
        self._groups = segments.pooled(judgement.used, dV_covariance)
        if not self._groups:
            return None
        fit = fit_parameters(self._groups, kin.T_s_i, self.reference_id, kin.covariance)
        inflation = self._wrench_inflation(fit)
        data = covariance_from_information(fit.information)
        used = [
            (clusters, fit.noise[s.group])
            for s, clusters in zip(
                segments.segments, segments.fitted_clusters(judgement.used), strict=True
            )
            if clusters
        ]
        excess = segment_overdispersion(used, kin.T_s_i, fit.theta, fit.information, inflation)
        return replace(fit, covariance=fit.covariance + (inflation - 1.0) * data + excess)

    def _wrench_inflation(self, fit: ParameterFit) -> float:
        """Batch-means inflation of the fit's own net-wrench residuals over the segments in
        use, each whitened with its group's noise (``wrench_blocks``): schedule-free."""
        kin = self._kinematics
        maps = {  # one map per segment group: it depends on the group only
            name: wrench_residual_map(kin.T_s_i, group, fit.theta, fit.noise[name])
            for name, group in self._groups.items()
        }
        pooled: dict[str, list[BlockSums]] = {}  # per group: its segments share one map
        for s in self._segments.segments:
            if s.used and s.blocks is not None and s.group in maps:
                pooled.setdefault(s.group, []).append(s.blocks)
        return pooled_block_inflation(
            (BlockSums.pooled(blocks), maps[group]) for group, blocks in pooled.items()
        )

    def _group_information(self, group: str) -> np.ndarray:
        """Information of a phase group ("static", "dynamic"), all its segment groups."""
        information = np.zeros((10, 10))
        for name, part in (self._fit.group_information if self._fit else {}).items():
            if phase_group(name) == group:
                information = information + part
        return information

    def _angular_residual_rms(self) -> float:
        kin = self._kinematics
        if kin is None or self._twists.weight == 0:
            return 0.0
        ids = self.robot_ids
        A = stacked_adjoint(kin.T_s_i, ids)
        M = np.eye(6 * len(ids)) - A @ consensus_map(A, noise_precision(kin.twist_noise, ids))
        power = np.einsum("ij,jk,ik->i", M, self._twists.S, M).reshape(-1, 2, 3)[:, 0].sum()
        return float(np.sqrt(max(power, 0.0) / (3 * len(ids) * self._twists.weight)))

    def _cache_maps(self) -> None:
        """Maps used per sample until the next solve: robust weights, residuals."""
        self._maps = {}
        kin = self._kinematics
        if kin is None:
            return
        ids = self.robot_ids
        self._maps["twists"] = residual_map_of(replace(kin, source="twists"))
        if kin.source == "poses":
            self._maps["poses"] = residual_map_of(kin, self._poses)
        self._maps["R_s_i"] = np.stack([kin.T_s_i[r][:3, :3] for r in ids])
        if self._fit is not None:
            key = "dynamic" if "dynamic" in self._groups else next(iter(self._groups))
            group = self._groups[key]
            M = group.wrench_maps(kin.T_s_i)
            A_f, A_m = group.noise_structure(kin.T_s_i)
            sigma_f, sigma_m = self._fit.noise[key]
            C = sigma_f**2 * A_f + sigma_m**2 * A_m
            self._maps["wrench_maps"] = M
            self._maps["wrench_whitener"] = np.linalg.inv(
                np.linalg.cholesky(C + 1e-12 * np.trace(C) * np.eye(6))
            )


def _all_plausible(samples: list[GraspSample]) -> bool:
    """Fast check of a whole set; ``_sample_problem`` says what is wrong when this fails."""
    try:
        T = np.array([s.T_i0_i for s in samples], dtype=float)
        V = np.array([(s.V_i, s.dV_i) for s in samples], dtype=float).reshape(len(samples), -1)
        F = np.array([s.F_i for s in samples], dtype=float)
        g = [s.g_i for s in samples if s.g_i is not None]
        stamps = np.array([s.stamp for s in samples], dtype=float)
    except (TypeError, ValueError):
        return False
    if T.shape[1:] != (4, 4) or V.shape[1:] != (12,) or F.shape[1:] != (6,):
        return False
    flags = np.array([(s.has_torque, s.has_force) for s in samples])
    needed = np.repeat(flags, 3, axis=1)
    finite = np.isfinite(T).all() and np.isfinite(V).all() and np.isfinite(stamps).all()
    if not finite or not np.isfinite(F[needed]).all():
        return False
    R = T[:, :3, :3]
    orthonormal = np.abs(np.einsum("kji,kjl->kil", R, R) - np.eye(3)).max() < 1e-6
    if not orthonormal or np.any(np.linalg.det(R) < 0):
        return False
    if g:
        g = np.array(g, dtype=float)
        if g.shape[1:] != (3,) or not np.isfinite(g).all() or np.any(np.abs(g).sum(1) < 1e-6):
            return False
    return True


def _sample_problem(sample: GraspSample) -> str:
    """Why a sample cannot be used, or ''."""
    T = np.asarray(sample.T_i0_i, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return "pose is missing or not finite"
    R = T[:3, :3]
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
        return "pose rotation is not a rotation matrix"
    if np.asarray(sample.V_i).shape != (6,) or not np.all(np.isfinite(sample.V_i)):
        return "twist is missing or not finite"
    if np.asarray(sample.dV_i).shape != (6,) or not np.all(np.isfinite(sample.dV_i)):
        return "twist derivative is missing or not finite"
    F = np.asarray(sample.F_i, dtype=float)
    if F.shape != (6,):
        return "wrench is not a 6-vector"
    if sample.has_force and not np.all(np.isfinite(F[3:])):
        return "force is not finite"
    if sample.has_torque and not np.all(np.isfinite(F[:3])):
        return "torque is not finite"
    if sample.g_i is not None:
        g = np.asarray(sample.g_i, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)) or np.linalg.norm(g) < 1e-6:
            return "gravity is not a finite nonzero 3-vector"
    if not np.isfinite(sample.stamp):
        return "stamp is not finite"
    return ""
