"""Test-session set-up shared by every test module.

Hypothesis: examples have no deadline (the "untimed" profile), as no test asserts timings.

ROS isolation: before anything imports rclpy, this session claims a ROS domain id
that no other test run on this machine holds (an exclusive lock file per id) and
restricts discovery to localhost, so parallel runs never cross-talk.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline (hypothesis's default is 200 ms): a deadline is a timed assertion,
# and on a shared, loaded machine an example of test_conversions took 273 ms once
# (DeadlineExceeded) although it takes 0.6 ms on a quiet one. Examples still run in full.
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")


def _claim_domain_id() -> tuple[int, object]:
    lock_dir = Path(tempfile.gettempdir()) / "inertia_estimation_ros_test_domains"
    lock_dir.mkdir(exist_ok=True)
    start = os.getpid() % 100
    for offset in range(101):
        domain = 1 + (start + offset) % 101
        handle = open(lock_dir / f"{domain}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return domain, handle
    raise RuntimeError("all ROS domain ids 1..101 are held by other test runs")


ROS_DOMAIN_ID, _DOMAIN_LOCK = _claim_domain_id()
os.environ["ROS_DOMAIN_ID"] = str(ROS_DOMAIN_ID)
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"


@pytest.fixture
def ros_context():
    """A fresh, initialized rclpy context, shut down after the test (unless a NodeGroup's stop
    did)."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    if context.ok():
        rclpy.shutdown(context=context)


@pytest.fixture
def graph():
    """A context with a ``coordinator_graph.Listener`` spinning, and a node for a team's
    publishers (``TeamPublisher``)."""
    import rclpy
    from coordinator_graph import Listener, start
    from rclpy.node import Node

    context = rclpy.Context()
    rclpy.init(context=context)
    listener = Listener(context=context)
    group = start(context, listener)
    yield listener, Node("team", context=context)
    group.stop()
