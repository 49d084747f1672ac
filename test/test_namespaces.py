"""Namespaces and remapping as a ROS 2 user deploys the graph: two teams under /team_a and
/team_b in one ROS graph estimate independently, a robot's id is the last part of its
namespace, and an F/T driver on ``force_torque_sensor_broadcaster/wrench`` works by a
remapping in the graph config alone (real rclpy over DDS; hard timeouts, no timed asserts)."""

from __future__ import annotations

import copy
import time
from pathlib import Path

import numpy as np
import pytest
import rclpy
import yaml
from coordinator_data import ROBOTS, team_session
from coordinator_graph import TeamPublisher, accepted_instants, start, wait_for
from geometry_msgs.msg import WrenchStamped
from rclpy.context import Context
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from test_robot_node import ft_reading, gimbals, joint_state  # noqa: F401 (a fixture)

from inertia_estimation_ros.msg import GraspState, PayloadEstimate
from inertia_estimation_ros.ros.bringup import main, start_graph
from inertia_estimation_ros.ros.conversions import grasp_sample, to_grasp_state
from inertia_estimation_ros.ros.graph import GraphError, load_graph
from inertia_estimation_ros.ros.interface import LATCHED_QOS, SENSOR_QOS
from inertia_estimation_ros.sim import analytic as an

FT_DRIVER = "force_torque_sensor_broadcaster/wrench"


def write(tmp_path: Path, graph: dict) -> Path:
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(graph))
    return path


def own_context() -> Context:
    """Each team's graph (and the test's observers) in a context of its own, as in a process
    of its own; stopping its NodeGroup shuts it down."""
    context = Context()
    rclpy.init(context=context)
    return context


def team_streams(force_scale: float) -> list[dict[str, GraspState]]:
    """Per instant, every robot's exact GraspState; the wrenches times ``force_scale`` are
    those of a payload ``force_scale`` times as heavy (the wrench is linear in the inertial
    parameters), moved along the same path."""
    _, _, series = team_session(offsets=False, statics=True)
    instants = []
    for k in range(len(series["robot_1"])):
        instant = {}
        for r in ROBOTS:
            msg = copy.deepcopy(to_grasp_state(series[r].sample(k), f"{r}/grasp", f"{r}/home"))
            for part in (msg.wrench.force, msg.wrench.torque):
                part.x, part.y, part.z = (force_scale * v for v in (part.x, part.y, part.z))
            instant[r] = msg
        instants.append(instant)
    return instants


@pytest.mark.timeout(240)
def test_two_teams_under_their_namespaces_estimate_independently(tmp_path):
    config = write(
        tmp_path,
        {
            "/coordinator_node": {
                "ros__parameters": {
                    "robots": list(ROBOTS),
                    "reference_robot": "robot_1",
                    "estimate_period": 0.2,
                }
            }
        },
    )
    graph = load_graph(config)
    teams = {"/team_a": 1.0, "/team_b": 2.0}
    estimates: dict[str, list[PayloadEstimate]] = {team: [] for team in teams}
    context = own_context()
    listener = Node("listener", context=context)
    for team in teams:
        listener.create_subscription(
            PayloadEstimate, f"{team}/payload_estimate", estimates[team].append, LATCHED_QOS
        )
    # Each coordinator on a single-threaded executor, as its executable runs it: beside the
    # worker and solver threads, a multi-threaded executor's spinning threads took the GIL
    # at every small array copy numpy 1.26 makes (docs/throughput.md).
    groups = [start_graph(graph.under(team), own_context(), "single") for team in teams]
    assert [n.get_fully_qualified_name() for g in groups for n in g.nodes] == [
        "/team_a/coordinator_node",
        "/team_b/coordinator_node",
    ]
    node = Node("teams", context=context)
    spinner = start(context, listener, node)
    # One pass per team, as fast as its coordinator takes it (a starved process slows the
    # streams, never cuts them).
    streams = {team: team_streams(scale) for team, scale in teams.items()}
    publishers = [
        TeamPublisher(
            node,
            streams[team],
            prefix=team,
            consumed=accepted_instants(coordinator, streams[team]),
        )
        for team, (coordinator,) in zip(teams, [g.nodes for g in groups], strict=True)
    ]
    for publisher in publishers:
        publisher.start()
    mass = an.paper_payload().mass
    try:
        assert wait_for(lambda: all(p.published == len(p.messages) for p in publishers), 120)
        assert wait_for(lambda: all(e and e[-1].mass_valid for e in estimates.values()), 30), {
            t: [m.stage for m in e[-1:]] for t, e in estimates.items()
        }
        for team, scale in teams.items():
            assert estimates[team][-1].inertia.m == pytest.approx(scale * mass, rel=0.02)
    finally:
        for publisher in publishers:
            publisher.join()
        for group in groups:
            group.stop()
        spinner.stop()


