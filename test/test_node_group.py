"""runtime.NodeGroup: a context shut down while its thread spins ends the group quietly (a
benchmark's probe printed rclpy's RCLError / ExternalShutdownException at every such end)."""

from __future__ import annotations

import time

import pytest
import rclpy
from rclpy.context import Context
from rclpy.node import Node

from inertia_estimation_ros.ros.runtime import NodeGroup


@pytest.mark.parametrize("executor", ["single", "multi"])
@pytest.mark.timeout(60)
def test_a_context_shut_down_under_the_spinning_thread_is_not_an_error(executor, capfd) -> None:
    for _ in range(3):
        context = Context()
        rclpy.init(context=context)
        node = Node("spinning", context=context)
        node.create_timer(0.001, lambda: None)
        group = NodeGroup([node], context, executor).start()
        time.sleep(0.2)
        rclpy.shutdown(context=context)
        assert group.wait(10)
        assert group.error is None
    assert "Traceback" not in capfd.readouterr().err
