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
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

from threadpoolctl import threadpool_limits

from .solver_thread import JobSlot
from .team_pipeline import SolveJob

PIPE_BYTES = 1 << 20  # pipe buffer asked for (Linux caps it at /proc/sys/fs/pipe-max-size)
HEALTH_PERIOD = 1.0  # [s] between checks that an idle child is alive
# [s] for an idle child to exit once its pipe closed, before it is killed (one still starting
# up reads its pipe only when it is ready; it holds nothing either)
STOP_TIMEOUT = 0.5
REAP_TIMEOUT = 5.0  # [s] for a child whose pipe broke to finish dying (its exit code)


class SolverDiedError(RuntimeError):
    """The solver process ended during a solve."""


def serve(connection: Connection) -> None:
    """The child: solve each job received until the pipe closes (``SolveJob.run`` on the
    snapshots, answered with the results, each team's ``Solution`` and the solve's time)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with threadpool_limits(limits=1, user_api="blas"):
        while True:
            try:
                full, snapshots = unpickled(connection.recv_bytes())
            except EOFError:
                _exit()
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
                _exit()


def pickled(obj: object) -> bytearray:
    """``obj`` pickled in pieces into one buffer: the pickle with its arrays' data out of
    band, then each array's bytes copied in on its own (the layout: the count of pieces, their
    lengths, the pieces). Each step holds the GIL briefly, so the executor thread (the external
    wrench, issue 14) gets it within a switch interval: a 5-MB snapshot (N = 3, 10 s at 100 Hz)
    pickled in one call held it for 8-60 ms at load 10. One buffer: one write to the child."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL, buffer_callback=buffers.append)
    pieces = [memoryview(head), *(buffer.raw() for buffer in buffers)]
    start = 8 * (1 + len(pieces))
    data = bytearray(start + sum(piece.nbytes for piece in pieces))
    data[:start] = b"".join(
        n.to_bytes(8, "little") for n in (len(pieces), *(p.nbytes for p in pieces))
    )
    for piece in pieces:
        data[start : start + piece.nbytes] = piece
        start += piece.nbytes
    return data


def unpickled(data: bytes) -> object:
    """The object of ``pickled``'s buffer; its arrays writable (each its own bytearray)."""
    view = memoryview(data)
    count = int.from_bytes(view[:8], "little")
    start = 8 * (1 + count)
    pieces = []
    for k in range(1, count + 1):
        length = int.from_bytes(view[8 * k : 8 * k + 8], "little")
        pieces.append(view[start : start + length])
        start += length
    return pickle.loads(pieces[0], buffers=[bytearray(piece) for piece in pieces[1:]])


def _exit() -> None:
    """End the child now: it holds nothing to clean up, and the interpreter's own clean-up of
    numpy, scipy and the solvers takes seconds on a loaded machine (the parent waits for it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class SolverProcess(JobSlot):
    """One ``SolveJob`` at a time in a child process (module docstring); ``tag`` travels with
    its job. ``restarts`` counts the children that died and were replaced; ``events`` says
    why (read and cleared by the owner)."""

    copies_on_submit = True

    def __init__(self, name: str = "solver") -> None:
        super().__init__()
        self.name = name
        self._context = multiprocessing.get_context("spawn")
        self.restarts = 0
        self.events: deque[str] = deque(maxlen=100)
        self._process, self._connection = self._start_child()
        self._courier = threading.Thread(target=self._loop, name=f"{name} courier", daemon=True)
        self._courier.start()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def submit(self, job: SolveJob, tag: Any = None) -> None:
        """Pickle the job's snapshots now (the caller goes on changing its estimators) and
        hand them to the courier. The snapshots need not be copies (``copies_on_submit``:
        ``TeamPipeline.start_solve(copy=False)`` spares the deep copy)."""
        snapshots = {name: job.snapshots[name] for name in job.teams}
        self._put((job, tag, pickled((job.full, snapshots))))

    def close(self, timeout: float) -> None:
        """Let the job under way finish (up to ``timeout`` s); run no other; end the child
        (killed if it does not exit)."""
        self._close()
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
        """Close the pipe (a serving child exits); kill a child that does not exit at once."""
        self._connection.close()
        self._process.join(STOP_TIMEOUT)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(STOP_TIMEOUT)

    def _loop(self) -> None:
        while not self._closed:
            entry = self._next(HEALTH_PERIOD)
            if entry is not None:
                job, tag, data = entry
                self._solve(job, data)
                self._finish(job, tag)
            elif not self._closed and not self._process.is_alive():
                self._restart("while idle")

    def _solve(self, job: SolveJob, data: bytearray) -> None:
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
        self._process.join(REAP_TIMEOUT)
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
