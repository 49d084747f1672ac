"""One run of ``inertia_estimation demo`` on the short test scenario, shared by the tests that
check the demo and the agreement of its live estimate with the offline one (a run costs about
a minute, so it runs once per test session)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "test_coordinator.yaml"  # 14.9 s of simulated time, every stage briefly


@dataclass(frozen=True)
class DemoRun:
    out: Path
    stdout: str
    returncode: int


@cache
def demo_run() -> DemoRun:
    out = Path(tempfile.mkdtemp(prefix="inertia-demo-")) / "demo"
    atexit.register(shutil.rmtree, out.parent, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "inertia_estimation_ros.cli", "demo"]
    command += ["--scenario", SCENARIO, "--out", str(out), "--timeout", "200"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
    print(result.stdout, result.stderr)
    return DemoRun(out, result.stdout, result.returncode)
