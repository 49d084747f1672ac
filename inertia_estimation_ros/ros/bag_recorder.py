"""``BagRecorder``: an rclpy node that writes live topics to a rosbag2 (``bags.BagWriter``).

It subscribes, as they appear in the graph, to the topics matching its patterns (fnmatch,
e.g. ``/*/grasp_state``), and writes every message as received (serialized, never decoded),
stamped with the node's clock (simulated time with ``use_sim_time``). A topic whose
publishers are all transient-local (``robot_description``, ``payload_estimate``) is
subscribed latched and recorded as such, so that a replay re-latches it.

Every ``FLUSH_PERIOD`` the messages written so far go to disk (``BagWriter.flush``): a
recorder killed by SIGKILL loses at most that last span, and ``bags.repair_bag``
(``inertia_estimation bag-repair``) recovers the rest.
"""

from __future__ import annotations

import fnmatch
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ..bags import BagWriter, rclpy_class
from .runtime import steady_timer

DISCOVERY_PERIOD = 0.5  # [s] between looks for new topics
FLUSH_PERIOD = 0.5  # [s] between flushes of the bag to disk


def matches(topic: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(topic, p) for p in patterns)


class BagRecorder(Node):
    """Records the topics matching ``patterns`` and not ``exclude`` into a new bag at ``path``;
    ``close()`` finishes the bag. Spin it on the single-threaded executor: rclpy's
    multi-threaded one takes about 2 ms a message and lost a third of a 1 kHz replay."""

    def __init__(
        self,
        path: str | Path,
        patterns: Sequence[str],
        exclude: Sequence[str] = (),
        storage: str = "mcap",
        **kwargs: object,
    ):
        super().__init__("bag_recorder", **kwargs)
        self.path, self.patterns, self.exclude = Path(path), list(patterns), list(exclude)
        self.writer = BagWriter(self.path, storage).__enter__()
        self.counts: Counter = Counter()
        self._types: dict[str, str] = {}
        self._latched: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._discover()
        steady_timer(self, DISCOVERY_PERIOD, self._discover)
        steady_timer(self, FLUSH_PERIOD, self._flush)

    @property
    def subscribed(self) -> set[str]:
        """The topics recorded so far."""
        return set(self._types)

    def wanted(self, topic: str) -> bool:
        return matches(topic, self.patterns) and not matches(topic, self.exclude)

    def _discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if topic in self._types or not self.wanted(topic) or len(types) != 1:
                continue
            publishers = self.get_publishers_info_by_topic(topic)
            if publishers:
                self._subscribe(topic, types[0], [p.qos_profile for p in publishers])

    def _subscribe(self, topic: str, msgtype: str, offered: list) -> None:
        """Latched when every publisher is; best effort when any publisher is."""
        latched = all(q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in offered)
        best_effort = any(q.reliability == ReliabilityPolicy.BEST_EFFORT for q in offered)
        qos = QoSProfile(
            depth=10 if latched else 1000,
            reliability=(
                ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE
            ),
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )
        self._types[topic] = msgtype
        if latched:
            self._latched.add(topic)
        self.create_subscription(
            rclpy_class(msgtype), topic, lambda raw, t=topic: self._write(t, raw), qos, raw=True
        )

    def _write(self, topic: str, raw: bytes) -> None:
        with self._lock:
            if self._closed:
                return
            stamp = self.get_clock().now().nanoseconds
            self.writer.write(topic, self._types[topic], stamp, raw, latched=topic in self._latched)
            self.counts[topic] += 1

    def _flush(self) -> None:
        with self._lock:
            if not self._closed:
                self.writer.flush()

    def close(self) -> Path:
        """Finish the bag (before the node is destroyed); returns its path."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self.writer.__exit__(None, None, None)
        return self.path
