"""The segments of issue 14's loop from the processes' traces (``sitecustomize.py``): for each
of robot_1's samples that became a wrench and a reference, the times from the driver's
JointState to every robot's command, publish to callback (DDS's delivery and the receiving
executor's wake-up) and callback to publish (the node's work), p50 / p90 / p99 / max in ms."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

Events = dict[tuple[str, str], list[tuple[int, int, int]]]  # (p|s, topic) -> (stamp, start, end)


def _load(folder: Path, prefix: str) -> Events:
    events: Events = defaultdict(list)
    for path in folder.glob(f"{prefix}_*.txt"):
        for line in path.read_text().splitlines():
            kind, topic, stamp, start, end = line.split()
            events[kind, topic].append((int(stamp), int(start), int(end)))
    return events


def _first(events: list[tuple[int, int, int]]) -> dict[int, int]:
    """Start time of the first event of each stamp."""
    firsts: dict[int, int] = {}
    for stamp, start, _ in events:
        firsts.setdefault(stamp, start)
    return firsts


def segments(folder: Path, robots: tuple[str, ...], skip: int = 300) -> dict[str, np.ndarray]:
    """Per segment, its durations [ms] over the chains (the first ``skip`` left out: the
    estimation's backlog)."""
    drivers = _load(folder, "robot_replay")
    coordinator, planner = (
        _load(folder, "coordinator_node_root"),
        _load(folder, "planner_node_root"),
    )
    nodes = {r: _load(folder, f"robot_node_{r}") for r in robots}
    reference = "/planner_node/reference/pose"
    published = sorted((start, stamp) for stamp, start, _ in planner["p", reference])
    references = np.array([start for start, _ in published])
    wrench_out = _first(coordinator["p", "/external_wrench"])
    wrench_in = _first(planner["s", "/external_wrench"])
    per_robot = {}
    for r, events in nodes.items():
        joints = events["s", f"/{r}/joint_states"]
        joint_starts = np.array([start for _, start, _ in joints])
        sample = {}  # GraspState stamp -> (driver's publish, callback start, GraspState publish)
        driver = _first(drivers["p", f"/{r}/joint_states"])
        for stamp, start, _ in events["p", f"/{r}/grasp_state"]:
            k = np.searchsorted(joint_starts, start, "right") - 1
            sample[stamp] = (driver.get(joints[k][0], np.nan), joints[k][1], start)
        per_robot[r] = (
            sample,
            _first(coordinator["s", f"/{r}/grasp_state"]),
            _first(events["s", reference]),
            _first(events["p", f"/{r}/robot_node/command/pose"]),
        )
    rows: dict[str, list[float]] = defaultdict(list)
    for stamp, out in wrench_out.items():
        k = np.searchsorted(references, wrench_in.get(stamp, np.inf))
        if k >= len(references) or references[k] - wrench_in[stamp] > 100e6:
            continue  # no reference (the admittance off) for this wrench
        ref_stamp, ref_out = published[k][1], references[k]
        try:
            chain = {
                r: [s[stamp], c[stamp], i[ref_stamp], o[ref_stamp]]
                for r, (s, c, i, o) in per_robot.items()
            }
        except KeyError:
            continue
        row = {}
        for r, ((drv, callback, sent), received, ref_in, command) in chain.items():
            row[f"{r}: driver's JointState -> its callback"] = callback - drv
            row[f"{r}: JointState callback -> GraspState published"] = sent - callback
            row[f"{r}: GraspState published -> coordinator's callback"] = received - sent
            row[f"{r}: reference published -> its callback"] = ref_in - ref_out
            row[f"{r}: reference callback -> command published"] = command - ref_in
        last = max(c[1] for c in chain.values())
        first_sample = chain[robots[0]][0][2]
        row["the last robot's GraspState after the first's"] = (
            max(c[0][2] for c in chain.values()) - first_sample
        )
        row["coordinator: last robot's callback -> /external_wrench published"] = out - last
        row["/external_wrench published -> planner's callback"] = wrench_in[stamp] - out
        row["planner: wrench callback -> reference published"] = ref_out - wrench_in[stamp]
        row[f"{robots[0]}'s GraspState published -> every command published"] = (
            max(c[3] for c in chain.values()) - first_sample
        )
        for name, value in row.items():
            rows[name].append(value / 1e6)
    return {name: np.asarray(values[skip:]) for name, values in rows.items()}


def receipts(folder: Path, robots: tuple[str, ...], skip: int = 300) -> np.ndarray:
    """The coordinator's receipts of the robots' GraspStates while wrenches flowed (the first
    ``skip`` wrenches left out): rows (published, its callback's start) [ns]."""
    coordinator = _load(folder, "coordinator_node_root")
    stamps = sorted(_first(coordinator["p", "/external_wrench"]))[skip:]
    rows = []
    for r in robots:
        sent = _first(_load(folder, f"robot_node_{r}")["p", f"/{r}/grasp_state"])
        received = _first(coordinator["s", f"/{r}/grasp_state"])
        rows += [(sent[s], received[s]) for s in stamps if s in sent and s in received]
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def what_overlaps(folder: Path, intervals: np.ndarray) -> dict[str, np.ndarray]:
    """Per kind of the coordinator's events ("thread": its worker's and solver courier's
    operations; garbage collections, callbacks and publishes by topic), how long [ms] each of
    ``intervals`` (rows (start, end) [ns]) overlapped one."""
    overlaps = {}
    for (kind, name), events in _load(folder, "coordinator_node_root").items():
        spans = np.array([(start, end) for _, start, end in events], dtype=np.int64)
        spans = spans[(spans[:, 1] > intervals[:, 0].min()) & (spans[:, 0] < intervals[:, 1].max())]
        label = {"w": "thread", "g": "collection", "s": "callback", "p": "publish"}[kind]
        a, b = intervals[:, :1], intervals[:, 1:]
        overlap = np.minimum(spans[:, 1], b) - np.maximum(spans[:, 0], a)
        overlaps[f"{label} {name}"] = np.clip(overlap, 0, None).sum(axis=1) / 1e6
    return overlaps


def print_overlaps(folder: Path, robots: tuple[str, ...], slow: float = 3.0) -> None:
    """For the coordinator's receipts slower than ``slow`` ms and for all of them: how often
    and how long each of the coordinator's own events overlapped the wait."""
    rows = receipts(folder, robots)
    if not len(rows):
        return
    delays = (rows[:, 1] - rows[:, 0]) / 1e6
    late = delays > slow
    print(
        f"  the coordinator's receipts (GraspState published -> its callback): {len(rows)}, "
        f"{late.sum()} over {slow:g} ms; what in the coordinator overlapped them:"
    )
    overlaps = what_overlaps(folder, rows)
    ranked = sorted(overlaps.items(), key=lambda item: -item[1][late].sum())
    for name, overlap in ranked[:12]:
        if not overlap[late].any():
            break
        hit = overlap[late] > 0
        print(
            f"    {name:52s} late: {hit.mean():4.0%} of them, {overlap[late][hit].mean():5.2f} ms"
            f" each;  all: {(overlap > 0).mean():4.0%}"
        )


def print_tail(table: dict[str, np.ndarray], share: float = 0.02) -> None:
    """In the slowest ``share`` of the chains (robot_1's GraspState -> every command): each
    segment's mean there against its median over all chains [ms], the largest excess first."""
    whole = table[next(name for name in table if name.endswith("every command published"))]
    slow = whole >= np.nanpercentile(whole, 100 * (1 - share))
    print(f"  the slowest {share:.0%} of the chains ({slow.sum()}): each segment's mean there")
    excess = {name: np.nanmean(v[slow]) - np.nanmedian(v) for name, v in table.items()}
    for name in sorted(excess, key=excess.get, reverse=True)[:8]:
        mean = np.nanmean(table[name][slow])
        print(f"    {name:66s} {mean:6.2f} (median {np.nanmedian(table[name]):5.2f})")


def print_worker(folder: Path, skip: int = 300) -> None:
    """The durations of the coordinator's worker and courier operations and of its garbage
    collections while wrenches flowed (the first ``skip`` wrenches left out), and their share
    of the wall time."""
    coordinator = _load(folder, "coordinator_node_root")
    starts = sorted(start for _, start, _ in coordinator["p", "/external_wrench"])[skip:]
    if len(starts) < 2:
        return
    first, last = starts[0], starts[-1]
    print("  the coordinator's other threads and collections while wrenches flowed [ms]:")
    for (kind, name), events in sorted(coordinator.items()):
        spans = [(end - start) / 1e6 for _, start, end in events if first <= start <= last]
        if kind not in "wg" or not spans:
            continue
        p50, p90, p99 = np.percentile(spans, [50, 90, 99])
        share = sum(spans) / ((last - first) / 1e6)
        name = f"collection {name}" if kind == "g" else name
        print(
            f"    {name:44s} {len(spans):5d} x  p50 {p50:6.2f}  p90 {p90:6.2f}  p99 {p99:7.2f}  "
            f"max {max(spans):7.2f}  {share:5.1%} of the time"
        )


def print_report(folder: Path, robots: tuple[str, ...]) -> None:
    table = segments(folder, robots)
    if not table:
        print(f"trace: no complete chain in {folder}")
        return
    count = len(next(iter(table.values())))
    print(f"trace ({folder}): {count} chains, publish/callback times of every process [ms]")
    for name, values in table.items():
        p50, p90, p99 = np.nanpercentile(values, [50, 90, 99])
        top = np.nanmax(values)
        print(f"  {name:66s} p50 {p50:5.2f}  p90 {p90:5.2f}  p99 {p99:5.2f}  max {top:6.2f}")
    print_tail(table)
    print_worker(folder)
    print_overlaps(folder, robots)
