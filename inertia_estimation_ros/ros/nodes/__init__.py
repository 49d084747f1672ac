"""The package's ROS 2 nodes, by executable name: the registry ``ros.graph`` starts them from.

Each node module ``ros/nodes/<executable>.py`` defines

* ``INTERFACE``: its ``NodeInterface`` (topics, services, parameters; the README's tables);
* a node class that takes rclpy ``Node``'s keyword arguments (``context``, ``namespace``,
  ``parameter_overrides``, ``use_global_arguments``, ...) and names itself after its
  executable, so that it runs in any executor, in-process or alone;
* ``main()``, the executable (``runtime.run_executable``).

A node may set ``finished`` (a ``threading.Event``) to end the graph it runs in (the
simulation node does when its scenario is over and ``exit_when_done`` is set).
Adding a node is one line in ``NODES`` plus the executable in setup.py and CMakeLists.txt.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..interface import NodeInterface, markdown

# executable -> (module, node class)
NODES: dict[str, tuple[str, str]] = {
    "coordinator_node": ("inertia_estimation_ros.ros.nodes.coordinator_node", "CoordinatorNode"),
    "robot_node": ("inertia_estimation_ros.ros.nodes.robot_node", "RobotNode"),
    "sim_node": ("inertia_estimation_ros.ros.nodes.sim_node", "SimNode"),
    "planner_node": ("inertia_estimation_ros.ros.nodes.planner_node", "PlannerNode"),
    "aerial_coordinator_node": (
        "inertia_estimation_ros.ros.nodes.aerial_coordinator_node",
        "AerialCoordinatorNode",
    ),
    "aerial_robot_node": ("inertia_estimation_ros.ros.nodes.aerial_robot_node", "AerialRobotNode"),
}


def node_module(executable: str) -> ModuleType:
    """The module of a registered node; KeyError naming the known ones if it is not."""
    if executable not in NODES:
        raise KeyError(f"no node {executable!r}; the package's nodes are {sorted(NODES)}")
    return importlib.import_module(NODES[executable][0])


def node_class(executable: str) -> type:
    return getattr(node_module(executable), NODES[executable][1])


def node_interface(executable: str) -> NodeInterface:
    return node_module(executable).INTERFACE


def readme_tables() -> str:
    """The node tables of docs/nodes.md (between its ``<!-- nodes:begin -->`` and ``end``
    markers; ``make readme`` writes them)."""
    return "\n".join(markdown(node_interface(executable)) for executable in sorted(NODES))


README_MARKERS = ("<!-- nodes:begin -->", "<!-- nodes:end -->")


def update_readme(text: str) -> str:
    """``text`` (docs/nodes.md) with the tables between ``README_MARKERS`` regenerated."""
    begin, end = README_MARKERS
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n\n{readme_tables()}\n\n{end}{tail}"
