"""Unmeasured external wrenches (a human hand) are found, set aside and reported.

Independent references: the analytic generator's exact robot wrenches with a known injected
external wrench (where and when it acted, and its size), the same sessions without it,
and hypothesis for the segment store's invariants. MuJoCo's human-guided phase, with the
human's wrench from the simulator's ground truth, is in test_sim_estimation.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.cooperative import (
    EstimatorSettings,
    Recording,
    TeamEstimator,
    estimate_offline,
)
from inertia_estimation_ros.core.cooperative.correlated_noise import (
    BlockSums,
    ResidualCorrelation,
    pooled_block_inflation,
    pooled_inflation,
    variance_inflation,
)
from inertia_estimation_ros.core.cooperative.dynamics import WrenchMoments
from inertia_estimation_ros.core.cooperative.external_wrench import (
    HAND_GUARD_SECONDS,
    MAX_CLUSTERS,
    ExternalWrenchSpan,
    SegmentStore,
    UndecidedSpan,
    external_wrench_advice,
    external_wrench_spans,
    judge_segments,
    merged_rms,
    significance,
)
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor
from inertia_estimation_ros.sim import analytic as an

RATE = 100.0
STATICS = an.paper_static_motion()
TILTS = STATICS.rotation  # holds 0 and 5 level, 1-4 tilted


def hold(k: int, kin_seconds: float) -> tuple[float, float]:
    """Session time of static hold k (after a kinematics trial of kin_seconds)."""
    start = kin_seconds + k * (TILTS.hold + TILTS.move)
    return start, start + TILTS.hold


def session(seed, kin_seconds=8.0, pivot_seconds=16.0, external=None, noise=None):
    """A kinematics trial, the four static tilts and pivoting about robot_3's wrist, on the
    paper's team with 20 N of squeeze and wrist instruments' noise (analytic, exact)."""
    rng = np.random.default_rng(seed)
    team, payload = an.paper_team(), an.paper_payload()
    segments = an.paper_session_segments(rng, kin_seconds, pivot_seconds, STATICS)
    sim, _ = an.simulate_session(
        team,
        payload,
        segments,
        RATE,
        noise=noise or an.instrumented_noise(),
        rng=rng,
        internal=an.squeeze_forces(team, 20.0),
        external=external,
    )
    return team, payload, sim


KIN = 8.0
GUIDED = (0.0, KIN)
LEAN = (hold(2, KIN)[0] + 0.5, hold(2, KIN)[1] - 0.3)  # a hand leaning on the second tilt
LEAN_FORCE, LEAN_POINT = (0.0, 0.0, -15.0), (0.3, 0.1, 0.0)
PUSH = (KIN + TILTS.duration + 6.0, KIN + TILTS.duration + 9.0)  # a push while pivoting
PUSH_FORCE, PUSH_POINT = (5.0, 0.0, -8.0), (1.0, -0.2, 0.0)


def hands(t, T_w_s, inertial_s):
    """The human guides the kinematics trial, leans on a hold and pushes while pivoting."""
    guide = an.HumanGuidance((GUIDED,))(t, T_w_s, inertial_s)
    lean = an.HandPush((LEAN,), LEAN_FORCE, LEAN_POINT)(t, T_w_s, inertial_s)
    push = an.HandPush((PUSH,), PUSH_FORCE, PUSH_POINT)(t, T_w_s, inertial_s)
    return guide + lean + push


def online(team, series, every=200, settings=None, along=None):
    """The final estimate of an online run that solves every ``every`` samples; the
    estimates on the way are appended to ``along`` if given."""
    estimator = TeamEstimator(team.robot_ids, team.reference_id, settings)
    for k, samples in enumerate(an.synchronized_sets(series)):
        estimator.update(samples)
        if k % every == every - 1:
            estimate = estimator.estimate()
            if along is not None and estimate is not None:
                along.append(estimate)
    return estimator.estimate_now()


@pytest.fixture(scope="module")
def runs():
    team, payload, clean = session(1)
    _, _, touched = session(1, external=hands)
    along = []
    return {
        "team": team,
        "payload": payload,
        "clean": estimate_offline([Recording(clean.measured)], "robot_1"),
        "offline": estimate_offline([Recording(touched.measured)], "robot_1"),
        "online": online(team, touched.measured, along=along),
        "online, along the way": along,
        "online, one solve at the end": online(team, touched.measured, every=10**9),
        "undetected": estimate_offline(
            [Recording(touched.measured)],
            "robot_1",
            EstimatorSettings(detect_external_wrench=False),
        ),
    }


def errors(estimate, payload):
    """(|mass error| [kg], CoM error [m], largest relative principal-moment error)."""
    moments = payload.principal_axes()[0]
    return (
        abs(estimate.mass - payload.mass),
        float(np.linalg.norm(estimate.p_s_c - payload.com)),
        float(np.abs(estimate.principal_moments / moments - 1).max()),
    )


@pytest.mark.parametrize("way", ["offline", "online", "online, one solve at the end"])
def test_hands_are_found_where_and_when_they_acted(runs, way):
    """Each reported stretch lies within an injected one (to a segment, 1 s), each injected
    one is reported, and the sizes are the hand's: 15 N leaning, |(5, 0, -8)| N pushing."""
    estimate = runs[way]
    spans = estimate.external_wrench_spans
    acted = [GUIDED, LEAN, PUSH]
    for span in spans:
        assert any(a - 1.0 <= span.start and span.end <= b + 1.0 for a, b in acted), span
    for a, b in acted:
        assert any(span.start < b and span.end > a for span in spans), (a, b)
    lean = next(s for s in spans if s.start < LEAN[1] and s.end > LEAN[0])
    push = next(s for s in spans if s.start < PUSH[1] and s.end > PUSH[0])
    assert lean.force == pytest.approx(15.0, rel=0.3)
    assert push.force == pytest.approx(np.linalg.norm(PUSH_FORCE), rel=0.3)
    assert estimate.samples_external_wrench == sum(s.samples for s in spans)
    sigma = np.sqrt(np.diag(estimate.theta_covariance))
    assert estimate.inertia_valid
    assert np.all(np.abs(estimate.theta - runs["payload"].vec) < 3 * sigma)
    advice = " | ".join(estimate.advice)
    assert "acted on the payload during" in advice and "(a human hand?)" in advice
    assert "those samples are not used for mass, CoM and inertia" in advice


