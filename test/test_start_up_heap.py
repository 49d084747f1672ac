"""runtime.freeze_start_up_heap: every node executable (``run_executable``) leaves its start-up
objects out of Python's cyclic garbage collector, and garbage made afterwards is still
collected (no growth over a long run)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from inertia_estimation_ros.ros import runtime
from inertia_estimation_ros.ros.nodes import NODES

AERIAL_TEAM = ["-p", "robots:=[robot_1, robot_2, robot_3]"]
AERIAL_TEAM += ["-p", "team_description:=aerial_team_paper002.yaml"]
ARGUMENTS = {  # what each executable needs to start (the rest: defaults)
    "robot_node": ["-r", "__ns:=/robot_1"],
    "aerial_robot_node": ["-r", "__ns:=/robot_1", *AERIAL_TEAM],
    "coordinator_node": ["-p", "robots:=[robot_1, robot_2]", "-p", "solver:=thread"],
    "aerial_coordinator_node": AERIAL_TEAM,
}


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.parametrize("executable", sorted(NODES))
@pytest.mark.timeout(120)
def test_each_executable_freezes_its_start_up_heap(executable, unfrozen, monkeypatch) -> None:
    frozen = []

    def stop_at_once(group: runtime.NodeGroup) -> int:  # instead of spinning until Ctrl-C
        frozen.append(gc.get_freeze_count())
        group.stop()
        return 0

    monkeypatch.setattr(runtime, "run_until_interrupted", stop_at_once)
    argv = [executable, "--ros-args", *ARGUMENTS.get(executable, [])]
    assert runtime.run_executable(executable, argv) == 0
    assert frozen and frozen[0] > 10_000  # numpy's, rclpy's and the node's objects at least


class Cycle:
    def __init__(self) -> None:
        self.me = self
        self.payload = list(range(100))


def test_garbage_made_after_the_freeze_is_collected(unfrozen) -> None:
    runtime.freeze_start_up_heap()
    frozen = gc.get_freeze_count()
    gc.collect()
    tracked = len(gc.get_objects())
    last = None
    for _ in range(20_000):  # 20 000 cycles nothing refers to (a long run's garbage)
        last = weakref.ref(Cycle())
    gc.collect()
    assert last() is None
    assert len(gc.get_objects()) - tracked < 100
    assert gc.get_freeze_count() == frozen  # later objects stay the collector's


def test_the_start_up_garbage_is_collected_before_the_freeze(unfrozen) -> None:
    garbage = weakref.ref(Cycle())
    runtime.freeze_start_up_heap()
    assert garbage() is None


SPIN_CHECK = """
import sys
from inertia_estimation_ros.ros import runtime
modules = runtime.CALLBACK_IMPORTS
before = [m for m in modules if m in sys.modules]
def stop_at_once(group):
    print("loaded before:", before, "at spin:", [m in sys.modules for m in modules])
    group.stop()
    return 0
runtime.run_until_interrupted = stop_at_once
sys.exit(runtime.run_executable("robot_node", ["robot_node", "--ros-args", "-r", "__ns:=/robot_1"]))
"""


@pytest.mark.timeout(120)
def test_a_node_spins_with_its_callbacks_imports_loaded() -> None:
    """The modules the core imports lazily (kept off the estimate command's path) are loaded
    before a node spins, not by its first callback (a stall of ~1 s for scipy.stats)."""
    done = subprocess.run(
        [sys.executable, "-c", SPIN_CHECK], capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stderr
    loaded = ", ".join(["True"] * len(runtime.CALLBACK_IMPORTS))
    assert f"loaded before: [] at spin: [{loaded}]" in done.stdout
