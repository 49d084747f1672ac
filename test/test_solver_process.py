"""Solves in a process of their own (``core.solver_process.SolverProcess``): the same estimates
as the solver thread bit for bit, warm starts adopted across the two processes, solve after
solve with only the changed statistics sent (resets and freezes between); a killed child is
reported and replaced; one that keeps failing to start is replaced after a growing wait,
then the solves run in the parent; shutdown leaves no process behind. Then the same for
``coordinator_node`` as its own process over DDS (hard timeouts, no timed assertions)."""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import pickle
import signal

import numpy as np
import pytest
from coordinator_data import ROBOTS, team_session
from coordinator_graph import (
    CoordinatorProcess,
    Listener,
    TeamPublisher,
    team_messages,
    wait_for,
)
from solver_targets import fail_at_start, fail_in_first_solve, serve_once_the_parent_left

from inertia_estimation_ros.core.solver_process import (
    SnapshotPickler,
    SolverDiedError,
    SolverProcess,
)
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


@pytest.mark.timeout(900)
def test_solve_after_solve_only_changes_are_sent_and_the_estimates_stay_the_threads(process):
    """Consecutive solves, a reset (the same data again: new statistics, nothing of the old
    base may be used), a freeze and a full solve between: every estimate and solution the
    thread's bit for bit; after the first solve, the snapshots send a fraction of their
    bytes."""
    series = team_session(offsets=False)[2]
    n = len(series["robot_1"])
    threaded = SolverThread("test thread")
    ours, theirs = (
        TeamPipeline(ROBOTS, "robot_1", SETTINGS),
        TeamPipeline(ROBOTS, "robot_1", SETTINGS),
    )
    sent = []
    steps = [range(k, k + n // 6) for k in range(0, n // 2, n // 6)]
    try:
        for stage in ("first", "after reset"):
            for k_range in steps:
                fed(series, k_range, ours), fed(series, k_range, theirs)
                assert same(solved(process, ours), solved(threaded, theirs))
                sent.append(process.sent_bytes)
                assert same(ours.full.estimator.solution(), theirs.full.estimator.solution())
            if stage == "first":
                ours.freeze(), theirs.freeze()
                fed(series, steps[-1], ours), fed(series, steps[-1], theirs)
                assert same(solved(process, ours, True), solved(threaded, theirs, True))
                ours.unfreeze(), theirs.unfreeze()
                ours.reset(), theirs.reset()
        whole = len(pickle.dumps(ours.start_solve(copy=False).snapshots))
        assert max(sent[1:]) < whole  # only the last segment and the kinematics' sums
    finally:
        threaded.close(TIMEOUT)


def test_a_changed_shared_object_is_sent_again():
    series = team_session(offsets=False)[2]
    pipeline = fed(series, range(300))
    pickler = SnapshotPickler()
    first = pickler.dumps(pipeline.full.estimator)[1]
    assert first  # the wrench segments and their clusters
    again = pickler.dumps(pipeline.full.estimator)[1]
    assert again == first  # nothing changed: the same keys and bytes
    fed(series, range(300, 400), pipeline)
    changed = pickler.dumps(pipeline.full.estimator)[1]
    assert set(changed) - set(first) and set(changed) & set(first)  # new, and some kept


@pytest.mark.timeout(600)
@pytest.mark.parametrize("target", [fail_at_start, fail_in_first_solve])
def test_a_child_that_keeps_failing_to_start_backs_off_then_the_parent_solves(target):
    """Each failed start waits longer (0.05, then 0.1 s at most here) and says why; a job
    is run on two children at most, then fails; after 3 failed starts (idle or during a
    job) the solves run in the parent: the thread's estimates."""
    series = team_session(offsets=False)[2]
    ours, theirs = fed(series, range(400)), fed(series, range(400))
    threaded = SolverThread("test thread")
    failing = SolverProcess("failing solver", target, backoff=(0.05, 0.1), max_failures=3)
    try:
        for _ in range(3):  # each failed job takes at least one failed start
            failing.submit(ours.start_solve(full=True, copy=False))
            assert failing.wait(TIMEOUT)
            job = failing.take()[0]
            if not isinstance(job.results["full"], SolverDiedError):
                break
            with pytest.raises(SolverDiedError):
                ours.finish_solve(job)
        assert failing.failed_starts == 3
        assert failing.fallback and failing.pid is None and failing.restarts == 2
        events = list(failing.events)
        assert "starts in 0.05 s" in events[0] and "starts in 0.1 s" in events[1]
        assert "now run in the node's process" in events[-1] == failing.problem
        assert same(ours.finish_solve(job), solved(threaded, theirs, full=True))
        assert same(solved(failing, ours, full=True), solved(threaded, theirs, full=True))
    finally:
        failing.close(TIMEOUT)
        threaded.close(TIMEOUT)


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


@pytest.mark.timeout(300)
def test_the_child_solves_below_a_real_time_parent():
    """The child runs at SCHED_BATCH whatever policy it inherited: a coordinator under
    ``chrt -r`` (SCHED_RR, set here where this test may: root or CAP_SYS_NICE) would give a
    child that takes a core from the real-time loop for each solve."""
    previous = os.sched_getscheduler(0), os.sched_getparam(0)
    with contextlib.suppress(PermissionError):
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    try:
        solver = SolverProcess("real-time parent")
    finally:
        os.sched_setscheduler(0, *previous)
    try:
        solved(solver, fed(team_session(offsets=False)[2], range(400)), full=True)
        assert os.sched_getscheduler(solver.pid) == os.SCHED_BATCH
    finally:
        solver.close(TIMEOUT)


@pytest.mark.timeout(300)
def test_a_child_whose_parent_left_while_it_started_ends_quietly(capfd):
    """A node closed while its solver process still started up: the child's READY meets a
    broken pipe, and it ends at once, with no traceback on the node's terminal."""
    spawn = multiprocessing.get_context("spawn")
    parent, child = spawn.Pipe()
    process = spawn.Process(target=serve_once_the_parent_left, args=(child,))
    process.start()
    child.close()
    parent.close()
    process.join(TIMEOUT)
    assert process.exitcode == 0
    assert "Traceback" not in capfd.readouterr().err


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
