"""The README works as written (issue 18): every command of its ``bash`` blocks runs in a
fresh folder with the installed tools (``make setup`` put them in the venv; CI runs this on a
fresh clone), and the README names every node. ``text`` blocks are for a ROS 2 install, a
live robot or minutes of running (``make demo`` is tested by test_demo.py): their graphs,
launch files and flags are checked without running."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from inertia_estimation_ros.ros.nodes import NODES

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)
TEXT_BLOCK = re.compile(r"^```text\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands(blocks: re.Pattern = BLOCK) -> list[str]:
    """Every command line of the README's bash (or other) blocks, comments removed."""
    lines = [
        line.split("#")[0].strip()
        for block in blocks.findall(README)
        for line in block.splitlines()
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


def test_the_readme_text_commands_name_shipped_files_and_known_flags(capsys):
    """The ``text`` blocks run for minutes or need a robot or ROS 2 launch: each ``bringup``
    of a shipped graph passes ``--check`` with the line's flags, each ``inertia_estimation``
    line parses, and each ``ros2 launch`` names a shipped launch file and config."""
    from inertia_estimation_ros.cli import build_parser
    from inertia_estimation_ros.ros.bringup import main as bringup

    shipped = {path.name for path in (ROOT / "config").glob("*.yaml")}
    checked = []
    tools = ("bringup ", "inertia_estimation ", "ros2 launch ")
    for line in (line for line in commands(TEXT_BLOCK) if line.startswith(tools)):
        words = shlex.split(line.removesuffix("&"))
        if words[0] == "bringup" and words[1] in shipped:
            assert bringup([*words[1:], "--check"]) == 0, line
            checked.append(words[1])
        elif words[0] == "inertia_estimation":
            build_parser().parse_args(words[1:])
        elif words[:2] == ["ros2", "launch"]:
            assert (ROOT / "launch" / words[3]).exists(), line
            configs = [arg.split(":=")[1] for arg in words[4:] if arg.startswith("config:=")]
            assert all(name in shipped or name.startswith("my_") for name in configs), line
    capsys.readouterr()
    assert {"sim_paper000.yaml", "replay.yaml", "balancing_planner.yaml"} <= set(checked)
