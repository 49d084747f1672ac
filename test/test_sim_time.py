"""coordinator_node on simulation time (``use_sim_time``), as with ``ros2 bag play --clock``:
a replay at 4x keeps the estimate's period in simulated seconds, a paused replay (no /clock,
no samples) publishes nothing new and raises no staleness, and a clock that runs on while no
robot publishes makes every robot STALE. Over DDS, the node on its production executor."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from coordinator_graph import Listener, team_messages, wait_for
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from inertia_estimation_ros.msg import GraspState
from inertia_estimation_ros.ros.conversions import seconds, to_time
from inertia_estimation_ros.ros.interface import RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.nodes.coordinator_node import CoordinatorNode
from inertia_estimation_ros.ros.runtime import NodeGroup

ROBOTS = ["robot_1", "robot_2", "robot_3"]
SPEED = 4.0  # simulated seconds per wall-clock second
PERIOD = 1.0  # [s] simulated, between estimates
STEP = 0.25  # [s] simulated, between two waits for the coordinator


class Replay:
    """What ``ros2 bag play --clock`` publishes: /clock and the robots' samples. Every
    ``STEP`` simulated seconds it waits until ``caught_up()`` (the coordinator has taken the
    clock), so that the outcome does not hang on this shared machine's load."""

    def __init__(self, node: Node, caught_up: Callable[[float], bool]):
        self.caught_up = caught_up
        self.clock = node.create_publisher(Clock, "/clock", RELIABLE_QOS)
        self.samples = {
            r: node.create_publisher(GraspState, f"/{r}/grasp_state", SENSOR_QOS) for r in ROBOTS
        }
        self.messages = team_messages()
        self.k = 0
        self.now = 0.0

    def play(self, seconds_: float, samples: bool = True) -> None:
        """``seconds_`` of simulated time at SPEED, with the samples or the clock alone."""
        end, start, t0 = self.now + seconds_, time.monotonic(), self.now
        step = self.now + STEP
        while self.now < end:
            if self.now >= step:
                assert wait_for(lambda: self.caught_up(self.now), 30.0)
                start, t0, step = time.monotonic(), self.now, self.now + STEP
            if samples:
                instant = self.messages[self.k]
                self.now = seconds(instant["robot_1"].header.stamp)
                self.clock.publish(Clock(clock=to_time(self.now)))
                for robot, msg in instant.items():
                    self.samples[robot].publish(msg)
                self.k += 1
            else:
                self.now += 0.01
                self.clock.publish(Clock(clock=to_time(self.now)))
            delay = start + (self.now - t0) / SPEED - time.monotonic()
            if delay > 0:
                time.sleep(delay)


@pytest.mark.timeout(120)
def test_a_sped_up_then_paused_replay_keeps_the_schedule_on_simulated_time(ros_context):
    coordinator = CoordinatorNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("robots", value=ROBOTS),
            Parameter("use_sim_time", value=True),
            Parameter("estimate_period", value=PERIOD),
            Parameter("diagnostics_period", value=0.2),
            # no grasp solve: the solves stay short, and only the schedule decides
            Parameter("min_kinematics_samples", value=1_000_000),
        ],
    )
    listener, player = Listener(context=ros_context), Node("player", context=ros_context)
    groups = [
        NodeGroup([coordinator], ros_context, executor="single").start(),
        NodeGroup([listener, player], ros_context).start(),
    ]
    cycles = []  # the worker's cycles, each with the ROS time it saw
    step = coordinator._step

    def counted_step() -> None:
        step()
        cycles.append(coordinator._now())

    coordinator._step = counted_step
    published = []  # the estimates the coordinator published
    publish = coordinator._publish

    def counted_publish(estimate) -> None:
        publish(estimate)
        published.append(estimate)

    coordinator._publish = counted_publish

    def settle() -> None:
        """Until the coordinator has nothing left to publish (no solve running or deferred
        by its CPU share after two more worker cycles) and every estimate has arrived."""

        def idle() -> bool:
            return not coordinator._solver.busy and time.monotonic() >= coordinator._solve_allowed

        while True:
            assert wait_for(idle, 30.0)
            n = len(cycles)
            assert wait_for(lambda n=n: len(cycles) >= n + 2, 30.0)
            if idle():
                break
        assert wait_for(lambda: len(listener.estimates) == len(published), 30.0)

    def caught_up(now: float) -> bool:  # a whole worker cycle has seen this clock
        return len(cycles) > 1 and cycles[-2] >= now - 1e-9

    replay = Replay(player, caught_up)
    try:
        assert wait_for(lambda: listener.estimates, 30.0)  # the first, at start
        replay.play(0.5)
        assert wait_for(lambda: len(listener.estimates) >= 2, 30.0)
        settle()
        first = len(listener.estimates)
        replay.play(6.0)  # 6 simulated seconds in 1.5 s of wall time
        # a solve due on the replay's clock may start late (the solves' CPU share): wait for
        # it, not for a guessed time (0.5 s once let one arrive during the pause)
        settle()
        during = len(listener.estimates) - first
        assert 6.0 / PERIOD - 2 <= during <= 6.0 / PERIOD + 1, during
        paused = len(listener.estimates)
        time.sleep(3.0)  # paused: three estimate periods of wall time, neither clock nor data
        assert len(listener.estimates) == paused
        assert all(listener.level(r) in ("OK", "WARN") for r in ROBOTS)
        replay.play(10.0, samples=False)  # the clock runs on; no robot publishes
        assert wait_for(lambda: all(listener.level(r) == "STALE" for r in ROBOTS), 30.0)
        status = listener.status("robot_2")
        assert status.hardware_id == "robot_2" and "no message from any robot" in status.message
    finally:
        for group in reversed(groups):
            group.stop()