def test_sizes_on_the_way_are_the_final_ones_or_withheld(runs):
    """An online estimate states a wrench's size only where it stands out from the
    uncertainty of the fit it was judged against: the guided trial's moment is within a
    factor of 2.5 of the final one (31 N m), or the stretch is undecided (set aside, no size,
    not reported as a wrench), with advice that says so. Before sizes were withheld, fits on
    too little data stated up to 90 N m. Measured: 14-17 N m from 10 s to 26 s (before the
    pivots determine the inertia; regressors from the reference robot's own motion, issue 15
    item 3), 31 N m from 28 s on."""
    final = next(s for s in runs["online"].external_wrench_spans if s.start < GUIDED[1])
    assert np.isfinite(final.force) and np.isfinite(final.moment)
    withheld = 0
    for estimate in runs["online, along the way"]:
        withheld += len(estimate.undecided_spans)
        for span in estimate.external_wrench_spans:
            assert np.isfinite(span.force) and np.isfinite(span.moment), span
            if span.start < GUIDED[1] and span.end > GUIDED[1] - 1.0:
                assert final.moment / 2.5 < span.moment < 2.5 * final.moment, span
    assert withheld > 0  # measured: 7 of the 21 estimates on the way withhold a size
    advice = external_wrench_advice(
        [ExternalWrenchSpan(9, 10, 9, 12, 0)], [UndecidedSpan(0.0, 8.0, 800)]
    )
    assert advice[0].startswith("an external wrench of about 12 N acted on the payload during")
    assert advice[1].startswith("800 samples (0.0-8.0 s) disagree with the others' fit, but no")
    assert "not used for mass, CoM and inertia" in advice[1]


