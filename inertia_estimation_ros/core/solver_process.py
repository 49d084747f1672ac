"""Solves in a process of their own: ``SolverThread``'s interface, the numerical work off the
pipeline process's interpreter.

A solve on a thread shares Python's GIL with the threads that take the samples and publish
the external wrench: each time they let go of it (a syscall, a small numpy copy) the solve
may keep it for a whole switch interval. ``SolverProcess`` runs the solves in a long-lived
child process started once (``spawn``: never a ``fork`` of a process that has DDS threads),
on one BLAS thread. ``submit`` pickles the job's snapshots (``TeamPipeline.start_solve``,
no deep copy needed) and hands the bytes to a courier thread, which writes them to the
child, waits for its answer with the GIL released, and makes the job done: its results and
each team's ``Solution`` (what ``TeamEstimator.adopt`` takes, far smaller than the
statistics) in place of the snapshots. ``TeamPipeline.finish_solve`` then takes it as a
thread's job: the same estimate bit for bit.

A child that dies (killed, out of memory) is found by the courier and replaced (``restarts``
and ``events`` say so); the job it was running is run again on the new child, once: if that
one dies too, the job is done with a ``SolverDiedError`` for each team (the solve failed; the
estimators solve again next time). The child ignores SIGINT (Ctrl-C reaches
the whole process group; the parent closes it) and exits when its parent's end of the pipe
closes, so none outlives the parent by more than the solve under way.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import pickle
import signal
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

from threadpoolctl import threadpool_limits

from .team_pipeline import SolveJob

PIPE_BYTES = 1 << 20  # pipe buffer asked for (Linux caps it at /proc/sys/fs/pipe-max-size)
HEALTH_PERIOD = 1.0  # [s] between checks that an idle child is alive
STOP_TIMEOUT = 5.0  # [s] for a child to exit once its pipe closed, before it is killed


class SolverDiedError(RuntimeError):
    """The solver process ended during a solve."""


def serve(connection: Connection) -> None:
    """The child: solve each job received until the pipe closes (``SolveJob.run`` on the
    snapshots, answered with the results, each team's ``Solution`` and the solve's time)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with threadpool_limits(limits=1, user_api="blas"):
        while True:
            try:
                full, snapshots = pickle.loads(connection.recv_bytes())
            except EOFError:
                return
            job = SolveJob({name: (None, e) for name, e in snapshots.items()}, full)
            try:
                job.run()  # errors of the solve are its results; others end in the job
            except Exception as error:
                job.results["full"] = error
            solutions = {name: e.solution() for name, e in snapshots.items()}
            reply = pickle.dumps((job.results, solutions, job.seconds), pickle.HIGHEST_PROTOCOL)
            try:
                connection.send_bytes(reply)
            except OSError:  # the parent is gone
                return


class SolverProcess:
    """One ``SolveJob`` at a time in a child process (module docstring); ``tag`` travels with
    its job. ``restarts`` counts the children that died and were replaced; ``events`` says
    why (read and cleared by the owner)."""

    copies_on_submit = True

    def __init__(self, name: str = "solver") -> None:
        self.name = name
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Condition()
        self._job: tuple[SolveJob, Any, bytes] | None = None  # submitted, not sent yet
        self._done: tuple[SolveJob, Any] | None = None  # run, not taken yet
        self._running = False
        self._closed = False
        self.restarts = 0
        self.events: deque[str] = deque(maxlen=100)
        self._process, self._connection = self._start_child()
        self._courier = threading.Thread(target=self._loop, name=f"{name} courier", daemon=True)
        self._courier.start()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def busy(self) -> bool:
        """A job is submitted, running, or done and not taken yet."""
        with self._lock:
            return self._job is not None or self._running or self._done is not None

    def submit(self, job: SolveJob, tag: Any = None) -> None:
        """Pickle the job's snapshots now (the caller goes on changing its estimators) and
        hand them to the courier. The snapshots need not be copies (``copies_on_submit``:
        ``TeamPipeline.start_solve(copy=False)`` spares the deep copy)."""
        snapshots = {name: job.snapshots[name] for name in job.teams}
        data = pickle.dumps((job.full, snapshots), pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if self._job is not None or self._running or self._done is not None:
                raise RuntimeError("the solver is busy: take() its job first")
            self._job = (job, tag, data)
            self._lock.notify_all()

    def take(self) -> tuple[SolveJob, Any] | None:
        """The job that has run and its tag, once; None while there is none."""
        with self._lock:
            done, self._done = self._done, None
            return done

    def wait(self, timeout: float) -> bool:
        """Block until no job is submitted or running (True) or ``timeout`` seconds passed."""
        with self._lock:
            return self._lock.wait_for(lambda: self._job is None and not self._running, timeout)

    def close(self, timeout: float) -> None:
        """Let the job under way finish (up to ``timeout`` s); run no other; end the child
        (killed if it does not exit)."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._courier.join(timeout)
        self._stop_child()

    # ----- the courier thread -------------------------------------------------------------
    def _start_child(self) -> tuple[multiprocessing.process.BaseProcess, Connection]:
        ours, theirs = self._context.Pipe()
        for end in (ours, theirs):
            with contextlib.suppress(OSError):  # a bigger buffer: fewer wake-ups per job
                fcntl.fcntl(end.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        process = self._context.Process(target=serve, args=(theirs,), name=self.name)
        process.daemon = True
        process.start()
        theirs.close()  # the child's end lives in the child only: its death closes the pipe
        return process, ours

    def _stop_child(self) -> None:
        self._connection.close()
        self._process.join(STOP_TIMEOUT)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(STOP_TIMEOUT)

    def _loop(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._job is not None or self._closed, HEALTH_PERIOD)
                if self._closed:
                    return
                job, tag, data = self._job or (None, None, b"")
                self._job, self._running = None, job is not None
            if job is None:
                if not self._process.is_alive():
                    self._restart("while idle")
                continue
            self._solve(job, data)
            with self._lock:
                self._done, self._running = (job, tag), False
                self._lock.notify_all()

    def _solve(self, job: SolveJob, data: bytes) -> None:
        """Run the job in the child; its results and solutions into the job. A child that
        dies during it is replaced and the job run again, once."""
        started = time.perf_counter()
        for attempt in range(2):
            try:
                self._connection.send_bytes(data)
                results, solutions, seconds = pickle.loads(self._connection.recv_bytes())
                break
            except (EOFError, OSError):
                died = self._restart("during a solve")
                if attempt or self._closed:
                    job.results = {name: SolverDiedError(died) for name in job.teams}
                    job.seconds = time.perf_counter() - started
                    return
        job.results, job.seconds = results, seconds
        job.snapshots = solutions

    def _restart(self, when: str) -> str:
        """Replace a dead child; returns what happened."""
        self._process.join(STOP_TIMEOUT)
        code = self._process.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        self._connection.close()
        if self._closed:  # shutting down: no new child
            return f"the solver process ended {when} ({how}) while closing"
        self._process, self._connection = self._start_child()
        self.restarts += 1
        message = (
            f"the solver process ended {when} ({how}); a new one (pid {self._process.pid}) "
            "takes over (a solve under way is run again, once)"
        )
        self.events.append(message)
        return message
