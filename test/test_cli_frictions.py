"""The newcomer's frictions (issue 18, item 3): bare scenario names, ``simulate --list``, a
progress bar in units per wall second, a history period from the bag's length, and bad
arguments answered before the numerics load (the time it takes is measured in
bench/bench_cli.py, not here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inertia_estimation_ros.commands.estimate import history_period
from inertia_estimation_ros.commands.progress import speed_text
from inertia_estimation_ros.commands.simulate import scenario_list
from inertia_estimation_ros.data import SCENARIOS, data_file, shipped_scenarios
from inertia_estimation_ros.sim.scenario import load_scenario
from inertia_estimation_ros.sim.scenario_file import (
    ScenarioError,
    read_scenario_yaml,
    scenario_duration,
)

ROOT = Path(__file__).resolve().parents[1]


def test_bare_scenario_names_resolve_with_or_without_yaml():
    expected = ROOT / "config/scenarios/test_graph.yaml"
    assert data_file("test_graph", SCENARIOS) == expected
    assert data_file("test_graph.yaml", SCENARIOS) == expected
    assert data_file(expected, SCENARIOS) == expected
    with pytest.raises(FileNotFoundError, match="no file no_such_scenario"):
        data_file("no_such_scenario", SCENARIOS)


def test_simulate_list_marks_the_smallest_scenario(monkeypatch):
    """``simulate --list`` runs in test_readme.py; here its choice of the smallest."""
    entries = shipped_scenarios()
    assert [e.name for e in entries] == sorted(p.stem for p in (ROOT / SCENARIOS).glob("*.yaml"))
    durations = {"test_graph": 3.9}
    monkeypatch.setattr(
        "inertia_estimation_ros.sim.scenario_file.scenario_duration",
        lambda data: durations.get(data["name"], 10.0),
    )
    lines = {line.split()[0]: line for line in scenario_list().splitlines()[1:-1]}
    assert set(lines) == {e.name for e in entries}
    assert [name for name, line in lines.items() if "smallest" in line] == ["test_graph"]
    assert all(len(line.split(" s  ", 1)[1]) > 20 for line in lines.values())  # a purpose


def test_simulate_list_gives_each_scenario_the_duration_its_simulation_has():
    """The list reads durations from the YAML alone; the loaded scenario objects agree."""
    rows = [line.split() for line in scenario_list().splitlines()[1:-1]]
    listed = {row[0]: float(row[1]) for row in rows}
    for entry in shipped_scenarios():
        assert listed[entry.name] == round(load_scenario(entry.path).duration, 1), entry.name


@pytest.mark.parametrize(
    "data",
    [
        *(read_scenario_yaml(entry.path) for entry in shipped_scenarios()),
        {"type": "tray_balancing"},
        {"type": "tray_balancing", "duration": 3.0, "robot": "ridgeback_ur10"},
        dict(
            read_scenario_yaml(ROOT / SCENARIOS / "test_three_gimbals.yaml"),
            excitation=[  # every program's defaults
                {"program": "human_guided", "duration": 1.0, "settle": 0.2},
                {"program": "static_holds", "orientations_deg": [[5, 0, 0], [0, 5, 0]]},
                {"program": "sphere", "locked_robot": "robot_3", "duration": 2.0},
                {"program": "scripted", "waypoints": [{"t": 0}, {"t": 1.5, "xyz": [0, 0, 0.01]}]},
            ],
        ),
    ],
    ids=lambda data: data.get("name", data["type"]),
)
def test_the_yaml_duration_is_the_scenario_objects_duration(data):
    assert scenario_duration(data) == pytest.approx(load_scenario(data).duration, abs=1e-12)


def test_the_yaml_duration_names_what_it_cannot_read():
    with pytest.raises(ScenarioError, match="expected a number"):
        scenario_duration({"type": "aerial_cable_team", "duration": "long"})
    with pytest.raises(ScenarioError, match="no duration rule"):
        scenario_duration({"type": "submarine"})


def test_bad_arguments_are_answered_before_the_numerics_load(tmp_path):
    """In a fresh process, as from a shell: no numpy, MuJoCo or rclpy before the answer."""
    cases = [
        (["simulate", "no_such_scenario"], "simulate --list"),
        (["simulate"], "name a scenario"),
        (["estimate", str(tmp_path / "nothing")], "does not exist"),
        (["report", str(tmp_path / "nothing"), "--out", str(tmp_path / "r")], "does not exist"),
        (["plan", str(tmp_path / "none.yaml")], "plan refused: no file"),
        (["verify", str(tmp_path / "none.npz")], "verify refused: no file"),
        (["simulate", "--list"], "<- the smallest: try it first"),
    ]
    script = (
        "import sys; from inertia_estimation_ros import cli\n"
        f"for argv in {[argv for argv, _ in cases]!r}:\n"
        "    assert cli.main(argv) == (0 if '--list' in argv else 2), argv\n"
        "loaded = {n for n, m in list(sys.modules.items()) if type(m).__name__ != '_LazyModule'}\n"
        "heavy = {'numpy', 'mujoco', 'rclpy', 'scipy', 'cvxpy'} & loaded\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for _, message in cases:
        assert message in done.stdout


@pytest.mark.parametrize(
    ("duration", "period"), [(3.9, 0.5), (14.9, 2.0), (67.5, 5.0), (310.5, 5.0), (0.5, 0.05)]
)
def test_the_report_history_period_follows_the_bag_length(duration, period):
    assert history_period(duration) == pytest.approx(period)
    assert duration / history_period(duration) >= 7 or history_period(duration) == 5.0


def test_progress_reads_units_per_wall_second():
    assert speed_text(10.0, 4.0) == "2.50"  # never inverted to "s/unit"
    assert speed_text(0.5, 4.0) == "0.12"
    assert speed_text(0.0, 0.0) == "?"


def test_the_simulation_page_lists_every_shipped_scenario():
    page = (ROOT / "docs" / "simulation.md").read_text()
    for entry in shipped_scenarios():
        assert f"| `{entry.name}` |" in page, f"add {entry.name} to docs/simulation.md's table"
