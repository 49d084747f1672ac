"""The launch files, statically: ``launch``/``launch_ros`` are not installable here, so a
minimal stand-in records what ``generate_launch_description()`` builds. Every executable of
this package they start is installed (setup.py and CMakeLists.txt), every parameter file
exists, and every parameter in it is declared by the node it targets. The RViz configuration
parses and shows only topics that the graph's nodes publish."""

from __future__ import annotations

import importlib.util
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from test_package_metadata import cmake_executables, setup_py_console_scripts

from inertia_estimation_ros.ros.graph import (
    STANDARD_PARAMETERS,
    data_file,
    load_graph,
    published_topics,
)
from inertia_estimation_ros.ros.nodes import node_interface

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "inertia_estimation_ros"
AXES = ["--x", "--y", "--z", "--roll", "--pitch", "--yaw"]  # static_transform_publisher
# Each launch file with the graph configs it is meant for (its default first).
LAUNCHES = {
    "team_estimation.launch.py": ["team_example.yaml"],
    "sim_estimation.launch.py": ["sim_paper000.yaml", "sim_test.yaml", "sim_collaborate.yaml"],
    "replay.launch.py": ["replay.yaml"],
    "gazebo_estimation.launch.py": ["gazebo_paper000.yaml"],
    "aerial_sim.launch.py": ["sim_aerial.yaml", "sim_aerial_collaborate.yaml"],
    "aerial_team.launch.py": ["aerial_team_example.yaml"],
}


class Action:
    """Any launch action: keeps its arguments."""

    def __init__(self, *args: object, **kwargs: object):
        self.args, self.kwargs = args, kwargs


class LaunchConfiguration:
    def __init__(self, name: str, **kwargs: object):
        self.name = name

    def perform(self, context: LaunchContext) -> str:
        return context.arguments[self.name]


class LaunchContext:
    def __init__(self, arguments: dict[str, str]):
        self.arguments = arguments


class LaunchDescription:
    def __init__(self, entities: list):
        self.entities = entities


def fake_launch_modules() -> dict[str, types.ModuleType]:
    """launch, launch.actions, ..., launch_ros.actions and ament_index_python with what the
    launch files use."""

    def module(name: str, **members: object) -> types.ModuleType:
        m = types.ModuleType(name)
        m.__dict__.update(members)
        return m

    actions = {
        n: type(n, (Action,), {})
        for n in (
            "DeclareLaunchArgument",
            "OpaqueFunction",
            "ExecuteProcess",
            "IncludeLaunchDescription",
            "SetEnvironmentVariable",
        )
    }
    return {
        "launch": module(
            "launch", LaunchContext=LaunchContext, LaunchDescription=LaunchDescription
        ),
        "launch.actions": module("launch.actions", **actions),
        "launch.conditions": module(
            "launch.conditions", IfCondition=type("IfCondition", (Action,), {})
        ),
        "launch.substitutions": module(
            "launch.substitutions", LaunchConfiguration=LaunchConfiguration
        ),
        "launch.launch_description_sources": module(
            "launch.launch_description_sources",
            PythonLaunchDescriptionSource=type("PythonLaunchDescriptionSource", (Action,), {}),
        ),
        "launch_ros": module("launch_ros"),
        "launch_ros.actions": module("launch_ros.actions", Node=type("Node", (Action,), {})),
        "ament_index_python": module("ament_index_python"),
        "ament_index_python.packages": module(
            "ament_index_python.packages",
            get_package_share_directory=lambda name: (
                str(ROOT) if name == PACKAGE else f"/opt/{name}"
            ),
        ),
    }


def description(path: Path, monkeypatch) -> list[Action]:
    """The entities of the launch file's ``generate_launch_description()``."""
    for name, module in fake_launch_modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    launch_file = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launch_file)
    return launch_file.generate_launch_description().entities


