"""Scenario files: loading, include merging, the type registry, and clear errors on bad input."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from inertia_estimation_ros.sim import scenario as sc
from inertia_estimation_ros.sim.ground_team import GroundTeamScenario
from inertia_estimation_ros.sim.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "config" / "scenarios"


def base() -> dict:
    return yaml.safe_load((SCENARIOS / "test_three_gimbals.yaml").read_text())


def edited(path: list, value: object) -> dict:
    data = copy.deepcopy(base())
    node = data
    for key in path[:-1]:
        node = node[key] if isinstance(key, int) else node.setdefault(key, {})
    node[path[-1]] = value
    return data


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_every_shipped_scenario_loads_and_compiles(name):
    scenario = load_scenario(SCENARIOS / name)
    model = scenario.compile()
    assert 2 <= len(scenario.robots) <= 16
    assert model.nu >= 3 * len(scenario.robots)


def test_paper_preset_has_table_one_grasps_and_the_three_stage_protocol():
    scenario = load_scenario(SCENARIOS / "paper000_mocobots.yaml")
    grasps = {r.robot_id: r.T_P_i for r in scenario.robots}
    np.testing.assert_allclose(grasps["robot_2"][:3, 3], [0.647, 0.533, 0.0])
    np.testing.assert_allclose(grasps["robot_3"][:3, 3], [1.104, -0.305, 0.0])
    np.testing.assert_allclose(
        grasps["robot_3"][:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12
    )
    assert all(r.kind == "delta_gimbal" and r.sensors.rate_hz == 100 for r in scenario.robots)
    programs = [p.name for p in scenario.excitation]
    assert programs == ["human_guided"] * 5 + ["static_holds"] + ["sphere"] * 4


def test_include_merges_recursively_and_overrides(tmp_path):
    child = tmp_path / "child.yaml"
    child.write_text(
        f"include: {SCENARIOS / 'test_three_gimbals.yaml'}\n"
        "name: child\n"
        "robot_defaults: {sensors: {rate_hz: 250}}\n"
        "excitation: [{program: static_holds, orientations_deg: [[0, 0, 5]]}]\n"
    )
    scenario = load_scenario(child)
    assert scenario.name == "child"
    assert all(r.sensors.rate_hz == 250 and r.kind == "delta_gimbal" for r in scenario.robots)
    assert [p.name for p in scenario.excitation] == ["static_holds"]


def test_registry_knows_ground_team_and_accepts_new_types():
    assert "ground_team" in sc.scenario_types()

    @sc.scenario_type("unit_test_type")
    class Dummy:
        name, seed = "dummy", 0

        @classmethod
        def from_config(cls, section):
            section.string("type")
            section.done()
            return cls()

    assert isinstance(load_scenario({"type": "unit_test_type"}), Dummy)
    with pytest.raises(ScenarioError, match="unknown; known types: .*ground_team"):
        load_scenario({"type": "aerial_cable_teem"})


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["payload", "size"], [0.9, float("nan"), 0.04], "must be finite"),
        (["physics", "timestep"], -0.001, "must be > 0"),
        (["physics", "weld_time_constant"], 0.0015, "at least twice the timestep"),
        (["robot_defaults", "sensors", "rate_hz"], 1500, "must be <= 1000"),
        (["robot_defaults", "sensors", "rate_hz"], 300, "whole number of physics steps"),
        (["robot_defaults", "sensors", "wrench", "source"], "strain_gauge", "not one of"),
        (["robot_defaults", "sensors", "clock", "jitter"], 0.01, "must be <="),
        (["robot_defaults", "sensors", "encoder", "angular_resolution"], 0.1, "unknown keys"),
        (["robot_defaults", "kind"], "hexapod", "not one of"),
        (["reference_robot"], "robot_9", "reference_robot 'robot_9' is not one of"),
        (["payload", "kind"], "blob", "not one of"),
        (["excitation"], [], "at least one excitation program"),
        (["excitation"], [{"program": "sphere", "duration": 1.0, "locked_robot": "r9"}], "r9"),
        (["excitation"], [{"program": "dance", "duration": 1.0}], "not one of"),
        (["excitation"], [{"program": "human_guided"}], "duration: missing"),
        (["robots", 0, "id"], "Robot 1", "lower case letters"),
        (["robots", 1, "id"], "robot_1", "unique"),
        (["robots", 0, "grasp"], {"xyz": [0, 0], "rotvec_deg": [0, 0, 0]}, "expected 3 numbers"),
        (["type"], "ground_teams", "unknown; known types"),
        (["robot_defaults", "stiff"], {"translation": [2e4, 2e3]}, "damping stiff.translation"),
        (["robot_defaults", "stiff"], {"translation": [1e7, 4e2]}, "stiffness stiff.translation"),
        (["robot_defaults", "wrist_damping"], 0.2, "wrist_damping = 0.2 is unstable"),
        (
            ["excitation"],
            [{"program": "human_guided", "duration": 1.0, "bandwidth_hz": 50, "damping_ratio": 5}],
            "bandwidth_hz 50.0 is too high",
        ),
        (["colour"], "red", "unknown keys \\['colour'\\]"),
    ],
)
def test_bad_scenarios_name_the_key_and_the_fix(path, value, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(edited(path, value))


def test_team_size_is_two_to_sixteen():
    one = edited(["robots"], base()["robots"][:1])
    one["excitation"] = [{"program": "static_holds", "orientations_deg": [[0, 0, 5]]}]
    with pytest.raises(ScenarioError, match="2 to 16 robots, got 1"):
        load_scenario(one)
    many = edited(
        ["robots"],
        [{"id": f"robot_{k}", "grasp": {"xyz": [0.1 * k, 0.05 * (k % 3), 0.0]}} for k in range(17)],
    )
    many["excitation"] = one["excitation"]
    with pytest.raises(ScenarioError, match="got 17"):
        load_scenario(many)


def test_gimbals_on_a_line_cannot_hold_the_payload():
    line = edited(
        ["robots"],
        [{"id": f"robot_{k}", "grasp": {"xyz": [0.3 * k, 0.0, 0.0]}} for k in range(1, 4)],
    )
    with pytest.raises(ScenarioError, match="on one line cannot hold.*add a robot off the line"):
        load_scenario(line)
    line["robots"][0]["kind"] = "wrist_6dof"
    assert isinstance(load_scenario(line), GroundTeamScenario)


def test_a_tilted_home_frame_is_rejected_and_the_default_one_is_level():
    tilted = edited(["robots", 1, "home"], {"rotvec_deg": [20.0, 0.0, 0.0]})
    with pytest.raises(ScenarioError, match="home frame is not level"):
        load_scenario(tilted)
    steep = edited(["robots", 1, "grasp"], {"xyz": [0.7, 0.4, 0.0], "rotvec_deg": [0, 75, 0]})
    steep["robots"][1]["home"] = {"rotvec_deg": [0, 75, 0]}
    with pytest.raises(ScenarioError, match="gimbal lock"):
        load_scenario(steep)
    tilted_grasp = edited(["robots", 1, "grasp"], {"xyz": [0.7, 0.4, 0], "rotvec_deg": [0, 30, 20]})
    scenario = load_scenario(tilted_grasp)
    np.testing.assert_allclose(scenario.home_frames()["robot_2"][:3, 2], [0, 0, 1], atol=1e-12)


def test_unreadable_files_are_reported(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        load_scenario(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("type: [ground_team\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(broken)
    loop = tmp_path / "loop.yaml"
    loop.write_text("include: loop.yaml\n")
    with pytest.raises(ScenarioError, match="include cycle"):
        load_scenario(loop)
