"""The coordinator's ROS-free pipeline (core.team_pipeline) on exact team data (sim.analytic):
clock offsets found and aligned away, the payload recovered, bad input refused and counted,
a looping clock restarting cleanly, a silent robot reported while grasp kinematics goes on;
and the message boundary (to_payload_estimate) and the visualization it feeds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from coordinator_data import CLOCK_OFFSETS, ROBOTS, team_session
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.commands.report import comparison_rows, quantities
from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.cooperative import EstimatorSettings, Stage
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.team_pipeline import PipelineSettings, TeamPipeline
from inertia_estimation_ros.ros.conversions import covariance_matrix, to_payload_estimate
from inertia_estimation_ros.ros.payload_visualization import (
    PayloadFrames,
    equivalent_box,
    payload_markers,
    payload_transforms,
)

# The team data stamp on clocks 23 and -31 ms apart (coordinator_data.CLOCK_OFFSETS) unless
# ``offsets=False``; the pipeline aligns them only when asked to (the default trusts one clock).
ALIGNING = PipelineSettings(estimate_clock_offsets=True)


def frame(rid: str) -> str:
    return f"{rid}/grasp"


def feed(pipeline: TeamPipeline, series: dict, k_range: range, skip: frozenset = frozenset()):
    """Push sample k of every robot not in ``skip`` (robot_3 first: any order across robots)."""
    for k in k_range:
        for rid in reversed(ROBOTS):
            if rid not in skip:
                assert pipeline.push(series[rid].sample(k), frame(rid)) == ""
        pipeline.process()


def run(series: dict, settings: PipelineSettings = ALIGNING) -> TeamPipeline:
    """The whole session through a pipeline, solving every 5 s as a node's timer would."""
    pipeline = TeamPipeline(ROBOTS, "robot_1", settings)
    n = len(series["robot_1"])
    for start in range(0, n, 500):
        feed(pipeline, series, range(start, min(start + 500, n)))
        pipeline.estimate()
    return pipeline


def grasp_errors(estimate, team) -> tuple[float, float]:
    """Largest position [m] and rotation [deg] error of the grasp frames."""
    errors = [sp.inverse(team.T_s_i[g.robot_id]) @ g.T_s_i for g in estimate.grasps]
    return (
        max(np.abs(E[:3, 3]).max() for E in errors),
        max(np.rad2deg(sp.rotation_angle(E[:3, :3])) for E in errors),
    )


@pytest.fixture(scope="module")
def converged():
    """Synchronized clocks: the pipeline must find offsets of zero and recover everything."""
    team, payload, series = team_session(offsets=False)
    pipeline = run(series)
    return team, payload, pipeline, pipeline.estimate(full=True)


def test_exact_data_on_synchronized_clocks_give_the_payload_to_machine_precision(converged):
    team, payload, pipeline, estimate = converged
    assert all(o.offset == pytest.approx(0.0, abs=1e-12) for o in pipeline.offsets.values())
    assert estimate.stage == Stage.DYNAMICS and estimate.physically_consistent
    position, rotation = grasp_errors(estimate, team)
    assert position < 1e-9 and rotation < 1e-7
    assert estimate.mass == pytest.approx(payload.mass, rel=1e-9)
    np.testing.assert_allclose(estimate.p_s_c, payload.com, atol=1e-9)
    np.testing.assert_allclose(estimate.principal_moments, payload.principal_axes()[0], rtol=1e-6)
    assert not pipeline.rejected and not pipeline.silent and not pipeline.dropped()
    levels = {s.name: s.level for s in pipeline.status()}
    assert levels == dict.fromkeys((*ROBOTS, "estimate"), "OK")


