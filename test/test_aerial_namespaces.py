"""Two aerial teams under /team_a and /team_b in one ROS graph (as test_namespaces.py does for
the ground coordinator): each ``aerial_coordinator_node`` started by the pip bringup from one
graph config pushed into its namespace reads only its own team's topics and publishes under
its namespace (real rclpy over DDS; hard timeouts, no timed asserts)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from aerial_feed import onboard_team
from coordinator_graph import start, wait_for
from rclpy.node import Node
from test_namespaces import own_context, write

from inertia_estimation_ros.core.aerial.allocation import E3, GRAVITY, CableAllocation
from inertia_estimation_ros.msg import CableTensions, ExternalWrench
from inertia_estimation_ros.ros.bringup import start_graph
from inertia_estimation_ros.ros.conversions import wrench_vector
from inertia_estimation_ros.ros.graph import data_file, load_graph
from inertia_estimation_ros.ros.interface import RELIABLE_QOS

ROBOTS = ["robot_1", "robot_2", "robot_3"]
# team_b's cables hold 0.5 N more than the weight: a person pushes its payload down.
EXTRA_LIFT = {"/team_a": 0.0, "/team_b": 0.5}


def _tension_vectors(extra_lift: float) -> np.ndarray:
    document = yaml.safe_load(data_file("aerial_team_paper002.yaml", "config").read_text())
    rho = np.array(document["payload"]["attach_points"])
    wrench = np.concatenate([(0.278 * GRAVITY + extra_lift) * E3, np.zeros(3)])
    return CableAllocation(rho).solve(np.eye(3), wrench).reshape(3, 3)


@pytest.mark.timeout(120)
def test_two_aerial_teams_under_their_namespaces_estimate_independently(tmp_path):
    """team_a's robots report tensions that balance the weight, team_b's 0.5 N more: team_a's
    wrench is zero with no contact, team_b's is a 0.5 N push down (F_z = -0.5 N) with
    contact, each on its own /team_x/human_wrench_estimate and /team_x/cable_tensions."""
    parameters = {
        "robots": ROBOTS,
        "team_description": "aerial_team_paper002.yaml",
        "tension_source": "onboard",
        "mocap_timeout": 1.0,
        "identification": "off",
    }
    graph = load_graph(
        write(tmp_path, {"/aerial_coordinator_node": {"ros__parameters": parameters}})
    )
    groups = [start_graph(graph.under(team), own_context(), "single") for team in EXTRA_LIFT]
    assert [n.get_fully_qualified_name() for g in groups for n in g.nodes] == [
        "/team_a/aerial_coordinator_node",
        "/team_b/aerial_coordinator_node",
    ]
    context = own_context()
    node = Node("teams", context=context)
    wrenches: dict[str, list[ExternalWrench]] = {team: [] for team in EXTRA_LIFT}
    tensions: dict[str, list[CableTensions]] = {team: [] for team in EXTRA_LIFT}
    for team, lift in EXTRA_LIFT.items():
        node.create_subscription(
            ExternalWrench, f"{team}/human_wrench_estimate", wrenches[team].append, RELIABLE_QOS
        )
        node.create_subscription(
            CableTensions, f"{team}/cable_tensions", tensions[team].append, RELIABLE_QOS
        )
        onboard_team(node, team, ROBOTS, _tension_vectors(lift))
    spinner = start(context, node)
    try:
        assert wait_for(lambda: all(len(w) > 10 for w in wrenches.values()), 90), {
            t: len(w) for t, w in wrenches.items()
        }
    finally:
        spinner.stop()
        for group in groups:
            group.stop()
    quiet, pushed = wrenches["/team_a"][-1], wrenches["/team_b"][-1]
    assert not quiet.contact and pushed.contact
    np.testing.assert_allclose(wrench_vector(quiet.wrench), 0.0, atol=1e-9)
    np.testing.assert_allclose(wrench_vector(pushed.wrench)[3:], [0.0, 0.0, -0.5], atol=1e-9)
    for team, lift in EXTRA_LIFT.items():
        total = np.sum(tensions[team][-1].tensions)
        assert total == pytest.approx(np.linalg.norm(_tension_vectors(lift), axis=1).sum())


def test_the_onboard_example_graph_starts_a_coordinator_and_a_node_per_robot():
    """config/aerial_team_onboard_example.yaml: the coordinator (tension_source onboard) and
    /robot_k/aerial_robot_node, each robot's mocap remapped to the mocap bridge's topics."""
    graph = load_graph(data_file("aerial_team_onboard_example.yaml", "config"))
    group = start_graph(graph, own_context(), "single")
    try:
        names = [n.get_fully_qualified_name() for n in group.nodes]
        assert names == ["/aerial_coordinator_node"] + [
            f"/{rid}/aerial_robot_node" for rid in ROBOTS
        ]
        assert [n.robot_id for n in group.nodes[1:]] == ROBOTS
        subscribed = {
            topic
            for topic, _ in group.nodes[1].get_subscriber_names_and_types_by_node(
                "aerial_robot_node", "/robot_1"
            )
        }
        assert "/vrpn_client_node/robot_1/pose" in subscribed, subscribed
    finally:
        group.stop()
