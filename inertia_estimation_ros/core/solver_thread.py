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


class SolverThread:
    """One ``SolveJob`` at a time on a daemon thread; ``tag`` travels with its job.
    ``pid``, ``restarts``, ``events`` and ``copies_on_submit`` are ``SolverProcess``'s: no
    process, never restarted, solves the job's estimators as they are."""

    pid = None
    restarts = 0
    copies_on_submit = False  # its jobs need copies (``TeamPipeline.start_solve(copy=True)``)

    def __init__(self, name: str = "solver") -> None:
        self.events: deque[str] = deque()
        self._lock = threading.Condition()
        self._job: tuple[SolveJob, Any] | None = None  # submitted, not run yet
        self._done: tuple[SolveJob, Any] | None = None  # run, not taken yet
        self._running = False
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def busy(self) -> bool:
        """A job is submitted, running, or done and not taken yet."""
        with self._lock:
            return self._job is not None or self._running or self._done is not None

    def submit(self, job: SolveJob, tag: Any = None) -> None:
        with self._lock:
            if self._job is not None or self._running or self._done is not None:
                raise RuntimeError("the solver is busy: take() its job first")
            self._job = (job, tag)
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
        """Let the job under way finish (up to ``timeout`` s); run no other."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._job is not None or self._closed)
                if self._closed:
                    return
                job, tag = self._job
                self._job, self._running = None, True
            try:
                job.run()  # errors of the solve are its results; others end in the job
            except Exception as error:  # handed to the pipeline's thread
                job.results["full"] = error
            with self._lock:
                self._done, self._running = (job, tag), False
                self._lock.notify_all()
