"""Re-process a recorded bag: ``ros2 bag play <bag> --clock`` and the nodes of a graph config,
all on the bag's time (use_sim_time).

    ros2 launch inertia_estimation_ros replay.launch.py bag:=runs/paper000/bag
        [config:=replay.yaml] [rate:=1.0]

The player publishes /clock from the bag's log time. Topics the graph's own nodes publish
(each robot's grasp_state, ..., and a recorded /clock) are replayed under /recorded/... so
that they do not mix with the live ones. Without ROS: ``inertia_estimation replay <bag>
--graph replay.yaml`` (which leaves those topics out) with ``bringup replay.yaml --use-sim-time``.
"""

from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction
from launch.substitutions import LaunchConfiguration

from inertia_estimation_ros.ros.graph import launch_graph, load_graph, published_topics
from launch import LaunchContext, LaunchDescription


def player(context: LaunchContext) -> list:
    config = LaunchConfiguration("config").perform(context)
    topics = ["/clock", *published_topics(load_graph(config, use_sim_time=True))]
    play = ["ros2", "bag", "play", LaunchConfiguration("bag").perform(context), "--clock"]
    play += ["--rate", LaunchConfiguration("rate").perform(context)]
    play += ["--remap", *(f"{topic}:=/recorded{topic}" for topic in topics)]
    return [ExecuteProcess(cmd=play, output="screen")]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument("bag", description="the rosbag2 folder to replay"),
            DeclareLaunchArgument("rate", default_value="1.0", description="playback rate"),
            *launch_graph("replay.yaml", use_sim_time=True),
            OpaqueFunction(function=player),
        ]
    )
