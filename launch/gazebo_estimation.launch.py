"""Run a ground-team scenario in Gazebo (gz sim), bridged to the project's ROS 2 topics.

    ros2 launch inertia_estimation_ros gazebo_estimation.launch.py [scenario:=paper000_mocobots]
        [gui:=true]

Starts gz sim on ``share/inertia_estimation_ros/gazebo/worlds/<scenario>.sdf`` (its models
from ``gazebo/models``) and ``ros_gz_bridge`` with ``gazebo/config/<scenario>_bridge.yaml``:
``/clock``, ``/<id>/joint_states``, ``/<id>/ft_sensor``, ``/<id>/imu``, the joint set-points
``/<id>/<joint>/cmd_pos``, ``/human_wrench`` and ``/ground_truth/payload_pose``, the topics of
``inertia_estimation simulate``'s bags. Run the estimation nodes with ``use_sim_time:=true``.
Needs ``ros_gz_sim`` and ``ros_gz_bridge`` (a ROS 2 install with Gazebo; not pip-installable).
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
    ]


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
            OpaqueFunction(function=gazebo_and_bridge),
        ]
    )