def test_an_unsized_stretch_is_undecided_never_a_wrench_of_nan_size():
    """Issue 15 item 10: a set-aside segment whose size the judgement could not tell (NaN)
    was reported as an external wrench of NaN N. It is an ``UndecidedSpan`` (a refusal with
    advice); a stretch joined from a sized and an unsized segment keeps the sized part's RMS."""
    store = SegmentStore(("a",), (True,), EstimatorSettings(segment_seconds=1.0))
    for k, (used, force) in enumerate(
        [(False, np.nan), (True, 0.0), (False, 3.0), (False, np.nan)]
    ):
        segment = store.add(float(k), "static", np.zeros((6, 10)), np.zeros((1, 6)))
        segment.used, segment.external_force, segment.external_moment = used, force, force
        store.close()
    spans, undecided = external_wrench_spans(store.segments, 1.5)
    assert undecided == (UndecidedSpan(0.0, 0.0, 1),)
    assert spans == (ExternalWrenchSpan(2.0, 3.0, 2, 3.0, 3.0),)


@given(
    st.integers(1, 1000),
    st.floats(0, 1e3) | st.just(np.nan),
    st.integers(1, 1000),
    st.floats(0, 1e3) | st.just(np.nan),
)
def test_merged_rms_is_the_rms_of_the_sized_parts(n, x, m, y):
    """Equal to the RMS of n copies of x and m of y; a NaN (unsized) part is left out."""
    parts = [np.full(n, x), np.full(m, y)]
    sized = np.concatenate([p for p in parts if np.isfinite(p[0])] or [np.full(1, np.nan)])
    expected = np.sqrt(np.mean(sized**2))
    assert merged_rms(n, x, m, y) == pytest.approx(expected, rel=1e-12, nan_ok=True)


@pytest.mark.parametrize("way", ["offline", "online"])
def test_the_estimate_keeps_the_accuracy_of_the_clean_case(runs, way):
    """Within the tolerance the clean session meets: mass 2e-4 relative, CoM 1 mm, moments 1%
    (measured: clean 1.0e-4, 0.14 mm, 0.13%; with the hands 1.6e-4, 0.31 mm, 0.50%, as the
    guided trial's 800 samples no longer inform the inertia), and the truth within 3 stated
    sigma. Undetected, the hands cost 0.9% of the mass, 21 mm of CoM and 75% of a moment.
    (A single solve at the end has only the reference robot's motion in its regressors,
    which costs accuracy with or without hands; the test above covers it.)"""
    estimate, payload = runs[way], runs["payload"]
    assert estimate.inertia_valid and estimate.physically_consistent
    tolerances = (2e-4 * payload.mass, 1e-3, 1e-2)
    found, clean = errors(estimate, payload), errors(runs["clean"], payload)
    for tolerance, got, reference in zip(tolerances, found, clean, strict=True):
        assert reference < tolerance and got < tolerance
    sigma = np.sqrt(np.diag(estimate.theta_covariance))
    assert np.all(np.abs(estimate.theta - payload.vec) < 3 * sigma)


def test_without_detection_the_hands_bias_the_estimate(runs):
    """The same data with detection off: the human's wrench ruins mass and inertia."""
    payload = runs["payload"]
    mass, _, moments = errors(runs["undetected"], payload)
    assert runs["undetected"].samples_external_wrench == 0
    assert mass > 10 * errors(runs["offline"], payload)[0] or moments > 0.03


