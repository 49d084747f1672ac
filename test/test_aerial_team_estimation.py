"""The aerial coordinator's estimation (core/aerial/team_estimation.py) on MuJoCo runs of paper
002's team: cable UKFs per robot from noisy mocap and ESC speeds, the human's wrench with its
covariance and dead band, and what it says when its input is damaged."""

from __future__ import annotations

import numpy as np
import pytest
from aerial_feed import feed, run_scenario, team_model

from inertia_estimation_ros.core.aerial.human_wrench import UnobservableWrenchError
from inertia_estimation_ros.core.aerial.team_estimation import (
    TEAM_UKF_NOISE,
    AerialEstimatorSettings,
    AerialTeamEstimator,
    AerialTeamModel,
)
from inertia_estimation_ros.core.aerial.ukf import TENSION
from inertia_estimation_ros.sim.aerial.runner import AerialResult

GRASP = [0.3083, 0.0, 0.01125]  # rho_2, the notes' section 6.4 push point
PUSH = {"kind": "trapezoid", "start": 2.0, "rise": 0.4, "duration": 1.6, "force": [0.4, 0.2, 0.3]}


@pytest.fixture(scope="module")
def push_run():
    """4 s: hover, then a 3-D push at rho_2 from 2 s (its moment is non-zero on every axis)."""
    return run_scenario({"duration": 4.0, "human": {"grasp": GRASP, "profiles": [PUSH]}})


def _head(r: AerialResult, end: float) -> AerialResult:
    keep = r.time <= end + 1e-9
    data = {k: v[keep] for k, v in r.data.items()}
    return AerialResult(
        r.scenario_name, r.seed, r.robot_ids, r.time[keep], data, r.cable_limit, r.attach_points
    )


def test_push_dynamic_wrench_within_its_covariance_and_quiet_inside_the_dead_band(push_run):
    """No human (1-2 s): every axis inside the dead band, no contact. Pushing (2.5-3.6 s):
    the dynamic estimate (eq. 38) is within its covariance (per-axis |error|/sigma RMS <= 1.3)
    and contact is reported; the quasi-static one from the same UKFs (eq. 39) reads the
    payload's acceleration as force (F_x RMSE 2x the dynamic's or more)."""
    scenario, r = push_run
    estimator = AerialTeamEstimator(team_model(scenario))
    estimates = feed(estimator, r)
    wrench = np.array([e.wrench.wrench for e in estimates])
    std = np.array([e.wrench.std for e in estimates])
    static = np.array(
        [
            estimator.human.quasi_static(e.payload_R, e.tension, e.xi, e.cable_covariance).wrench
            for e in estimates
        ]
    )
    rest = (r.time > 1.0) & (r.time < 2.0)
    pushing = (r.time > 2.5) & (r.time < 3.6)
    band = np.r_[[0.1] * 3, [0.03] * 3]
    print("rest max |w|", np.abs(wrench[rest]).max(axis=0).round(3))
    assert np.all(np.abs(wrench[rest]) < band)
    assert not any(e.contact for e, quiet in zip(estimates, rest, strict=True) if quiet)
    assert all(e.contact for e, push in zip(estimates, pushing, strict=True) if push)
    error = wrench[pushing] - r.human_wrench[pushing]
    z_rms = np.sqrt(np.mean(np.square(error / std[pushing]), axis=0))
    rmse = np.sqrt(np.mean(np.square(error), axis=0))
    static_rmse = np.sqrt(np.mean(np.square(static[pushing] - r.human_wrench[pushing]), axis=0))
    print("push RMSE dynamic", rmse.round(4), "quasi-static", static_rmse.round(4))
    print("|error|/sigma RMS", z_rms.round(2))
    assert np.all(z_rms < 1.3)
    assert rmse[0] < 0.05 and static_rmse[0] > 2 * rmse[0]
    assert not estimates[-1].degraded, estimates[-1].reasons
    counts = estimator.robot_counters()
    assert all(c["mocap.accepted"] == len(r.time) for c in counts.values()), counts


def test_mocap_loss_and_nan_rotor_speeds_degrade_the_estimate_and_say_why(push_run):
    """From 1.5 s robot_2's mocap stops and robot_1's ESCs send NaN: robot_2's UKF coasts (its
    tension sigma grows as its random walk), robot_1's holds its last thrust; the estimate
    stays finite, its covariance grows, and it is degraded with both reasons named."""
    scenario, r = push_run
    r = _head(r, 1.9)

    def damage(q: int, kind: str, k: int, value: np.ndarray) -> np.ndarray | None:
        if r.time[q] < 1.5:
            return value
        if k == 1 and kind in ("pose", "twist"):
            return None
        if k == 0 and kind == "rotors":
            return np.full(4, np.nan)
        return value

    estimator = AerialTeamEstimator(team_model(scenario))
    estimates = feed(estimator, r, damage)
    before, after = estimates[145], estimates[-1]
    assert not before.degraded
    assert after.degraded and after.valid
    assert any(reason.startswith("robot_2: no mocap for 0.4") for reason in after.reasons)
    assert any(reason.startswith("robot_1: no valid rotor speeds") for reason in after.reasons)
    # the tension's random walk (N/sqrt(s)) with nothing to correct it for 0.4 s
    walk = TEAM_UKF_NOISE.process[-1]
    coasting = np.hypot(before.tension_std[1], walk * np.sqrt(0.4))
    assert after.tension_std[1] == pytest.approx(coasting, rel=0.2)
    assert after.tension_std[1] > 1.5 * after.tension_std[2]  # robot_3 still tracked
    assert np.all(np.isfinite(after.wrench.wrench))
    assert np.trace(after.wrench.covariance) > np.trace(before.wrench.covariance)
    invalid = estimator.robot_counters()["robot_1"]["rotor_speeds.invalid"]
    assert invalid == np.sum(r.time >= 1.5)


