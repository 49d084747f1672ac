"""coordinator_node's services never hold its executor: while a long solve runs, a pending
~/estimate_now leaves the node's other services served, and the answer comes once the command
and its solve have run; a command queued behind it and still queued at shutdown never runs and
its caller is answered that it failed. The node spins on the events executor it runs on in
production and on the single-threaded one, over DDS."""

from __future__ import annotations

import threading

import pytest
from coordinator_graph import wait_for
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from std_srvs.srv import Trigger

from inertia_estimation_ros.ros.nodes.coordinator_node import CoordinatorNode
from inertia_estimation_ros.ros.runtime import NodeGroup

ROBOTS = ["robot_1", "robot_2", "robot_3"]


def gated_coordinator(context: Context) -> tuple[CoordinatorNode, threading.Event, threading.Event]:
    """A coordinator whose next ~/estimate_now solve, once ``armed``, clears ``armed`` and waits
    for ``gate`` (a solve that takes long). Its solves run on a thread (the gate is in this
    process); the worker and the executor do not depend on where they run."""
    node = CoordinatorNode(
        context=context,
        parameter_overrides=[
            Parameter("robots", value=ROBOTS),
            Parameter("estimate_period", value=60.0),
            Parameter("solver", value="thread"),
        ],
    )
    armed, gate, start_solve = threading.Event(), threading.Event(), node.pipeline.start_solve

    def slow_start(full: bool = False, copy: bool = True):
        job = start_solve(full, copy)
        if armed.is_set() and full:  # ~/estimate_now's solve
            run = job.run

            def slow_run() -> None:
                armed.clear()  # tells the test the solver is in it
                gate.wait(60.0)
                run()

            job.run = slow_run
        return job

    node.pipeline.start_solve = slow_start
    return node, armed, gate


@pytest.mark.timeout(90)
@pytest.mark.parametrize("executor", ["events", "single"])
def test_a_pending_service_call_leaves_the_node_served(ros_context, executor):
    node, armed, gate = gated_coordinator(ros_context)
    client_node = Node("service_client", context=ros_context)
    estimate_now = client_node.create_client(Trigger, "/coordinator_node/estimate_now")
    parameters = AsyncParameterClient(client_node, "/coordinator_node")
    coordinator = NodeGroup([node], ros_context, executor).start()
    client = NodeGroup([client_node], ros_context, executor="single").start()
    try:
        assert estimate_now.wait_for_service(timeout_sec=30.0)
        assert parameters.wait_for_services(timeout_sec=30.0)
        armed.set()
        pending = estimate_now.call_async(Trigger.Request())
        assert wait_for(lambda: not armed.is_set(), 20.0)  # the worker is in its solve
        answered = parameters.get_parameters(["robots"])
        assert wait_for(answered.done, 20.0), "the coordinator's executor is held by the call"
        assert list(answered.result().values[0].string_array_value) == ROBOTS
        assert not pending.done()  # the command has not run: no answer yet
        gate.set()
        assert wait_for(pending.done, 30.0)
        response = pending.result()
        assert not response.success and "stage WAITING" in response.message
    finally:
        gate.set()
        client.stop()
        coordinator.stop()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("executor", ["events", "single"])
def test_a_command_not_run_at_shutdown_is_answered_as_failed_and_never_runs(ros_context, executor):
    node, armed, gate = gated_coordinator(ros_context)
    client_node = Node("service_client", context=ros_context)
    reset = client_node.create_client(Trigger, "/coordinator_node/reset")
    estimate_now = client_node.create_client(Trigger, "/coordinator_node/estimate_now")
    coordinator = NodeGroup([node], ros_context, executor).start()
    client = NodeGroup([client_node], ros_context, executor="single").start()
    try:
        assert reset.wait_for_service(timeout_sec=30.0)
        assert estimate_now.wait_for_service(timeout_sec=30.0)
        armed.set()
        busy = estimate_now.call_async(Trigger.Request())  # the worker waits in this solve
        assert wait_for(lambda: not armed.is_set(), 20.0)
        reset.call_async(Trigger.Request())
        assert wait_for(lambda: not node._commands.empty(), 20.0)
        ((command, answer),) = list(node._commands.queue)
        node._stop.set()  # shutting down: the worker ends after this cycle
        gate.set()
        assert wait_for(busy.done, 30.0) and busy.result().message  # the command under way
        node._worker.join(30.0)
        resets = node.pipeline.resets
        coordinator.stop()  # as at Ctrl-C: executor first, then the node
        assert command == "reset" and answer.result()[0] is False
        assert "not run, the coordinator is shutting down" in answer.result()[1]
        assert node.pipeline.resets == resets == 0  # (the caller is sent the failure: its
        # client shares the context that stop() shut down, so it may not receive it)
    finally:
        gate.set()
        client.stop()
