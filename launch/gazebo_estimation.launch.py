"""Run a ground-team scenario in Gazebo (gz sim) with the whole estimation graph.

    ros2 launch inertia_estimation_ros gazebo_estimation.launch.py [scenario:=paper000_mocobots]
        [gui:=true] [config:=gazebo_paper000.yaml] [log_level:=info]

The graph: gz sim, ros_gz_bridge, one robot_state_publisher per robot of the graph config
(its URDF from ``gazebo/urdf/<scenario>_<robot>.urdf``: robot_description and the robots'
TF) and the config's nodes (robot nodes, coordinator), all on the simulation's /clock.

Starts gz sim on ``share/inertia_estimation_ros/gazebo/worlds/<scenario>.sdf`` (its models
from ``gazebo/models``) and ``ros_gz_bridge`` with ``gazebo/config/<scenario>_bridge.yaml``:
``/clock``, ``/<id>/joint_states``, ``/<id>/ft_sensor``, ``/<id>/imu``, the joint set-points
``/<id>/<joint>/cmd_pos``, ``/human_wrench`` and ``/ground_truth/payload_pose``, the topics of
``inertia_estimation simulate``'s bags. Needs ``ros_gz_sim`` and ``ros_gz_bridge`` (optional
dependencies: ``apt install ros-$ROS_DISTRO-ros-gz``; not pip-installable).
TF has the REP-105 root ``world``: ``tf2_ros``'s ``static_transform_publisher`` puts each
robot's URDF root (its home frame) at its pose in the world SDF, and robot_state_publisher
hangs its links below; the estimate's frames hang from the reference robot's grasp frame.
``namespace:=/team_a`` pushes the whole graph into a namespace: the bridge then gives its ROS
topics the prefix (``/team_a/robot_1/joint_states``; Gazebo's topics and the global
``/clock`` stay as they are), through a bridge YAML written at launch.
Regenerate the assets of another scenario with
``python -m inertia_estimation_ros.sim.gazebo <scenario.yaml> gazebo/``.
"""

import os
import tempfile
import xml.etree.ElementTree as ET

import yaml
from ament_index_python.packages import get_package_share_directory
from launch.actions import (
    DeclareLaunchArgument,
    IncludeLaunchDescription,
    OpaqueFunction,
    SetEnvironmentVariable,
)
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from inertia_estimation_ros.ros.graph import launch_graph, load_graph
from launch import LaunchContext, LaunchDescription

PACKAGE = "inertia_estimation_ros"


def gazebo_and_bridge(context: LaunchContext) -> list:
    share = os.path.join(get_package_share_directory(PACKAGE), "gazebo")
    scenario = LaunchConfiguration("scenario").perform(context)
    world = os.path.join(share, "worlds", f"{scenario}.sdf")
    bridge = os.path.join(share, "config", f"{scenario}_bridge.yaml")
    if not os.path.isfile(world) or not os.path.isfile(bridge):
        raise RuntimeError(
            f"no Gazebo assets for scenario {scenario!r} in {share}: generate them with "
            f"python -m inertia_estimation_ros.sim.gazebo config/scenarios/{scenario}.yaml gazebo/"
        )
    models = os.path.join(share, "models")
    resource_path = os.pathsep.join(
        p for p in (os.environ.get("GZ_SIM_RESOURCE_PATH"), models) if p
    )
    server_only = LaunchConfiguration("gui").perform(context).lower() != "true"
    gz_sim = os.path.join(get_package_share_directory("ros_gz_sim"), "launch", "gz_sim.launch.py")
    prefix = "/" + LaunchConfiguration("namespace").perform(context).strip("/")
    prefix = "" if prefix == "/" else prefix
    return [
        SetEnvironmentVariable("GZ_SIM_RESOURCE_PATH", resource_path),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(gz_sim),
            launch_arguments={"gz_args": f"-r {'-s ' if server_only else ''}{world}"}.items(),
        ),
        Node(
            package="ros_gz_bridge",
            executable="parameter_bridge",
            name="gazebo_bridge",
            namespace=prefix or "/",
            parameters=[{"config_file": bridge_under(bridge, prefix), "use_sim_time": True}],
            output="screen",
        ),
        *robots_tf(context, share, scenario, world, prefix),
    ]


def bridge_under(bridge: str, prefix: str) -> str:
    """The bridge YAML with every ROS topic but /clock under ``prefix`` (a new file), or the
    shipped one when there is no prefix."""
    if not prefix:
        return bridge
    entries = yaml.safe_load(open(bridge).read())
    for entry in entries:
        if entry["ros_topic_name"] != "/clock":
            entry["ros_topic_name"] = prefix + entry["ros_topic_name"]
    path = os.path.join(tempfile.mkdtemp(prefix="gazebo_bridge_"), os.path.basename(bridge))
    with open(path, "w") as out:
        yaml.safe_dump(entries, out, sort_keys=False)
    return path


def robots_tf(context: LaunchContext, share: str, scenario: str, world: str, prefix: str) -> list:
    """For every robot node of the graph config: robot_state_publisher in its namespace (the
    URDF: robot_description and the links' TF) and world -> its URDF root at the robot's pose
    in the world SDF (tf2_ros static_transform_publisher)."""
    graph = load_graph(LaunchConfiguration("config").perform(context))
    poses = {
        e.findtext("name"): e.findtext("pose", "0 0 0 0 0 0").split()
        for e in ET.parse(world).getroot().iter("include")
    }
    actions = []
    for spec in graph.nodes:
        if spec.executable != "robot_node":
            continue
        robot = spec.namespace.rpartition("/")[2]
        with open(os.path.join(share, "urdf", f"{scenario}_{robot}.urdf")) as urdf:
            description = urdf.read()
        actions.append(
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                namespace=prefix + spec.namespace,
                parameters=[{"robot_description": description, "use_sim_time": True}],
                output="screen",
            )
        )
        axes = ("--x", "--y", "--z", "--roll", "--pitch", "--yaw")
        root = urdf_root(description)
        actions.append(
            Node(
                package="tf2_ros",
                executable="static_transform_publisher",
                name=f"world_to_{robot}",
                namespace=prefix or "/",
                arguments=[
                    *(
                        a
                        for axis, value in zip(axes, poses[robot], strict=True)
                        for a in (axis, value)
                    ),
                    *("--frame-id", "world", "--child-frame-id", root),
                ],
                parameters=[{"use_sim_time": True}],
                output="screen",
            )
        )
    return actions


def urdf_root(description: str) -> str:
    """The URDF's root link: the one no joint has as its child."""
    robot = ET.fromstring(description)
    children = {j.find("child").get("link") for j in robot.iter("joint")}
    (root,) = [link.get("name") for link in robot.iter("link") if link.get("name") not in children]
    return root


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "scenario",
                default_value="paper000_mocobots",
                description="scenario name: gazebo/worlds/<scenario>.sdf and its bridge YAML",
            ),
            DeclareLaunchArgument(
                "gui", default_value="true", description="false: run the gz sim server only"
            ),
            *launch_graph("gazebo_paper000.yaml", use_sim_time=True),
            OpaqueFunction(function=gazebo_and_bridge),
        ]
    )