def test_no_false_exclusions_on_clean_noisy_data():
    """Six clean noisy sessions (18,900 samples, ~210 segments): with the defaults nothing
    is set aside (also measured with the floor off); with the floor off and alpha = 0.01 the
    share set aside is near alpha (measured 1.7%; the bound is 3 alpha)."""
    strict = EstimatorSettings(external_wrench_floor=0.0, external_wrench_false_alarm=0.01)
    noise = dataclasses.replace(an.instrumented_noise(), force_std=1.0)
    excluded, total = 0, 0
    for seed in range(6):
        _, _, sim = session(300 + seed, kin_seconds=4.0, pivot_seconds=8.0, noise=noise)
        recordings = [Recording(sim.measured)]
        assert estimate_offline(recordings, "robot_1").samples_external_wrench == 0
        loose = estimate_offline(recordings, "robot_1", strict)
        excluded += loose.samples_external_wrench
        total += loose.samples_static + loose.samples_dynamic
    assert excluded <= 0.03 * total


def test_too_little_clean_data_is_refused_with_advice():
    """A human guides every move and leans on every tilted hold: what remains cannot give the
    inertia, nor the CoM to 1 mm (max_com_std), so both are refused with advice that says
    why. Without the hands, the same motion determines the CoM to 1 mm."""
    kin = 6.0
    moves = [(0.0, hold(0, kin)[0])] + [(hold(k, kin)[1], hold(k + 1, kin)[0]) for k in range(5)]
    leans = {
        1: ((0.0, 0.0, -20.0), (0.3, 0.1, 0.0)),
        2: ((4.0, 0.0, -10.0), (0.9, -0.2, 0.0)),
        3: ((0.0, -3.0, -30.0), (0.1, 0.4, 0.0)),
        4: ((0.0, 5.0, -15.0), (0.5, 0.5, 0.0)),
    }
    final = moves[-1][1] + 12.0
    moves.append((hold(5, kin)[1], final))

    def guided_with_leans(t, T_w_s, inertial_s):
        out = an.HumanGuidance(tuple(moves), ramp=0.3)(t, T_w_s, inertial_s)
        for k, (force, point) in leans.items():
            out = out + an.HandPush((hold(k, kin),), force, point, ramp=0.2)(t, T_w_s, inertial_s)
        return out

    precise = EstimatorSettings(max_com_std=1e-3)
    _, _, touched = session(5, kin, 12.0, external=guided_with_leans)
    _, _, untouched = session(5, kin, 12.0, external=an.HumanGuidance(tuple(moves), ramp=0.3))
    estimate = estimate_offline([Recording(touched.measured)], "robot_1", precise)
    reference = estimate_offline([Recording(untouched.measured)], "robot_1", precise)
    assert reference.com_valid
    assert estimate.mass_valid and not estimate.com_valid and not estimate.inertia_valid
    advice = " | ".join(estimate.advice)
    assert "static samples: let go of the payload during the static holds" in advice
    assert "moving samples: let the robots move the payload without a hand on it" in advice
    assert np.all(estimate.principal_moments == 0) and np.all(estimate.p_s_c == 0)


