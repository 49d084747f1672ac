"""Solves in a process of their own (``core.solver_process.SolverProcess``): the same estimates
as the solver thread bit for bit, warm starts adopted across the two processes; a killed child
is reported and replaced; shutdown leaves no process behind."""

from __future__ import annotations

import dataclasses
import os
import signal
import time

import numpy as np
import pytest
from coordinator_data import ROBOTS, team_session

from inertia_estimation_ros.core.solver_process import SolverDiedError, SolverProcess
from inertia_estimation_ros.core.solver_thread import SolverThread
from inertia_estimation_ros.core.team_pipeline import PipelineSettings, TeamPipeline

SETTINGS = PipelineSettings(estimate_clock_offsets=False)
TIMEOUT = 120.0  # [s] for a solve on the loaded test machine (its child's start-up included)


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
    solver.submit(pipeline.start_solve(full), "tag")
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


@pytest.mark.timeout(600)
def test_a_killed_solver_process_fails_its_solve_and_is_replaced(process):
    series = team_session(offsets=False)[2]
    pipeline = fed(series, range(len(series["robot_1"])))
    expected = solved(process, pipeline, full=True)
    first = process.pid
    process.submit(pipeline.start_solve(full=True))
    os.kill(first, signal.SIGKILL)  # during the solve (or before it starts: the same)
    assert process.wait(TIMEOUT)
    job, _ = process.take()
    assert isinstance(job.results["full"], SolverDiedError)
    assert process.restarts == 1 and process.pid != first
    assert "killed by signal 9" in process.events.popleft()
    # the last estimate stays; the estimator solves again next time
    assert pipeline.finish_solve(job) is expected
    assert pipeline.full.estimator._dirty
    assert same(solved(process, pipeline, full=True).theta, expected.theta)
    # a child that dies while idle is replaced too
    os.kill(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + TIMEOUT
    while process.restarts < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.restarts == 2 and "while idle" in process.events.popleft()
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
