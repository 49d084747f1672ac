"""Issue 14, closed loop in MuJoCo without ROS (``sim.collaboration``): a person pulls a handle
of paper-000-like gimbal team's payload toward a moving target (translation and yaw); the
team estimates the person's wrench with the model, the admittance moves the reference and
the robots follow. Checked: the estimate against the applied wrench, the payload on the
person's path, and a payload left alone stays put."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.following import grasp_commands
from inertia_estimation_ros.sim.collaboration import moving_person, run_collaboration
from inertia_estimation_ros.sim.scenario import load_scenario

SCENARIO = "config/scenarios/test_three_gimbals.yaml"
HANDLE_P = np.array([0.45, 0.0, 0.02])
ADMITTANCE = dict(force_dead_band=2.0, moment_dead_band=0.5, fraction=0.5, time_constant=0.5)


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(SCENARIO)


def test_the_payload_follows_the_person_through_the_estimated_model(scenario) -> None:
    run = run_collaboration(scenario, moving_person(scenario.T_w_P0, HANDLE_P), 4.0, **ADMITTANCE)
    error = run.estimate - _in_s(run, run.force)
    rms = np.sqrt(np.mean(error**2, axis=0))
    print(f"estimate - applied RMS: moment {rms[:3].round(3)} N m, force {rms[3:].round(3)} N")
    assert np.all(rms[3:] < 0.5) and np.all(rms[:3] < 0.3)
    distance = np.linalg.norm(run.handle - run.target, axis=1)
    print(f"handle to target: max {distance.max():.3f} m, final {distance[-1]:.3f} m")
    assert distance[-1] < 0.02  # the dead band / the person's stiffness: 2 N / 150 N/m
    assert distance.max() < 0.15
    assert abs(run.yaw[-1] - np.deg2rad(15)) < np.deg2rad(2)


def test_a_payload_left_alone_stays_put(scenario) -> None:
    run = run_collaboration(scenario, None, 0.8, **ADMITTANCE)
    assert np.abs(run.estimate).max() < 4.0  # the start transient, inside the dead band soon
    assert np.linalg.norm(run.reference_p[-1] - run.reference_p[0]) < 1e-3


def _in_s(run, wrench_w: np.ndarray) -> np.ndarray:
    """The person's wrench (moment about the CoM, force; world axes) in the axes of {s}."""
    R = run.R_w_s
    return np.concatenate(
        [np.einsum("kji,kj->ki", R, wrench_w[:, :3]), np.einsum("kji,kj->ki", R, wrench_w[:, 3:])],
        axis=1,
    )


def test_the_simulated_team_follows_its_commands_while_a_person_pulls(tmp_path) -> None:
    """The ``collaborate`` program over the stepper (what sim_node drives): the robots hold,
    the person pulls the handle along +x; commanded grasp poses 2 cm further along x with the
    weight shares move the payload there (sim_node's robots follow robot_node's commands)."""
    path = tmp_path / "collaborate.yaml"
    path.write_text(
        f"include: {Path(SCENARIO).resolve()}\n"
        "robot_defaults: {sensors: {rate_hz: 100}}\n"
        "excitation:\n"
        "  - {program: collaborate, duration: 1.2, shift: [0.2, 0, 0], yaw_deg: 0, "
        "path_time: 0.4, settle: 0.2}\n"
    )
    stepper = load_scenario(path).stepper()
    held = stepper.advance(stepper.start_time + 0.6).ground_truth
    pull_s = held.F_human_s[-1]
    pull_w = held.T_w_s[-1][:3, :3] @ pull_s[3:]
    assert pull_w[0] > 20.0 and abs(pull_w[1]) < 1.0  # 150 N/m over most of 0.2 m, along x
    T_w_s = held.T_w_s[-1]
    assert np.linalg.norm(T_w_s[:3, 3] - held.T_w_s[0][:3, 3]) < 2e-3  # stiff robots hold
    goal = sp.transform(np.eye(3), [0.02, 0.0, 0.0]) @ T_w_s
    has_torque = dict.fromkeys(held.T_s_i, False)
    team = grasp_commands(
        goal, np.zeros(6), np.zeros(6), held.payload.vec, held.T_s_i, has_torque, held.gravity_w
    )
    for rid, command in team.commands.items():
        stepper.command(rid, command.T_w_i, command.F_i)
    with pytest.raises(ValueError, match="no robot 'robot_9'"):
        stepper.command("robot_9", goal, np.zeros(6))
    moved = stepper.advance().ground_truth
    assert np.linalg.norm(moved.T_w_s[-1][:3, 3] - goal[:3, 3]) < 2e-3
    assert np.linalg.norm(sp.log3(moved.T_w_s[-1][:3, :3] @ goal[:3, :3].T)) < 5e-3