def launch(path: Path, monkeypatch, **arguments: str) -> list[Action]:
    """Every action the launch file starts, with its arguments' defaults (or ``arguments``)."""
    entities = description(path, monkeypatch)
    declared = {
        e.args[0]: e.kwargs.get("default_value")
        for e in entities
        if type(e).__name__ == "DeclareLaunchArgument"
    }
    context = LaunchContext(declared | arguments)
    started = []
    for entity in entities:
        if type(entity).__name__ == "OpaqueFunction":
            started += entity.kwargs["function"](context)
        elif type(entity).__name__ != "DeclareLaunchArgument":
            started.append(entity)
    return started


def installed_executables() -> set[str]:
    pip = {entry.split("=")[0] for entry in setup_py_console_scripts()}
    cmake = {entry.split("=")[0] for entry in cmake_executables()}
    return pip & cmake


def check_node_parameters(node: Action) -> None:
    """The node's parameter files exist and hold only parameters its node declares."""
    executable, namespace = node.kwargs["executable"], node.kwargs["namespace"]
    assert node.kwargs["name"] == executable  # the config keys are node names = executables
    fqn = f"{namespace.rstrip('/')}/{executable}"
    declared = {p.name for p in (*node_interface(executable).parameters, *STANDARD_PARAMETERS)}
    sections = 0
    for entry in node.kwargs["parameters"]:
        if isinstance(entry, dict):
            assert set(entry) <= declared, (fqn, set(entry) - declared)
            continue
        path = Path(entry)
        assert path.is_file(), path
        data = yaml.safe_load(path.read_text())
        for key in (fqn, "/**"):
            if key in data:
                sections += key == fqn
                names = set(data[key]["ros__parameters"])
                assert names <= declared, (path.name, fqn, names - declared)
    assert sections == 1, f"{fqn} has no section in its parameter file"


@pytest.mark.parametrize(
    ("launch_file", "config"), [(f, c) for f, configs in LAUNCHES.items() for c in configs]
)
def test_launch_files_start_installed_nodes_with_declared_parameters(
    launch_file, config, monkeypatch
):
    started = launch(ROOT / "launch" / launch_file, monkeypatch, config=config, bag="runs/bag")
    ours = [a for a in started if type(a).__name__ == "Node" and a.kwargs["package"] == PACKAGE]
    graph = load_graph(config)
    assert sorted((a.kwargs["namespace"], a.kwargs["executable"]) for a in ours) == sorted(
        (spec.namespace, spec.executable) for spec in graph.nodes
    )
    for node in ours:
        assert node.kwargs["executable"] in installed_executables()
        check_node_parameters(node)


@pytest.mark.parametrize(
    ("launch_file", "rviz_config"),
    [
        ("sim_estimation.launch.py", "inertia_estimation.rviz"),
        ("aerial_sim.launch.py", "aerial.rviz"),
    ],
)
def test_the_simulation_launches_can_add_rviz_with_their_config(
    launch_file, rviz_config, monkeypatch
):
    entities = description(ROOT / "launch" / launch_file, monkeypatch)
    declared = {e.args[0]: e for e in entities if type(e).__name__ == "DeclareLaunchArgument"}
    assert declared["rviz"].kwargs["default_value"] == "false"
    started = launch(ROOT / "launch" / launch_file, monkeypatch)
    (rviz,) = [a for a in started if type(a).__name__ == "Node" and a.kwargs["package"] == "rviz2"]
    assert rviz.kwargs["condition"].args[0].name == "rviz"  # only with rviz:=true
    assert rviz.kwargs["parameters"] == [{"use_sim_time": True}]
    option, path = rviz.kwargs["arguments"]
    assert option == "-d" and Path(path) == ROOT / "rviz" / rviz_config


def test_the_replay_launch_plays_the_bag_on_clock_beside_the_nodes(monkeypatch):
    started = launch(ROOT / "launch" / "replay.launch.py", monkeypatch, bag="runs/paper000/bag")
    (player,) = [a for a in started if type(a).__name__ == "ExecuteProcess"]
    command = player.kwargs["cmd"]
    assert command[:6] == ["ros2", "bag", "play", "runs/paper000/bag", "--clock", "--rate"]
    remaps = command[command.index("--remap") + 1 :]
    # The bag's own outputs of these nodes (and its /clock) must not mix with the live ones.
    for topic in ("/clock", "/robot_1/grasp_state", "/robot_3/grasp_wrench"):
        assert f"{topic}:=/recorded{topic}" in remaps
    nodes = [a for a in started if type(a).__name__ == "Node"]
    assert nodes and all(node_parameters(a)["use_sim_time"] is True for a in nodes)


