"""ros.graph and bringup: a config is checked before anything starts, with errors that say
what to change; the same graph runs in one process (either executor) or as child processes,
and ends with the simulation or on Ctrl-C, cleanly (hard timeouts, no timed assertions)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from inertia_estimation_ros.msg import GraspState
from inertia_estimation_ros.ros.bringup import node_command, start_graph
from inertia_estimation_ros.ros.graph import GraphError, load_graph
from inertia_estimation_ros.ros.interface import RELIABLE_QOS
from inertia_estimation_ros.ros.nodes.coordinator_node import GRASP_QOS
from inertia_estimation_ros.ros.nodes.robot_node import RobotNode
from inertia_estimation_ros.ros.spin import spin_until

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ("robot_1", "robot_2", "robot_3")
SAMPLES = 388  # test_graph.yaml: 390 samples per robot, the first and last have no neighbour


def config_file(tmp_path: Path, **sim_parameters) -> Path:
    """config/sim_test.yaml with some of the sim_node's parameters changed."""
    data = yaml.safe_load((ROOT / "config" / "sim_test.yaml").read_text())
    data["/sim_node"]["ros__parameters"].update(sim_parameters)
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# ----- the graph ------------------------------------------------------------------------------
def test_a_config_is_the_graph_of_the_nodes_it_names(tmp_path):
    graph = load_graph("sim_test.yaml")
    assert [s.fqn for s in graph.nodes] == ["/sim_node"] + [f"/{r}/robot_node" for r in ROBOTS]
    robot = graph.node("/robot_2/robot_node")
    assert (robot.executable, robot.namespace) == ("robot_node", "/robot_2")
    assert robot.parameters == {"use_sim_time": True, "has_torque": False, "cutoff_hz": 10.0}
    robots_only = tmp_path / "robots.yaml"
    robots_only.write_text("/robot_1/robot_node: {ros__parameters: {cutoff_hz: 2.0}}\n")
    assert load_graph(robots_only).nodes[0].parameters == {"cutoff_hz": 2.0}
    replayed = load_graph(robots_only, use_sim_time=True).nodes[0]
    assert replayed.parameters == {"cutoff_hz": 2.0, "use_sim_time": True}
    command = node_command(replayed, robots_only, use_sim_time=True)
    assert command[-4:] == ["--params-file", str(robots_only), "-p", "use_sim_time:=true"]
    assert "__ns:=/robot_1" in command


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/robot_1/arm_node: {ros__parameters: {}}", "no node 'arm_node' in this package"),
        ("robot_node: {ros__parameters: {}}", "is not a fully qualified node name"),
        ("/robot_1/robot_node: {parameters: {}}", "must hold ros__parameters"),
        ("/robot_1/robot_node: {ros__parameters: {cutoff: 5.0}}", "has no parameter 'cutoff'"),
        ("/robot_1/robot_node: {ros__parameters: {cutoff_hz: true}}", "expected a double"),
        ("/robot_1/robot_node: {ros__parameters: {cutoff_hz: -1.0}}", r"must be in \[0, 1000\]"),
        ("/robot_1/robot_node: {ros__parameters: {gravity: [0, 0, -9.8]}}", "mixing 1 and 1.0"),
        ("/robot_1/robot_node: {ros__parameters: {gravity: [0, 0, true]}}", "every element"),
        ("/robot_1/robot_node: {ros__parameters: {wrench_source: torque}}", "must be one of"),
        ("/sim_node: {ros__parameters: {}}\n/r/robot_node: {ros__parameters: {}}", "use_sim_time"),
        ("- just a list", "maps fully qualified node names to parameters"),
    ],
)
def test_a_config_that_cannot_run_is_refused_with_the_fix(tmp_path, text, message):
    path = tmp_path / "graph.yaml"
    path.write_text(text)
    with pytest.raises(GraphError, match=message):
        load_graph(path)


def test_integers_are_taken_for_doubles_by_the_graph_and_the_node(tmp_path, ros_context):
    """``cutoff_hz: 5`` and ``gravity: [0, 0, -10]`` (integers, as users write them) pass the
    graph's check, and the node started from the graph gets the floats."""
    path = tmp_path / "graph.yaml"
    path.write_text(
        "/robot_1/robot_node: {ros__parameters: {cutoff_hz: 5, gravity: [0, 0, -10]}}\n"
    )
    spec = load_graph(path).node("/robot_1/robot_node")
    assert spec.parameters == {"cutoff_hz": 5, "gravity": [0, 0, -10]}
    node = RobotNode(
        context=ros_context,
        namespace=spec.namespace,
        parameter_overrides=[Parameter(k, value=v) for k, v in spec.parameters.items()],
        use_global_arguments=False,
    )
    try:
        assert node.settings.cutoff_hz == 5.0 and isinstance(node.settings.cutoff_hz, float)
        assert node.settings.gravity_i0 == (0.0, 0.0, -10.0)
    finally:
        node.destroy_node()


def test_bringup_names_a_missing_config_and_checks_without_running(capsys):
    from inertia_estimation_ros.ros.bringup import main

    assert main(["no_such_graph.yaml"]) == 2
    assert "no file no_such_graph.yaml" in capsys.readouterr().err
    assert main(["sim_test.yaml", "--check"]) == 0
    assert "/robot_3/robot_node: {'use_sim_time': True" in capsys.readouterr().out


