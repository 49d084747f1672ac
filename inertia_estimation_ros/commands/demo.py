"""``inertia_estimation demo``: the main job, run end to end with one command."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the demo: robot nodes and a coordinator exchanging messages over DDS",
        description=(
            "Start a robot-team publisher in a child process and a coordinator in this one; "
            "they exchange GraspState and PayloadEstimate messages over DDS, and the "
            "coordinator prints what it received."
        ),
    )
    parser.add_argument("--robots", type=int, default=3, help="number of robots (default 3)")
    parser.add_argument("--samples", type=int, default=100, help="samples per robot (default 100)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..ros.demo_exchange import run_demo

    return run_demo(robots=args.robots, samples=args.samples)