def test_clock_offsets_are_estimated_and_aligned_away():
    """Clocks 23 and -31 ms off the reference's. The offsets come from cross-correlated
    angular speeds (core.cooperative.clock) to about a millisecond, which limits the grasps of
    exact data to about a millimetre (a 0.5 ms error alone costs about 1 mm); unaligned, the
    same data give grasp positions more than five times worse and rotations more than twice
    (0.6 mm, 0.08 deg aligned; 11 mm, 0.26 deg unaligned)."""
    team, _, series = team_session(kin_seconds=8.0, pivot_seconds=2.0, statics=False)
    aligned = run(series)
    for rid, true_offset in CLOCK_OFFSETS.items():
        assert aligned.offsets[rid].offset == pytest.approx(true_offset, abs=2e-3)
    estimate = aligned.estimate(full=True)
    assert estimate.grasps_valid
    position, rotation = grasp_errors(estimate, team)
    assert position < 2e-3 and rotation < 0.15
    unaligned = run(series, PipelineSettings(estimate_clock_offsets=False)).estimate(full=True)
    position_unaligned, rotation_unaligned = grasp_errors(unaligned, team)
    assert position_unaligned > 5 * position and rotation_unaligned > 2 * rotation


def test_bad_samples_are_refused_and_counted_never_raised():
    _, _, series = team_session(noise=True)
    pipeline = TeamPipeline(ROBOTS, "robot_1", ALIGNING)
    feed(pipeline, series, range(50))
    good = series["robot_2"].sample(50)
    nan = dataclasses.replace(good, V_i=np.where(np.arange(6) == 2, np.nan, good.V_i))
    stranger = dataclasses.replace(good, robot_id="robot_9")
    assert pipeline.push(nan, frame("robot_2")) == "non-finite or missing values"
    assert pipeline.push(good, "world") == "wrong frame id"
    assert pipeline.push(stranger, frame("robot_9")) == "unknown robot"
    assert pipeline.push(good, frame("robot_2")) == ""
    assert pipeline.push(good, frame("robot_2")) == "duplicate stamp"
    assert pipeline.push(series["robot_2"].sample(45), frame("robot_2")) == "out-of-order stamp"
    assert pipeline.rejected == {
        ("robot_2", "non-finite or missing values"): 1,
        ("robot_2", "wrong frame id"): 1,
        ("robot_9", "unknown robot"): 1,
        ("robot_2", "duplicate stamp"): 1,
        ("robot_2", "out-of-order stamp"): 1,
    }
    robot_2 = next(s for s in pipeline.status() if s.name == "robot_2")
    assert robot_2.level == "WARN" and "refused" in robot_2.message
    assert robot_2.values["rejected: duplicate stamp"] == "1"


def test_a_looping_bag_restarts_cleanly_and_refuses_samples_from_before_the_jump():
    _, _, series = team_session(noise=True)
    pipeline = TeamPipeline(ROBOTS, "robot_1", ALIGNING)
    feed(pipeline, series, range(600))
    assert pipeline.updates > 250
    # The bag starts over: robot_1 jumps back first; robot_2's last old sample is in flight.
    assert pipeline.push(series["robot_1"].sample(0), frame("robot_1")) == ""
    assert pipeline.resets == 1 and "clock jumped back" in pipeline.events[-1]
    reason = pipeline.push(series["robot_2"].sample(600), frame("robot_2"))
    assert reason == "from before a clock jump"
    assert pipeline.push(series["robot_2"].sample(0), frame("robot_2")) == ""
    assert pipeline.push(series["robot_3"].sample(0), frame("robot_3")) == ""
    feed(pipeline, series, range(1, 600))
    assert pipeline.resets == 1 and pipeline.updates > 150
    assert pipeline.estimate().samples_kinematics > 0


def test_update_latencies_are_those_of_the_last_ten_seconds_of_the_clock():
    """The diagnostics' latency percentiles cover the sets updated in the last
    LATENCY_SECONDS of the clock, whatever the rate; a clock that goes back (a looping bag)
    leaves only what came after."""
    _, _, series = team_session(offsets=False)
    now = [0.0]
    pipeline = TeamPipeline(ROBOTS, "robot_1", clock=lambda: now[0])
    assert pipeline.update_latency_percentiles([50]) is None

    def feed_late(k_range: range, latency: float) -> None:
        for k in k_range:
            now[0] = series["robot_1"].sample(k).stamp + latency
            feed(pipeline, series, range(k, k + 1))

    feed_late(range(200), 1.0)
    np.testing.assert_allclose(pipeline.update_latency_percentiles([0, 100]), 1.0)
    feed_late(range(200, 400), 30.0)  # 29 s later on the clock: the first 200 sets are out
    np.testing.assert_allclose(pipeline.update_latency_percentiles([0, 100]), 30.0)
    feed_late(range(400, 450), 0.5)  # the clock went back
    np.testing.assert_allclose(pipeline.update_latency_percentiles([0, 100]), 0.5)
    assert pipeline.updates == 450