@settings(max_examples=25, deadline=None)
@given(
    runs=st.lists(
        st.tuples(st.sampled_from(["static", "dynamic"]), st.integers(1, 250)),
        min_size=1,
        max_size=40,
    ),
    verdicts=st.lists(st.sampled_from([True, False, None]), min_size=40, max_size=40),
)
def test_segment_store_stays_bounded_and_merging_keeps_the_statistics(runs, verdicts):
    """However samples arrive and whatever the verdicts, at most max_segments segments are
    kept, each of one group, in time order, and they sum to the statistics of all samples;
    each segment's clusters (of the sandwich covariance) are at most MAX_CLUSTERS, in time
    order, and sum to the segment's statistics."""
    config = EstimatorSettings(max_segments=8, segment_seconds=0.5)
    ids, torque = ("a", "b"), (True, False)
    store = SegmentStore(ids, torque, config)
    total = {g: WrenchMoments.empty(ids, torque) for g in ("static", "dynamic")}
    rng = np.random.default_rng(len(runs))
    stamp = 0.0
    for k, (group, count) in enumerate(runs):
        for _ in range(count):
            Y, F = rng.normal(size=(6, 10)), rng.normal(size=(2, 6))
            F[1, :3] = 0.0
            store.add(stamp, group, Y, F)
            total[group].add(Y, F)
            stamp += 0.01
        for segment, verdict in zip(store.segments, verdicts[k:], strict=False):
            segment.used = verdict
    assert len(store.segments) <= config.max_segments
    starts = [s.start for s in store.segments]
    assert starts == sorted(starts)
    for segment in store.segments:
        assert len(segment.clusters) <= MAX_CLUSTERS
        assert segment.cluster_starts == sorted(segment.cluster_starts)
        assert sum(c.samples for c in segment.clusters) == segment.samples
        np.testing.assert_allclose(sum(c.YY for c in segment.clusters), segment.moments.YY)
        np.testing.assert_allclose(sum(c.K for c in segment.clusters), segment.moments.K)
    pooled = store.pooled(np.ones(len(store.segments), dtype=bool), {})
    for group, moments in total.items():
        if moments.samples:
            np.testing.assert_allclose(pooled[group].YY, moments.YY, atol=1e-9)
            np.testing.assert_allclose(pooled[group].K, moments.K, atol=1e-9)
            np.testing.assert_allclose(pooled[group].FF, moments.FF, atol=1e-9)
            assert pooled[group].samples == moments.samples


def test_external_wrench_settings_are_validated_with_the_setting_named():
    for name, value in (
        ("max_segments", 4),
        ("max_segments", 8.5),
        ("segment_seconds", 0.0),
        ("external_wrench_false_alarm", 0.7),
        ("external_wrench_floor", -0.1),
    ):
        with pytest.raises(ValueError, match=name):
            EstimatorSettings(**{name: value})


def test_residual_autocorrelation_pools_across_batches_and_segments():
    """The inflation kappa of per-segment accumulators: one at a time, in batches, or two
    stretches absorbed into one give the batch formula's value on the whole series."""
    rng = np.random.default_rng(3)
    residuals = np.cumsum(rng.normal(size=(400, 6)), axis=0) * 0.1 + rng.normal(size=(400, 6))
    single, batches = ResidualCorrelation(30), ResidualCorrelation(30)
    for r in residuals:
        single.add(r)
    batches.add_batch(residuals[:7])
    batches.add_batch(residuals[7:150])
    for r in residuals[150:160]:
        batches.add(r)
    batches.add_batch(residuals[160:])
    expected = variance_inflation(residuals, 30)
    assert single.inflation() == pytest.approx(expected, rel=1e-12)
    assert batches.inflation() == pytest.approx(expected, rel=1e-12)
    first, second = ResidualCorrelation(30), ResidualCorrelation(30)
    first.add_batch(residuals[:200])
    second.add_batch(residuals[200:])
    first.absorb(second)  # lags across the seam are lost: close, not equal
    assert first.inflation() == pytest.approx(expected, rel=0.05)
    assert pooled_inflation([single]) == pytest.approx(expected, rel=1e-12)
    assert pooled_inflation([ResidualCorrelation(30)]) == 1.0


def test_block_sums_give_the_long_run_variance_of_any_residual_map():
    """Batch means on the measurements x_k serve any residual map P chosen later: an AR(1)
    component (rho = 0.8: long-run variance factor (1 + rho) / (1 - rho) = 9) and a white one
    in one stacked vector; each map finds its own factor, and two accumulators pool."""
    rng = np.random.default_rng(5)
    n, rho = 40000, 0.8
    ar = np.zeros(n)
    shocks = rng.normal(size=n)
    for k in range(1, n):
        ar[k] = rho * ar[k - 1] + shocks[k]
    X = np.stack([ar, rng.normal(size=n), np.ones(n)], axis=1)
    first, second = BlockSums(3, 100.0), BlockSums(3, 100.0)
    for k, x in enumerate(X):
        (first if k < n // 2 else second).add(x)
    correlated, white = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]])
    assert first.inflation(correlated) == pytest.approx(9.0, rel=0.2)
    assert first.inflation(white) == pytest.approx(1.0, abs=0.25)
    pooled = pooled_block_inflation([(first, correlated), (second, correlated)])
    assert pooled == pytest.approx(9.0, rel=0.15)
    assert BlockSums(3, 100.0).inflation(correlated) == 1.0  # no data: no inflation


