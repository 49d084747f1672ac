"""Solves in a process of their own (``core.solver_process.SolverProcess``): the same estimates
as the solver thread bit for bit, warm starts adopted across the two processes; a killed child
is reported and replaced; shutdown leaves no process behind. Then the same for
``coordinator_node`` as its own process over DDS (hard timeouts, no timed assertions)."""

from __future__ import annotations

import dataclasses
import os
import signal

import numpy as np
import pytest
import rclpy
from coordinator_data import ROBOTS, team_session
from coordinator_graph import (
    CoordinatorProcess,
    Listener,
    TeamPublisher,
    start,
    team_messages,
    wait_for,
)
from rclpy.context import Context
from rclpy.node import Node

from inertia_estimation_ros.core.solver_process import SolverDiedError, SolverProcess
from inertia_estimation_ros.core.solver_thread import SolverThread
from inertia_estimation_ros.core.team_pipeline import PipelineSettings, TeamPipeline

SETTINGS = PipelineSettings(estimate_clock_offsets=False)
TIMEOUT = 120.0  # [s] for a solve on the loaded test machine (its child's start-up included)
SLOW = 60.0  # [s] generous bound for each wait of the DDS tests


def fed(series: dict, k_range: range, pipeline: TeamPipeline | None = None) -> TeamPipeline:
    pipeline = pipeline or TeamPipeline(ROBOTS, "robot_1", SETTINGS)
    for k in k_range:
        for rid in ROBOTS:
            assert pipeline.push(series[rid].sample(k), f"{rid}/grasp") == ""
        if k % 10 == 0:
            pipeline.process()
    pipeline.process()
    return pipeline


def solved(solver, pipeline: TeamPipeline, full: bool = False):
    """The estimate of one solve on ``solver``, finished by the pipeline."""
    solver.submit(pipeline.start_solve(full, copy=not solver.copies_on_submit), "tag")
    assert solver.wait(TIMEOUT)
    job, tag = solver.take()
    assert tag == "tag" and solver.take() is None and not solver.busy
    return pipeline.finish_solve(job)


def same(a, b) -> bool:
    """Equal bit for bit: arrays, dataclasses, containers and numbers, recursively."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and same(vars_of(a), vars_of(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return type(a) is type(b) and same(vars(a), vars(b))
    return a == b or (a != a and b != b)  # NaN is NaN


def vars_of(x) -> dict:
    return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}


@pytest.fixture
def process():
    solver = SolverProcess("test solver")
    yield solver
    solver.close(TIMEOUT)


@pytest.mark.timeout(600)
def test_the_process_gives_the_threads_estimates_bit_for_bit(process):
    series = team_session(offsets=False)[2]
    n = len(series["robot_1"])
    threaded = SolverThread("test thread")
    try:
        ours, theirs = fed(series, range(n // 2)), fed(series, range(n // 2))
        first = solved(process, ours)
        assert first.mass_valid or first.grasps_valid  # a solve that found something
        assert same(first, solved(threaded, theirs))
        # the next solves warm-start from the adopted solutions (process: a Solution sent
        # back; thread: the snapshot itself), from scratch with estimate_now
        fed(series, range(n // 2, n), ours), fed(series, range(n // 2, n), theirs)
        warm = solved(process, ours)
        assert same(warm, solved(threaded, theirs))
        assert same(ours.full.estimator.solution(), theirs.full.estimator.solution())
        assert same(solved(process, ours, full=True), solved(threaded, theirs, full=True))
        assert warm.mass_valid and abs(warm.mass - team_session(offsets=False)[1].mass) < 1e-6
    finally:
        threaded.close(TIMEOUT)


def test_pieces_carry_every_array_layout_bit_for_bit_and_writable():
    """``pickled`` / ``unpickled`` over a pipe: C- and F-ordered, strided and empty arrays,
    object arrays and plain values come back equal to the bit, the arrays writable (the
    solve works on them), and the pieces are copies (the sender goes on changing its own)."""
    import multiprocessing

    from inertia_estimation_ros.core.solver_process import pickled, unpickled

    rng = np.random.default_rng(0)
    c = rng.standard_normal((7, 5))
    value = {
        "c": c,
        "f": np.asfortranarray(c),
        "strided": c[::2, 1:],
        "empty": np.empty((0, 6)),
        "ints": np.arange(5),
        "objects": np.array([None, "x"], dtype=object),
        "nan": np.array([np.nan, -0.0]),
        "plain": (1.5, "s", None),
    }
    expected = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in value.items()}
    ours, theirs = multiprocessing.Pipe()
    data = pickled(value)
    c[:] = 0.0  # after pickling: the pieces are copies
    ours.send_bytes(data)
    back = unpickled(theirs.recv_bytes())
    objects = back.pop("objects"), expected.pop("objects")
    assert same(back, expected) and objects[0].tolist() == objects[1].tolist()
    assert all(v.flags.writeable for v in back.values() if isinstance(v, np.ndarray))
    assert back["f"].flags.f_contiguous


@pytest.mark.timeout(600)
def test_a_killed_solver_process_is_replaced_and_its_solve_run_again_once(process):
    series = team_session(offsets=False)[2]
    pipeline = fed(series, range(len(series["robot_1"])))
    expected = solved(process, pipeline, full=True)
    # killed during a solve (or before it starts: the same): run again on a new child
    first = process.pid
    process.submit(pipeline.start_solve(full=True, copy=False))
    os.kill(first, signal.SIGKILL)
    assert process.wait(TIMEOUT)
    assert same(pipeline.finish_solve(process.take()[0]), expected)
    assert process.restarts == 1 and process.pid != first
    assert "during a solve (killed by signal 9)" in process.events.popleft()
    # killed again while it runs the job again: the solve fails, the last estimate stays,
    # the estimator solves again next time
    process.submit(pipeline.start_solve(full=True, copy=False))
    os.kill(process.pid, signal.SIGKILL)
    assert wait_for(lambda: process.restarts == 2, TIMEOUT)
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(TIMEOUT)
    job, _ = process.take()
    assert isinstance(job.results["full"], SolverDiedError) and process.restarts == 3
    assert pipeline.finish_solve(job) is pipeline.last_estimate
    assert pipeline.full.estimator._dirty
    process.events.clear()
    assert same(solved(process, pipeline, full=True), expected)
    # a child that dies while idle is replaced too
    os.kill(process.pid, signal.SIGKILL)
    assert wait_for(lambda: process.restarts == 4, TIMEOUT)
    assert process.restarts == 4 and "while idle" in process.events.popleft()
    assert np.array_equal(solved(process, pipeline, full=True).theta, expected.theta)


@pytest.mark.timeout(300)
def test_close_ends_the_child():
    solver = SolverProcess("test solver")
    child = solver.pid
    solver.close(TIMEOUT)
    assert not solver.busy and not _alive(child)


def _alive(pid: int) -> bool:
    """The process runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.timeout(300)
