"""The README works as written (issue 18): every command of its ``bash`` blocks runs in a
fresh folder with the installed tools (``make setup`` put them in the venv; CI runs this on a
fresh clone), and the README names every node. ``text`` blocks are for a ROS 2 install, a
live robot or minutes of running (``make demo`` is tested by test_demo.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from inertia_estimation_ros.ros.nodes import NODES

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands() -> list[str]:
    """Every command line of the README's bash blocks, comments removed."""
    lines = [
        line.split("#")[0].strip() for block in BLOCK.findall(README) for line in block.splitlines()
    ]
    return [line for line in lines if line]


def test_the_quick_start_is_in_a_bash_block():
    start = README.index("<!-- quickstart:begin -->")
    quick = README[start : README.index("<!-- quickstart:end -->")]
    assert "```bash" in quick and "inertia_estimation simulate" in quick
    assert all(
        line in commands() for line in BLOCK.findall(quick)[0].splitlines() if "#" not in line
    )


@pytest.mark.timeout(600)
def test_every_readme_command_runs_in_a_fresh_folder(tmp_path):
    tools = Path(sys.executable).parent
    assert (tools / "inertia_estimation").exists(), "run `make setup` first"
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    script = "set -euo pipefail\n" + "\n".join(commands())
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=580
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "smallest" in out and "mass [kg]" in out and "stage " in out
    assert all(f"\n{name} " in out for name in ("test_graph", "paper000_mocobots"))
    assert (tmp_path / "runs/first/bag/metadata.yaml").exists()
    assert (tmp_path / "runs/first/report/report.md").exists()
    assert "/coordinator_node" in out  # bringup --check listed the graph
    assert "CERTIFIED" in out and (tmp_path / "runs/plan.npz").exists()


def test_the_readme_names_every_node_and_links_only_existing_files():
    table = README[README.index("## Nodes") :]
    for node in NODES:
        assert f"| `{node}` |" in table, f"add {node} to the README's node table"
    for target in re.findall(r"\]\(([^)#:]+)\)", README):
        assert (ROOT / target).exists(), f"README links to missing {target}"
