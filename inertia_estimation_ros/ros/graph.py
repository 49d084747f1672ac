"""The graph of nodes a config file describes: read by the launch files and the pip bringup alike.

A config (``config/*.yaml``) is a ROS 2 parameter file whose top-level keys are fully qualified
node names, e.g. ``/sim_node``, ``/robot_1/robot_node``, ``/coordinator_node``. A node's name is
its executable (a key of ``ros.nodes.NODES``) and its namespace the rest of the key, so the
file itself says which nodes run; the key ``/**`` holds parameters for every node (e.g.
``use_sim_time``). Beside ``ros__parameters`` a node may have ``remappings``, a mapping of its
topic names to the names they should have (``ft_sensor: force_torque_sensor_broadcaster/wrench``,
relative names in the node's namespace, as ``ros2 run ... -r from:=to``); the nodes are then
given their parameters without that key (rcl's parser would refuse it).
``load_graph`` reads and checks a config before anything starts: every node
is known, every parameter is declared by its node, with a value of the declared type and range
(the very ``Param`` checks the node applies at start-up), every remapped name is one of the
node's topics, and when a ``sim_node`` publishes ``/clock`` every other node runs on simulated
time. ``Graph.under(namespace)`` pushes the whole graph into a namespace (a second team).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from ..data import data_file, data_roots  # noqa: F401 (re-exported)
from .nodes import NODES, node_interface
from .parameters import Param

PACKAGE = "inertia_estimation_ros"
EVERY_NODE = "/**"
NODE_KEYS = {"ros__parameters", "remappings"}
# Parameters every rclpy node declares itself.
STANDARD_PARAMETERS = (Param("use_sim_time", "bool", False, "follow /clock"),)


class GraphError(ValueError):
    """A config file does not describe a graph that can run; the message says what to change."""


@dataclass(frozen=True)
class NodeSpec:
    """One node of a graph: its executable (= node name), namespace, parameters, remappings."""

    executable: str
    namespace: str  # "/" or e.g. "/robot_1"
    parameters: dict[str, object]  # "/**" merged in; nested keys joined with "."
    remappings: tuple[tuple[str, str], ...] = ()  # (from, to) as ``-r from:=to``

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

    def under(self, namespace: str) -> Graph:
        """The same graph with every node pushed into ``namespace`` (e.g. ``/team_a``); its
        relative topic names follow (``launch_ros``'s ``PushRosNamespace``)."""
        prefix = "/" + namespace.strip("/") if namespace.strip("/") else ""
        nodes = tuple(
            replace(s, namespace=f"{prefix}{s.namespace}".rstrip("/") or "/") for s in self.nodes
        )
        return Graph(self.path, nodes)

    def parameter_file(self, folder: str | Path | None = None) -> Path:
        """A ROS 2 parameter file of every node under its full name (remappings left out),
        written into ``folder`` (default: a new temporary folder)."""
        folder = Path(folder or tempfile.mkdtemp(prefix="inertia_estimation_ros_"))
        path = folder / f"{self.path.stem}_parameters.yaml"
        sections = {s.fqn: {"ros__parameters": s.parameters} for s in self.nodes}
        path.write_text(yaml.safe_dump(sections, sort_keys=False))
        return path


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
    """Why a YAML value does not have the parameter's type, as the node would see it: an
    integer is accepted for a double (``5`` for ``5.0``, as the nodes accept it) and a list of
    integers for a double array, but not a bool, and not a list mixing integers and floats
    (ROS's YAML parser refuses mixed lists)."""
    scalar = {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "double": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
    }
    kind = param.type.removesuffix("_array")
    if param.type.endswith("_array"):
        if not isinstance(value, list) or not value:
            return f"expected a non-empty list of {kind} values"
        if not all(scalar[kind](v) for v in value):
            return f"expected every element to be a {kind}"
        if kind == "double" and len({type(v) for v in value}) > 1:
            return "expected elements of one type: ROS refuses a list mixing 1 and 1.0 (write 1.0)"
        return None
    if not scalar[kind](value):
        return f"expected a {kind}"
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
    if not isinstance(body, dict) or "ros__parameters" not in body or set(body) - NODE_KEYS:
        raise GraphError(
            f"{where}: {key} must hold ros__parameters (a mapping) and optionally remappings"
        )
    parameters = body["ros__parameters"] or {}
    if not isinstance(parameters, dict):
        raise GraphError(f"{where}: {key}.ros__parameters must be a mapping")
    remappings = body.get("remappings") or {}
    if not isinstance(remappings, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and v for k, v in remappings.items()
    ):
        raise GraphError(
            f"{where}: {key}.remappings must map topic names to topic names, e.g. "
            "ft_sensor: force_torque_sensor_broadcaster/wrench"
        )
    spec = NodeSpec(
        executable, namespace or "/", shared | _flatten(parameters), tuple(remappings.items())
    )
    _check_remappings(spec, where)
    return spec


def _check_remappings(spec: NodeSpec, where: str) -> None:
    """Every remapped name is a topic the node publishes or subscribes to (a typo would
    otherwise remap nothing, silently)."""
    interface = node_interface(spec.executable)
    names = {
        name
        for topic in (*interface.publishes, *interface.subscribes)
        for name in resolve_topic(topic.name, spec)
    }
    for source, _ in spec.remappings:
        if not set(resolve_topic(source, spec)) <= names:
            raise GraphError(
                f"{where}: {spec.fqn} remaps {source!r}, which is none of its topics "
                f"{sorted(names)}"
            )


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


def launch_nodes(
    config: str | Path,
    use_sim_time: bool | None = None,
    namespace: str = "",
    log_level: str = "info",
) -> list:
    """launch_ros ``Node`` actions for every node of a config, pushed into ``namespace``: the
    launch files' graph. The nodes share one parameter file keyed by their full names
    (``Graph.parameter_file``) and get the config's remappings and the log level."""
    from launch_ros.actions import Node

    graph = load_graph(config, use_sim_time).under(namespace)
    parameter_file = str(graph.parameter_file())
    return [
        Node(
            package=PACKAGE,
            executable=spec.executable,
            name=spec.name,
            namespace=spec.namespace,
            parameters=[parameter_file],
            remappings=list(spec.remappings),
            ros_arguments=["--log-level", log_level],
            output="screen",
        )
        for spec in graph.nodes
    ]


# The standard arguments of every launch file: (name, default, description).
LAUNCH_ARGUMENTS = (
    ("namespace", "", "push every node into this namespace (e.g. team_a); empty: none"),
    ("use_sim_time", "", "true/false: set use_sim_time on every node; empty: as the config says"),
    ("log_level", "info", "log level of every node: debug, info, warn, error or fatal"),
)


def launch_graph(default_config: str, use_sim_time: bool | None = None) -> list:
    """The launch files' actions for a graph: the standard arguments ``config`` (a path, or a
    file name in config/; default ``default_config``), ``namespace``, ``use_sim_time`` (default
    ``use_sim_time``, if given) and ``log_level``, and, once they are known, the nodes."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    def nodes(context: object) -> list:
        value = {n: LaunchConfiguration(n).perform(context) for n, _, _ in LAUNCH_ARGUMENTS}
        return launch_nodes(
            LaunchConfiguration("config").perform(context),
            _sim_time_argument(value["use_sim_time"]),
            value["namespace"],
            value["log_level"],
        )

    defaults = {"use_sim_time": "" if use_sim_time is None else str(use_sim_time).lower()}
    return [
        DeclareLaunchArgument(
            "config",
            default_value=default_config,
            description="graph YAML: a path, or a file name in the package's config/",
        ),
        *(
            DeclareLaunchArgument(name, default_value=defaults.get(name, default), description=d)
            for name, default, d in LAUNCH_ARGUMENTS
        ),
        OpaqueFunction(function=nodes),
    ]


def launch_rviz(rviz_config: str) -> list:
    """The launch files' ``rviz`` argument (default false) and the RViz node it starts, on
    simulated time, with ``rviz/<rviz_config>``."""
    from launch.actions import DeclareLaunchArgument
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    return [
        DeclareLaunchArgument(
            "rviz", default_value="false", description=f"true: start RViz with rviz/{rviz_config}"
        ),
        Node(
            package="rviz2",
            executable="rviz2",
            arguments=["-d", str(data_file(rviz_config, "rviz"))],
            parameters=[{"use_sim_time": True}],
            condition=IfCondition(LaunchConfiguration("rviz")),
        ),
    ]


def _sim_time_argument(text: str) -> bool | None:
    """The ``use_sim_time`` launch argument: "" (as the config says), true or false."""
    choices = {"": None, "true": True, "false": False}
    if text.strip().lower() not in choices:
        raise GraphError(f"use_sim_time:={text!r}: give true, false or nothing")
    return choices[text.strip().lower()]
