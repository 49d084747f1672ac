"""`inertia_estimation demo` runs the team and coordinator processes over DDS and reports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.timeout(300)
def test_demo_exchanges_messages_between_two_processes():
    exe = Path(sys.prefix) / "bin" / "inertia_estimation"
    result = subprocess.run(
        [str(exe), "demo", "--robots", "3", "--samples", "50"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    assert "received 150 GraspState messages from 3 robots" in result.stdout
    assert "team: received PayloadEstimate: mass 11.412 kg" in result.stdout
