"""Simulation and estimation: the sim_node, the robot nodes and the coordinator of a graph
config, optionally with RViz.

    ros2 launch inertia_estimation_ros sim_estimation.launch.py [config:=sim_paper000.yaml]
        [rviz:=true]

``config`` is a graph YAML (``ros/graph.py``; ``bringup <config>`` runs the same graph without
ROS launch). The sim_node publishes /clock; every other node runs with use_sim_time.
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from inertia_estimation_ros.ros.graph import data_file, launch_graph
from launch import LaunchDescription

RVIZ_CONFIG = "inertia_estimation.rviz"


def generate_launch_description() -> LaunchDescription:
    rviz = Node(
        package="rviz2",
        executable="rviz2",
        arguments=["-d", str(data_file(RVIZ_CONFIG, "rviz"))],
        parameters=[{"use_sim_time": True}],
        condition=IfCondition(LaunchConfiguration("rviz")),
    )
    return LaunchDescription(
        [
            *launch_graph("sim_paper000.yaml"),
            DeclareLaunchArgument(
                "rviz",
                default_value="false",
                description=f"true: start RViz with rviz/{RVIZ_CONFIG}",
            ),
            rviz,
        ]
    )
