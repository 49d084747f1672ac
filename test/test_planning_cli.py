"""`inertia_estimation plan` and `verify`: certified plans are saved and re-verified; bad
input is refused with a message and exit code 2, never a saved plan."""

from __future__ import annotations

import yaml

from inertia_estimation_ros.cli import main

SPEC = {
    "objects": [{"name": "box", "shape": "box", "size": [0.15, 0.15, 0.3], "mu": 0.2}],
    "start": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
    "goal": [1.0, 0.0, 1.0],
    "method": "robust",
    "duration": 3.0,
}


BUDGET = ["--max-solves", "60"]  # SDPs per object: enough to certify this plan


def _write(tmp_path, name, spec):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec))
    return path


def test_plan_saves_a_certified_plan_and_verify_rechecks_it(tmp_path, capsys):
    out = tmp_path / "plan.npz"
    assert main(["plan", str(_write(tmp_path, "box.yaml", SPEC)), "--out", str(out), *BUDGET]) == 0
    assert "CERTIFIED" in capsys.readouterr().out and out.exists()
    assert main(["verify", str(out), *BUDGET]) == 0
    # the same motion for a box whose CoM may sit at the very edge is not certified
    edge = {**SPEC, "objects": [{**SPEC["objects"][0], "com_lo": [0.074, -0.06, 0.0],
                                 "com_hi": [0.075, 0.06, 0.3]}]}  # fmt: skip
    edge_path = str(_write(tmp_path, "e.yaml", edge))
    assert main(["verify", str(out), "--objects", edge_path, *BUDGET]) == 1
    assert "NOT certified" in capsys.readouterr().out


def test_bad_input_is_refused(tmp_path, capsys):
    far = _write(tmp_path, "far.yaml", {**SPEC, "goal": [50.0, 0.0, 1.0]})
    assert main(["plan", str(far), "--out", str(tmp_path / "x.npz")]) == 2
    assert "outside the workspace" in capsys.readouterr().out
    empty = {
        **SPEC,
        "objects": [{**SPEC["objects"][0], "com_lo": [0.1, 0, 0], "com_hi": [0, 0, 0.1]}],
    }
    assert main(["plan", str(_write(tmp_path, "empty.yaml", empty))]) == 2
    assert "empty" in capsys.readouterr().out
    assert main(["verify", str(_write(tmp_path, "junk.npz", {"a": 1}))]) == 2
    assert "not a plan" in capsys.readouterr().out
    assert not (tmp_path / "x.npz").exists()