def test_a_silent_robot_is_an_error_and_grasp_kinematics_goes_on_among_the_others():
    team, _, series = team_session(noise=True)
    pipeline = TeamPipeline(ROBOTS, "robot_1", ALIGNING)
    n = len(series["robot_1"])
    feed(pipeline, series, range(600))
    before = pipeline.estimate(full=True)
    assert before.mass_valid and before.grasps_valid
    feed(pipeline, series, range(600, n - 300), skip=frozenset({"robot_3"}))
    estimate = pipeline.estimate()
    assert set(pipeline.silent) == {"robot_3"}
    statuses = {s.name: s for s in pipeline.status()}
    assert (
        statuses["robot_3"].level == "ERROR" and "robot_3 is silent" in statuses["robot_3"].message
    )
    assert "mass, CoM and inertia need every robot" in statuses["robot_3"].message
    assert statuses["estimate"].level == "ERROR"
    assert any("robot_3 is silent" in a for a in estimate.advice)
    # Mass and CoM keep their values from before; grasp kinematics went on without robot_3.
    assert estimate.mass == pytest.approx(before.mass, rel=1e-4)
    assert estimate.samples_kinematics > before.samples_kinematics
    assert pipeline.partial is not None and pipeline.partial.robot_ids == ("robot_1", "robot_2")
    robot_2 = estimate.grasp("robot_2")
    sub_team = pipeline.partial.estimator.estimate().grasp("robot_2")
    whole_team = pipeline.full.estimator.estimate().grasp("robot_2")
    assert np.array_equal(robot_2.T_s_i, sub_team.T_s_i)  # the sub-team's estimate
    assert np.array_equal(robot_2.covariance, sub_team.covariance)
    assert not np.array_equal(robot_2.T_s_i, whole_team.T_s_i)
    error = sp.inverse(team.T_s_i["robot_2"]) @ robot_2.T_s_i
    assert np.abs(error[:3, 3]).max() < 5e-3 and sp.rotation_angle(error[:3, :3]) < 0.2 / 57.3
    updates = pipeline.updates
    feed(pipeline, series, range(n - 300, n))  # robot_3 is back
    assert not pipeline.silent and pipeline.partial is None and pipeline.updates > updates
    assert "publishes again" in " ".join(pipeline.events)
    assert {s.level for s in pipeline.status() if s.name in ROBOTS} == {"OK"}


def test_a_silent_reference_robot_stops_the_estimate_and_says_why():
    _, _, series = team_session(noise=True)
    pipeline = TeamPipeline(ROBOTS, "robot_1", ALIGNING)
    feed(pipeline, series, range(500))
    feed(pipeline, series, range(500, 700), skip=frozenset({"robot_1"}))
    assert set(pipeline.silent) == {"robot_1"} and pipeline.partial is None
    advice = " ".join(pipeline.estimate().advice)
    assert "reference robot" in advice and "another reference_robot" in advice


def test_settings_are_validated_and_read_from_node_parameters():
    settings = PipelineSettings.from_parameters(
        {"robots": ["a", "b"], "max_gap": 0.2, "sample_rate_hz": 200.0, "input_cutoff_hz": 0.0}
    )
    assert settings.max_gap == 0.2 and settings.estimator.sample_rate_hz == 200.0
    assert settings.estimator.input_cutoff_hz is None
    with pytest.raises(ValueError, match="robot_timeout"):
        PipelineSettings(robot_timeout=0.0)
    with pytest.raises(ValueError, match="{robot}"):
        PipelineSettings(grasp_frame="grasp")
    with pytest.raises(ValueError, match="sample_rate_hz"):
        PipelineSettings.from_parameters({"sample_rate_hz": -1.0})
    with pytest.raises(ValueError, match="reference robot"):
        TeamPipeline(["a", "b"], "c")
    with pytest.raises(ValueError, match="two distinct"):
        TeamPipeline(["a"], "a")


