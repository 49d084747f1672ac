"""Issue 14's latency path in the planner: the admittance reference leaves as each human wrench
arrives (``admittance_on_wrench``), not at the control timer's next tick. The planner is never
spun here, so its timer never fires: every reference seen came from a wrench."""

from __future__ import annotations

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message
from std_srvs.srv import Trigger

from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.msg import ExternalWrench, GraspState, PayloadEstimate
from inertia_estimation_ros.ros.conversions import to_inertia, to_pose, to_time, to_wrench
from inertia_estimation_ros.ros.nodes.planner_node import PlannerNode
from inertia_estimation_ros.ros.runtime import EXECUTORS
from inertia_estimation_ros.ros.spin import spin_until

RATE = 1.0  # [Hz] a control period (1 s) far longer than the calls below


def _estimate() -> PayloadEstimate:
    body = InertialParameters.from_mass_com_inertia(
        8.0, np.array([0.3, 0.1, 0.0]), np.diag([0.4, 0.5, 0.7])
    )
    msg = PayloadEstimate(grasps_valid=True, mass_valid=True, com_valid=True, inertia_valid=True)
    msg.inertia = to_inertia(body)
    return msg


def _planner(ros_context: object, on_wrench: bool) -> tuple[PlannerNode, list, list]:
    """A planner in admittance mode; the references it publishes and the steps it takes."""
    planner = PlannerNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("admittance_rate", value=RATE),
            Parameter("admittance_on_wrench", value=on_wrench),
        ],
    )
    mode, published, steps = planner.admittance, [], []
    mode._pose.publish = published.append
    tick = mode.modes.tick
    mode.modes.tick = lambda now, dt: (steps.append(dt), tick(now, dt))[1]
    mode.on_estimate(_estimate())
    pose = GraspState(robot_id="robot_1", home_frame_id="robot_1/home", has_pose=True)
    pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(np.eye(4))
    pose.header.stamp = to_time(_now(planner))
    mode._on_pose(pose)
    assert mode._on_start(Trigger.Request(), Trigger.Response()).success
    return planner, published, steps


def _now(planner: PlannerNode) -> float:
    return planner.get_clock().now().nanoseconds * 1e-9


def _age(planner: PlannerNode, seconds: float) -> None:
    """The last reference (and the last a wrench sent) ``seconds`` older."""
    planner.admittance._last_tick -= seconds
    planner.admittance._last_wrench_tick -= seconds


def _push(planner: PlannerNode, stamp: float) -> None:
    msg = ExternalWrench(wrench=to_wrench(np.r_[0, 0, 0, 10.0, 0, 0]))
    msg.header.stamp = to_time(stamp)
    planner.admittance._on_wrench(msg)


@pytest.mark.timeout(60)
def test_each_wrench_publishes_the_reference_at_once_at_most_twice_the_rate(ros_context) -> None:
    """A wrench publishes a reference in its own callback; so does a second one within half a
    control period (bunched behind a late one), a third does not (twice the rate, two at
    once); a late one steps the reference by one period at most (no jump)."""
    planner, published, steps = _planner(ros_context, on_wrench=True)
    try:
        _push(planner, _now(planner))
        assert len(published) == 1  # as serialized bytes (ros/serialized.py)
        assert deserialize_message(published[0], PoseStamped).header.frame_id == "robot_1/home"
        _push(planner, _now(planner))  # microseconds later: within half a period
        assert len(published) == 2 and steps[1] < 0.5 / RATE
        _push(planner, _now(planner))  # a third: no credit left
        assert len(published) == 2
        _age(planner, 5.0 / RATE)  # the last reference is 5 periods old
        _push(planner, _now(planner))
        assert len(published) == 3 and steps[::2] == [1.0 / RATE, 1.0 / RATE]
        nan = ExternalWrench(wrench=to_wrench(np.r_[np.nan, 0, 0, 0, 0, 0]))
        nan.header.stamp = to_time(_now(planner))
        _age(planner, 5.0 / RATE)
        planner.admittance._on_wrench(nan)  # ignored and counted: no reference from it
        assert len(published) == 3
        assert planner.admittance.supervisor.ignored["non-finite wrench"] == 1
    finally:
        planner.destroy_node()


