"""``inertia_estimation demo``: the main job, end to end with one command (``make demo``).

The graph of ``config/sim_paper000.yaml`` runs over DDS, each node as its own process (as
``bringup --processes`` and ``ros2 launch`` start them): ``sim_node`` on paper 000's preset
(by default ``paper000_demo.yaml``: the preset with shorter trials), faster than real time on
``/clock``, three ``robot_node``s and the ``coordinator_node``. This process records the bag
(``ros.bag_recorder``) and prints the progress (``ros.demo_monitor``). When the simulation
is over it asks the coordinator for a solve from scratch (``~/estimate_now``), stops the
graph, prints the estimate +- 1 sigma against the ground truth and writes the report.

``--collaborate`` (issue 14) runs ``config/sim_collaborate.yaml`` instead: the same team and
estimation protocol, then a person pulls a handle on the payload along a path while the
planner's admittance, fed by the coordinator's human-wrench estimate and model, moves the
reference that the robots follow. The demo freezes the estimate and enables the admittance
(``/coordinator_node/freeze``, ``/planner_node/enable``) when the ``collaborate`` phase
begins, and ends with how far the payload went with the person.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .lazy import lazy_module

yaml = lazy_module("yaml")  # loads on first use: a bad argument is answered first

if TYPE_CHECKING:
    from ..ros.demo_monitor import DemoMonitor

RECORDED = (
    "/*/grasp_state",
    "/*/joint_states",
    "/*/robot_description",
    "/payload_estimate",
    "/ground_truth/payload",
)
COLLABORATION = (
    "/external_wrench",
    "/ground_truth/human_wrench",
    "/ground_truth/payload_pose",
    "/planner_node/reference/pose",
)
PROGRESS_PERIOD = 5.0  # [s] wall clock between progress lines
STOP_TIMEOUT = 10.0  # [s] for a child to end after SIGTERM


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="the demo: simulation, three robot nodes and the coordinator over DDS",
        description=(
            "Run paper 000's team in MuJoCo (sim_node, faster than real time on /clock), one "
            "robot_node per robot and the coordinator_node, each in its own process, talking "
            "over DDS (config/sim_paper000.yaml). Prints the progress through the excitation "
            "phases, records the bag, and ends with the estimated grasp frames, mass, CoM and "
            "inertia +- 1 sigma against the ground truth, and a report folder."
        ),
        epilog=(
            "The default scenario, paper000_demo.yaml, is paper 000's preset with shorter "
            "trials (67.5 s instead of 310 s) so that the demo ends within 3 minutes on a "
            "2-core machine; --scenario paper000_mocobots.yaml runs the full protocol. "
            "--collaborate's paper000_collaborate.yaml has every estimation stage briefly "
            "(24 s), then the person's 8 s.\n\n"
            "examples:\n"
            "  inertia_estimation demo                       # writes runs/demo-<time>/\n"
            "  inertia_estimation demo --out runs/demo --real-time-factor 1.5\n"
            "  inertia_estimation demo --scenario paper000_mocobots.yaml\n\n"
            "output folder: bag/ (grasp states, joint states, robot descriptions, live "
            "estimates, ground truth), graph.yaml (the graph that ran), graph.log (the nodes' "
            "logs), report/ (report.md and plots)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="output folder (default runs/demo-<time>)")
    parser.add_argument(
        "--collaborate",
        action="store_true",
        help="then a person moves the payload with the team through the estimated model "
        "(defaults: --config sim_collaborate.yaml --scenario paper000_collaborate.yaml)",
    )
    parser.add_argument("--config", help="graph config (default sim_paper000.yaml)")
    parser.add_argument("--scenario", help="the sim_node's scenario (default paper000_demo.yaml)")
    parser.add_argument(
        "--real-time-factor",
        type=float,
        help="simulated seconds per wall-clock second (default: the config's)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="give up after this many seconds"
    )
    parser.set_defaults(run=run)


def demo_graph(args: argparse.Namespace, out: Path) -> Path:
    """The config with the demo's scenario (and real-time factor), written to out/graph.yaml
    and checked by ``ros.graph``."""
    from ..ros.graph import data_file, load_graph

    collaborate = getattr(args, "collaborate", False)
    args.config = args.config or ("sim_collaborate.yaml" if collaborate else "sim_paper000.yaml")
    args.scenario = args.scenario or (
        "paper000_collaborate.yaml" if collaborate else "paper000_demo.yaml"
    )
    data = yaml.safe_load(data_file(args.config, "config").read_text())
    sim = data["/sim_node"]["ros__parameters"]
    sim |= {"scenario": args.scenario, "exit_when_done": True, "wait_for_subscribers": True}
    if args.real_time_factor is not None:
        sim["real_time_factor"] = float(args.real_time_factor)
    path = out / "graph.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    load_graph(path)
    return path


def start_children(graph_path: Path, log: Path) -> dict[str, subprocess.Popen]:
    """Every node of the graph as its own process (``bringup.node_command``), logs to ``log``."""
    from ..ros.bringup import node_command
    from ..ros.graph import load_graph

    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
    )
    output = log.open("w")
    graph = load_graph(graph_path)
    parameters = graph.parameter_file(log.parent)  # without the remappings (given as -r)
    return {
        spec.fqn: subprocess.Popen(
            node_command(spec, parameters, None), env=env, stdout=output, stderr=subprocess.STDOUT
        )
        for spec in graph.nodes
    }


def stop_children(children: dict[str, subprocess.Popen]) -> None:
    """SIGTERM to every child still running (the nodes end cleanly on it; SIGINT may be
    ignored when the demo runs in the background), then wait (kill after STOP_TIMEOUT)."""
    for child in children.values():
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children.values():
        try:
            child.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def run(args: argparse.Namespace) -> int:
    from ..ros.graph import GraphError

    started = time.monotonic()
    out = args.out or Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S")
    if (out / "bag").exists():
        print(f"error: {out / 'bag'} exists; choose another --out")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    try:
        graph_path = demo_graph(args, out)
    except (GraphError, FileNotFoundError, KeyError) as error:
        print(f"error: {error}")
        return 2
    print(f"demo: {args.scenario} on the graph {args.config}; output in {out}/")
    recorded = RECORDED + (COLLABORATION if args.collaborate else ())
    try:
        monitor = run_graph(graph_path, out, recorded, started + args.timeout, args.collaborate)
    except KeyboardInterrupt:
        return 130
    if monitor is None:
        print(f"demo: no final estimate (see {out / 'graph.log'})")
        return 1
    code = _conclude(out, monitor, started)
    if args.collaborate:
        from .collaboration_summary import print_collaboration

        print_collaboration(out / "bag")
    return code


def run_graph(
    graph_path: Path,
    out: Path,
    recorded: Sequence[str],
    deadline: float,
    collaborate: bool = False,
) -> DemoMonitor | None:
    """Run a simulation graph (its nodes as processes, logs in out/graph.log) while recording
    ``recorded`` topics to out/bag and printing progress; once the simulation is over, ask
    the coordinator for its final solve (``collaborate``: enable the planner's admittance when
    the ``collaborate`` phase begins). Returns the monitor (estimates, ground truth), or
    None when a node failed, time ran out or no final estimate came."""
    import rclpy
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions

    from ..ros.bag_recorder import BagRecorder
    from ..ros.demo_monitor import DemoMonitor
    from ..ros.runtime import NodeGroup

    context = Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    sim_time = [Parameter("use_sim_time", value=True)]
    recorder = BagRecorder(out / "bag", recorded, context=context, parameter_overrides=sim_time)
    monitor = DemoMonitor(context=context)
    group = NodeGroup([recorder, monitor], context, "single").start()  # see BagRecorder
    children = start_children(graph_path, out / "graph.log")
    final = None
    try:
        if _follow(children, monitor, deadline, collaborate) == 0:
            final = _final_estimate(monitor)
    finally:
        stop_children(children)
        group.executor.shutdown()
        recorder.close()
        group.stop()
    return monitor if final is not None else None


def _follow(children: dict, monitor: DemoMonitor, deadline: float, collaborate: bool) -> int:
    """Print progress until the simulation node ends; 0, or the code of a failed child."""
    sim = children["/sim_node"]
    last_line, phase = 0.0, ""
    while sim.poll() is None:
        if collaborate and "collaborate" in monitor.phase:
            collaborate = False
            answer = monitor.enable_admittance(timeout=30.0)
            print(f"  /planner_node/enable: {answer.message}", flush=True)
        failed = [f for f, c in children.items() if c.poll() not in (None, 0)]
        if failed:
            print(f"demo: {failed[0]} exited with code {children[failed[0]].returncode}")
            return 1
        if time.monotonic() > deadline:
            print("demo: timed out")
            return 1
        now = time.monotonic()
        if monitor.phase != phase or now - last_line >= PROGRESS_PERIOD:
            phase, last_line = monitor.phase, now
            print(f"  {monitor.line()}", flush=True)
        time.sleep(0.2)
    return sim.returncode


def _final_estimate(monitor: DemoMonitor) -> object:
    """The coordinator's solve from scratch on all the data (its ``~/estimate_now``)."""
    monitor.new_estimate.clear()
    response = monitor.estimate_now(timeout=60.0)
    if response is None:
        print("demo: the coordinator did not answer ~/estimate_now")
        return None
    monitor.new_estimate.wait(10.0)
    print(f"  final: {response.message}")
    return monitor.estimates[-1] if monitor.estimates else None


def _conclude(out: Path, monitor: DemoMonitor, started: float) -> int:
    from .estimate import BagRun, bag_robots
    from .report import comparison_table, write_report

    final = monitor.estimates[-1]
    print()
    print("Estimate (live coordinator, +- 1 sigma) against the simulator's ground truth:")
    print(comparison_table(final, monitor.truth))
    bag = out / "bag"
    run = BagRun(
        robots=bag_robots(bag),
        reference=final.reference_robot_id,
        final=final,
        history=monitor.estimates,
        truth=monitor.truth,
        source="live",
    )
    report = write_report(out / "report", run, bag)
    print(f"\nbag: {bag}\nreport: {report}")
    print(f"demo finished in {time.monotonic() - started:.0f} s")
    return 0
