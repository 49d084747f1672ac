"""The command line answers ``--help`` and a bad argument before the numerics load (issue 18):
no numpy, scipy, rclpy, MuJoCo, cvxpy, matplotlib, Pinocchio, rosbags or even yaml is
loaded on those paths. Checked in a fresh interpreter through ``sys.modules`` (a module that
``commands/lazy.py`` registered but nothing used yet does not count), not by a timing;
``bench/bench_cli.py`` measures the time. ``estimate`` on a bag loads neither the simulator,
MuJoCo, cvxpy, matplotlib, scipy's heavy subpackages (signal, stats, optimize, spatial,
linalg), numpy's submodules that only scipy's array-API layer touches, nor another command's
module, nor rclpy (though the bag has a ground truth) nor rosbags (issue 16: a user times
the whole process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "scipy", "rclpy", "mujoco", "cvxpy", "matplotlib", "pinocchio", "rosbags", "yaml")
COMMANDS = ("demo", "simulate", "record", "bag-repair", "replay", "estimate", "report", "plan")
CASES = [
    ["--help"],
    ["estimat", "bag"],
    ["simulate"],
    ["simulate", "no_such_scenario", "--out", "/tmp/x"],
    ["estimate", "/no/such/bag"],
    ["estimate", "bag", "--period", "-1"],
    ["report", "/no/such/bag", "--out", "/tmp/x"],
    ["plan", "/no/such/plan.yaml", "--out", "/tmp/x.npz"],
    ["verify", "/no/such/plan.npz"],
    *([command, "--help"] for command in (*COMMANDS, "verify")),
    *([command, "--bad"] for command in (*COMMANDS, "verify")),
]

# Runs every case in one interpreter, in turn: what the first case loads is named with it.
PROBE = """
import contextlib, importlib.util, io, json, sys
from inertia_estimation_ros.cli import main

def loaded():
    return sorted(
        name for name in HEAVY
        if name in sys.modules and not isinstance(sys.modules[name], importlib.util._LazyModule)
    )

report = []
for case in CASES:
    err = io.StringIO()
    with contextlib.redirect_stdout(err), contextlib.redirect_stderr(err):
        try:
            code = main(case)
        except SystemExit as done:
            code = done.code
    report.append({"case": case, "exit": code, "loaded": loaded(), "output": err.getvalue()})
print(json.dumps(report))
"""


def test_help_and_bad_arguments_load_no_numerics():
    script = f"HEAVY = {HEAVY!r}\nCASES = {CASES!r}\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,  # the source tree first on sys.path
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for run in json.loads(done.stdout):
        assert not run["loaded"], (
            f"inertia_estimation {' '.join(run['case'])} loads {run['loaded']}"
        )
        help_asked = "--help" in run["case"]
        assert run["exit"] == (0 if help_asked else 2), run
        assert "Traceback" not in run["output"], run["output"]
        assert run["output"].strip(), f"{run['case']}: say what is wrong"


# What ``estimate`` must not load (issue 16: the whole process's CPU time, start-up included):
# the simulator, the live nodes' ROS graph, the SDP and plotting libraries, other commands.
NOT_FOR_ESTIMATE = (
    "mujoco",
    "cvxpy",
    "matplotlib",
    "pinocchio",
    "rclpy",  # not even for the recorded ground truth (ros.cdr decodes it)
    "rosbags",  # an indexed mcap bag is read through bag_index (rosbags and its YAML: ~0.15 s)
    "ruamel",
    # scipy's heavy subpackages (~1.5 s of CPU together): the estimate's filters, chi-square
    # quantile, finite differences and rotations come from core and scipy.special
    "scipy.signal",
    "scipy.stats",
    "scipy.optimize",
    "scipy.spatial",
    "scipy.linalg",
    "scipy.interpolate",
    # numpy's submodules that only scipy's array-API layer touches (``lazy.NUMPY_EXTRAS``),
    # and what they and tqdm's default lock would bring
    "numpy.testing",
    "numpy.f2py",
    "unittest",
    "multiprocessing",
    "inertia_estimation_ros.sim",
    "inertia_estimation_ros.ros.nodes",
    *(
        f"inertia_estimation_ros.commands.{name}"
        for name in ("demo", "simulate", "record", "replay", "plan", "verify", "bag_repair")
    ),
)

ESTIMATE_PROBE = """
import contextlib, importlib.util, io, json, sys
from inertia_estimation_ros.cli import main

out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    code = main(["estimate", BAG])
loaded = sorted(
    name for name in NOT_FOR_ESTIMATE
    if name in sys.modules and not isinstance(sys.modules[name], importlib.util._LazyModule)
)
print(json.dumps({"exit": code, "loaded": loaded, "output": out.getvalue()}))
"""

GRASP_STATE = "inertia_estimation_ros/msg/GraspState"
TRUTH = "inertia_estimation_ros/msg/PayloadEstimate"


def analytic_bag(path: Path) -> Path:
    """3 s of the paper's three robots at 100 Hz (the analytic simulator), GraspState and a
    ground truth."""
    import numpy as np

    from inertia_estimation_ros.bags import BagWriter
    from inertia_estimation_ros.msg import PayloadEstimate
    from inertia_estimation_ros.ros.conversions import to_grasp_state
    from inertia_estimation_ros.sim import analytic as an

    rng = np.random.default_rng(0)
    team = an.paper_team()
    t = np.arange(0.0, 3.0, 0.01)
    sim = an.simulate(team, an.paper_payload(), an.paper_kinematics_motion(rng), t, rng=rng)
    with BagWriter(path) as writer:
        truth = PayloadEstimate(reference_robot_id=team.robot_ids[0])
        writer.write("/ground_truth/payload", TRUTH, 1, truth)
        for k in range(len(t)):
            for rid in team.robot_ids:
                sample = sim.measured[rid].sample(k)
                message = to_grasp_state(sample, f"{rid}/grasp", f"{rid}/home")
                stamp = 10**9 + 10**7 * k + 1
                writer.write(f"/{rid}/grasp_state", GRASP_STATE, stamp, message)
    return path


def test_estimate_loads_neither_the_simulator_nor_ros_nor_other_commands(tmp_path):
    bag = analytic_bag(tmp_path / "bag")
    script = f"NOT_FOR_ESTIMATE = {NOT_FOR_ESTIMATE!r}\nBAG = {str(bag)!r}\n{ESTIMATE_PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(done.stdout)
    assert run["exit"] == 0 and "whole process: CPU" in run["output"], run["output"]
    assert not run["loaded"], f"inertia_estimation estimate loads {run['loaded']}"
