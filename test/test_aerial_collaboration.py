"""The aerial loop closed in MuJoCo without ROS (issue 14, paper 002 Fig. 2): a person pulls
the payload of paper 002's team; the team's cable UKFs and the human-wrench estimate (eq. 38)
feed the admittance the ground teams use, whose reference the payload controller (eqs.
10-12) tracks."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.sim.aerial.collaboration import run_aerial_collaboration
from inertia_estimation_ros.sim.aerial.human import AERIAL_ARM, PersonOnPayload
from inertia_estimation_ros.sim.person import path_person
from inertia_estimation_ros.sim.scenario import ScenarioError, load_scenario

HANDLE_L = np.array([0.3083, 0.0, 0.01125])  # robot 2's attach point, paper 002's grasp
SHIFT, YAW_DEG = np.array([0.3, 0.15, 0.05]), 15.0
WARM_UP = 1.0  # [s] hover while the cable UKFs converge


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(
        {"type": "aerial_cable_team", "name": "collaboration", "seed": 1, "duration": 30.0}
    )


def test_the_payload_follows_the_persons_path_through_the_estimated_wrench(scenario):
    """The handle's target moves 0.34 m and turns 15 deg in 3 s, holds for 1 s, then the
    person lets go. Until then the handle stays within 4 cm of its target (RMS 1.5 cm
    measured) and ends within 2 cm, the payload turns with it and is where the path puts it;
    the estimated wrench follows the person's (RMS error 0.02 N measured). When the person
    lets go the payload stays (within 3 cm; 1 cm measured): the admittance's reference, not
    the person's pull against the payload controller, moved it."""
    T_w_L0 = sp.transform(np.eye(3), scenario.settings.start)
    person = path_person(T_w_L0, HANDLE_L, SHIFT, YAW_DEG, 3.0, WARM_UP, **AERIAL_ARM)
    run = run_aerial_collaboration(scenario, person, 5.0, warm_up=WARM_UP, release=4.0)
    held = run.t < 4.0 - 1e-9
    k = int(np.count_nonzero(held)) - 1  # the last instant the person holds the payload
    error = run.path_error[held]
    rms = float(np.sqrt(np.mean(error**2)))
    R_end = sp.exp3([0.0, 0.0, np.deg2rad(YAW_DEG)])
    expected = scenario.settings.start + SHIFT + HANDLE_L - R_end @ HANDLE_L
    force_error = (run.estimate[:, :3] - run.force[:, :3])[held]
    force_rmse = np.sqrt(np.mean(force_error**2, axis=0))
    spring_back = np.linalg.norm(run.payload_x[-1] - run.payload_x[k])
    print(
        f"path RMS {rms:.3f} m, max {error.max():.3f}, at release {error[-1]:.3f}; payload "
        f"{np.round(run.payload_x[k], 3)} (path {np.round(expected, 3)}), yaw "
        f"{np.rad2deg(run.yaw[k]):.1f} deg; after release it moved {spring_back:.3f} m; "
        f"estimated force RMS error {np.round(force_rmse, 3)} N"
    )
    assert rms < 0.04 and error[-1] < 0.02
    assert np.linalg.norm(run.payload_x[k] - expected) < 0.03
    assert abs(np.rad2deg(run.yaw[k]) - YAW_DEG) < 2.0
    assert force_rmse.max() < 0.1  # [N]
    assert spring_back < 0.03


def test_with_nobody_the_payload_holds_its_place(scenario):
    """No person: the estimated wrench stays (nearly) inside the admittance's dead band, the
    reference barely creeps (2 mm measured in 2 s) and the payload stays within 1 cm and
    1 deg (the hover's own wobble: 4 mm, 0.5 deg)."""
    run = run_aerial_collaboration(scenario, None, 2.0, warm_up=WARM_UP)
    drift = np.linalg.norm(run.payload_x - run.payload_x[0], axis=1)
    creep = np.linalg.norm(run.reference_x - run.reference_x[0], axis=1)
    print(
        f"payload drift max {drift.max() * 1e3:.2f} mm, reference creep {creep.max() * 1e3:.2f} "
        f"mm, yaw {np.rad2deg(np.abs(run.yaw).max()):.2f} deg, |estimate| max "
        f"{np.round(np.abs(run.estimate).max(axis=0), 3)}"
    )
    assert drift.max() < 0.01 and creep.max() < 0.01
    assert np.rad2deg(np.abs(run.yaw).max()) < 1.0


def test_a_scenarios_person_is_read_and_refused_beside_profiles():
    """``human.person`` gives the runner the person (its path from the scenario's start
    pose); with force profiles as well it is refused, naming them."""
    base = {"type": "aerial_cable_team", "name": "person", "duration": 1.0}
    person = {"shift": [0.2, 0.0, 0.0], "yaw_deg": 0.0, "start": 0.5, "release": 3.0}
    run = load_scenario(base | {"human": {"person": person}}).stepper()
    assert isinstance(run.human, PersonOnPayload) and run.human.release == 3.0
    handle = np.array([0.0, 0.0, 1.0]) + HANDLE_L  # the default start and grasp
    target, _ = run.human.person.target(10.0)
    np.testing.assert_allclose(target, handle + [0.2, 0.0, 0.0], atol=1e-12)
    push = {"kind": "step", "start": 0.0, "force": [0.1, 0.0, 0.0]}
    with pytest.raises(ScenarioError, match="a person moves the payload alone; remove profiles"):
        load_scenario(base | {"human": {"person": person, "profiles": [push]}})