# ----- running graphs ---------------------------------------------------------------------------
class Probe:
    """A listener in the test process: GraspState counts per robot and the robot nodes'
    diagnostics."""

    def __init__(self, context: Context):
        self.node = Node("probe", context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.counts: Counter[str] = Counter()
        self.levels: dict[str, int] = {}
        self.published: Counter[str] = Counter()  # samples each node says it published
        for robot in ROBOTS:
            self.node.create_subscription(
                GraspState,
                f"/{robot}/grasp_state",
                lambda m: self.counts.update([m.robot_id]),
                GRASP_QOS,  # the coordinator's deep queue: a robot's replayed burst fits
            )
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._status, RELIABLE_QOS)

    def _status(self, msg: DiagnosticArray) -> None:
        self.levels.update({s.name: s.level for s in msg.status})
        for status in msg.status:
            published = [int(v.value) for v in status.values if v.key == "published"]
            self.published[status.name] = max(published + [self.published[status.name]])

    def kept_most(self) -> bool:
        """Whether each robot node published most of its samples: as counted here, or as it
        reports in its diagnostics (this probe may discover a child process's publisher late,
        and best-effort samples sent before are not for it)."""
        return all(
            max(self.counts[r], self.published[f"/{r}/robot_node"]) > SAMPLES // 2 for r in ROBOTS
        )

    def until(self, done, timeout: float) -> bool:
        return spin_until(self.executor, done, timeout)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


# [s] for a bringup of sim_test.yaml to end: each process imports rclpy, numpy and MuJoCo
# first; in a fresh-clone CI at load 25-38 the --processes run took more than 120 s
ENDS_WITHIN = 200.0


def run_bringup(ros_context, *arguments: str, interrupt: bool = False) -> tuple[int, str, Probe]:
    """Run bringup as a child process with a probe listening; with ``interrupt``, Ctrl-C it
    once every robot has published. Returns its exit code, its output and the probe."""
    command = [sys.executable, "-m", "inertia_estimation_ros.ros.bringup", *arguments]
    probe = Probe(ros_context)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if interrupt:
            assert probe.until(lambda: all(probe.counts[r] > 20 for r in ROBOTS), 90)
            process.send_signal(signal.SIGINT)
        if not probe.until(lambda: process.poll() is not None, ENDS_WITHIN):
            process.kill()
            pytest.fail(f"bringup did not end in {ENDS_WITHIN} s:\n{process.stdout.read()}")
        return process.returncode, process.stdout.read(), probe
    finally:
        if process.poll() is None:
            process.kill()
        probe.close()


def assert_clean(code: int, output: str) -> None:
    assert code == 0, output
    for trouble in ("Traceback", "never retrieved", "Error"):
        assert trouble not in output, output


@pytest.mark.timeout(300)
def test_bringup_runs_the_simulation_graph_to_its_end_in_one_process(ros_context):
    code, output, probe = run_bringup(ros_context, "sim_test.yaml")
    assert_clean(code, output)
    assert "scenario over: 3.9 s simulated" in output
    # Best-effort samples through a loaded 2-core machine: most arrive, all robots publish (as
    # the probe counts or as the nodes report: a fresh-clone CI's probe discovered all three
    # publishers late, 183 of 388 samples each, the whole early part).
    assert probe.kept_most(), (probe.counts, probe.published)
    assert {f"/{r}/robot_node" for r in ROBOTS} <= set(probe.levels)


@pytest.mark.timeout(300)
def test_bringup_runs_each_node_as_its_own_process(ros_context):
    code, output, probe = run_bringup(ros_context, "sim_test.yaml", "--processes")
    assert_clean(code, output)
    assert "/sim_node exited with code 0; stopping the others" in output
    assert probe.kept_most(), (probe.counts, probe.published)


@pytest.mark.timeout(300)
def test_ctrl_c_stops_the_graph_cleanly(ros_context, tmp_path):
    config = config_file(tmp_path, exit_when_done=False, real_time_factor=1.0)
    code, output, _ = run_bringup(ros_context, str(config), interrupt=True)
    assert_clean(code, output)
    assert "scenario over" not in output  # stopped mid-run


@pytest.mark.timeout(120)
def test_the_nodes_run_on_a_single_threaded_executor_too(tmp_path):
    """The node classes run in any executor: the graph on rclpy's SingleThreadedExecutor, with
    the simulation as fast as it goes, ends with it, and every robot node has published all."""
    context = Context()
    rclpy.init(context=context)
    config = config_file(tmp_path, real_time_factor=0.0)
    group = start_graph(load_graph(config), context, executor="single")
    try:
        assert group.wait(timeout=90), "the simulation did not end"
        robots = [n for n in group.nodes if n.get_name() == "robot_node"]
        assert len(robots) == 3, [n.signals.emitted for n in robots]
        assert all(n.signals.emitted == SAMPLES for n in robots), [
            n.signals.emitted for n in robots
        ]
        assert group.error is None
    finally:
        group.stop()
    assert not context.ok()
