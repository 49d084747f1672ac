"""Spinning helpers shared by nodes, tools and tests."""

from __future__ import annotations

import time
from collections.abc import Callable

from rclpy.executors import Executor


def spin_until(executor: Executor, done: Callable[[], bool], timeout: float) -> bool:
    """Spin executor until done() holds or timeout seconds pass; returns done()."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.02)
    return done()
