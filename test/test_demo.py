"""``inertia_estimation demo``: the simulation, three robot nodes and the coordinator as
processes over DDS, on a short scenario with every stage of paper 000's protocol. It prints
its progress through the phases, ends with the estimate +- 1 sigma against the ground truth,
and leaves the bag, the graph it ran and the report."""

from __future__ import annotations

import pytest
from demo_run import demo_run

from inertia_estimation_ros.bags import bag_topics, latched_topics, read_bag
from inertia_estimation_ros.commands.report import PLOTS, comparison_rows
from inertia_estimation_ros.msg import PayloadEstimate

ROBOTS = ("robot_1", "robot_2", "robot_3")


@pytest.fixture(scope="module")
def run():
    result = demo_run()
    assert result.returncode == 0, result.stdout
    return result


@pytest.mark.timeout(300)
def test_the_demo_prints_progress_and_the_estimate_against_the_truth(run):
    lines = run.stdout.splitlines()
    for phase in ("human_guided", "static_holds", "sphere"):
        assert any(phase in line for line in lines), phase
    assert any("stage DYNAMICS" in line for line in lines)
    table = run.stdout[run.stdout.index("against the simulator's ground truth") :]
    for quantity in ("T_s_robot_3 px [m]", "mass [kg]", "CoM z [m]", "principal moment 3"):
        assert quantity in table
    assert "stage DYNAMICS, physically consistent" in table
    assert "demo finished in" in run.stdout


# Ten quantities are checked on one live run: 3.5 sigma each keeps the chance that an honest
# sigma fails the run at 0.5 % (two-sided 4.7e-4 per quantity); at 3 sigma it was 2.7 %, and a
# fresh-clone CI run failed on principal moment 1 at 3.13 sigma while 3 others passed.
SIGMAS = 3.5


def assert_covered(row, tolerance: float, ceiling: float) -> None:
    """The error is within the estimate's SIGMAS sigma or below ``tolerance`` (what the robot
    nodes' filtered signals leave on a quiet machine), and the sigma says something (<= ceiling):
    on a loaded machine the live pipeline loses samples and must widen its sigma, not err."""
    error = abs(row.value - row.truth)
    assert error <= max(SIGMAS * row.sigma, tolerance), (row.name, row.value, row.sigma, row.truth)
    assert row.sigma <= ceiling, (row.name, row.sigma)


@pytest.mark.timeout(300)
def test_the_live_estimate_matches_the_simulated_payload(run):
    (estimate,) = [m.message for m in read_bag(run.out / "bag", ["/payload_estimate"])][-1:]
    (truth,) = [m.message for m in read_bag(run.out / "bag", ["/ground_truth/payload"])]
    assert estimate.stage == PayloadEstimate.STAGE_DYNAMICS and estimate.physically_consistent
    rows = {r.name: r for r in comparison_rows(estimate, truth)}
    assert_covered(rows["mass [kg]"], 2e-3 * rows["mass [kg]"].truth, 0.1)
    for axis in "xyz":  # robot nodes' filtered signals: millimetres (paper 000: centimetres)
        assert_covered(rows[f"CoM {axis} [m]"], 5e-3, 0.01)
        assert_covered(rows[f"T_s_robot_2 p{axis} [m]"], 5e-3, 0.01)
    for k in (1, 2, 3):
        row = rows[f"principal moment {k} [kg m^2]"]
        assert_covered(row, 0.03 * row.truth, 0.3 * row.truth)


@pytest.mark.timeout(300)
def test_the_demo_leaves_the_bag_the_graph_and_the_report(run):
    topics = bag_topics(run.out / "bag")
    for rid in ROBOTS:
        assert f"/{rid}/grasp_state" in topics and f"/{rid}/joint_states" in topics
    assert {"/payload_estimate", "/ground_truth/payload"} <= set(topics)
    assert {"/robot_1/robot_description", "/ground_truth/payload"} <= latched_topics(
        run.out / "bag"
    )
    assert "test_coordinator.yaml" in (run.out / "graph.yaml").read_text()
    report = (run.out / "report" / "report.md").read_text()
    assert "| mass [kg] |" in report and "Estimated live by the coordinator node" in report
    for plot in PLOTS:
        assert (run.out / "report" / plot).stat().st_size > 10_000
        assert f"({plot})" in report
