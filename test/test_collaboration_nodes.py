"""Issue 14's node outputs: the coordinator's external_wrench (msg/ExternalWrench) from its
pipeline's newest samples and estimate, and the planner's admittance mode."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest
from coordinator_data import exact_estimate
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message
from std_srvs.srv import SetBool, Trigger

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.aerial.human_wrench import HumanWrenchEstimate
from inertia_estimation_ros.core.aerial.team_estimation import AerialTeamEstimate
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.planning.planner import TrayPlanner
from inertia_estimation_ros.core.team_pipeline import PipelineSettings, TeamPipeline
from inertia_estimation_ros.msg import ExternalWrench, GraspFrame, GraspState, PayloadEstimate
from inertia_estimation_ros.ros.aerial_messages import to_human_wrench
from inertia_estimation_ros.ros.conversions import (
    external_wrench_values,
    pose_matrix,
    seconds,
    to_inertia,
    to_pose,
    to_time,
    to_transform,
    to_wrench,
    wrench_vector,
)
from inertia_estimation_ros.ros.external_wrench_output import (
    LAGS,
    PARAMETERS,
    ExternalWrenchOutput,
)
from inertia_estimation_ros.ros.follow_commands import PARAMETERS as FOLLOW_PARAMETERS
from inertia_estimation_ros.ros.follow_commands import FollowCommands
from inertia_estimation_ros.ros.interface import RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.nodes.planner_node import EXECUTOR as PLANNER_EXECUTOR
from inertia_estimation_ros.ros.nodes.planner_node import PlannerNode
from inertia_estimation_ros.ros.parameters import declare
from inertia_estimation_ros.ros.runtime import EXECUTORS
from inertia_estimation_ros.ros.spin import spin_until
from inertia_estimation_ros.sim import analytic as an

PUSH = an.HandPush(((0.0, 10.0),), force_w=(5.0, -3.0, 2.0), point_s=(0.3, 0.2, 0.0), ramp=0.0)


def _output_node(ros_context, rate: float, vibration_gain: float = 1.0) -> Node:
    node = Node(
        "coordinator_node",
        context=ros_context,
        parameter_overrides=[
            Parameter("external_wrench_rate", value=rate),
            Parameter("acceleration_vibration_gain", value=vibration_gain),
        ],
    )
    node.params = declare(node, PARAMETERS)
    return node


def _pushing_hand(n: int) -> tuple[an.Team, object, np.ndarray, object, np.ndarray]:
    """Paper 000's team moved by ``n`` samples at 100 Hz while a hand pushes; the true
    external wrench about the CoM per sample."""
    team, payload = an.paper_team(), an.paper_payload()
    motion = an.paper_inertia_motion(np.random.default_rng(0))
    t = 1.0 + 0.01 * np.arange(n)
    sim = an.simulate(team, payload, motion, t, external=PUSH)
    T_w_s = motion.evaluate(t)[0]
    truth = PUSH(t, T_w_s, np.zeros((n, 6))) @ sp.adjoint(sp.transform(np.eye(3), payload.com))
    return team, payload, t, sim, truth


@pytest.mark.timeout(60)
def test_the_coordinator_output_publishes_the_pushing_hand(ros_context) -> None:
    """At most external_wrench_rate (20 Hz of 100 Hz samples); nothing without a valid mass
    (counted once per instant); then the pushing hand's wrench exactly, and with exact
    samples and no vibration term (its gain 0) a zero covariance."""
    team, payload, t, sim, truth = _pushing_hand(50)
    node = _output_node(ros_context, 20.0, vibration_gain=0.0)
    settings = PipelineSettings(estimate_clock_offsets=False)
    pipeline = TeamPipeline(team.robot_ids, team.reference_id, settings)
    output = ExternalWrenchOutput(node, settings.frame_of, team.robot_ids, team.reference_id)
    output.follow(pipeline)
    assert output.on_samples("robot_1", [sim.exact["robot_1"].sample(0)]) is None  # no estimate
    pipeline.last_estimate = exact_estimate(team, payload, mass_valid=False)
    output.follow(pipeline)
    published = []
    for k in range(len(t)):
        if k == 11:
            assert output.counts()["the estimate has no valid mass and CoM yet"] == 3  # 20 Hz
            pipeline.last_estimate = exact_estimate(team, payload)
            output.follow(pipeline)
        for rid in team.robot_ids:
            msg = _message(output.on_samples(rid, [sim.exact[rid].sample(k)]))
            if msg is not None:
                published.append((k, msg))
    assert [k for k, _ in published] == [13, 18, 23, 28, 33, 38, 43, 48]  # 20 Hz slots
    for k, msg in published:
        wrench, covariance, center, observable = external_wrench_values(msg)
        np.testing.assert_allclose(wrench, truth[k], atol=1e-8)
        np.testing.assert_allclose(center, payload.com)
        assert observable.all() and not covariance.any()
        assert msg.header.frame_id == "robot_1/grasp"
    node.destroy_node()


def _message(raw: bytes | None) -> ExternalWrench | None:
    """The ExternalWrench that ``ExternalWrenchOutput`` published as ``raw`` bytes."""
    return None if raw is None else deserialize_message(raw, ExternalWrench)


def _following_output(ros_context, team, payload) -> tuple:
    """(node, ExternalWrenchOutput) at 100 Hz following a pipeline that holds ``payload``'s
    estimate."""
    node = _output_node(ros_context, 100.0)
    settings = PipelineSettings(estimate_clock_offsets=False)
    pipeline = TeamPipeline(team.robot_ids, team.reference_id, settings)
    pipeline.last_estimate = exact_estimate(team, payload)
    output = ExternalWrenchOutput(node, settings.frame_of, team.robot_ids, team.reference_id)
    output.follow(pipeline)
    return node, output


@pytest.mark.timeout(60)
def test_the_coordinator_output_sums_simultaneous_samples_once_per_instant(ros_context) -> None:
    """At the robots' rate, one wrench per instant, published when the last robot's sample of
    that instant arrives, whatever the order (the reference robot a sample ahead, batches);
    a robot that falls silent stops the output (counted), its late batch resumes it."""
    team, payload, t, sim, truth = _pushing_hand(60)
    node, output = _following_output(ros_context, team, payload)
    sample = {r: sim.exact[r].sample for r in team.robot_ids}
    published: dict[int, object] = {}

    def arrive(rid: str, ks: range) -> None:
        msg = _message(output.on_samples(rid, [sample[rid](k) for k in ks]))
        if msg is not None:
            k = int(round((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 - 1.0) / 0.01))
            assert k not in published
            published[k] = msg

    arrive("robot_1", range(0, 1))
    for k in range(30):  # robot_1 runs one sample ahead, the others in turns
        arrive("robot_1", range(k + 1, k + 2))
        for rid in ["robot_2", "robot_3"] if k % 2 else ["robot_3", "robot_2"]:
            arrive(rid, range(k, k + 1))
    assert sorted(published) == list(range(30))
    for k in range(30, 55):  # robot_3 silent for 0.25 s
        for rid in ("robot_1", "robot_2"):
            arrive(rid, range(k, k + 1))
    assert sorted(published) == list(range(30))
    assert output.counts()[LAGS] > 0
    arrive("robot_3", range(30, 55))  # its samples come as one late batch
    assert max(published) == 54
    for k, msg in published.items():
        np.testing.assert_allclose(external_wrench_values(msg)[0], truth[k], atol=1e-8)
    node.destroy_node()


@pytest.mark.timeout(60)
def test_the_coordinator_output_skips_repeated_samples_and_restarts_after_a_clock_jump(
    ros_context,
) -> None:
    """Batches as the output keeps them (one block per message): a batch sent twice adds
    nothing; a batch whose stamps are far back (a looping bag) restarts the history, and the
    wrenches go on from the new stamps, exact."""
    team, payload, t, sim, truth = _pushing_hand(20)
    node, output = _following_output(ros_context, team, payload)

    def batch(rid: str, ks: range, shift: float = 0.0) -> list:
        return [dataclasses.replace(sim.exact[rid].sample(k), stamp=t[k] - shift) for k in ks]

    last = _message([output.on_samples(r, batch(r, range(10), -5.0)) for r in team.robot_ids][-1])
    np.testing.assert_allclose(external_wrench_values(last)[0], truth[9], atol=1e-8)
    for rid in team.robot_ids:  # the same batches again: nothing new
        assert output.on_samples(rid, batch(rid, range(10), -5.0)) is None
    assert output.counts() == {"published": 1}
    published = [_message(output.on_samples(r, batch(r, range(10, 20)))) for r in team.robot_ids]
    assert published[:-1] == [None, None] and published[-1] is not None
    assert seconds(published[-1].header.stamp) == pytest.approx(t[19])  # 5 s back
    np.testing.assert_allclose(external_wrench_values(published[-1])[0], truth[19], atol=1e-8)
    node.destroy_node()


def _estimate_message(valid: bool) -> PayloadEstimate:
    body = InertialParameters.from_mass_com_inertia(
        8.0, np.array([0.3, 0.1, 0.0]), np.diag([0.4, 0.5, 0.7])
    )
    msg = PayloadEstimate(grasps_valid=True, mass_valid=valid, com_valid=valid, inertia_valid=valid)
    msg.inertia = to_inertia(body)
    msg.advice = [] if valid else ["hold the payload still in two orientations"]
    return msg


@pytest.mark.timeout(60)
def test_the_planner_admittance_mode_moves_the_reference_with_the_push(ros_context) -> None:
    """Refused without a valid mass (the reason in the answer); then a 10 N push along x of
    {s} moves the published reference along x of the home frame; NaN wrenches are ignored
    and counted; ~/admittance/stop brings the reference to rest."""
    planner = PlannerNode(
        context=ros_context, parameter_overrides=[Parameter("admittance_rate", value=50.0)]
    )
    listener = Node("listener", context=ros_context)
    poses: list[PoseStamped] = []
    listener.create_subscription(PoseStamped, "/planner_node/reference/pose", poses.append, 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(planner)
    executor.add_node(listener)
    mode = planner.admittance
    try:
        mode.on_estimate(_estimate_message(False))
        answer = mode._on_start(Trigger.Request(), Trigger.Response())
        assert not answer.success and "mass_valid" in answer.message and "hold" in answer.message
        mode.on_estimate(_estimate_message(True))
        home = sp.transform(np.eye(3), [1.0, 2.0, 0.5])
        pose = GraspState(robot_id="robot_1", home_frame_id="robot_1/home", has_pose=True)
        pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(home)

        def feed(wrench: np.ndarray) -> None:
            now = planner.get_clock().now().nanoseconds * 1e-9
            pose.header.stamp = to_time(now)
            mode._on_pose(pose)
            push = ExternalWrench(wrench=to_wrench(wrench))
            push.header.stamp = to_time(now)
            mode._on_wrench(push)

        feed(np.zeros(6))
        assert mode._on_start(Trigger.Request(), Trigger.Response()).success
        push = np.r_[0, 0, 0, 10.0, 0, 0]
        spin_until(executor, lambda: (feed(push), len(poses) >= 30)[1], 20.0)
        assert poses[-1].header.frame_id == "robot_1/home"
        assert poses[-1].pose.position.x > 1.0 + 1e-3
        assert abs(poses[-1].pose.position.y - 2.0) < 1e-9
        feed(np.r_[np.nan, 0, 0, 0, 0, 0])
        assert mode.supervisor.ignored["non-finite wrench"] == 1
        mode._on_stop(Trigger.Request(), Trigger.Response())
        spin_until(executor, lambda: (feed(push), mode.supervisor.admittance.at_rest)[1], 20.0)
        assert not mode.supervisor.active
    finally:
        executor.shutdown()
        listener.destroy_node()
        planner.destroy_node()


@pytest.mark.timeout(60)
def test_robot_commands_follow_the_reference_and_carry_the_weight(ros_context) -> None:
    """robot_node's commands for paper 000's gimbal team: each robot's pose is the reference
    composed with its grasp, and the three wrench shares (forces only) carry the weight."""
    team, payload = an.paper_team(), an.paper_payload()
    estimate = PayloadEstimate(grasps_valid=True, mass_valid=True, parameters=payload.vec)
    estimate.grasps = [
        GraspFrame(robot_id=r, transform=to_transform(team.T_s_i[r])) for r in team.robot_ids
    ]
    T_w_s = sp.transform(sp.exp3([0.1, -0.2, 0.3]), [0.5, 0.2, 0.9])
    reference = PoseStamped(pose=to_pose(T_w_s))
    reference.header.frame_id = "robot_1/home"
    shares = []
    for rid in team.robot_ids:
        node = Node(f"{rid}_commands", context=ros_context)
        node.params = declare(node, FOLLOW_PARAMETERS)
        commands = FollowCommands(node, node.params, rid, f"{rid}/grasp")
        assert commands.on_reference(reference) is None  # no estimate yet
        commands.on_estimate(estimate)
        pose, wrench = commands.on_reference(reference)
        np.testing.assert_allclose(pose_matrix(pose.pose), T_w_s @ team.T_s_i[rid], atol=1e-9)
        assert pose.header.frame_id == "robot_1/home" and wrench.header.frame_id == f"{rid}/grasp"
        F_i = wrench_vector(wrench.wrench)
        assert not F_i[:3].any()
        shares.append(sp.wrench_to(sp.inverse(team.T_s_i[rid]), F_i))
        node.destroy_node()
    g_s = T_w_s[:3, :3].T @ np.array([0, 0, -9.81])
    needed = an.net_wrench(payload, np.zeros((1, 6)), np.zeros((1, 6)), g_s[None])[0]
    np.testing.assert_allclose(sum(shares), needed, atol=1e-6)


@pytest.mark.timeout(60)
def test_the_planner_switches_modes_by_service_and_holds_on_a_stale_estimate(ros_context) -> None:
    """~/enable true: admittance (refused with the cause without an estimate), false: hold;
    no payload_estimate for admittance_estimate_timeout (the coordinator died) stops the
    admittance safely, and a new start says why until an estimate arrives."""
    planner = PlannerNode(
        context=ros_context,
        parameter_overrides=[Parameter("admittance_estimate_timeout", value=0.5)],
    )
    mode = planner.admittance

    def enable(on: bool) -> SetBool.Response:
        return mode._on_enable(SetBool.Request(data=on), SetBool.Response())

    try:
        answer = enable(True)
        assert not answer.success and "no estimate received" in answer.message
        mode.on_estimate(_estimate_message(True))
        pose = GraspState(robot_id="robot_1", home_frame_id="robot_1/home", has_pose=True)
        pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(np.eye(4))
        pose.header.stamp = to_time(planner.get_clock().now().nanoseconds * 1e-9)
        mode._on_pose(pose)
        assert enable(True).success and mode.supervisor.active
        assert enable(False).success and not mode.supervisor.active
        assert enable(True).success and mode.supervisor.active
        mode._estimate_arrival -= 1.0  # the last estimate is 1 s old
        mode._tick()
        assert not mode.supervisor.active
        answer = enable(True)
        assert not answer.success and "the coordinator is silent" in answer.message
    finally:
        planner.destroy_node()


# One tick of any mode within the planner's default limits at 50 Hz moves {s} at most this
# much: the admittance runs at the CoM, p_s_c of _estimate_message, {s} adds the lever arm.
RATE, V_MAX, A_MAX, W_MAX, ALPHA_MAX = 50.0, 0.3, 1.0, 0.5, 2.0
LEVER = np.hypot(0.3, 0.1)
DP_MAX = (V_MAX + W_MAX * LEVER) / RATE
DV_MAX = (A_MAX + (ALPHA_MAX + W_MAX**2) * LEVER) / RATE


def _balancing_planner(ros_context, executor) -> tuple[PlannerNode, Node, list, list]:
    """A planner with a quick balancing plan and a listener of its reference on
    ``executor``: (planner, listener, poses, twists)."""
    planner = PlannerNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("admittance_rate", value=RATE),
            Parameter("object_size", value=[0.15, 0.15, 0.3]),
            Parameter("duration", value=2.0),
            Parameter("max_solves", value=60),
            # the one estimate of the test must not go stale (5 s by default) while a loaded
            # machine plans and feeds: staleness has its own test above
            Parameter("admittance_estimate_timeout", value=600.0),
            # nor the test's feeder thread, starved on a loaded machine, stop it safely (0.5 s
            # by default; the likely cause of one CI run's "timed out waiting for the push")
            Parameter("admittance_input_timeout", value=10.0),
        ],
    )
    listener = Node("listener", context=ros_context)
    poses: list[PoseStamped] = []
    twists: list[TwistStamped] = []
    listener.create_subscription(PoseStamped, "/planner_node/reference/pose", poses.append, 1000)
    listener.create_subscription(TwistStamped, "/planner_node/reference/twist", twists.append, 1000)
    executor.add_node(planner)
    executor.add_node(listener)
    return planner, listener, poses, twists


def _assert_one_tick(poses: list, twists: list, k: int) -> None:
    """References k-1 -> k move like one tick within the limits."""
    p0, p1 = (pose_matrix(m.pose) for m in poses[k - 1 : k + 1])
    v0, v1 = (
        T[:3, :3] @ [t.twist.linear.x, t.twist.linear.y, t.twist.linear.z]
        for T, t in ((p0, twists[k - 1]), (p1, twists[k]))
    )
    assert np.linalg.norm(p1[:3, 3] - p0[:3, 3]) <= DP_MAX + 1e-9
    assert np.linalg.norm(v1 - v0) <= DV_MAX + 1e-9


@pytest.mark.timeout(120)
def test_the_planner_mode_services_switch_bumplessly_and_refuse_with_the_cause(ros_context) -> None:
    """~/mode/balancing refuses without a goal and without a valid CoM, then plans from the
    reference and follows the certified plan; ~/mode/admittance and ~/mode/hold take over
    from it. Across each switch the published reference moves like one tick within the
    limits: |dp| <= v_max dt, |dv| <= a_max dt (at the CoM; {s} adds the lever arm)."""
    executor = SingleThreadedExecutor(context=ros_context)
    planner, listener, poses, twists = _balancing_planner(ros_context, executor)
    mode = planner.admittance

    def call(name: str) -> Trigger.Response:
        if name != "balancing":
            service = {"admittance": mode._on_start, "hold": mode._on_stop}[name]
            return service(Trigger.Request(), Trigger.Response())
        # a coroutine: the plan runs on the planner's thread while the executor ticks
        task = executor.create_task(mode._on_balancing, Trigger.Request(), Trigger.Response())
        assert spin_until(executor, lambda: (feed(), task.done())[1], 120.0)
        return task.result()

    pose = GraspState(robot_id="robot_1", home_frame_id="world", has_pose=True)
    pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(sp.transform(np.eye(3), [0, 0, 1]))

    def feed() -> None:
        now = planner.get_clock().now().nanoseconds * 1e-9
        pose.header.stamp = to_time(now)
        mode._on_pose(pose)
        push = ExternalWrench(wrench=to_wrench(np.zeros(6)))
        push.header.stamp = to_time(now)
        mode._on_wrench(push)

    def run(ticks: int) -> int:
        """Spin until ``ticks`` more references arrived; the index of the first."""
        first = len(poses)
        spin_until(executor, lambda: (feed(), len(poses) >= first + ticks)[1], 30.0)
        return first

    def assert_bumpless(at: int) -> None:
        for k in (at, at + 1):
            _assert_one_tick(poses, twists, k)

    try:
        feed()
        answer = call("balancing")
        assert not answer.success and "no goal yet" in answer.message
        planner.goal = np.array([0.15, 0.05, 1.02])
        answer = call("balancing")
        assert not answer.success and "no PayloadEstimate with a valid CoM" in answer.message
        estimate = _estimate_message(True)
        estimate.parameters = [8.0, 0.01, -0.01, 0.08, 0, 0, 0, 0, 0, 0]
        estimate.parameter_covariance = list((1e-6 * np.eye(10)).ravel())
        planner._on_estimate(estimate)
        assert call("admittance").success
        run(10)
        answer = call("balancing")
        assert answer.success, answer.message
        at = run(40)  # the admittance's reference decelerates to rest, then the plan's
        assert mode.modes.mode == "balancing"
        # it moves (the plan starts smoothly: its speed stays below 1 mm/s for 0.2-0.5 s)
        moving = lambda: np.linalg.norm([t.twist.linear.x for t in twists[-5:]]) > 1e-3  # noqa: E731
        assert spin_until(executor, lambda: (feed(), moving())[1], 30.0)
        for k in range(at, min(len(poses), len(twists)) - 1):
            assert_bumpless(k)
        planner._on_estimate(estimate)  # the coordinator's next one (planning took seconds)
        assert call("admittance").success
        at = run(10)
        assert_bumpless(at)
        assert call("hold").success
        at = run(2)
        resting = lambda: twists[-1].twist.linear.x == 0.0  # noqa: E731
        assert spin_until(executor, lambda: (feed(), resting())[1], 60.0)
        for k in range(at, min(len(poses), len(twists)) - 1):
            assert_bumpless(k)
        assert mode.modes.mode == "hold"
    finally:
        executor.shutdown()
        listener.destroy_node()
        planner.destroy_node()


@pytest.mark.timeout(240)
def test_the_reference_keeps_its_rate_and_rests_while_a_balancing_plan_is_computed(
    ros_context, monkeypatch
) -> None:
    """The planner spins on its executable's executor (one thread) while a person pushes in
    admittance; ~/mode/balancing is called over DDS and the plan is held before its SQP
    starts until 2 s worth of references (100 at 50 Hz) came out meanwhile, the last ones
    at rest: the executor thread never waits for the plan, and the reference decelerates to
    rest while the planner works. Released, the plan is certified, the switch happens, and
    the published reference moves like one tick within the limits at every step (|dp| <=
    v_max dt, |dv| <= a_max dt at the CoM plus the lever arm)."""
    released = threading.Event()
    plan = TrayPlanner.plan

    def held(self, *args, **kwargs):  # the plan waits for the test before its SQP
        assert released.wait(120.0), "the test never released the plan"
        return plan(self, *args, **kwargs)

    monkeypatch.setattr(TrayPlanner, "plan", held)
    executor = EXECUTORS[PLANNER_EXECUTOR](context=ros_context)
    planner, listener, poses, twists = _balancing_planner(ros_context, executor)
    client = listener.create_client(Trigger, "/planner_node/mode/balancing")
    mode = planner.admittance
    pose = GraspState(robot_id="robot_1", home_frame_id="world", has_pose=True)
    pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(sp.transform(np.eye(3), [0, 0, 1]))
    stopping = threading.Event()
    # over DDS: every reference the planner publishes comes from its executor's thread
    wrenches = listener.create_publisher(ExternalWrench, "/external_wrench", RELIABLE_QOS)
    grasps = listener.create_publisher(GraspState, "/reference_grasp_state", SENSOR_QOS)

    def feed() -> None:  # the robots and the coordinator: a 10 N push along x
        while not stopping.wait(0.01):
            now = to_time(planner.get_clock().now().nanoseconds * 1e-9)
            pose.header.stamp = now
            push = ExternalWrench(wrench=to_wrench(np.array([0, 0, 0, 10.0, 0, 0])))
            push.header.stamp = now
            grasps.publish(pose)
            wrenches.publish(push)

    def spin() -> None:
        while not stopping.is_set():
            executor.spin_once(timeout_sec=0.05)

    threads = [threading.Thread(target=f, daemon=True) for f in (feed, spin)]
    for thread in threads:
        thread.start()

    def wait_for(condition, what: str) -> None:
        deadline = time.monotonic() + 120.0
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.02)

    try:
        planner.goal = np.array([0.15, 0.05, 1.02])
        estimate = _estimate_message(True)
        estimate.parameters = [8.0, 0.01, -0.01, 0.08, 0, 0, 0, 0, 0, 0]
        estimate.parameter_covariance = list((1e-6 * np.eye(10)).ravel())
        planner._on_estimate(estimate)
        wait_for(lambda: mode.supervisor.measured_pose() is not None, "a payload pose")
        with mode._lock:
            ok, message = mode.modes.admittance()
        assert ok, message
        wait_for(lambda: len(twists) > 20 and twists[-1].twist.linear.x > 0.05, "the push")
        wait_for(client.service_is_ready, "the ~/mode/balancing service")
        answer = client.call_async(Trigger.Request())
        wait_for(lambda: planner.planning.busy, "the plan to start")
        called = len(poses)
        wait_for(lambda: len(poses) >= called + 2 * RATE, "2 s of references while planning")
        wait_for(lambda: np.allclose(_twist(twists[-1]), 0.0), "the reference at rest")
        assert planner.planning.busy and not answer.done()  # the plan is still held
        released.set()
        wait_for(answer.done, "the plan")
        assert answer.result().success, answer.result().message
        wait_for(lambda: mode.modes.mode == "balancing", "the switch to balancing")
        count = len(twists)
        wait_for(lambda: len(twists) > count + 20, "the balancing reference")
    finally:
        released.set()
        stopping.set()
        for thread in threads:
            thread.join(5.0)
        executor.shutdown()
        listener.destroy_node()
        planner.destroy_node()
    stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in poses]
    assert stamps == sorted(stamps)
    for k in range(1, min(len(poses), len(twists))):
        _assert_one_tick(poses, twists, k)


def _twist(msg: TwistStamped) -> np.ndarray:
    t = msg.twist
    return np.array([t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y, t.linear.z])


@pytest.mark.timeout(120)
def test_an_aerial_teams_human_wrench_moves_the_planners_reference(ros_context) -> None:
    """One admittance for ground and aerial teams: the planner configured with the aerial
    coordinator's `human_wrench_estimate` (its `to_human_wrench` message: a 10 N pull along x
    of the world on a payload yawed by 90 deg, so -y of the payload frame) and the payload's
    mocap pose moves its reference along x of the world."""
    planner = PlannerNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("admittance_rate", value=50.0),
            Parameter("admittance_wrench_topic", value="/human_wrench_estimate"),
            Parameter("admittance_pose_topic", value="/payload/pose"),
        ],
    )
    team = Node("aerial_team", context=ros_context)
    wrenches = team.create_publisher(ExternalWrench, "/human_wrench_estimate", 10)
    mocap = team.create_publisher(PoseStamped, "/payload/pose", 10)
    poses: list[PoseStamped] = []
    team.create_subscription(PoseStamped, "/planner_node/reference/pose", poses.append, 100)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(planner)
    executor.add_node(team)
    R_w_L = sp.exp3([0.0, 0.0, np.pi / 2])
    T_w_L = sp.transform(R_w_L, [1.0, 0.5, 1.2])
    pull = np.array([10.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # [F_H (world); M_H (payload frame)]
    mode = planner.admittance
    model = _estimate_message(True)

    def publish() -> None:
        stamp = planner.get_clock().now().nanoseconds * 1e-9
        estimate = AerialTeamEstimate(
            stamp, ("uav_1",), np.ones(1), np.ones(1), np.zeros((1, 3)), np.zeros((1, 4, 4)),
            HumanWrenchEstimate(pull, 0.01 * np.eye(6)), R_w_L, contact=True,
        )  # fmt: skip
        full, _ = to_human_wrench(estimate, "payload", (1.0, 0.2), "dynamic")
        wrenches.publish(full)
        planner._on_estimate(model)  # the coordinator's, current
        pose = PoseStamped(pose=to_pose(T_w_L))
        pose.header.stamp, pose.header.frame_id = to_time(stamp), "world"
        mocap.publish(pose)

    try:
        planner._on_estimate(_estimate_message(True))
        spin_until(
            executor, lambda: (publish(), mode.supervisor.measured_pose() is not None)[1], 30
        )
        spin_until(executor, lambda: (publish(), mode.supervisor._wrench is not None)[1], 30)
        with mode._lock:
            ok, message = mode.modes.admittance()
        assert ok, message
        spin_until(executor, lambda: (publish(), len(poses) >= 50)[1], 60)
    finally:
        executor.shutdown()
        team.destroy_node()
        planner.destroy_node()
    moved = pose_matrix(poses[-1].pose)[:3, 3] - pose_matrix(poses[0].pose)[:3, 3]
    assert moved[0] > 0.01 and abs(moved[1]) < 0.1 * moved[0] and abs(moved[2]) < 0.1 * moved[0]
    assert poses[-1].header.frame_id == "world"