def test_the_stated_false_alarm_rate_holds_and_untestable_segments_show_nothing():
    """The test statistic T ~ scale chi2(dof) of a segment without a hand exceeds its
    threshold at the stated rate; a segment whose own fit absorbs its residual (dof near 0:
    the chi2 quantile underflowed to a threshold of 0) was flagged whatever its residual,
    and its severity divided by zero (issue 15 item 10)."""
    rng = np.random.default_rng(4)
    mean, variance = np.full(20000, 30.0), np.full(20000, 90.0)  # scale 1.5, dof 20
    T = 1.5 * rng.chisquare(20.0, 20000)
    flagged, severity = significance(T, mean, variance, false_alarm=0.01)
    assert 0.008 < flagged.mean() < 0.012
    assert np.all(flagged == (severity > 1))
    with np.errstate(all="raise"):
        flagged, severity = significance(
            np.array([5.0, 5.0]), np.array([1e-12, 0.0]), np.array([1.0, 1.0]), 1e-4
        )
    assert not flagged.any() and np.all(severity == 0.0)


def test_the_threshold_is_scipys_chi2_isf_bit_for_bit():
    """``significance`` takes the quantile from scipy.special (``chdtri``, what
    ``chi2.isf`` calls for 0 < alpha < 1 and dof > 0) without loading scipy.stats."""
    rng = np.random.default_rng(5)
    mean = rng.uniform(2.0, 3000.0, 500)  # dof = 2 mean^2 / variance >= 0.5: testable
    variance = mean * rng.uniform(1.0, 8.0, 500)
    scale = np.maximum(variance, 1e-9) / (2 * np.maximum(mean, 1e-9))
    for alpha in (1e-6, 1e-4, 0.01, 0.3):
        threshold = scale * chi2.isf(alpha, mean / scale)
        T = threshold * rng.uniform(0.5, 1.5, 500)
        _, severity = significance(T, mean, variance, alpha)
        assert severity.tobytes() == (T / threshold).tobytes()


@pytest.mark.parametrize("noisy", [False, True])
def test_no_phantom_wrench_on_a_larger_team_without_a_hand(noisy):
    """Issue 15 item 10: on an independent generator's runs (N = 4-8, random grasps, 200 Hz)
    the detector reported ~190 N and 130 N m (150 N on a noise-free run) where no external
    wrench acted. Here: five robots on a ring with wrist sensors, a random payload, 200 Hz,
    exact and noisy data, no hand: nothing is set aside and no span is reported with the
    floor off (only the stated false-alarm rate, alpha = 1e-4 per segment, acts; the floor
    can only set aside less). Not reproduced on this generator in 13 runs (N = 4-8, exact and
    noisy, offline and online, clock offsets of 10 ms): this guards the fix of the
    threshold that underflowed to 0 (``significance``)."""
    rng = np.random.default_rng(11)
    team, T_s_p = an.ring_team(5, rng, moment_capable=True)
    payload = InertialParameters.from_mass_com_inertia(
        23.0, np.array([0.1, -0.05, 0.04]), np.diag([1.2, 2.0, 2.9])
    ).transformed(T_s_p)
    kin, pivot = an.paper_kinematics_motion(rng), an.paper_inertia_motion(rng)
    segments = [
        (an.PayloadMotion(an.Ramped(kin.rotation, 5.0, 1.0), kin.translation, kin.pivot_s), 5.0),
        (STATICS, TILTS.duration),
        (
            an.PayloadMotion(an.Ramped(pivot.rotation, 6.0, 1.0), pivot.translation, pivot.pivot_s),
            6.0,
        ),
    ]
    noise = an.instrumented_noise() if noisy else an.NoiseModel()
    sim, _ = an.simulate_session(
        team, payload, segments, 200.0, noise=noise, rng=rng, internal=an.squeeze_forces(team, 20.0)
    )
    series = sim.measured if noisy else sim.exact
    config = EstimatorSettings(sample_rate_hz=200.0, external_wrench_floor=0.0)
    estimate = estimate_offline([Recording(series)], team.reference_id, config)
    assert estimate.samples_external_wrench == 0, estimate.external_wrench_spans
    assert not estimate.external_wrench_spans and estimate.inertia_valid


