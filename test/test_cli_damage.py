"""The commands on damaged input and on output folders already in use (issue 15, items 2, 6,
7 and 11): an error message naming the cause and what to do, never a traceback or an
overwritten file; refusals counted by robot and reason; ``estimate --json``."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from damage import simulated_run
from test_bags import tiny_scenario

from inertia_estimation_ros import cli
from inertia_estimation_ros.bags import BagWriter, bag_topics


@pytest.fixture(scope="module")
def simulator_run():
    return simulated_run()


def test_simulate_does_not_overwrite_an_earlier_run_without_force(tmp_path, capsys):
    scenario_file = tmp_path / "tiny.yaml"
    scenario_file.write_text(yaml.safe_dump(tiny_scenario()))
    out = tmp_path / "out"
    (out / "urdf").mkdir(parents=True)
    (out / "scenario.yaml").write_text("edited: by hand\n")
    assert cli.main(["simulate", str(scenario_file), "--out", str(out)]) == 2
    message = capsys.readouterr().out
    assert "scenario.yaml, urdf" in message and "--force" in message
    assert (out / "scenario.yaml").read_text() == "edited: by hand\n"
    assert cli.main(["simulate", str(scenario_file), "--out", str(out), "--force"]) == 0
    assert "test_two_wrists" in (out / "scenario.yaml").read_text()
    assert "/robot_1/grasp_state" in bag_topics(out / "bag")


def test_report_folders_are_checked_before_the_estimate_runs(tmp_path, capsys):
    """The bag does not exist: each refusal comes from the output check, made first."""
    bag = str(tmp_path / "no_bag")
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "report.md").write_text("my notes")
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for argv, expected in (
        (["report", bag, "--out", str(edited)], "holds report.md"),
        (["estimate", bag, "--report", str(edited)], "holds report.md"),
        (["report", bag, "--out", str(a_file)], "is a file, not a folder"),
        (["report", bag, "--out", str(a_file / "sub")], "cannot be created"),
    ):
        assert cli.main(argv) == 2
        message = capsys.readouterr().out
        assert expected in message and "Traceback" not in message
    assert (edited / "report.md").read_text() == "my notes"
    assert cli.main(["report", bag, "--out", str(edited), "--force"]) == 2
    assert "does not exist" in capsys.readouterr().out  # past the check, to the bag


@pytest.mark.parametrize("period", ["0", "-1", "nan", "inf", "soon"])
def test_a_period_that_is_not_positive_is_refused(period, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["estimate", "bag", "--period", period])
    assert exit_.value.code == 2
    assert "finite number of seconds > 0" in capsys.readouterr().err


def test_broken_bags_are_error_messages(simulator_run, tmp_path, capsys):
    bag = simulator_run / "bag"
    truncated = tmp_path / "truncated"
    shutil.copytree(bag, truncated)
    mcap = next(truncated.glob("*.mcap"))
    # Cut off the last quarter: the summary goes, and repair keeps every complete chunk before it.
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size * 3 // 4])
    not_a_bag = tmp_path / "notes.txt"
    not_a_bag.write_text("hello")
    bad_metadata = tmp_path / "bad_metadata"
    shutil.copytree(bag, bad_metadata)
    (bad_metadata / "metadata.yaml").write_text("rosbag2_bagfile_information: {version: 9}\n")
    other_type = tmp_path / "other_type"
    with BagWriter(other_type) as writer:
        for rid in ("robot_1", "robot_2"):
            writer.write(f"/{rid}/grasp_state", "std_msgs/msg/String", 1, b"\0\1\0\0\1\0\0\0\0")
    for path, expected in (
        (truncated, f"bag-repair {truncated}"),
        (not_a_bag, "is not a bag"),
        (bad_metadata, "cannot be read"),
        (other_type, "/robot_1/grasp_state carries std_msgs/msg/String"),
        (tmp_path / "nothing", "does not exist"),
    ):
        assert cli.main(["estimate", str(path)]) == 2
        message = capsys.readouterr().out
        assert message.startswith("error: ") and expected in message, message
    assert cli.main(["bag-repair", str(truncated)]) == 0
    assert "recovered" in capsys.readouterr().out
    assert "/robot_1/grasp_state" in bag_topics(truncated)


def test_estimate_json_on_the_folder_that_simulate_wrote(simulator_run, capsys):
    assert cli.main(["estimate", str(simulator_run), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["bag"] == str(simulator_run / "bag")
    assert document["stage"] == "DYNAMICS" and all(document["valid"].values())
    mass = next(r for r in document["comparison"] if r["quantity"] == "mass [kg]")
    assert abs(mass["estimate"] - mass["truth"]) < 5 * mass["sigma"]
    assert document["mass"]["value"] == pytest.approx(mass["estimate"])
    assert len(document["parameters"]["covariance"]) == 10
    assert set(document["grasps"]) == {"robot_1", "robot_2", "robot_3"}
    assert len(document["grasps"]["robot_2"]["covariance"]) == 6
    assert document["input"]["refused"] == []
    assert document["input"]["accepted"]["robot_2"] >= 390
