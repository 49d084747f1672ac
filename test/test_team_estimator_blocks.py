"""TeamEstimator.update_block: the statistics and estimates of Q calls of ``update``, the
checks and refusals too, on a simulated noisy session with solves between the blocks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from inertia_estimation_ros.core.cooperative import EstimatorSettings, TeamEstimator
from inertia_estimation_ros.core.samples import SetBlock
from inertia_estimation_ros.sim import analytic as an

RATE = 100.0
SOLVE_EVERY = 700  # sets between the solves (the same sets for both paths)
BLOCK = 37  # sets per block: blocks straddle the phase and segment boundaries


@pytest.fixture(scope="module")
def noisy_sets():
    rng = np.random.default_rng(3)
    team = an.paper_team()
    segments = an.paper_session_segments(rng, 4.0, 5.0)
    sim, _ = an.simulate_session(
        team, an.paper_payload(), segments, RATE, noise=an.instrumented_noise(), rng=rng
    )
    return team.robot_ids, an.synchronized_sets(sim.measured)


def run(ids, sets, settings, blocks: bool, solve: bool = True) -> TeamEstimator:
    """One estimator fed every set, per set or in blocks, solved every SOLVE_EVERY sets
    (with ``solve``: the robust weights and residual maps of a solve then act)."""
    estimator = TeamEstimator(ids, ids[0], settings)
    estimator.set_clock_sigma({ids[1]: 1e-3})
    for start in range(0, len(sets), SOLVE_EVERY):
        chunk = sets[start : start + SOLVE_EVERY]
        if blocks:
            for k in range(0, len(chunk), BLOCK):
                estimator.update_block(SetBlock.from_sets(chunk[k : k + BLOCK], ids))
        else:
            for samples in chunk:
                estimator.update(samples)
        if solve:
            estimator.estimate()
    return estimator


def statistics(estimator: TeamEstimator) -> dict[str, np.ndarray]:
    """Every accumulated array of the estimator, by name."""
    e = estimator
    out = {
        "twists": e._twists.S,
        "poses": e._poses.S,
        "omega": e._omega,
        "alpha": e._alpha,
        "tilts": e._tilts,
        "kinematic blocks": e._kinematic_blocks.S,
        "kinematic partial": e._kinematic_blocks.partial,
    }
    out |= {f"dtwists {g}": m.S for g, m in e._dtwists.items()}
    out |= {f"pose rates {r}": D for r, D in e._pose_rates.items()}
    out |= {f"gravity {r}": np.r_[h.total, h.outer.ravel()] for r, h in e._gravity.items()}
    for k, s in enumerate(e._segments.segments):
        out[f"segment {k} {s.group} {s.start} {s.end}"] = np.r_[
            s.moments.YY.ravel(), s.moments.K.ravel(), s.moments.FF.ravel()
        ]
        out[f"segment {k} clusters {s.cluster_starts}"] = np.concatenate(
            [np.r_[c.YY.ravel(), c.K.ravel(), c.FF.ravel()] for c in s.clusters]
        )
        out[f"segment {k} correlation"] = np.r_[s.correlation.lagged, s.correlation.power]
        out[f"segment {k} blocks"] = s.blocks.S
    return out


def assert_same(a: dict, b: dict, rtol: float) -> None:
    """Equal to ``rtol`` of each array's largest entry; the residuals' lagged sums (bounded
    by their power) to 1e-10: whitened residuals of ~100 N forces leave ~1e-14 N rounding,
    which their sums of products of either sign carry to ~1e-11 of the power."""
    assert a.keys() == b.keys()
    for name in a:
        scale = max(np.abs(a[name]).max(), 1e-300)
        tolerance = 1e-10 if name.endswith("correlation") else rtol
        np.testing.assert_allclose(b[name], a[name], rtol=0, atol=tolerance * scale, err_msg=name)


@pytest.mark.parametrize("cutoff", [None, 20.0], ids=["raw", "input filter"])
def test_blocks_give_the_statistics_and_estimate_of_single_sets(noisy_sets, cutoff):
    ids, sets = noisy_sets
    settings = EstimatorSettings(sample_rate_hz=RATE, input_cutoff_hz=cutoff)
    solve = cutoff is None  # the filter's part is the signals: the statistics show it
    single = run(ids, sets, settings, False, solve)
    block = run(ids, sets, settings, True, solve)
    assert single._counts == block._counts and single._counts["kinematics"] > 100
    assert_same(statistics(single), statistics(block), 1e-12)
    if not solve:
        return
    first, second = single.estimate_now(), block.estimate_now()
    assert first.mass_valid and first.inertia_valid
    # the parameters to 1e-10; their covariances carry the residuals' autocorrelation
    # (inflation from the lagged sums above, equal to 1e-10): to 1e-8
    tolerances = {
        "theta": 1e-10,
        "principal_moments": 1e-10,
        "theta_covariance": 1e-8,
        "p_s_c_covariance": 1e-8,
    }
    for name, tolerance in tolerances.items():
        a, b = np.asarray(getattr(first, name)), np.asarray(getattr(second, name))
        np.testing.assert_allclose(b, a, rtol=0, atol=tolerance * np.abs(a).max(), err_msg=name)


def damaged(sets: list, ids: tuple) -> list:
    """Sets with a NaN wrench, a stamp going back, an unsynchronized stamp, a set repeated."""
    out = [dict(s) for s in sets]
    r = ids[1]
    out[5][r] = dataclasses.replace(out[5][r], F_i=np.full(6, np.nan))
    out[9][ids[0]] = dataclasses.replace(out[9][ids[0]], stamp=out[2][ids[0]].stamp)
    out[12][r] = dataclasses.replace(out[12][r], stamp=out[12][r].stamp + 0.5)
    out.insert(20, out[19])
    return out


def test_blocks_refuse_the_sets_single_updates_refuse_for_the_same_reasons(noisy_sets):
    ids, sets = noisy_sets
    sets = damaged(sets[:60], ids)
    single, block = TeamEstimator(ids, ids[0]), TeamEstimator(ids, ids[0])
    accepted = [single.update(s).accepted for s in sets]
    result = block.update_block(SetBlock.from_sets(sets, ids))
    assert list(result.accepted) == accepted and accepted.count(False) == 4
    assert single.rejection_reasons == block.rejection_reasons
    assert set(single.rejection_reasons) == {
        "bad sample",
        "non-monotonic stamp",
        "unsynchronized stamps",
    }
    assert_same(statistics(single), statistics(block), 1e-12)
