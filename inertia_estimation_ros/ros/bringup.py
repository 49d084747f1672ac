"""``bringup <config.yaml>``: run a config's graph with one command, without ``ros2 launch``.

The same graph from the same YAML as the launch files (``ros.graph``). By default every node
runs in this process on one ``MultiThreadedExecutor`` (``--executor single``: a
``SingleThreadedExecutor``); with ``--processes`` each node runs as its own executable, given
the config as its parameter file, as ``ros2 launch`` starts them.
Ctrl-C or SIGTERM stops the graph cleanly; so does a node that finishes (``sim_node`` with
``exit_when_done``) or, with ``--processes``, any child that exits.

In Python: ``start_graph(load_graph(path), context)`` returns the running ``NodeGroup``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import rclpy
from rclpy.context import Context
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

from .graph import Graph, GraphError, NodeSpec, load_graph
from .nodes import NODES, node_class
from .parameters import ParameterError
from .runtime import SHUTDOWN_TIMEOUT, NodeGroup, run_until_interrupted


def start_graph(graph: Graph, context: Context, executor: str = "multi") -> NodeGroup:
    """Construct every node of the graph in ``context`` and start spinning them (in a thread).

    A node that rejects its parameters raises ParameterError after the nodes built so far
    are destroyed."""
    nodes = []
    try:
        for spec in graph.nodes:
            overrides = [Parameter(name, value=value) for name, value in spec.parameters.items()]
            nodes.append(
                node_class(spec.executable)(
                    context=context,
                    namespace=spec.namespace,
                    parameter_overrides=overrides,
                    cli_args=["--ros-args", *remapping_arguments(spec)],
                    use_global_arguments=False,
                )
            )
    except BaseException:
        for node in nodes:
            node.destroy_node()
        raise
    return NodeGroup(nodes, context, executor).start()


def run_in_process(graph: Graph, executor: str = "multi") -> int:
    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        group = start_graph(graph, context, executor)
    except ParameterError as error:
        print(f"bringup: {error}", file=sys.stderr)
        rclpy.shutdown(context=context)
        return 2
    return run_until_interrupted(group)


def remapping_arguments(spec: NodeSpec) -> list[str]:
    """The node's remappings as ROS arguments: ``-r from:=to`` each."""
    return [a for source, target in spec.remappings for a in ("-r", f"{source}:={target}")]


def node_command(
    spec: NodeSpec, parameter_file: Path, use_sim_time: bool | None = None
) -> list[str]:
    """The command that runs one node as its own process with a parameter file keyed by full
    node names (the config itself, or ``Graph.parameter_file``) and its remappings."""
    command = [sys.executable, "-m", NODES[spec.executable][0], "--ros-args"]
    command += ["-r", f"__ns:={spec.namespace}", "--params-file", str(parameter_file)]
    if use_sim_time is not None and spec.executable != "sim_node":
        command += ["-p", f"use_sim_time:={str(use_sim_time).lower()}"]
    return command + remapping_arguments(spec)


def run_processes(graph: Graph) -> int:
    """Each node as a child process; the first child to exit (or Ctrl-C) ends them all."""
    package_root = str(Path(__file__).resolve().parents[2])  # children import this very code
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
    )
    with tempfile.TemporaryDirectory(prefix="bringup_") as folder:
        parameter_file = graph.parameter_file(folder)
        children = {
            spec.fqn: subprocess.Popen(node_command(spec, parameter_file), env=env)
            for spec in graph.nodes
        }
        return _wait(children)


def _wait(children: dict[str, subprocess.Popen]) -> int:
    code = 0
    try:
        while all(child.poll() is None for child in children.values()):
            time.sleep(0.1)
        fqn, child = next((f, c) for f, c in children.items() if c.poll() is not None)
        code = child.returncode
        print(f"bringup: {fqn} exited with code {code}; stopping the others", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        _stop(list(children.values()))
    return code


def _stop(children: list[subprocess.Popen]) -> None:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
    deadline = time.monotonic() + SHUTDOWN_TIMEOUT
    for child in children:
        try:
            child.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bringup",
        description=(
            "Run every node of a graph config (config/*.yaml: a ROS 2 parameter file keyed by "
            "fully qualified node names, e.g. /robot_1/robot_node) with one command: the same "
            "graph the launch files start. Ctrl-C stops it cleanly."
        ),
        epilog=(
            "examples:\n"
            "  bringup sim_test.yaml                 # a small simulation, in one process\n"
            "  bringup sim_paper000.yaml --processes # the demo's graph, one process per node\n"
            "  bringup replay.yaml --use-sim-time    # nodes for `inertia_estimation replay`\n"
            "  bringup team_example.yaml --check     # validate and list the graph only"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "config", help="graph YAML: a path, or a file name in the package's config/"
    )
    parser.add_argument(
        "--processes", action="store_true", help="run each node as its own child process"
    )
    parser.add_argument(
        "--executor",
        choices=["multi", "single"],  # the in-process graph's nodes are tested on these
        default="multi",
        help="rclpy executor of the in-process graph: MultiThreadedExecutor (default) or "
        "SingleThreadedExecutor (less CPU under Python's global interpreter lock)",
    )
    parser.add_argument(
        "--use-sim-time",
        action="store_const",
        const=True,
        help="set use_sim_time on every node but sim_node (e.g. to follow a replayed bag's /clock)",
    )
    parser.add_argument(
        "--namespace",
        default="",
        help="push every node into this namespace (e.g. team_a), as the launch files' argument",
    )
    parser.add_argument(
        "--check", action="store_true", help="check the config and list its nodes, run nothing"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        graph = load_graph(args.config, args.use_sim_time).under(args.namespace)
    except GraphError as error:
        print(f"bringup: {error}", file=sys.stderr)
        return 2
    print(f"bringup: {graph.path}: " + ", ".join(spec.fqn for spec in graph.nodes))
    if args.check:
        for spec in graph.nodes:
            remapped = "".join(f" {a}:={b}" for a, b in spec.remappings)
            print(f"  {spec.fqn}: {spec.parameters}{remapped}")
        return 0
    if args.processes:
        return run_processes(graph)
    return run_in_process(graph, args.executor)


if __name__ == "__main__":
    sys.exit(main())
