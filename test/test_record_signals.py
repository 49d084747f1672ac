"""``inertia_estimation record`` loses no message to a signal: SIGINT, a second SIGINT while
it finishes the bag, SIGTERM (ros2 launch, docker stop) each leave a complete bag; after a
SIGKILL, ``bag-repair`` recovers every message older than the recorder's flush period.
Each case records a numbered stream over DDS from a recorder in its own process, then reads
every message back."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time

import pytest
import rclpy
from coordinator_graph import wait_for
from rclpy.context import Context
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import UInt32

from inertia_estimation_ros import cli
from inertia_estimation_ros.bags import BagError, read_bag
from inertia_estimation_ros.ros.bag_recorder import FLUSH_PERIOD

TOPIC = "/probe/counter"
COUNT = 300


def record_and_signal(out, signals: list[int], streaming: bool = False) -> tuple[int, str, str]:
    """Start a recorder process on TOPIC, publish COUNT numbered messages, wait until they
    are flushed to disk, then send ``signals`` (20 ms apart); ``streaming``: the numbers go
    on at 200 Hz while the recorder flushes and is signalled, and 50 after it; returns the
    process's exit code, output and error output."""
    recorder = subprocess.Popen(
        [sys.executable, "-m", "inertia_estimation_ros.cli", "record", str(out)]
        + ["--topics", TOPIC],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    context = Context()
    rclpy.init(context=context)
    node = Node("counter", context=context)
    publisher = node.create_publisher(
        UInt32, TOPIC, QoSProfile(depth=COUNT, reliability=ReliabilityPolicy.RELIABLE)
    )
    try:
        assert wait_for(lambda: publisher.get_subscription_count() > 0, 60.0)
        stream = itertools.count()
        for _ in range(COUNT):
            publisher.publish(UInt32(data=next(stream)))
            time.sleep(0.001)
        flushed = time.monotonic() + 3 * FLUSH_PERIOD + 0.5  # delivered and flushed
        while time.monotonic() < flushed:
            if streaming:
                publisher.publish(UInt32(data=next(stream)))
            time.sleep(0.005)
        for s in signals:
            recorder.send_signal(s)
            time.sleep(0.02)
        for _ in range(50 if streaming else 0):
            publisher.publish(UInt32(data=next(stream)))
            time.sleep(0.005)
        out, err = recorder.communicate(timeout=60)
    finally:
        if recorder.poll() is None:
            recorder.kill()
        node.destroy_node()
        rclpy.shutdown(context=context)
    return recorder.returncode, out, err


def numbers(bag) -> list[int]:
    return [m.message.data for m in read_bag(bag, [TOPIC])]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "signals",
    [[signal.SIGINT], [signal.SIGINT, signal.SIGINT, signal.SIGINT], [signal.SIGTERM]],
    ids=["SIGINT", "SIGINT-while-closing", "SIGTERM"],
)
def test_a_stopped_recorder_leaves_a_complete_bag(tmp_path, signals):
    code, out, err = record_and_signal(tmp_path / "bag", signals)
    assert code == 0, err
    assert f"{COUNT}  {TOPIC}" in out
    assert numbers(tmp_path / "bag") == list(range(COUNT))


@pytest.mark.timeout(120)
def test_a_recorder_killed_mid_stream_loses_only_its_last_flush_period(tmp_path, capsys):
    """SIGKILL while the numbers still arrive: the repaired bag holds an unbroken run from
    0, at least every message published a flush period and more before the kill."""
    bag = tmp_path / "bag"
    code, _, _ = record_and_signal(bag, [signal.SIGKILL], streaming=True)
    assert code == -signal.SIGKILL
    assert cli.main(["bag-repair", str(bag)]) == 0
    recovered = numbers(bag)
    assert recovered == list(range(len(recovered))) and len(recovered) >= COUNT


@pytest.mark.timeout(120)
def test_a_killed_recorder_leaves_a_bag_that_bag_repair_recovers(tmp_path, capsys):
    bag = tmp_path / "bag"
    code, _, _ = record_and_signal(bag, [signal.SIGKILL])
    assert code == -signal.SIGKILL
    with pytest.raises(BagError, match="bag-repair"):
        numbers(bag)
    assert cli.main(["estimate", str(bag)]) == 2
    assert "bag-repair" in capsys.readouterr().out
    assert cli.main(["bag-repair", str(bag)]) == 0
    assert f"recovered {COUNT} messages on 1 topics" in capsys.readouterr().out
    assert numbers(bag) == list(range(COUNT))
    assert (tmp_path / "bag.damaged").is_dir()
    assert cli.main(["bag-repair", str(tmp_path / "nothing")]) == 2
