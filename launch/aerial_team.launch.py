"""Aerial team on hardware: the aerial coordinator of a graph config (mocap, ESC topic names and
the team description are its parameters).

    ros2 launch inertia_estimation_ros aerial_team.launch.py [config:=aerial_team_example.yaml]

``config`` is a graph YAML (a path, or a file name in the package's config/); ``bringup
<config>`` runs the same graph without ROS launch. The mocap bridge and the flight controllers
are yours to start; config/aerial_team_example.yaml says what the coordinator subscribes to.
"""

from inertia_estimation_ros.ros.graph import launch_graph
from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(launch_graph("aerial_team_example.yaml"))
