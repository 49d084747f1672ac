"""runtime.NodeGroup on every executor: a context shut down while its thread spins ends the
group quietly (a benchmark's probe printed rclpy's RCLError / ExternalShutdownException at
every such end); ``stop`` ends the thread at once, idle or busy, without waiting for a spin
slice; a callback's error is reported and ends the group."""

from __future__ import annotations

import threading
import time

import pytest
import rclpy
from rclpy.context import Context
from rclpy.node import Node
from std_msgs.msg import UInt32

from inertia_estimation_ros.ros import runtime
from inertia_estimation_ros.ros.runtime import EXECUTORS, NodeGroup

ALL_EXECUTORS = sorted(EXECUTORS)


@pytest.fixture
def endless_slices(monkeypatch):
    """A spin slice, and a wait for the thread in ``stop``, far longer than the test's timeout:
    ``stop`` must end the slice under way, not wait for it to run out."""
    monkeypatch.setattr(NodeGroup, "SPIN_SLICE", 3600.0)
    monkeypatch.setattr(runtime, "SHUTDOWN_TIMEOUT", 3600.0)


def _context() -> Context:
    context = Context()
    rclpy.init(context=context)
    return context


@pytest.mark.parametrize("executor", ALL_EXECUTORS)
@pytest.mark.timeout(60)
def test_a_context_shut_down_under_the_spinning_thread_is_not_an_error(executor, capfd) -> None:
    for _ in range(3):
        context = _context()
        node = Node("spinning", context=context)
        node.create_timer(0.001, lambda: None)
        group = NodeGroup([node], context, executor).start()
        time.sleep(0.2)
        rclpy.shutdown(context=context)
        assert group.wait(10)
        assert group.error is None
        group.stop()
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("executor", ALL_EXECUTORS)
@pytest.mark.timeout(60)
def test_stop_ends_an_idle_group_without_waiting_for_its_slice(executor, endless_slices) -> None:
    context = _context()
    group = NodeGroup([Node("idle", context=context)], context, executor).start()
    time.sleep(0.3)  # the executor waits for an event that never comes
    group.stop()
    assert not group._thread.is_alive()
    assert group.error is None and not context.ok()


@pytest.mark.parametrize("executor", ALL_EXECUTORS)
@pytest.mark.timeout(60)
def test_stop_ends_a_busy_group_and_no_callback_runs_after_it(executor, endless_slices) -> None:
    """Messages flow to a subscription and a 1-kHz timer fires while ``stop`` is called."""
    context = _context()
    node = Node("busy", context=context)
    calls = {"timer": 0, "message": 0}
    node.create_timer(0.001, lambda: calls.__setitem__("timer", calls["timer"] + 1))
    node.create_subscription(
        UInt32, "flow", lambda _: calls.__setitem__("message", calls["message"] + 1), 100
    )
    publisher = node.create_publisher(UInt32, "flow", 100)
    group = NodeGroup([node], context, executor).start()
    flowing = threading.Event()

    def publish() -> None:
        while not flowing.is_set():
            publisher.publish(UInt32(data=1))
            time.sleep(0.0005)

    sender = threading.Thread(target=publish, daemon=True)
    sender.start()
    while calls["message"] < 50 or calls["timer"] < 50:
        time.sleep(0.01)
    group.stop()
    flowing.set()
    sender.join(10)
    after_stop = dict(calls)
    time.sleep(0.1)
    assert not group._thread.is_alive()
    assert calls == after_stop
    assert group.error is None


@pytest.mark.parametrize("executor", ALL_EXECUTORS)
@pytest.mark.timeout(60)
def test_a_callback_error_is_reported_and_ends_the_group(executor, endless_slices, capfd) -> None:
    context = _context()
    node = Node("failing", context=context)
    calls = []

    def fail() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise ValueError("the third call fails")

    node.create_timer(0.01, fail)
    group = NodeGroup([node], context, executor).start()
    assert group.wait(30)
    assert isinstance(group.error, ValueError)
    assert not group._thread.is_alive()
    group.stop()
    assert "the third call fails" in capfd.readouterr().err
