"""The graph of nodes a config file describes: read by the launch files and the pip bringup alike.

A config (``config/*.yaml``) is a ROS 2 parameter file whose top-level keys are fully qualified
node names, e.g. ``/sim_node``, ``/robot_1/robot_node``, ``/coordinator_node``. A node's name is
its executable (a key of ``ros.nodes.NODES``) and its namespace the rest of the key, so the
file itself says which nodes run; the key ``/**`` holds parameters for every node (e.g.
``use_sim_time``). ``load_graph`` reads and checks a config before anything starts: every node
is known, every parameter is declared by its node, with a value of the declared type and range
(the very ``Param`` checks the node applies at start-up), and when a ``sim_node`` publishes
``/clock`` every other node runs on simulated time.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .nodes import NODES, node_interface
from .parameters import Param

PACKAGE = "inertia_estimation_ros"
EVERY_NODE = "/**"
# Parameters every rclpy node declares itself.
STANDARD_PARAMETERS = (Param("use_sim_time", "bool", False, "follow /clock"),)


class GraphError(ValueError):
    """A config file does not describe a graph that can run; the message says what to change."""


@dataclass(frozen=True)
class NodeSpec:
    """One node of a graph: its executable (= node name), namespace and parameters."""

    executable: str
    namespace: str  # "/" or e.g. "/robot_1"
    parameters: dict[str, object]  # "/**" merged in; nested keys joined with "."

    @property
    def name(self) -> str:
        return self.executable

    @property
    def fqn(self) -> str:
        return f"{self.namespace.rstrip('/')}/{self.name}"


@dataclass(frozen=True)
class Graph:
    path: Path
    nodes: tuple[NodeSpec, ...]

    def node(self, fqn: str) -> NodeSpec:
        for spec in self.nodes:
            if spec.fqn == fqn:
                return spec
        raise KeyError(f"{self.path} has no node {fqn}; it has {[s.fqn for s in self.nodes]}")


def data_roots() -> list[Path]:
    """Where the package's data folders (config/, launch/, rviz/) are: the source tree, the
    ament index's share folder (a colcon install), then this prefix's ``share/<package>``."""
    roots = [Path(__file__).resolve().parents[2]]
    try:
        from ament_index_python.packages import get_package_share_directory

        roots.append(Path(get_package_share_directory(PACKAGE)))
    except (ImportError, LookupError, OSError):  # not installed, or no ament index at all
        pass
    return roots + [Path(sys.prefix) / "share" / PACKAGE]


def data_file(name: str | Path, folder: str) -> Path:
    """A file given by path (absolute, or relative to the working directory) or by its name in
    the package's ``folder`` (e.g. ``config``); FileNotFoundError lists where it looked."""
    path = Path(name).expanduser()
    candidates = [path] + ([] if path.is_absolute() else [r / folder / path for r in data_roots()])
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"no file {name} (looked at {', '.join(map(str, candidates))})")


