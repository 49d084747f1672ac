"""Simulation and estimation: the sim_node, the robot nodes and the coordinator of a graph
config, optionally with RViz.

    ros2 launch inertia_estimation_ros sim_estimation.launch.py [config:=sim_paper000.yaml]
        [rviz:=true]

``config`` is a graph YAML (``ros/graph.py``; ``bringup <config>`` runs the same graph without
ROS launch). The sim_node publishes /clock; every other node runs with use_sim_time.
"""

from inertia_estimation_ros.ros.graph import launch_graph, launch_rviz
from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [*launch_graph("sim_paper000.yaml"), *launch_rviz("inertia_estimation.rviz")]
    )
