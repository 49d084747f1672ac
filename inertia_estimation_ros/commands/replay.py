"""``inertia_estimation replay``: publish a rosbag2 with /clock for nodes on use_sim_time."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="publish a rosbag2 with /clock, for nodes on use_sim_time",
        description=(
            "Publish a bag's messages at their log times (times --rate) and /clock from those "
            "times, so that nodes with use_sim_time run on the bag's time. The bag's own "
            "/clock is not replayed. With --loop the bag starts over and /clock jumps back "
            "(nodes restart cleanly). Latched topics (robot descriptions, estimates) are "
            "published latched."
        ),
        epilog=(
            "Simulator bags hold the raw driver topics AND the ready-made /<robot>/grasp_state. "
            "When robot nodes run beside the replay, they make their own grasp_state: give the "
            "graph with --graph to leave out every topic its nodes publish (the raw topics "
            "remain).\n\n"
            "examples:\n"
            "  inertia_estimation replay runs/paper000/bag                 # everything\n"
            "  inertia_estimation replay runs/paper000/bag --graph replay.yaml &\n"
            "  bringup replay.yaml --use-sim-time                # robot nodes + coordinator\n"
            "  inertia_estimation replay bag --topics '/*/grasp_state' --rate 4   # coordinator\n"
            "  inertia_estimation replay bag --loop --rate 2                      # forever"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bag", type=Path, help="rosbag2 folder")
    parser.add_argument("--rate", type=float, default=1.0, help="playback speed (default 1.0)")
    parser.add_argument("--loop", action="store_true", help="start over at the end, forever")
    parser.add_argument(
        "--topics", nargs="+", default=["*"], help="topic names or fnmatch patterns to play"
    )
    parser.add_argument("--exclude", nargs="+", default=[], help="patterns to leave out")
    parser.add_argument(
        "--graph",
        help="a graph config (config/*.yaml): leave out the topics its nodes publish",
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=1.0,
        help="seconds to wait before playing, for subscribers to connect (default 1)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import threading
    import time

    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions

    from ..bags import BagError
    from ..ros.bag_player import BagPlayer
    from ..ros.graph import GraphError, load_graph, published_topics

    exclude = list(args.exclude)
    try:
        if args.graph:
            exclude += published_topics(load_graph(args.graph))
    except GraphError as error:
        print(f"error: {error}")
        return 2
    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = Node("bag_player", context=context)
    try:
        player = BagPlayer(node, args.bag, args.topics, exclude, args.rate, args.loop)
        print(f"replaying {len(player.topics)} topics of {args.bag}: {', '.join(player.topics)}")
        stop = threading.Event()
        time.sleep(args.delay)
        player.play(stop)
    except (BagError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}")
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
    print(f"published {sum(player.published.values())} messages ({player.loops} passes)")
    return 0