def _flatten(values: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= _flatten(value, f"{name}.")
        else:
            out[name] = value
    return out


def _type_problem(param: Param, value: object) -> str | None:
    """Why a YAML value does not have the parameter's type, as ROS would see it (no implicit
    int -> double: ``5`` is an integer, write ``5.0``)."""
    scalar = {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "double": lambda v: isinstance(v, float),
        "string": lambda v: isinstance(v, str),
    }
    kind = param.type.removesuffix("_array")
    if param.type.endswith("_array"):
        if not isinstance(value, list) or not value:
            return f"expected a non-empty list of {kind} values"
        if not all(scalar[kind](v) for v in value):
            hint = " (write 1.0, not 1)" if kind == "double" else ""
            return f"expected every element to be a {kind}{hint}"
        return None
    if not scalar[kind](value):
        hint = " (write 5.0, not 5)" if kind == "double" and isinstance(value, int) else ""
        return f"expected a {kind}{hint}"
    return None


def _check_parameters(spec: NodeSpec, where: str) -> None:
    declared = {
        p.name: p for p in (*node_interface(spec.executable).parameters, *STANDARD_PARAMETERS)
    }
    for name, value in spec.parameters.items():
        param = declared.get(name)
        if param is None:
            raise GraphError(
                f"{where}: {spec.fqn} has no parameter {name!r}; {spec.executable} declares "
                f"{sorted(declared)}"
            )
        problem = _type_problem(param, value) or param.problem(value)
        if problem:
            raise GraphError(
                f"{where}: {spec.fqn}.{name} = {value!r}: {problem} ({param.description})"
            )


def _node_spec(key: object, body: object, shared: dict, where: str) -> NodeSpec:
    if not isinstance(key, str) or not key.startswith("/") or key.endswith("/"):
        raise GraphError(
            f"{where}: key {key!r} is not a fully qualified node name like /robot_1/robot_node"
        )
    namespace, _, executable = key.rpartition("/")
    if executable not in NODES:
        raise GraphError(
            f"{where}: {key}: no node {executable!r} in this package (the node name is the "
            f"executable's): choose one of {sorted(NODES)}"
        )
    if not isinstance(body, dict) or set(body) != {"ros__parameters"}:
        raise GraphError(f"{where}: {key} must hold exactly one mapping, ros__parameters")
    parameters = body["ros__parameters"] or {}
    if not isinstance(parameters, dict):
        raise GraphError(f"{where}: {key}.ros__parameters must be a mapping")
    return NodeSpec(executable, namespace or "/", shared | _flatten(parameters))


def load_graph(path: str | Path, use_sim_time: bool | None = None) -> Graph:
    """The checked graph of a config file (a path, or a file name in config/).

    ``use_sim_time`` (if given) overrides that parameter on every node except ``sim_node``
    (the clock's source), as the replay launch file and ``bringup --use-sim-time`` do.
    """
    try:
        path = data_file(path, "config")
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise GraphError(f"cannot read the graph config: {error}") from None
    where = str(path)
    if not isinstance(data, dict) or not data:
        raise GraphError(f"{where}: a graph config maps fully qualified node names to parameters")
    shared = {}
    if EVERY_NODE in data:
        shared = _flatten((data.pop(EVERY_NODE) or {}).get("ros__parameters") or {})
    nodes = []
    for key, body in data.items():
        spec = _node_spec(key, body, shared, where)
        if use_sim_time is not None and spec.executable != "sim_node":
            spec.parameters["use_sim_time"] = use_sim_time
        _check_parameters(spec, where)
        nodes.append(spec)
    _check_clock(nodes, where)
    return Graph(path, tuple(nodes))


def _check_clock(nodes: list[NodeSpec], where: str) -> None:
    """A sim_node publishing /clock needs every other node on simulated time."""
    clocks = [
        s for s in nodes if s.executable == "sim_node" and s.parameters.get("publish_clock", True)
    ]
    if not clocks:
        return
    for spec in nodes:
        if spec.executable != "sim_node" and not spec.parameters.get("use_sim_time", False):
            raise GraphError(
                f"{where}: {spec.fqn} must follow the simulation's /clock: give it "
                "use_sim_time: true (or give every node use_sim_time under /**)"
            )


def resolve_topic(name: str, spec: NodeSpec) -> list[str]:
    """The absolute names of a NodeInterface topic for one node: relative names go into the
    namespace, ``~/`` below the node, and ``{robot}`` stands for each of its ``robots``."""
    if name.startswith("~/"):
        base = f"{spec.fqn}/{name[2:]}"
    elif name.startswith("/"):
        base = name
    else:
        base = f"{spec.namespace.rstrip('/')}/{name}"
    if "{robot}" not in base:
        return [base]
    return [base.replace("{robot}", robot) for robot in spec.parameters.get("robots", [])]


def published_topics(graph: Graph) -> list[str]:
    """Every topic the graph's nodes publish (from their NodeInterfaces), sorted."""
    topics = {
        topic
        for spec in graph.nodes
        for entry in node_interface(spec.executable).publishes
        for topic in resolve_topic(entry.name, spec)
    }
    return sorted(topics)


def launch_nodes(config: str | Path, use_sim_time: bool | None = None) -> list:
    """launch_ros ``Node`` actions for every node of a config: the launch files' graph. Each
    node gets the config itself as its parameter file (keyed by its full name)."""
    from launch_ros.actions import Node

    graph = load_graph(config, use_sim_time)
    actions = []
    for spec in graph.nodes:
        parameters: list = [str(graph.path)]
        if use_sim_time is not None and spec.executable != "sim_node":
            parameters.append({"use_sim_time": use_sim_time})
        actions.append(
            Node(
                package=PACKAGE,
                executable=spec.executable,
                name=spec.name,
                namespace=spec.namespace,
                parameters=parameters,
                output="screen",
            )
        )
    return actions


def launch_graph(default_config: str, use_sim_time: bool | None = None) -> list:
    """The launch files' actions for a graph: the ``config`` argument (a path, or a file name
    in config/; default ``default_config``) and, once it is known, the nodes it names."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    def nodes(context: object) -> list:
        return launch_nodes(LaunchConfiguration("config").perform(context), use_sim_time)

    return [
        DeclareLaunchArgument(
            "config",
            default_value=default_config,
            description="graph YAML: a path, or a file name in the package's config/",
        ),
        OpaqueFunction(function=nodes),
    ]
