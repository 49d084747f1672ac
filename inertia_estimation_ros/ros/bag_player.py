"""``BagPlayer``: publishes a rosbag2's messages at their log times, with ``/clock``, for nodes
on ``use_sim_time``.

Messages go out serialized, as recorded. ``/clock`` is generated from the log times (the
bag's own ``/clock`` is never replayed), so a bag that loops makes the clock jump back, as
``ros2 bag play --loop --clock`` does. Topics recorded latched are published latched; the
others reliable, which best-effort subscribers accept too.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from ..bags import bag_topics, latched_topics, rclpy_class, read_bag
from .bag_recorder import matches
from .conversions import to_time
from .interface import LATCHED_QOS, RELIABLE_QOS

CLOCK_TOPIC = "/clock"
CLOCK_STEP_NS = 1_000_000  # /clock is published when the log time advanced this much
PUBLISHED_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class BagPlayer:
    """Plays ``path`` through publishers of ``node``: the topics matching ``patterns`` and not
    ``exclude``, ``rate`` times real time, once or in a ``loop``."""

    def __init__(
        self,
        node: Node,
        path: str | Path,
        patterns: Sequence[str] = ("*",),
        exclude: Sequence[str] = (),
        rate: float = 1.0,
        loop: bool = False,
    ):
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        self.path, self.rate, self.loop = Path(path), rate, loop
        types = bag_topics(self.path)
        self.topics = sorted(
            t
            for t in types
            if t != CLOCK_TOPIC and matches(t, patterns) and not matches(t, exclude)
        )
        latched = latched_topics(self.path)
        self._publishers = {
            t: node.create_publisher(
                rclpy_class(types[t]), t, LATCHED_QOS if t in latched else PUBLISHED_QOS
            )
            for t in self.topics
        }
        self._clock = node.create_publisher(Clock, CLOCK_TOPIC, RELIABLE_QOS)
        self.published: Counter = Counter()
        self.loops = 0

    def play(
        self, stop: threading.Event, progress: Callable[[float], None] | None = None
    ) -> Counter:
        """Publish until the end (or forever with ``loop``) or until ``stop`` is set; returns
        messages per topic. ``progress(seconds)`` gets the bag time played; ``loops`` counts
        the complete passes."""
        while self._play_once(stop, progress):
            self.loops += 1
            if not self.loop:
                break
        return self.published

    def _play_once(self, stop: threading.Event, progress: Callable[[float], None] | None) -> bool:
        """One pass through the bag; False if ``stop`` ended it."""
        start, first, last_clock = time.monotonic(), None, None
        for message in read_bag(self.path, self.topics, deserialize="raw"):
            if stop.is_set():
                return False
            first = message.timestamp if first is None else first
            delay = start + (message.timestamp - first) * 1e-9 / self.rate - time.monotonic()
            if delay > 0 and stop.wait(delay):
                return False
            if last_clock is None or message.timestamp - last_clock >= CLOCK_STEP_NS:
                last_clock = message.timestamp
                self._clock.publish(Clock(clock=to_time(message.timestamp * 1e-9)))
                if progress is not None:
                    progress((message.timestamp - first) * 1e-9)
            self._publishers[message.topic].publish(message.message)
            self.published[message.topic] += 1
        return True
