"""The bag commands: ``--help`` that teaches; ``replay`` and ``record`` over DDS give back the
bag's messages (latched topics stay latched, a loop makes /clock jump back); ``estimate`` and
``report`` on a simulator bag print the estimate against the ground truth and write the
report; bad input is an error message, not a traceback."""

from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np
import pytest
import rclpy
from coordinator_graph import wait_for
from rclpy.context import Context
from rclpy.node import Node
from test_batched_input import statistics

from inertia_estimation_ros import cli
from inertia_estimation_ros.bags import BagWriter, bag_topics, latched_topics, read_bag
from inertia_estimation_ros.commands.estimate import bag_robots, estimate_bag
from inertia_estimation_ros.commands.report import PLOTS
from inertia_estimation_ros.msg import GraspStateArray
from inertia_estimation_ros.ros.bag_player import BagPlayer
from inertia_estimation_ros.ros.bag_recorder import BagRecorder
from inertia_estimation_ros.ros.conversions import seconds
from inertia_estimation_ros.ros.runtime import NodeGroup
from inertia_estimation_ros.sim.scenario import run_scenario
from inertia_estimation_ros.sim.topics import write_simulation_bag

COMMANDS = ("record", "replay", "estimate", "report", "demo", "simulate")
ARRAY_TYPE = "inertia_estimation_ros/msg/GraspStateArray"
REPLAYED = ["/robot_1/grasp_state", "/robot_2/grasp_state", "/robot_1/robot_description"]


