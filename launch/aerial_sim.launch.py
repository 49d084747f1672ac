"""Aerial team in simulation: the sim_node flying paper 002's team (MuJoCo) and the aerial
coordinator (cable-tension UKFs, the human's wrench), optionally with RViz.

    ros2 launch inertia_estimation_ros aerial_sim.launch.py [config:=sim_aerial.yaml] [rviz:=true]

``config`` is a graph YAML (``ros/graph.py``; ``bringup sim_aerial.yaml`` runs the same graph
without ROS launch). The sim_node publishes /clock; every other node runs with use_sim_time.
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from inertia_estimation_ros.ros.graph import data_file, launch_graph
from launch import LaunchDescription

RVIZ_CONFIG = "aerial.rviz"


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
            *launch_graph("sim_aerial.yaml"),
            DeclareLaunchArgument(
                "rviz",
                default_value="false",
                description=f"true: start RViz with rviz/{RVIZ_CONFIG}",
            ),
            rviz,
        ]
    )