def test_the_fit_leaves_out_the_clusters_next_to_an_external_wrench():
    """The first cluster after and the last before a set-aside segment are left out (their
    central-difference accelerations reach into the hand's samples); a used segment of one
    cluster between two set-aside ones leaves its group out of the fit (the online solve
    then skips that group's batch means: the demo's static group raised KeyError); nor are
    the clusters within a guard time of a set-aside segment (``HAND_GUARD_SECONDS``)."""
    config = EstimatorSettings(segment_seconds=0.5)
    ids, torque = ("a", "b"), (True, True)
    store = SegmentStore(ids, torque, config)
    rng = np.random.default_rng(3)
    groups = ["dynamic"] * 50 + ["static"] * 10 + ["dynamic"] * 150
    for k, group in enumerate(groups):
        store.add(0.01 * k, group, rng.normal(size=(6, 10)), rng.normal(size=(2, 6)))
    assert [len(s.clusters) for s in store.segments] == [3, 1, 3, 3, 3]
    used = np.array([False, True, False, True, True])
    kept = store.fitted_clusters(used, (0.0, 0.0))
    assert [len(c) for c in kept] == [0, 0, 0, 2, 3]
    assert kept[3] == store.segments[3].clusters[1:]
    # clusters 0-0.2, 0.2-0.4, 0.4-0.5 s before a hand on 0.6-1.09 s: a guard of 0.3 s before
    # leaves out the two that reach past 0.3 s, the default (1 s) all three; one of 0.3 s after
    # the cluster 1.3-1.5 s (1.1-1.3 s is out anyway), the default (0.5 s) 1.3-1.59 s too
    before = np.array([True, True, False, True, True])
    guards = ((0.0, 0.0), (0.3, 0.0), (0.0, 0.3), HAND_GUARD_SECONDS)
    counts = [[len(c) for c in store.fitted_clusters(before, g)] for g in guards]
    assert counts == [[3, 0, 0, 2, 3], [1, 0, 0, 2, 3], [3, 0, 0, 1, 3], [0, 0, 0, 0, 3]]
    pooled = store.pooled(used, {})  # the default guard: segment 4 alone
    assert set(pooled) == {"dynamic"} and pooled["dynamic"].samples == store.segments[4].samples


def exact_team_segments(rng, settings):
    """Five robots with wrist sensors on a 23 kg payload, exact wrenches (squeeze forces of
    ~20 N), six 1-s static holds in random tilts alternating with six 1-s moves: the segments
    and the grasps."""
    ids = ("a", "b", "c", "d", "e")
    T_s_i = {r: sp.transform(sp.exp3(rng.normal(size=3)), rng.normal(0, 0.6, 3)) for r in ids}
    theta = InertialParameters.from_mass_com_inertia(
        23.0, np.array([0.1, -0.05, 0.04]), np.diag([1.2, 2.0, 2.9])
    ).vec
    M = WrenchMoments.empty(ids, (True,) * 5).wrench_maps(T_s_i)
    store, rate = SegmentStore(ids, (True,) * 5, settings), settings.sample_rate_hz
    for k in range(12):
        t = k + np.arange(int(rate)) / rate
        amplitude = np.array([1.0, 1.0, 1.0, 0.3, 0.3, 0.3]) * (k % 2 == 0)
        phase = rng.uniform(0, 2 * np.pi, 6)
        V = amplitude * np.sin(np.pi * t[:, None] + phase)
        dV = amplitude * np.pi * np.cos(np.pi * t[:, None] + phase)
        Y = body_regressor(V, dV, sp.exp3(rng.normal(0, 0.3, 3)) @ [0.0, 0.0, -9.81])
        F = np.empty((len(t), len(ids), 6))
        F[:, 1:] = rng.normal(0, [2, 2, 2, 20, 20, 20], (len(ids) - 1, 6))
        net = Y @ theta - np.einsum("iab,ib->a", M[1:], F[0, 1:])
        F[:, 0] = np.linalg.solve(M[0], net.T).T
        store.add_run(t, "dynamic" if k % 2 == 0 else "static", Y, F)
        store.close()
    return store.segments, T_s_i


