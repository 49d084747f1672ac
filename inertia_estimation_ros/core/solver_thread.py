"""Solves beside the update path: a thread that runs one ``TeamPipeline`` solve at a time.

The pipeline's thread snapshots the statistics (``TeamPipeline.start_solve``), hands the job
here and goes on taking samples; when the job has run, ``take`` gives it back for
``TeamPipeline.finish_solve``. A solve from scratch (up to a second at N = 16) then never
holds up the updates (issue 16). The numerical work is numpy, LAPACK and the conic solver:
the update thread still gets Python's interpreter at least every switch interval
(``sys.getswitchinterval``, 5 ms by default).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from .team_pipeline import SolveJob


class JobSlot:
    """One job at a time between the pipeline's thread (``submit``, ``take``) and a thread
    that runs it (``_next``, ``_finish``): submitted, running, then done until taken. ``tag``
    travels with its job."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._job: tuple | None = None  # submitted, not run yet: (job, tag, ...)
        self._done: tuple[SolveJob, Any] | None = None  # run, not taken yet
        self._running = False
        self._closed = False

    @property
    def busy(self) -> bool:
        """A job is submitted, running, or done and not taken yet."""
        with self._lock:
            return self._job is not None or self._running or self._done is not None

    def take(self) -> tuple[SolveJob, Any] | None:
        """The job that has run and its tag, once; None while there is none."""
        with self._lock:
            done, self._done = self._done, None
            return done

    def wait(self, timeout: float) -> bool:
        """Block until no job is submitted or running (True) or ``timeout`` seconds passed."""
        with self._lock:
            return self._lock.wait_for(lambda: self._job is None and not self._running, timeout)

    def _put(self, entry: tuple) -> None:
        with self._lock:
            if self._job is not None or self._running or self._done is not None:
                raise RuntimeError("the solver is busy: take() its job first")
            self._job = entry
            self._lock.notify_all()

    def _next(self, timeout: float | None = None) -> tuple | None:
        """The next submitted entry, now running; None once closed, or after ``timeout``
        seconds without one."""
        with self._lock:
            self._lock.wait_for(lambda: self._job is not None or self._closed, timeout)
            if self._closed or self._job is None:
                return None
            entry, self._job, self._running = self._job, None, True
            return entry

    def _finish(self, job: SolveJob, tag: Any) -> None:
        with self._lock:
            self._done, self._running = (job, tag), False
            self._lock.notify_all()

    def _close(self) -> None:
        """Run no job after the one under way."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()


class SolverThread(JobSlot):
    """One ``SolveJob`` at a time on a daemon thread. ``pid``, ``ready``, ``restarts``, ``problem``,
    ``events`` and ``copies_on_submit`` are ``SolverProcess``'s: no process, never
    restarted, solves the job's estimators as they are."""

    pid = None
    restarts = 0
    problem = ""
    ready = True
    copies_on_submit = False  # its jobs need copies (``TeamPipeline.start_solve(copy=True)``)

    def __init__(self, name: str = "solver") -> None:
        super().__init__()
        self.events: deque[str] = deque()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: SolveJob, tag: Any = None) -> None:
        self._put((job, tag))

    def close(self, timeout: float) -> None:
        """Let the job under way finish (up to ``timeout`` s); run no other."""
        self._close()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while (entry := self._next()) is not None:
            job, tag = entry
            try:
                job.run()  # errors of the solve are its results; others end in the job
            except Exception as error:  # handed to the pipeline's thread
                job.results["full"] = error
            self._finish(job, tag)
