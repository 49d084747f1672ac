"""The tray_balancing scenario: a robust plan keeps a tall box standing where the nominal
(Center) plan tips it (paper 004, Sec. VII; one fixed case, the sweep is in bench/)."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.sim.scenario import ScenarioError, load_scenario
from inertia_estimation_ros.sim.tray_balancing import point_mass_inertia

# 60 cm box, CoM at a top corner of the CoM polytope (15 cm x 15 cm base, 1.5 cm inset).
CASE = {
    "type": "tray_balancing",
    "height": 0.6,
    "com_offset": [0.06, 0.06, 0.3],
    "inertia_scale": 1.0,
    "goal": [2.0, 0.0, -0.25],
    "duration": 5.0,
}


@pytest.mark.parametrize("method", ["robust", "center"])
def test_robust_plan_keeps_the_tall_box_standing_where_center_tips_it(method):
    run = load_scenario({**CASE, "method": method}).run()
    if method == "robust":
        assert run.success and run.max_displacement < 0.026  # paper: at most 2.6 cm
        assert np.rad2deg(run.tilt.max()) < 5.0 and run.in_contact.all()
    else:
        assert not run.success and np.rad2deg(run.tilt.max()) > 60.0


def test_point_mass_inertia_matches_the_notes_table():
    """Notes §4.5: h = 0.6, vertex CoM -> (0.002025, 0.002025, 0.00405); centre -> ..."""
    size = np.array([0.15, 0.15, 0.6])
    np.testing.assert_allclose(
        point_mass_inertia(size, [0.06, 0.06, 0.3]), [0.002025, 0.002025, 0.00405], atol=1e-12
    )
    np.testing.assert_allclose(
        point_mass_inertia(size, [0, 0, 0]), [0.095625, 0.095625, 0.01125], atol=1e-12
    )


def test_bad_scenarios_are_refused():
    with pytest.raises(ScenarioError, match="outside the box"):
        load_scenario({**CASE, "com_offset": [0.1, 0.0, 0.0]})
    with pytest.raises(ScenarioError, match="method"):
        load_scenario({**CASE, "method": "nominal"})


def test_simulate_writes_a_bag_of_tray_box_and_contact(tmp_path, capsys):
    import yaml

    from inertia_estimation_ros.bags import read_bag
    from inertia_estimation_ros.cli import main

    scenario = tmp_path / "tray.yaml"
    case = {**CASE, "height": 0.3, "com_offset": [0.06, 0.06, 0.15], "method": "robust"}
    scenario.write_text(yaml.safe_dump(case))
    assert main(["simulate", str(scenario), "--out", str(tmp_path / "run")]) == 0
    assert "success" in capsys.readouterr().out
    messages = list(read_bag(tmp_path / "run" / "bag"))
    topics = {m.topic for m in messages}
    assert topics == {"/tray/pose", "/tray/object_pose", "/tray/object_in_contact"}
    contact = [m.message.data for m in messages if m.topic == "/tray/object_in_contact"]
    assert len(contact) == 600 and all(contact)  # 6 s every 10 ms, always touching
    last_tray = [m.message for m in messages if m.topic == "/tray/pose"][-1]
    assert last_tray.pose.position.x == pytest.approx(2.0, abs=1e-3)