def test_the_message_carries_the_estimate_with_its_uncertainty(converged):
    _, payload, _, estimate = converged
    msg = to_payload_estimate(estimate, frame)
    assert msg.header.frame_id == "robot_1/grasp" and msg.stage == int(Stage.DYNAMICS)
    assert msg.inertia.m == pytest.approx(estimate.mass)
    # the uncertainties users want, without re-propagating parameter_covariance
    assert msg.mass_variance == estimate.mass_variance > 0
    np.testing.assert_array_equal(msg.com_covariance.reshape(3, 3), estimate.p_s_c_covariance)
    np.testing.assert_array_equal(
        msg.principal_moments_covariance.reshape(3, 3), estimate.principal_moments_covariance
    )
    back = quantities(msg)
    assert back.mass[1] == pytest.approx(np.sqrt(estimate.mass_variance), rel=1e-6)
    np.testing.assert_allclose(back.com[0], estimate.p_s_c, atol=1e-12)
    np.testing.assert_allclose(
        back.moments[1], np.sqrt(np.diag(estimate.principal_moments_covariance)), rtol=1e-6
    )
    robot_3 = next(g for g in msg.grasps if g.robot_id == "robot_3")
    assert robot_3.child_frame_id == "robot_3/grasp"
    np.testing.assert_allclose(  # message (dp, dphi) back to core (dphi, dp)
        covariance_matrix(robot_3.covariance), estimate.grasp("robot_3").covariance, atol=1e-20
    )
    rows = {r.name: r for r in comparison_rows(msg)}
    assert rows["mass [kg]"].value == pytest.approx(payload.mass, rel=1e-4)
    assert rows["T_s_robot_3 rotvec z [deg]"].value == pytest.approx(90.0, abs=0.01)


def test_tf_and_markers_show_the_estimate_under_the_payload_frame(converged):
    _, _, pipeline, estimate = converged
    tf = payload_transforms(estimate, PayloadFrames())
    children = {t.child_frame_id: t for t in tf.transforms}
    grasps = {f"payload/grasp_{r}" for r in ROBOTS}
    assert set(children) == grasps | {"payload/principal_axes"}
    assert {t.header.frame_id for t in tf.transforms} == {"payload"}
    robot_3 = children["payload/grasp_robot_3"].transform.translation
    assert robot_3.y == pytest.approx(estimate.grasp("robot_3").T_s_i[1, 3])
    axes = children["payload/principal_axes"].transform
    assert axes.translation.x == pytest.approx(estimate.p_s_c[0])
    markers = payload_markers(estimate, frame, pipeline.latest, 0.01).markers
    kinds = {m.ns for m in markers[1:]}
    assert {"com", "inertia box", "grasp robot_2", "force robot_3", "text"} <= kinds
    text = next(m for m in markers if m.ns == "text").text
    assert f"m = {estimate.mass:.3f} +- " in text
    force = next(m for m in markers if m.ns == "force robot_2")
    f_s = estimate.grasp("robot_2").T_s_i[:3, :3] @ pipeline.latest["robot_2"].F_i[3:]
    tip = np.array([force.points[1].x, force.points[1].y, force.points[1].z])
    start = np.array([force.points[0].x, force.points[0].y, force.points[0].z])
    np.testing.assert_allclose(tip - start, 0.01 * f_s, atol=1e-12)


def test_the_equivalent_box_of_a_uniform_box_is_the_box():
    sides = np.array([0.9, 0.6, 0.04])
    mass = 21.6
    R = Rotation.from_rotvec([0.1, -0.2, 0.3]).as_matrix()
    I_c = R @ np.diag(mass / 12 * (np.sum(sides**2) - sides**2)) @ R.T  # (b^2 + c^2) etc.
    moments, _ = InertialParameters.from_mass_com_inertia(mass, np.zeros(3), I_c).principal_axes()
    np.testing.assert_allclose(np.sort(equivalent_box(mass, moments)), np.sort(sides), rtol=1e-9)


def test_estimator_settings_pass_through():
    settings = PipelineSettings.from_parameters({"kinematics_source": "twists"})
    assert settings.estimator == EstimatorSettings(kinematics_source="twists")
    settings = PipelineSettings.from_parameters({"pose_angle_resolution": 3.835e-4})
    assert settings.estimator.pose_angle_resolution == 3.835e-4
    with pytest.raises(ValueError, match="pose_position_resolution must be a finite number >= 0"):
        EstimatorSettings(pose_position_resolution=-1e-4)