def test_the_graph_config_carries_remappings_and_checks_them(tmp_path, capsys):
    body = {"ros__parameters": {"has_torque": False}, "remappings": {"ft_sensor": FT_DRIVER}}
    config = write(tmp_path, {"/robot_1/robot_node": body})
    (spec,) = load_graph(config).under("team_a").nodes
    assert (spec.fqn, spec.remappings) == (
        "/team_a/robot_1/robot_node",
        (("ft_sensor", FT_DRIVER),),
    )
    parameters = yaml.safe_load(
        load_graph(config).under("/team_a").parameter_file(tmp_path).read_text()
    )
    assert parameters == {"/team_a/robot_1/robot_node": {"ros__parameters": {"has_torque": False}}}
    assert main([str(config), "--namespace", "team_a", "--check"]) == 0
    assert f"/team_a/robot_1/robot_node: {{'has_torque': False}} ft_sensor:={FT_DRIVER}" in (
        capsys.readouterr().out
    )
    body["remappings"] = {"ft_sensr": FT_DRIVER}
    with pytest.raises(GraphError, match="remaps 'ft_sensr', which is none of its topics"):
        load_graph(write(tmp_path, {"/robot_1/robot_node": body}))
    body["remappings"] = [FT_DRIVER]
    with pytest.raises(GraphError, match="remappings must map topic names to topic names"):
        load_graph(write(tmp_path, {"/robot_1/robot_node": body}))


@pytest.mark.timeout(120)
def test_an_ft_driver_on_its_own_topic_works_by_remapping_alone(tmp_path, gimbals):  # noqa: F811
    """A robot_node under /team_a/robot_2 (its id: robot_2) whose F/T driver publishes on
    force_torque_sensor_broadcaster/wrench: the config's remapping is all it takes."""
    rid = "robot_2"
    record = gimbals.robots[rid]
    body = {
        "ros__parameters": {"has_torque": False, "cutoff_hz": 0.0, "rate_hz": 0.0},
        "remappings": {"ft_sensor": FT_DRIVER},
    }
    graph = load_graph(write(tmp_path, {f"/{rid}/robot_node": body})).under("/team_a")
    (group,) = [start_graph(graph, own_context(), "multi")]
    context = own_context()
    driver = Node("driver", namespace=f"/team_a/{rid}", context=context)
    out: list[GraspState] = []
    driver.create_subscription(GraspState, "grasp_state", out.append, SENSOR_QOS)
    publish = {
        "robot_description": driver.create_publisher(String, "robot_description", LATCHED_QOS),
        "joint_states": driver.create_publisher(JointState, "joint_states", SENSOR_QOS),
        "wrench": driver.create_publisher(WrenchStamped, FT_DRIVER, SENSOR_QOS),
    }
    spinner = start(context, driver)
    try:
        assert wait_for(lambda: publish["wrench"].get_subscription_count() == 1, 30)
        assert wait_for(lambda: publish["joint_states"].get_subscription_count() == 1, 30)
        publish["robot_description"].publish(String(data=record.urdf))
        (node,) = group.nodes
        assert wait_for(lambda: node.signals.kinematics is not None, 30)
        # Best-effort samples sent right after discovery are lost until both of the node's
        # readers have matched (38 grasp states, fewer than 10 with forces, seen once): stream
        # until ten with forces came out, at most the whole record.
        for k in range(len(record.stamp)):
            publish["joint_states"].publish(joint_state(record, k))
            publish["wrench"].publish(ft_reading(record, k))
            time.sleep(0.005)
            if sum(m.has_force for m in out) >= 10:
                break
        assert wait_for(lambda: sum(m.has_force for m in out) >= 10, 30), len(out)
        measured = [m for m in out if m.has_force]
        assert {m.robot_id for m in measured} == {rid}
        truth = gimbals.ground_truth.grasps[rid]
        sample = grasp_sample(measured[-1])
        (i,) = np.flatnonzero(np.isclose(truth.t, sample.stamp, atol=1e-6))
        np.testing.assert_allclose(sample.F_i[3:], truth.F_i[i, 3:], atol=1e-9)
    finally:
        spinner.stop()
        group.stop()
