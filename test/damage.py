"""Damaged copies of a bag: one robot's grasp_state spoiled in one of the ways issue 15 lists
(NaN wrenches, stamps shuffled in blocks, lost samples, out-of-order arrival, a clock 1000 s
ahead, a wrong frame id, zero quaternions), and the simulator run they spoil (made once
per test process). Used by the fault matrix and the CLI tests."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from inertia_estimation_ros.bags import BagMessage, BagWriter, read_bag
from inertia_estimation_ros.ros.conversions import seconds, to_time
from inertia_estimation_ros.sim.scenario import run_scenario
from inertia_estimation_ros.sim.topics import write_simulation_bag


def _nan_wrenches(messages: list, rng: np.random.Generator) -> list:
    """NaN in the force of a contiguous 40 % of the samples."""
    start = len(messages) // 3
    for m in messages[start : start + int(0.4 * len(messages))]:
        m.wrench.force.x = float("nan")
    return messages


def _shuffled_blocks(messages: list, rng: np.random.Generator) -> list:
    """Stamps permuted within blocks of 10 (the log order stays)."""
    stamps = [m.header.stamp for m in messages]
    for start in range(0, len(messages), 10):
        block = list(range(start, min(start + 10, len(messages))))
        for k, j in zip(block, rng.permutation(block), strict=True):
            messages[k].header.stamp = copy.copy(stamps[j])
    return messages


def _lost_samples(messages: list, rng: np.random.Generator) -> list:
    """Every fourth sample lost."""
    return [m for k, m in enumerate(messages) if k % 4 != 3]


def _shifted_clock(messages: list, rng: np.random.Generator) -> list:
    for m in messages:
        m.header.stamp = to_time(seconds(m.header.stamp) + 1000.0)
    return messages


def _wrong_frame(messages: list, rng: np.random.Generator) -> list:
    for m in messages:
        m.header.frame_id = "world"
    return messages


def _zero_quaternions(messages: list, rng: np.random.Generator) -> list:
    for m in messages:
        m.pose.orientation.w = 0.0
        m.pose.orientation.x = m.pose.orientation.y = m.pose.orientation.z = 0.0
    return messages


def _out_of_order(messages: list, rng: np.random.Generator) -> list:
    """Arrival order swapped pairwise (a transport that reorders): log times stay."""
    order = np.arange(len(messages))
    order[0:-1:2], order[1::2] = order[1::2], order[0:-1:2].copy()
    return [messages[k] for k in order]


DAMAGE: dict[str, Callable[[list, np.random.Generator], list]] = {
    "NaN wrenches": _nan_wrenches,
    "stamps shuffled in blocks of 10": _shuffled_blocks,
    "1 in 4 samples lost": _lost_samples,
    "arrival out of order": _out_of_order,
    "clock 1000 s ahead": _shifted_clock,
    "wrong frame id": _wrong_frame,
    "zero quaternions": _zero_quaternions,
}


def damaged_copy(source: Path, out: Path, robot: str, damage: str, seed: int = 0) -> Path:
    """``source`` with ``robot``'s grasp_state spoiled by ``DAMAGE[damage]``; other topics
    are copied byte for byte. Messages keep their log times and slots."""
    topic = f"/{robot}/grasp_state"
    messages = list(read_bag(source, deserialize="raw"))
    slots = [k for k, m in enumerate(messages) if m.topic == topic]
    decoded = [m.message for m in read_bag(source, [topic], deserialize="rclpy")]
    spoiled = DAMAGE[damage](decoded, np.random.default_rng(seed))
    stamps = [messages[k].timestamp for k in slots]
    for k, (slot, msg) in enumerate(zip(slots, spoiled, strict=False)):
        messages[slot] = BagMessage(topic, messages[slot].msgtype, stamps[k], msg)
    for slot in slots[len(spoiled) :]:
        messages[slot] = None
    with BagWriter(out) as writer:
        for m in messages:
            if m is not None:
                writer.write(m.topic, m.msgtype, m.timestamp, m.message)
    return out


@cache
def simulated_run() -> Path:
    """The shortest scenario with every stage (test_graph: 4.5 s, 100 Hz, three robots) as
    ``simulate --out`` leaves it: a folder with bag/ in it. Once per test process."""
    out = Path(tempfile.mkdtemp(prefix="damage_sim_"))
    write_simulation_bag(run_scenario("config/scenarios/test_graph.yaml"), out / "bag")
    return out
