"""Clock offsets from angular speed and the streaming aligner (issue 3e)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.cooperative import (
    SpeedHistory,
    StreamingAligner,
    TeamEstimator,
    estimate_clock_offset,
)
from inertia_estimation_ros.core.cooperative.clock import interpolate_pose, interpolate_sample
from inertia_estimation_ros.sim import analytic as an

OFFSETS = {"robot_1": 0.0, "robot_2": 0.1371, "robot_3": -0.0526}


def recorded(times, seed=0, noise=None, offsets=OFFSETS):
    team, payload = an.paper_team(), an.paper_payload()
    motion = an.paper_kinematics_motion(np.random.default_rng(seed))
    errors = an.NoiseModel().draw_errors(team.robot_ids, np.random.default_rng(seed))
    errors = an.SensorErrors(
        errors.angle_offset, errors.twist_bias, errors.wrench_bias, errors.wrench_scale, offsets
    )
    sim = an.simulate(team, payload, motion, times, noise=noise, errors=errors)
    return team, motion, sim


def speed(series):
    return np.linalg.norm(series.V_i[:, :3], axis=1)


def test_offsets_are_found_to_a_fraction_of_a_sample_at_different_rates():
    times = {
        "robot_1": np.arange(0, 20, 0.01),
        "robot_2": np.arange(0, 20, 1 / 80),
        "robot_3": np.arange(0.003, 20, 1 / 125),
    }
    noise = an.NoiseModel(angular_velocity_std=0.01)
    _, _, sim = recorded(times, noise=noise)
    ref = sim.measured["robot_1"]
    for rid in ("robot_2", "robot_3"):
        other = sim.measured[rid]
        found = estimate_clock_offset(ref.t, speed(ref), other.t, speed(other), max_offset=0.5)
        assert found.offset == pytest.approx(OFFSETS[rid], abs=1e-3)  # a tenth of a sample
        assert found.correlation > 0.9 and not found.advice


def test_a_still_payload_cannot_align_clocks():
    t = np.arange(0, 5, 0.01)
    found = estimate_clock_offset(t, np.zeros_like(t), t, np.zeros_like(t), 0.5)
    assert "rotate the payload" in found.advice


def test_speed_history_estimates_every_offset():
    times = {r: np.arange(0, 15, 0.01) for r in OFFSETS}
    team, _, sim = recorded(times, seed=1)
    history = SpeedHistory(team.robot_ids, window_seconds=10.0)
    for series in sim.measured.values():
        for k in range(len(series)):
            history.add(series.sample(k))
    found = history.offsets("robot_1", max_offset=0.5)
    for rid, offset in OFFSETS.items():
        assert found[rid].offset == pytest.approx(offset, abs=2e-3)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=12, max_size=12), st.floats(0.0, 1.0))
def test_pose_interpolation_is_the_geodesic(xi, u):
    T_a, T_b = sp.exp6(xi[:6]), sp.exp6(xi[6:])
    np.testing.assert_allclose(interpolate_pose(T_a, T_b, 0.0), T_a, atol=1e-9)
    np.testing.assert_allclose(interpolate_pose(T_a, T_b, 1.0), T_b, atol=1e-9)
    T_u = interpolate_pose(T_a, T_b, u)
    # constant body velocity along the geodesic: the remaining part is (1 - u) of the whole
    rest = sp.log6(sp.inverse(T_u) @ T_b)
    np.testing.assert_allclose(rest, (1 - u) * sp.log6(sp.inverse(T_a) @ T_b), atol=1e-8)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-3.1, 3.1), min_size=6, max_size=6), st.integers(0, 10_000))
def test_an_exact_bracket_gives_the_interpolations_numbers(xi, seed):
    """interpolate_sample(a, a) (the aligner's exact bracket, its fast path) is the sample
    that interpolating between two copies of it gives, bit for bit."""
    _, _, sim = recorded(np.arange(0.0, 0.02, 0.01), seed, offsets=dict.fromkeys(OFFSETS, 0))
    a = dataclasses.replace(sim.measured["robot_2"].sample(1), T_i0_i=sp.exp6(xi))
    fast, full = (
        interpolate_sample(a, a, a.stamp, 7.0),
        interpolate_sample(a, dataclasses.replace(a), a.stamp, 7.0),
    )
    for field in dataclasses.fields(a):
        x, y = getattr(fast, field.name), getattr(full, field.name)
        assert np.array_equal(x, y, equal_nan=True) if isinstance(x, np.ndarray) else x == y, (
            field.name
        )


def jittered_stream(rng, rate, duration, offset, dropout=None):
    t = np.arange(0, duration, 1 / rate) + rng.uniform(-0.002, 0.002, int(np.ceil(duration * rate)))
    if dropout is not None:
        t = t[(t < dropout[0]) | (t > dropout[1])]
    return np.sort(t)


def test_aligner_emits_synchronized_sets_on_the_reference_time_base():
    rng = np.random.default_rng(2)
    times = {
        "robot_1": np.arange(0, 6, 0.01),
        "robot_2": jittered_stream(rng, 80.0, 6.0, OFFSETS["robot_2"], dropout=(3.0, 3.4)),
        "robot_3": jittered_stream(rng, 120.0, 6.0, OFFSETS["robot_3"]),
    }
    team, motion, sim = recorded(times, seed=3)
    aligner = StreamingAligner(team.robot_ids, "robot_1", OFFSETS, max_gap=0.05)
    streams = [(s.t[k], s.sample(k)) for s in sim.measured.values() for k in range(len(s))]
    sets = []
    for _, sample in sorted(streams, key=lambda x: x[0]):  # arrival order: by robot stamp
        assert aligner.push(sample) == ""
        sets += aligner.pop_ready()
    assert len(sets) > 400 and aligner.dropped["gap"] > 20  # the 0.4 s drop-out of robot_2
    estimator = TeamEstimator(team.robot_ids, "robot_1")
    worst = 0.0
    for samples in sets:
        stamps = {s.stamp for s in samples.values()}
        assert len(stamps) == 1
        t = stamps.pop()  # reference clock = true time here
        T_w_s = motion.evaluate(np.array([t]))[0][0]
        for rid, sample in samples.items():
            T_true = sp.inverse(an.default_homes(team, motion)[rid]) @ T_w_s @ team.T_s_i[rid]
            worst = max(worst, np.linalg.norm(sample.T_i0_i[:3, 3] - T_true[:3, 3]))
        assert estimator.update(samples).accepted
    assert worst < 2e-4  # interpolation error of ~0.1 m/s motion sampled at 80 Hz
    assert aligner.push(sets[0]["robot_2"]) == "non-monotonic stamp"
    assert "unknown robot" in aligner.push(an.GraspSample("robot_9", 1.0, *([None] * 4)))


def test_aligner_settings_are_checked():
    with pytest.raises(ValueError, match="reference robot"):
        StreamingAligner(["a", "b"], "c")
    with pytest.raises(ValueError, match="max_gap"):
        StreamingAligner(["a", "b"], "a", max_gap=0.0)
    with pytest.raises(ValueError, match="finite number"):
        StreamingAligner(["a", "b"], "a", offsets={"b": float("nan")})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synchronized_clocks_give_offsets_within_their_sigma_for_every_schedule(seed):
    """Issue 15 item 9: asked right after the reference robot's sample (one sample more in
    its window), the offsets of clocks that agree exactly came out -0.27 ms, the same for
    every robot. Now each is within 3 of its stated sigma, whenever the solve asks."""
    times = {r: np.arange(0, 12, 0.01) for r in OFFSETS}
    noise = an.NoiseModel(angular_velocity_std=0.003)
    team, _, sim = recorded(times, seed, noise, offsets=dict.fromkeys(OFFSETS, 0.0))
    synchronized = sim.measured
    history = SpeedHistory(team.robot_ids, window_seconds=10.0)
    for k in range(len(times["robot_1"])):
        for rid in team.robot_ids:  # the reference first: its window is one sample ahead
            history.add(synchronized[rid].sample(k))
            if rid == "robot_1" and k % 250 == 249:
                found = history.offsets("robot_1", max_offset=0.2)
                for other in ("robot_2", "robot_3"):
                    offset = found[other]
                    assert 0 < offset.sigma < 1e-3 and not offset.advice
                    assert abs(offset.offset) < 3 * offset.sigma, (k, other, offset)


def grasps_after(delay: float, clock_sigma: dict | None = None) -> dict:
    """TeamEstimator's final grasps (noisy poses) when robot_2's sample stamped t was taken
    at t + delay (its clock offset misjudged by delay); the same noise for every delay."""
    grid = np.arange(0, 4, 0.01)
    times = {"robot_1": grid, "robot_2": grid + delay, "robot_3": grid}
    noise = an.NoiseModel(position_std=1e-3, angle_std=2e-3)
    offsets = {"robot_1": 0.0, "robot_2": -delay, "robot_3": 0.0}
    _, _, sim = recorded(times, seed=4, noise=noise, offsets=offsets)
    estimator = TeamEstimator(tuple(sim.measured), "robot_1")
    if clock_sigma:
        estimator.set_clock_sigma(clock_sigma)
    for k in range(len(grid)):
        estimator.update({r: s.sample(k) for r, s in sim.measured.items()})
    return {g.robot_id: g for g in estimator.estimate_now().grasps}


def test_the_clock_offsets_sigma_enters_the_grasp_covariance_with_its_true_effect():
    """Issue 15 item 9: an offset known to sigma moves the grasps by J delta; the covariance
    gains sigma^2 J J^T. J, from the fit's own moments, against the grasps actually moved
    by robot_2's samples taken 2 ms late and early (central difference, same noise)."""
    delta, sigma = 2e-3, 1e-3
    late, early = grasps_after(delta)["robot_2"], grasps_after(-delta)["robot_2"]
    moved = np.concatenate(
        [
            sp.log3(late.T_s_i[:3, :3] @ early.T_s_i[:3, :3].T),
            late.T_s_i[:3, 3] - early.T_s_i[:3, 3],
        ]
    ) / (2 * delta)
    plain = grasps_after(0.0)["robot_2"].covariance
    stated = grasps_after(0.0, {"robot_2": sigma})["robot_2"].covariance
    values, vectors = np.linalg.eigh(stated - plain)
    assert values[:-1] == pytest.approx(0.0, abs=1e-3 * values[-1])  # rank one: sigma^2 J J^T
    J = vectors[:, -1] * np.sqrt(values[-1]) / sigma
    assert abs(J @ moved) / (np.linalg.norm(J) * np.linalg.norm(moved)) > 0.99
    assert np.linalg.norm(J) == pytest.approx(np.linalg.norm(moved), rel=0.05)