@pytest.fixture(scope="module")
def simulator_bag(tmp_path_factory):
    """The short coordinator scenario (14.9 s, 100 Hz) as the simulator writes it."""
    path = tmp_path_factory.mktemp("sim") / "bag"
    write_simulation_bag(run_scenario("config/scenarios/test_coordinator.yaml"), path)
    return path


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_examples(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text or command == "simulate"
    assert len(text) > 400


def play_and_record(bag, out, rate: float, loop_passes: int = 1):
    """Replay ``REPLAYED`` of a bag (plus /clock) into a recorder, over DDS."""
    context = Context()
    rclpy.init(context=context)
    recorder = BagRecorder(out, ["/robot_*", "/clock"], context=context)
    group = NodeGroup([recorder], context, "single").start()  # see BagRecorder
    player_node = Node("player", context=context)
    player = BagPlayer(player_node, bag, REPLAYED, rate=rate, loop=loop_passes > 1)
    stop = threading.Event()

    def passes(_: float) -> None:
        if player.loops >= loop_passes:
            stop.set()

    try:
        assert wait_for(lambda: recorder.subscribed == {*REPLAYED, "/clock"}, 30.0)
        player.play(stop, passes)
        # the last messages in flight (reliable): wait until the recorder has them all
        assert wait_for(
            lambda: all(recorder.counts[t] >= n for t, n in player.published.items()), 60.0
        )
        time.sleep(0.5)  # /clock went out before them; its last messages with them
    finally:
        group.executor.shutdown()
        recorder.close()
        player_node.destroy_node()
        group.stop()
    return player


@pytest.mark.timeout(300)  # the module's simulation fixture counts on the first test
def test_replay_and_record_give_back_the_bag(simulator_bag, tmp_path):
    player = play_and_record(simulator_bag, tmp_path / "copy", rate=5.0)
    copy = tmp_path / "copy"
    assert set(bag_topics(copy)) == {*REPLAYED, "/clock"}
    assert latched_topics(copy) == {"/robot_1/robot_description"}
    recorded = Counter(m.topic for m in read_bag(copy, REPLAYED, deserialize="raw"))
    assert recorded == player.published  # reliable both ways: nothing lost
    original = [m.message for m in read_bag(simulator_bag, ["/robot_2/grasp_state"])]
    copied = [m.message for m in read_bag(copy, ["/robot_2/grasp_state"])]
    assert [seconds(m.header.stamp) for m in copied] == [seconds(m.header.stamp) for m in original]
    np.testing.assert_array_equal(copied[100].wrench_covariance, original[100].wrench_covariance)
    assert copied[100].twist.angular.y == original[100].twist.angular.y
    clock = [seconds(m.message.clock) for m in read_bag(copy, ["/clock"])]
    assert np.all(np.diff(clock) > 0) and clock[-1] - clock[0] > 14.0


@pytest.mark.timeout(300)  # the module's simulation fixture counts on the first test
def test_a_looping_replay_makes_the_clock_jump_back(simulator_bag, tmp_path):
    # 5x as above: at 15x (3000 messages/s into one recorder) a loaded machine lost some
    player = play_and_record(simulator_bag, tmp_path / "loop", rate=5.0, loop_passes=2)
    assert player.loops >= 2
    clock = [seconds(m.message.clock) for m in read_bag(tmp_path / "loop", ["/clock"])]
    assert (np.diff(clock) < -10.0).sum() == player.loops == 2  # into passes 2 and 3


@pytest.mark.timeout(300)  # the module's simulation fixture counts on the first test
def test_estimate_and_report_on_a_simulator_bag(simulator_bag, tmp_path, capsys):
    assert cli.main(["estimate", str(simulator_bag), "--report", str(tmp_path / "r1")]) == 0
    out = capsys.readouterr().out
    mass = next(line for line in out.splitlines() if line.startswith("mass [kg]"))
    estimate, sigma, truth, _, ratio = mass.split()[2:]
    assert float(estimate) == pytest.approx(float(truth), rel=1e-3) and float(ratio) < 5
    assert "stage DYNAMICS, physically consistent" in out
    assert "s of bag in" in out and "x real time" in out  # the speed, printed
    report = (tmp_path / "r1" / "report.md").read_text()
    assert "| mass [kg] |" in report and "Estimated offline" in report
    assert all((tmp_path / "r1" / plot).stat().st_size > 10_000 for plot in PLOTS)
    assert cli.main(["report", str(simulator_bag), "--out", str(tmp_path / "r2")]) == 0
    assert (tmp_path / "r2" / "report.md").read_text().splitlines()[4:] == report.splitlines()[4:]


def test_bad_input_is_an_error_message(simulator_bag, tmp_path, capsys):
    assert cli.main(["estimate", str(tmp_path / "nothing")]) == 2
    assert cli.main(["estimate", str(simulator_bag), "--robots", "robot_1", "robot_7"]) == 2
    assert "robots ['robot_7'] have no grasp_state" in capsys.readouterr().out
    assert cli.main(["replay", str(simulator_bag), "--graph", "no_such.yaml"]) == 2
    assert cli.main(["record", str(simulator_bag)]) == 2  # exists
    assert "exists" in capsys.readouterr().out


def batched(messages: list) -> GraspStateArray:
    """GraspStates of one robot as one GraspStateArray: the same numbers, copied."""
    first = messages[0]
    fields: dict[str, list] = {
        "position": [],
        "orientation": [],
        "twist": [],
        "twist_derivative": [],
        "wrench": [],
        "gravity": [],
    }
    for m in messages:
        p, q, v, a, w = m.pose.position, m.pose.orientation, m.twist, m.twist_derivative, m.wrench
        fields["position"] += [p.x, p.y, p.z]
        fields["orientation"] += [q.x, q.y, q.z, q.w]
        for name, halves in (
            ("twist", (v.linear, v.angular)),
            ("twist_derivative", (a.linear, a.angular)),
            ("wrench", (w.force, w.torque)),
        ):
            fields[name] += [x for half in halves for x in (half.x, half.y, half.z)]
        if m.has_gravity:
            fields["gravity"] += [m.gravity.x, m.gravity.y, m.gravity.z]
    return GraspStateArray(
        header=first.header,
        robot_id=first.robot_id,
        home_frame_id=first.home_frame_id,
        sec=[m.header.stamp.sec for m in messages],
        nanosec=[m.header.stamp.nanosec for m in messages],
        has_force=first.has_force,
        has_torque=first.has_torque,
        has_gravity=first.has_gravity,
        **fields,
    )


def test_estimate_reads_batched_bags_to_the_same_statistics(simulator_bag, tmp_path):
    """The simulator bag's grasp_state, 10 samples per GraspStateArray (logged with the last
    one; the rest at the end), gives the same statistics and final estimate, bit for bit (no
    solve before the last: a solve's robust weights depend on when it ran)."""
    topics = [f"/{r}/grasp_state" for r in bag_robots(simulator_bag)]
    pending: dict[str, list] = {t: [] for t in topics}
    last: dict[str, int] = {}
    with BagWriter(tmp_path / "batched") as writer:

        def flush(topic: str) -> None:
            array = batched(pending[topic])
            writer.write(f"{topic}_array", ARRAY_TYPE, last[topic], array)
            pending[topic] = []

        for message in read_bag(simulator_bag, topics, deserialize="rclpy"):
            pending[message.topic].append(message.message)
            last[message.topic] = message.timestamp
            if len(pending[message.topic]) == 10:
                flush(message.topic)
        for topic in topics:
            if pending[topic]:
                flush(topic)
    assert set(bag_topics(tmp_path / "batched")) == {f"{t}_array" for t in topics}
    single, batch = (estimate_bag(bag, period=1e9) for bag in (simulator_bag, writer.path))
    assert single.pipeline.accepted == batch.pipeline.accepted
    assert batch.pipeline.refusals() == [] and sum(batch.pipeline.dropped().values()) == 0
    for a, b in zip(statistics(single.pipeline), statistics(batch.pipeline), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(single.final.parameters, batch.final.parameters)