def test_the_child_ignores_ctrl_c(process):
    """Ctrl-C reaches the terminal's whole process group: the parent closes the child (once
    it serves: a child still starting up dies of it, and is replaced)."""
    pipeline = fed(team_session(offsets=False)[2], range(400))
    expected = solved(process, pipeline, full=True)
    os.kill(process.pid, signal.SIGINT)
    assert same(solved(process, pipeline, full=True), expected)
    assert process.restarts == 0


@pytest.fixture
def graph():
    context = Context()
    rclpy.init(context=context)
    listener = Listener(context=context)
    group = start(context, listener)
    yield listener, Node("team", context=context)
    group.stop()


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def solver_pid(listener: Listener) -> int:
    assert wait_for(lambda: listener.value("worker", "solver process", ""), SLOW)
    return int(listener.value("worker", "solver process"))


@pytest.mark.timeout(300)
def test_the_coordinator_reports_and_replaces_a_killed_solver_process(tmp_path, graph):
    """Killed: logged, counted on /diagnostics (WARN), replaced, and the estimates go on;
    SIGTERM ends the node and its solver process."""
    listener, team = graph
    node = CoordinatorProcess(tmp_path)
    try:
        child = solver_pid(listener)
        assert parent_of(child) == node.process.pid and listener.level("worker") == "OK"
        os.kill(child, signal.SIGKILL)
        assert wait_for(lambda: listener.value("worker", "solver restarts") == "1", SLOW)
        assert listener.level("worker") == "WARN"
        replaced = solver_pid(listener)
        assert replaced != child and parent_of(replaced) == node.process.pid
        publisher = TeamPublisher(team, team_messages(), loop=True).start()
        try:
            assert wait_for(
                lambda: listener.estimates and listener.estimates[-1].grasps_valid, SLOW
            )
        finally:
            publisher.join()
        assert node.stop() == 0
    finally:
        node.stop()  # no node left behind by a failed assertion
    assert not _alive(replaced)
    log = node.log.read_text()  # while idle or during one of the solves every 0.2 s
    assert "ERROR" in log and "the solver process ended" in log and "(killed by signal 9)" in log


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_no_solver_process_outlives_its_coordinator(tmp_path, graph, how):
    """Ctrl-C ends both; a killed coordinator's child sees its pipe close and exits."""
    listener, _ = graph
    node = CoordinatorProcess(tmp_path)
    try:
        child = solver_pid(listener)
        node.process.send_signal(getattr(signal, how))
        node.process.wait(SLOW)
    finally:
        node.stop()
    assert wait_for(lambda: not _alive(child), SLOW)