def test_a_slack_cable_is_named(push_run):
    scenario, r = push_run
    estimator = AerialTeamEstimator(team_model(scenario))
    feed(estimator, _head(r, 0.05))
    estimator.tracks["robot_3"].ukf.x[TENSION] = 0.0  # what the mu >= 0 clamp leaves
    reasons = estimator.estimate(0.05).reasons
    assert any(reason.startswith("robot_3: cable slack") for reason in reasons), reasons


def test_two_robots_are_refused_and_a_bad_description_names_what_is_missing(push_run):
    scenario, _ = push_run
    document = scenario.ground_truth_document()
    document["payload"]["attach_points"] = document["payload"]["attach_points"][:2]
    model = AerialTeamModel.from_document(document, ["robot_1", "robot_2"])
    with pytest.raises(UnobservableWrenchError, match="not observable.*n >= 3"):
        AerialTeamEstimator(model)
    del document["robots"]["robot_1"]["k_f"]
    with pytest.raises(ValueError, match="missing key 'k_f'.*ground_truth.yaml"):
        AerialTeamModel.from_document(document, ["robot_1", "robot_2"])
    with pytest.raises(ValueError, match=r"robots \['robot_9'\] are not described"):
        AerialTeamModel.from_document(scenario.ground_truth_document(), ["robot_9"])


def test_estimate_command_on_an_aerial_bag_prints_errors_and_writes_the_plots(
    push_run, tmp_path, capsys
):
    """`inertia_estimation estimate <simulate's folder> --report` on 1.2 s of hover: the team
    description comes from the ground_truth.yaml beside the bag; the table has the wrench's
    RMSE per axis against the truth and the tensions' per robot; the report has both plots.
    Without a team description the command says what to give."""
    import yaml

    from inertia_estimation_ros.cli import main
    from inertia_estimation_ros.sim.aerial.topics import write_aerial_bag

    scenario, r = push_run
    write_aerial_bag(_head(r, 1.2), tmp_path / "bag")
    (tmp_path / "ground_truth.yaml").write_text(yaml.safe_dump(scenario.ground_truth_document()))
    assert main(["estimate", str(tmp_path), "--report", str(tmp_path / "report")]) == 0
    out = capsys.readouterr().out
    print(out)
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:2] in ("F_", "M_")}
    assert float(rows["F_x"][1]) < 0.05 and float(rows["M_z"][1]) < 0.01
    assert "tension robot_3: mean 0.9" in out and "degraded: never" in out
    assert (tmp_path / "report" / "human_wrench.png").stat().st_size > 10_000
    assert (tmp_path / "report" / "tensions.png").exists()
    write_aerial_bag(_head(r, 0.1), tmp_path / "alone" / "bag")
    assert main(["estimate", str(tmp_path / "alone" / "bag")]) == 2
    assert "give --team" in capsys.readouterr().out


def test_onboard_cable_estimates_replace_the_coordinators_ukfs(push_run):
    """Robots that run their UKF onboard send (tension, xi, covariance): fed those (here the
    coordinator's own UKF estimates), the team's wrench is the same to 1e-12; when robot_2's
    stop, the estimate says so and keeps its last one."""
    from inertia_estimation_ros.core.aerial.team_estimation import OnboardCable

    scenario, r = push_run
    r = _head(r, 0.6)
    estimates = feed(AerialTeamEstimator(team_model(scenario)), r)
    onboard = AerialTeamEstimator(team_model(scenario))
    for q, (t, e) in enumerate(zip(r.time, estimates, strict=True)):
        R_L = r.mocap_payload_R[q]
        onboard.payload_pose(t, r.mocap_payload_x[q], R_L)
        onboard.payload_twist(t, r.mocap_payload_v[q], R_L @ r.mocap_payload_Omega[q])
        for k, rid in enumerate(r.robot_ids):
            if rid != "robot_2" or t < 0.4:
                cable = (e.tension[k], e.tension_std[k], e.xi[k], e.cable_covariance[k])
                onboard.onboard_cable(rid, t, OnboardCable(*cable))
        if q == 30:
            ours = onboard.estimate(t)
            np.testing.assert_allclose(ours.wrench.wrench, e.wrench.wrench, atol=1e-12)
            np.testing.assert_allclose(ours.wrench.covariance, e.wrench.covariance, atol=1e-12)
            assert not ours.degraded
    reasons = onboard.estimate(r.time[-1]).reasons
    assert len(reasons) == 1 and reasons[0].startswith("robot_2: no onboard tension for 0.2")
    assert onboard.robot_counters()["robot_1"]["onboard.accepted"] == len(r.time)


def test_reacquire_after_reaches_every_robots_ukf_and_is_validated(push_run):
    scenario, r = push_run
    settings = AerialEstimatorSettings(reacquire_after=0.2)
    estimator = AerialTeamEstimator(team_model(scenario), settings)
    feed(estimator, _head(r, 0.2))
    assert [track.ukf.reacquire_after for track in estimator.tracks.values()] == [0.2] * 3
    with pytest.raises(ValueError, match="reacquire_after = 0.0: must be > 0"):
        AerialEstimatorSettings(reacquire_after=0.0)