def node_parameters(node: Action) -> dict:
    """The parameters a launched node gets from its parameter file(s), by its full name."""
    fqn = f"{node.kwargs['namespace'].rstrip('/')}/{node.kwargs['executable']}"
    out = {}
    for entry in node.kwargs["parameters"]:
        data = yaml.safe_load(Path(entry).read_text())
        out |= data.get("/**", {}).get("ros__parameters", {})
        out |= data.get(fqn, {}).get("ros__parameters", {})
    return out


@pytest.mark.parametrize("launch_file", sorted(LAUNCHES))
def test_every_launch_file_has_the_standard_arguments(launch_file, monkeypatch):
    """namespace, use_sim_time, log_level and config, as a ROS 2 user expects of any launch
    file: the nodes go under the namespace with their parameters and the log level."""
    path = ROOT / "launch" / launch_file
    declared = {
        e.args[0]
        for e in description(path, monkeypatch)
        if type(e).__name__ == "DeclareLaunchArgument"
    }
    assert {"namespace", "use_sim_time", "log_level", "config"} <= declared
    arguments = {"config": LAUNCHES[launch_file][0], "bag": "runs/bag"}
    default = launch(path, monkeypatch, **arguments)
    namespace = "team_a"
    started = launch(
        path, monkeypatch, namespace=namespace, use_sim_time="true", log_level="debug", **arguments
    )
    ours = [a for a in started if type(a).__name__ == "Node" and a.kwargs["package"] == PACKAGE]
    plain = [a for a in default if type(a).__name__ == "Node" and a.kwargs["package"] == PACKAGE]
    prefix = f"/{namespace}" if namespace else ""
    assert ours and [a.kwargs["namespace"] for a in ours] == [
        (prefix + a.kwargs["namespace"].rstrip("/")) or "/" for a in plain
    ]
    for node in ours:
        check_node_parameters(node)
        assert node.kwargs["ros_arguments"] == ["--log-level", "debug"]
        if node.kwargs["executable"] != "sim_node":
            assert node_parameters(node)["use_sim_time"] is True


def rviz_topics(path: Path) -> list[str]:
    displays = yaml.safe_load(path.read_text())["Visualization Manager"]["Displays"]
    return [d["Topic"]["Value"] for d in displays if "Topic" in d]


def test_rviz_shows_topics_the_demo_graph_publishes():
    path = data_file("inertia_estimation.rviz", "rviz")
    config = yaml.safe_load(path.read_text())
    # REP-105: the fixed frame is the simulation's world, the root of its one TF tree (the
    # robots' and the estimate's frames hang below it; test_sim_tf.py, test_coordinator_node.py)
    root = {p.name: p.default for p in node_interface("sim_node").parameters}["world_frame"]
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == root == "world"
    sim_node = load_graph("sim_paper000.yaml").node("/sim_node").parameters
    assert sim_node.get("world_frame", root) == root and sim_node.get("publish_tf", True)
    topics = rviz_topics(path)
    assert "/coordinator_node/markers" in topics and "/robot_2/grasp_wrench" in topics
    missing = set(topics) - set(published_topics(load_graph("sim_paper000.yaml")))
    assert not missing, f"RViz shows topics no node of sim_paper000.yaml publishes: {missing}"


