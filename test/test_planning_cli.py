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


def test_plan_takes_the_com_polytope_from_an_estimate_bag(tmp_path, capsys):
    import numpy as np

    from inertia_estimation_ros.bags import write_bag
    from inertia_estimation_ros.msg import PayloadEstimate

    msg = PayloadEstimate(com_valid=True)
    msg.parameters = [2.0, 0.02, 0.0, 0.3, 0, 0, 0, 0, 0, 0]  # CoM (0.01, 0, 0.15) in {s}
    msg.parameter_covariance = list((1e-6 * np.eye(10)).ravel())
    topic = "/payload_estimate"
    write_bag(tmp_path / "bag", [[(topic, "inertia_estimation_ros/msg/PayloadEstimate", 1, msg)]])
    spec = _write(tmp_path, "box.yaml", SPEC)
    args = ["plan", str(spec), "--estimate-bag", str(tmp_path / "bag"), *BUDGET]
    assert main([*args, "--tray-offset", "0", "0", "0.05"]) == 0
    out = capsys.readouterr().out
    # sigma(c) ~ sigma(h) / m = 0.5 mm: a +- 1.5 mm box around (0.01, 0, 0.10) in {e}
    assert "from the estimate: [[ 0.008 -0.002  0.098], [0.012 0.002 0.102]]" in out
    assert "CERTIFIED" in out


def test_plan_and_verify_the_papers_robot(tmp_path, capsys):
    """robot: ridgeback_ur10 plans joint motion from the home pose; the saved plan keeps its
    model, so verify re-checks the tray motion of the same robot."""
    from inertia_estimation_ros.core.planning.robot import HOME, MobileManipulator

    tray = MobileManipulator().positions(HOME)[0][0]
    spec = {**SPEC, "robot": "ridgeback_ur10", "goal": (tray + [1.0, 0.0, 0.0]).tolist()}
    del spec["start"]  # the paper's home pose
    out = tmp_path / "robot.npz"
    assert main(["plan", str(_write(tmp_path, "r.yaml", spec)), "--out", str(out), *BUDGET]) == 0
    printed = capsys.readouterr().out
    assert "ridgeback_ur10: method robust" in printed and "CERTIFIED" in printed
    assert main(["verify", str(out), *BUDGET]) == 0
