"""The robust balancing planner (paper 004) beside a running estimator.

    ros2 launch inertia_estimation_ros balancing_planner.launch.py [config:=balancing_planner.yaml]

``config`` is a graph YAML (a path, or a file name in the package's config/) holding the
``/planner_node`` parameters: the object on the tray, where the tray frame sits in the
estimate's frame, the horizon. Goals go to /planner_node/goal; certified trajectories come
out on /planner_node/trajectory (``bringup balancing_planner.yaml`` runs it without launch).
"""

from inertia_estimation_ros.ros.graph import launch_graph
from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(launch_graph("balancing_planner.yaml"))
