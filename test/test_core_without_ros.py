"""The core works without ROS (issue 19, item 7): in a Python where rclpy, every message
package and rosbags cannot be imported, the core and the simulator import, and the
worked examples of docs/core-without-ros.md run."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "core-without-ros.md"
# The ROS boundary: these may import messages (and are not part of `pip install .`'s core).
ROS_BOUNDARY = ("inertia_estimation_ros.sim.topics", "inertia_estimation_ros.sim.aerial.topics")
BLOCKER = textwrap.dedent(
    """
    import importlib, importlib.abc, pkgutil, sys
    BLOCKED = ("rclpy", "rosidl", "rmw", "rosbags", "ament_index_python", "builtin_interfaces",
               "std_msgs", "geometry_msgs", "sensor_msgs", "visualization_msgs", "tf2_msgs",
               "trajectory_msgs", "diagnostic_msgs", "std_srvs", "rosgraph_msgs",
               "inertia_estimation_ros.msg", "inertia_estimation_ros.ros")
    class NoRos(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ModuleNotFoundError(f"No module named {name!r} (no ROS here)")
    sys.meta_path.insert(0, NoRos())
    """
)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_core_and_simulator_import_without_ros():
    code = textwrap.dedent(
        f"""
        import inertia_estimation_ros.core as core, inertia_estimation_ros.sim as sim
        for package in (core, sim):
            for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if module.name not in {ROS_BOUNDARY!r}:
                    importlib.import_module(module.name)
        try:
            import rclpy
        except ModuleNotFoundError:
            print("rclpy blocked")
        """
    )
    run = _run(code)
    assert run.returncode == 0, run.stderr
    assert "rclpy blocked" in run.stdout


def test_the_worked_examples_run_without_ros():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    assert len(blocks) == 4  # the conventions and the three worked examples
    run = _run("\n".join(f"exec({block!r}, {{}})" for block in blocks))
    assert run.returncode == 0, run.stderr
    assert "the data clearly follow: wrench=reaction" in run.stdout
    assert "mass 11.41" in run.stdout  # example 3: the payload of paper 000, 11.412 kg
