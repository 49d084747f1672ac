"""Estimate live on a robot team (hardware): every node of a graph config.

    ros2 launch inertia_estimation_ros team_estimation.launch.py [config:=team_example.yaml]

``config`` is a graph YAML (a path, or a file name in the package's config/): a ROS 2 parameter
file keyed by fully qualified node names, e.g. /robot_1/robot_node (``ros/graph.py`` reads it;
``bringup <config>`` runs the same graph without ROS launch). The robots' drivers and
robot_state_publishers are yours to start; see config/team_example.yaml for what the nodes
subscribe to.
"""

from inertia_estimation_ros.ros.graph import launch_graph
from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(launch_graph("team_example.yaml"))
