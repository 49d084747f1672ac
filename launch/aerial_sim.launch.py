"""Aerial team in simulation: the sim_node flying paper 002's team (MuJoCo) and the aerial
coordinator (cable-tension UKFs, the human's wrench), optionally with RViz.

    ros2 launch inertia_estimation_ros aerial_sim.launch.py [config:=sim_aerial.yaml] [rviz:=true]

``config`` is a graph YAML (``ros/graph.py``; ``bringup sim_aerial.yaml`` runs the same graph
without ROS launch). The sim_node publishes /clock; every other node runs with use_sim_time.
"""

from inertia_estimation_ros.ros.graph import launch_graph, launch_rviz
from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([*launch_graph("sim_aerial.yaml"), *launch_rviz("aerial.rviz")])