@pytest.mark.parametrize("team", ["", "team_a"])
def test_the_gazebo_launch_is_the_complete_graph(monkeypatch, team):
    """gz sim on the scenario's world, the bridge, a robot_state_publisher per robot and the
    estimation nodes: every topic the nodes need is bridged from the SDF's plugins with the
    type the node expects or published by a robot_state_publisher whose URDF has the robot
    node's frames and the SDF's joints; everything runs on the bridged /clock. Each robot's
    URDF root hangs from ``world`` at its SDF pose (REP-105). Under ``namespace:=team_a``
    every ROS topic but /clock moves into it, Gazebo's topics stay."""
    started = launch(ROOT / "launch" / "gazebo_estimation.launch.py", monkeypatch, namespace=team)
    kind = {type(a).__name__ for a in started}
    assert {"IncludeLaunchDescription", "SetEnvironmentVariable", "Node"} <= kind
    (gz,) = [a for a in started if type(a).__name__ == "IncludeLaunchDescription"]
    world = Path(dict(gz.kwargs["launch_arguments"])["gz_args"].split()[-1])
    assert world == ROOT / "gazebo" / "worlds" / "paper000_mocobots.sdf" and world.is_file()
    nodes = [a for a in started if type(a).__name__ == "Node"]
    (bridge,) = [a for a in nodes if a.kwargs["package"] == "ros_gz_bridge"]
    bridged = {
        e["ros_topic_name"]: e
        for e in yaml.safe_load(Path(bridge.kwargs["parameters"][0]["config_file"]).read_text())
    }
    assert bridged["/clock"]["direction"] == "GZ_TO_ROS"
    shipped = yaml.safe_load(
        (ROOT / "gazebo" / "config" / "paper000_mocobots_bridge.yaml").read_text()
    )
    prefix = f"/{team}" if team else ""
    assert sorted(bridged) == sorted(
        e["ros_topic_name"] if e["ros_topic_name"] == "/clock" else prefix + e["ros_topic_name"]
        for e in shipped
    )
    assert sorted(e["gz_topic_name"] for e in bridged.values()) == sorted(
        e["gz_topic_name"] for e in shipped
    )
    includes = {
        e.findtext("name"): e.findtext("pose").split()
        for e in ET.parse(world).getroot().iter("include")
    }
    statics = {
        a.kwargs["arguments"][-1]: a.kwargs["arguments"]
        for a in nodes
        if a.kwargs["package"] == "tf2_ros"
    }
    publishers = {
        a.kwargs["namespace"]: a for a in nodes if a.kwargs["package"] == "robot_state_publisher"
    }
    ours = [a for a in nodes if a.kwargs["package"] == PACKAGE]
    assert {a.kwargs["executable"] for a in ours} == {"robot_node", "coordinator_node"}
    interface = {t.name: t.type for t in node_interface("robot_node").subscribes}
    for node in (a for a in ours if a.kwargs["executable"] == "robot_node"):
        namespace, parameters = node.kwargs["namespace"], node_parameters(node)
        robot = namespace.rpartition("/")[2]
        assert parameters["use_sim_time"] is True
        assert parameters["wrench_source"] == "joint_efforts"  # joint states carry efforts
        joints = bridged[f"{namespace}/joint_states"]
        assert (joints["ros_type_name"], joints["direction"]) == (
            interface["joint_states"],
            "GZ_TO_ROS",
        )
        assert namespace == f"{prefix}/{robot}"
        rsp = publishers[namespace]  # robot_description, latched, in the robot's namespace
        static = statics[f"{robot}/home"]  # the URDF's root, at the robot's pose in the world
        assert static[:12] == [a for pair in zip(AXES, includes[robot], strict=True) for a in pair]
        assert static[12:14] == ["--frame-id", "world"]
        assert rsp.kwargs["parameters"][0]["use_sim_time"] is True
        urdf = ET.fromstring(rsp.kwargs["parameters"][0]["robot_description"])
        links = {e.get("name") for e in urdf.iter("link")}
        assert {f"{robot}/grasp", f"{robot}/home"} <= links  # the robot node's default frames
        moving = {e.get("name") for e in urdf.iter("joint") if e.get("type") != "fixed"}
        model = ET.parse(
            ROOT / "gazebo" / "models" / f"paper000_mocobots_{robot}" / "model.sdf"
        ).getroot()
        sdf_joints = {e.get("name") for e in model.iter("joint") if e.get("type") != "fixed"}
        assert moving == sdf_joints
        plugin_topics = {e.text for e in model.iter("topic")}
        assert joints["gz_topic_name"] in plugin_topics
    (coordinator,) = [a for a in ours if a.kwargs["executable"] == "coordinator_node"]
    assert node_parameters(coordinator)["robots"] == sorted(
        p.rpartition("/")[2] for p in publishers
    )