@pytest.mark.parametrize("seed", range(3))
def test_exact_data_show_no_wrench_whatever_the_round_off(seed):
    """The cause of issue 15's phantom (the compat run's NaN-sized span, numpy 1.26 / scipy
    1.11): on exact data the residual statistics R_j = P_j - 2 C_j + theta^T YY_j theta are
    round-off (float64 cancellation, 1e-11 N^2 per sample at 300 N), which numpy 1.26's and
    2.x's BLAS make differently (P_j one ulp apart); a noise level fitted to them whitened
    round-off into the test, so the verdicts were arbitrary: with the old floor (1e-9 of the
    wrench RMS) 25 of 25 such judgements set segments aside, on both numpy versions. With
    noise levels no finer than ``NOISE_RESOLUTION``, nothing is set aside, also when every
    sum is perturbed by a few ulps as another BLAS would."""
    rng = np.random.default_rng(seed)
    settings = EstimatorSettings(sample_rate_hz=200.0, external_wrench_floor=0.0)
    segments, T_s_i = exact_team_segments(rng, settings)
    for trial in range(3):
        perturbed = [
            dataclasses.replace(s, moments=dataclasses.replace(s.moments)) for s in segments
        ]
        for s in perturbed if trial else ():
            ulps = rng.integers(-4, 5, s.moments.FF.shape)
            s.moments.FF = s.moments.FF * (1 + np.finfo(float).eps * (ulps + ulps.T))
        judgement = judge_segments(perturbed, T_s_i, {}, settings)
        assert judgement.used.all(), (trial, judgement.step, judgement.external_force)


def test_batch_means_of_wrenches_without_torque_sensing_are_the_wrenches_as_given():
    """``SegmentStore.add_run``'s batch means (``wrench_blocks``) take the wrenches as given;
    where robots sense no torque (their moments zero, of either sign, as the estimator's
    signals leave them) the moments' product of the cleaned rows stands in for the rows'
    own: the same sums, bit for bit, as the products of the rows as given."""
    rng = np.random.default_rng(7)
    ids, torque = ("a", "b", "c"), (True, False, False)
    settings = EstimatorSettings(sample_rate_hz=100.0)
    store = SegmentStore(ids, torque, settings)
    expected = np.zeros((60 + 18, 60 + 18))
    for k in range(6):  # runs of one group: one segment, the blocks of length 1 complete
        t = 0.1 * k + np.arange(10) / 100.0
        Y = body_regressor(*rng.normal(size=(2, 10, 6)), rng.normal(size=(10, 3)))
        F = rng.normal(size=(10, 3, 6))
        F[:, 1:, :3] = -0.0 * rng.normal(size=(10, 2, 3))  # zeros of either sign
        store.add_run(t, "dynamic", Y, F, None, settings.sample_rate_hz)
        rows = np.concatenate([Y.reshape(10, -1), F.reshape(10, -1)], axis=1)
        expected += rows.T @ rows
    (segment,) = store.segments
    assert segment.blocks.lengths[0] == 1
    assert np.array_equal(segment.blocks.S[0], expected)
    assert segment.blocks.S[0].tobytes() == expected.tobytes()  # no zero of another sign
