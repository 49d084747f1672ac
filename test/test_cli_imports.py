"""The command line answers ``--help`` and a bad argument before the numerics load (issue 18):
no numpy, scipy, rclpy, MuJoCo, cvxpy, matplotlib, Pinocchio, rosbags or even yaml is
loaded on those paths. Checked in a fresh interpreter through ``sys.modules`` (a module that
``commands/lazy.py`` registered but nothing used yet does not count), not by a timing;
``bench/bench_cli.py`` measures the time."""

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
