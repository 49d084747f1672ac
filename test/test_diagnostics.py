"""diagnostic_updater's conventions in the coordinator's /diagnostics: "<node>: <item>" names,
hardware_id per robot, every status grouped by exactly one analyzer of
config/diagnostic_aggregator.yaml (GenericAnalyzer's matching rules); and a worker error that
repeats every cycle is logged once, with what to do, not once per cycle."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from coordinator_graph import wait_for
from rclpy.parameter import Parameter

from inertia_estimation_ros.ros.nodes.coordinator_node import CoordinatorNode
from inertia_estimation_ros.ros.runtime import NodeGroup

ROBOTS = ["robot_1", "robot_2", "robot_3"]
AGGREGATOR = Path(__file__).resolve().parents[1] / "config" / "diagnostic_aggregator.yaml"


def matches(analyzer: dict, name: str) -> bool:
    """diagnostic_aggregator's GenericAnalyzer: a status belongs to it if its name equals one of
    ``name``/``expected``, starts with one of ``startswith``, contains one of ``contains``, or
    matches one of ``regex``."""

    def listed(key: str) -> list[str]:
        value = analyzer.get(key, [])
        return [value] if isinstance(value, str) else list(value)

    return (
        name in listed("name") + listed("expected")
        or any(name.startswith(s) for s in listed("startswith"))
        or any(s in name for s in listed("contains"))
        or any(re.search(r, name) for r in listed("regex"))
    )


def analyzers() -> dict[str, dict]:
    params = yaml.safe_load(AGGREGATOR.read_text())["analyzers"]["ros__parameters"]
    found = {k: v for k, v in params.items() if isinstance(v, dict)}
    assert all(v["type"] == "diagnostic_aggregator/GenericAnalyzer" for v in found.values())
    return found


def test_every_status_has_its_hardware_and_exactly_one_analyzer(ros_context):
    node = CoordinatorNode(
        context=ros_context,
        namespace="team_a",
        parameter_overrides=[Parameter("robots", value=ROBOTS)],
    )
    statuses = [node._status(node._staleness(s)) for s in node.pipeline.status()]
    statuses.append(node._status(node._worker_status()))
    node.destroy_node()
    names = {s.name: s.hardware_id for s in statuses}
    assert names == {
        **{f"/team_a/coordinator_node: {r}": r for r in ROBOTS},
        "/team_a/coordinator_node: estimate": "/team_a/coordinator_node",
        "/team_a/coordinator_node: worker": "/team_a/coordinator_node",
    }
    others = ["/robot_1/robot_node", "/team_a/robot_2/robot_node", "/sim_node"]
    groups = analyzers()
    for name in [*names, *others]:
        assert [k for k, a in groups.items() if matches(a, name)] in (
            ["payload_estimate"],
            ["robots"],
            ["simulation"],
        ), name


@pytest.mark.timeout(60)
def test_a_repeating_worker_error_is_logged_once_with_what_to_do(ros_context, capfd):
    node = CoordinatorNode(
        context=ros_context, parameter_overrides=[Parameter("robots", value=ROBOTS)]
    )

    def broken() -> int:
        raise RuntimeError("the aligner's buffer is corrupt")

    node.pipeline.process = broken
    group = NodeGroup([node], ros_context, executor="single").start()
    try:
        assert wait_for(lambda: node.internal_errors >= 50, 30.0)  # 50 cycles, each failing
    finally:
        group.stop()
    log = capfd.readouterr().err
    assert log.count("internal error in the coordinator's worker") == 1
    assert log.count("Traceback") == 1
    assert "RuntimeError: the aligner's buffer is corrupt" in log
    assert "Call ~/reset if it repeats" in log
    worker = node._worker_status()
    assert worker.level == "ERROR" and "~/reset may recover" in worker.message
