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
dependencies: ``apt install ros-$ROS_DISTRO-ros-gz``; not pip-installable). The bridge's topics
are absolute, so ``namespace`` must stay empty here.
Regenerate the assets of another scenario with
``python -m inertia_estimation_ros.sim.gazebo <scenario.yaml> gazebo/``.
"""

import os

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

from inertia_estimation_ros.ros.graph import GraphError, launch_graph, load_graph
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
    if LaunchConfiguration("namespace").perform(context).strip("/"):
        raise GraphError(
            "gazebo_estimation.launch.py: the bridge's topics are absolute; no namespace"
        )
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
            parameters=[{"config_file": bridge, "use_sim_time": True}],
            output="screen",
        ),
        *robot_state_publishers(context, share, scenario),
    ]


def robot_state_publishers(context: LaunchContext, share: str, scenario: str) -> list:
    """robot_state_publisher for every robot node of the graph config, in its namespace."""
    graph = load_graph(LaunchConfiguration("config").perform(context))
    publishers = []
    for spec in graph.nodes:
        if spec.executable != "robot_node":
            continue
        robot = spec.namespace.rpartition("/")[2]
        with open(os.path.join(share, "urdf", f"{scenario}_{robot}.urdf")) as urdf:
            description = urdf.read()
        publishers.append(
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                namespace=spec.namespace,
                parameters=[{"robot_description": description, "use_sim_time": True}],
                output="screen",
            )
        )
    return publishers


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