@pytest.mark.timeout(60)
def test_wrenches_at_the_rate_with_jitter_each_publish_at_once(ros_context) -> None:
    """Wrenches a period apart on average, each late by 0-0.6 periods (bunched behind a late
    one: 0.1-1.6 periods apart): every one publishes its own reference; a burst of ten at
    once publishes two."""
    planner, published, _ = _planner(ros_context, on_wrench=True)
    late = np.random.default_rng(3).uniform(0.0, 0.6, 51)  # [periods]
    try:
        for k in range(50):
            _push(planner, _now(planner))
            assert len(published) == k + 1
            _age(planner, (1.0 + late[k + 1] - late[k]) / RATE)
        _age(planner, 5.0 / RATE)
        for _ in range(10):
            _push(planner, _now(planner))
        assert len(published) == 52
    finally:
        planner.destroy_node()


@pytest.mark.timeout(60)
def test_a_timer_tick_just_before_a_wrench_does_not_hold_its_reference_back(ros_context) -> None:
    """Wrenches a period apart arrive late by a little: the control timer ticks first, and the
    wrench still publishes its own reference at once (not a period later)."""
    planner, published, _ = _planner(ros_context, on_wrench=True)
    try:
        _push(planner, _now(planner))
        _age(planner, 1.0 / RATE)
        planner.admittance._on_timer()  # the timer ticks a period after the last reference
        _push(planner, _now(planner))  # and the wrench arrives microseconds later
        assert len(published) == 3
    finally:
        planner.destroy_node()


@pytest.mark.timeout(60)
def test_without_admittance_on_wrench_only_the_timer_publishes(ros_context) -> None:
    planner, published, _ = _planner(ros_context, on_wrench=False)
    try:
        _push(planner, _now(planner))
        assert published == [] and planner.admittance.supervisor._wrench is not None
        planner.admittance._tick()  # what the control timer runs
        assert len(published) == 1
    finally:
        planner.destroy_node()


@pytest.mark.parametrize("kind", sorted(EXECUTORS))
@pytest.mark.timeout(60)
def test_the_control_timer_publishes_on_every_executor(ros_context, kind: str) -> None:
    """``planner_node --executor multi|single|events``: the control timer ticks and publishes
    (rclpy's events executor hands a timer callback that takes an argument its TimerInfo:
    the tick's ``min_gap`` once got it, and the node died at its first tick)."""
    planner, published, _ = _planner(ros_context, on_wrench=False)
    executor = EXECUTORS[kind](context=ros_context)
    executor.add_node(planner)
    try:
        assert spin_until(executor, lambda: len(published) >= 2, 30.0)
    finally:
        executor.shutdown()
        planner.destroy_node()


@pytest.mark.timeout(60)
def test_the_reference_advances_by_the_ros_time_that_passed(ros_context, monkeypatch) -> None:
    """On a simulated /clock, ROS time stands still between its steps: a wrench arriving
    after the timer's tick at the same instant sends nothing (a period's step there ran the
    reference ahead of time, and the closed loop over DDS oscillated at the speed limit);
    every step taken is the ROS time since the last one."""
    planner, published, steps = _planner(ros_context, on_wrench=True)
    clock = [_now(planner)]
    monkeypatch.setattr(planner.admittance, "_now", lambda: clock[0])
    try:
        planner.admittance._on_timer()
        _push(planner, clock[0])  # the /clock has not moved since the tick
        assert len(published) == 1 and len(steps) == 1
        for _ in range(20):
            clock[0] += 0.004
            planner.admittance._on_timer()
            _push(planner, clock[0])
        assert len(published) == 21
        np.testing.assert_allclose(steps[1:], 0.004, atol=1e-6)  # seconds since 1970: ~1e-7
    finally:
        planner.destroy_node()
