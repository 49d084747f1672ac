"""Solves in a process of their own: ``SolverThread``'s interface, the numerical work off the
pipeline process's interpreter.

A solve on a thread shares Python's GIL with the threads that take the samples and publish
the external wrench: each time they let go of it (a syscall, a small numpy copy) the solve
may keep it for a whole switch interval. ``SolverProcess`` runs the solves in a long-lived
child process started once (``spawn``: never a ``fork`` of a process that has DDS threads),
on one BLAS thread. ``submit`` pickles the job's snapshots (``TeamPipeline.start_solve``,
no deep copy needed) and hands the bytes to a courier thread, which writes them to the
child (only what changed since the child's last job: ``SnapshotPickler``), waits for its
answer with the GIL released, and makes the job done: its results and each team's
``Solution`` (what ``TeamEstimator.adopt`` takes, far smaller than the statistics) in place
of the snapshots. ``TeamPipeline.finish_solve`` then takes it as a
thread's job: the same estimate bit for bit.

A child that dies (killed, out of memory) is found by the courier and replaced (``restarts``
and ``events`` say so); the job it was running is run again on the new child, once: if that
one dies too, the job is done with a ``SolverDiedError`` for each team (the solve failed; the
estimators solve again next time). A child that dies at start-up or in its first solve failed
to start: the next one starts after a wait that doubles each time, and after a few such
failures in a row the solves run in this process (``fallback``). The child ignores SIGINT
(Ctrl-C reaches the whole process group; the parent closes it) and exits when its parent's
end of the pipe closes, so none outlives the parent by more than the solve under way.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import itertools
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .consistency import project_to_consistent
from .cooperative.dynamics import WrenchMoments
from .cooperative.external_wrench import WrenchSegment
from .solver_thread import JobSlot
from .team_pipeline import SolveJob

PIPE_BYTES = 1 << 20  # pipe buffer asked for (Linux caps it at /proc/sys/fs/pipe-max-size)
HEALTH_PERIOD = 1.0  # [s] between checks that an idle child is alive
# [s] for an idle child to exit once its pipe closed, before it is killed (one still starting
# up reads its pipe only when it is ready; it holds nothing either)
STOP_TIMEOUT = 0.5
REAP_TIMEOUT = 5.0  # [s] for a child whose pipe broke to finish dying (its exit code)
BACKOFF = (0.5, 30.0)  # [s] first and longest wait before a child that failed to start is replaced
MAX_FAILED_STARTS = 8  # failed starts in a row before the solves run in the parent
READY = b"ready"  # the child's first message: started (its imports done)


class SolverDiedError(RuntimeError):
    """The solver process ended during a solve."""


def _segment_state(segment: WrenchSegment) -> tuple:
    return (segment.group, segment.start, segment.end, segment.samples, len(segment.clusters))


def _moments_state(moments: WrenchMoments) -> tuple:
    return (moments.samples,)


# The objects sent once and then referred to by key while their state is unchanged: the wrench
# segments and their clusters, most of a snapshot's bytes. Their statistics change only with
# their samples (``add``, ``absorb``); a segment's verdict is the solve's and travels always.
SHARED_STATES: dict[type, Callable[[Any], tuple]] = {
    WrenchSegment: _segment_state,
    WrenchMoments: _moments_state,
}


def _verdict(obj: object) -> tuple | None:
    if isinstance(obj, WrenchSegment):
        return (obj.used, obj.external_force, obj.external_moment)
    return None


@dataclass
class _Shared:
    """One shared object as last pickled: its state then, key, bytes and the keys (with
    their bytes) its bytes refer to."""

    obj: object  # held: its id is not reused while it is known
    state: tuple
    key: int
    data: bytes
    refers: dict[int, bytes]


class SnapshotPickler:
    """Pickles snapshots for a child that keeps the shared objects it was sent
    (``SHARED_STATES``): ``dumps`` gives the snapshot's bytes, with a reference (key,
    verdict) in place of each shared object, and every key it needs with its bytes. The
    child loads those it does not hold (``SnapshotStore``); the others it has. Keys are
    never reused: a changed object (or a reset's new one) gets a new key."""

    def __init__(self) -> None:
        self._known: dict[int, _Shared] = {}  # id(obj) -> what was sent of it
        self._keys = itertools.count()

    def dumps(self, payload: object) -> tuple[bytes, dict[int, bytes]]:
        needed: dict[int, bytes] = {}
        data = self._pickle(payload, needed, None)
        self._known = {i: s for i, s in self._known.items() if s.key in needed}
        return data, needed

    def _pickle(self, obj: object, needed: dict[int, bytes], top: object) -> bytes:
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
        pickler.persistent_id = lambda x: None if x is top else self._reference(x, needed)
        pickler.dump(obj)
        return buffer.getvalue()

    def _reference(self, obj: object, needed: dict[int, bytes]) -> tuple | None:
        state_of = SHARED_STATES.get(type(obj))
        if state_of is None:
            return None
        state, shared = state_of(obj), self._known.get(id(obj))
        if shared is None or shared.obj is not obj or shared.state != state:
            refers: dict[int, bytes] = {}
            data = self._pickle(obj, refers, obj)
            shared = _Shared(obj, state, next(self._keys), data, refers)
            self._known[id(obj)] = shared
        needed.update(shared.refers)
        needed[shared.key] = shared.data
        return (shared.key, _verdict(obj))


class SnapshotStore:
    """The child's side of ``SnapshotPickler``: the shared objects by key (loaded when first
    referred to; until then their bytes)."""

    def __init__(self) -> None:
        self._objects: dict[int, object] = {}
        self._data: dict[int, bytes] = {}

    def loads(self, data: bytes, keys: list[int], new: dict[int, bytes]) -> object:
        """The snapshot of ``data``; ``keys`` every key it needs, ``new`` the bytes of those
        this store does not hold yet. Objects no longer needed are dropped."""
        needed = set(keys)
        self._objects = {k: o for k, o in self._objects.items() if k in needed}
        self._data = {k: b for k, b in (self._data | new).items() if k in needed}
        return self._unpickle(data)

    def _unpickle(self, data: bytes) -> object:
        unpickler = pickle.Unpickler(io.BytesIO(data))
        unpickler.persistent_load = self._load
        return unpickler.load()

    def _load(self, reference: tuple) -> object:
        key, verdict = reference
        obj = self._objects.get(key)
        if obj is None:
            obj = self._objects[key] = self._unpickle(self._data.pop(key))
        if verdict is not None:  # the live segment's, not what the last solve here left
            obj.used, obj.external_force, obj.external_moment = verdict
        return obj


def solve_snapshot(
    store: SnapshotStore, keys: list[int], new: dict[int, bytes], data: bytes
) -> tuple[dict, dict, float]:
    """Run a pickled job (``SolverProcess.submit``): its results, each team's ``Solution``
    and the solve's time."""
    full, snapshots = store.loads(data, keys, new)
    job = SolveJob({name: (None, e) for name, e in snapshots.items()}, full)
    try:
        job.run()  # errors of the solve are its results; others end in the job
    except Exception as error:
        job.results["full"] = error
    return job.results, {name: e.solution() for name, e in snapshots.items()}, job.seconds


def _below_the_update_path() -> None:
    """The child's scheduling policy: SCHED_BATCH. A child spawned by a coordinator that runs
    at a real-time policy (``chrt -r``, SCHED_RR / SCHED_FIFO, as issue 14's loop runs)
    inherits it, and each solve (45-95 ms at N = 16) would then take a core from the
    real-time processes; SCHED_BATCH runs below them, and beside ordinary processes at the
    same nice value (no wake-up preemption). Lowering one's own policy needs no privilege;
    where the call does not exist, nothing changes."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


def _load_the_solvers() -> None:
    """What a solve loads on its first use: cvxpy and its conic solver, through a projection
    onto the consistent parameters (``project_to_consistent``; ~0.3 s of CPU on a quiet
    machine). Done before the child says it is ready, while the node starts, so that the
    first solves do not pay for it while the samples stream in. A failure here is left to
    the solve that meets it (it reports its own error)."""
    inconsistent = np.array([1.0, 0.0, 0.0, 0.0, 1e-3, 1e-3, -1e-3, 0.0, 0.0, 0.0])
    with contextlib.suppress(Exception):
        project_to_consistent(inconsistent)


def serve(connection: Connection) -> None:
    """The child: solve each job received until the pipe closes (``solve_snapshot``; a job
    is its keys and the bytes of the new ones, then the snapshot's bytes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _below_the_update_path()
    store = SnapshotStore()
    with threadpool_limits(limits=1, user_api="blas"):
        _load_the_solvers()
        _send(connection, READY)
        while True:
            try:
                keys, new_keys = pickle.loads(connection.recv_bytes())
                new = {k: connection.recv_bytes() for k in new_keys}
                data = connection.recv_bytes()
            except EOFError:
                _exit()
            answer = solve_snapshot(store, keys, new, data)
            _send(connection, pickle.dumps(answer, pickle.HIGHEST_PROTOCOL))


def _send(connection: Connection, data: bytes) -> None:
    """Send to the parent; if it is gone (a node closed while its child started or solved:
    the pipe is broken), end quietly, without a traceback."""
    try:
        connection.send_bytes(data)
    except OSError:
        _exit()


def _exit() -> None:
    """End the child now: it holds nothing to clean up, and the interpreter's own clean-up of
    numpy, scipy and the solvers takes seconds on a loaded machine (the parent waits for it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class SolverProcess(JobSlot):
    """One ``SolveJob`` at a time in a child process (module docstring); ``tag`` travels with
    its job. ``restarts`` counts the children that died and were replaced; ``events`` says
    why (read and cleared by the owner). A child that dies before it is ready (``READY``)
    or in its first job is a failed start: the next one starts after ``backoff`` = (first,
    longest) seconds, doubling; after ``max_failures`` failed starts in a row the solves run
    in this process (``fallback``; ``problem`` says so, as it says why while backing off).
    ``target`` is the child's loop (``serve``; tests give one that fails)."""

    copies_on_submit = True

    def __init__(
        self,
        name: str = "solver",
        target: Callable[[Connection], None] = serve,
        backoff: tuple[float, float] = BACKOFF,
        max_failures: int = MAX_FAILED_STARTS,
    ) -> None:
        super().__init__()
        self.name, self._target = name, target
        self._backoff, self._max_failures = backoff, max_failures
        self._context = multiprocessing.get_context("spawn")
        self.restarts = 0
        self.failed_starts = 0  # children in a row that died before their first answer
        self.fallback = False  # the solves run in this process (too many failed starts)
        self.problem = ""  # why the solver is not a healthy child, while it is not
        self.sent_bytes = 0  # to the child for the last job
        self.events: deque[str] = deque(maxlen=100)
        self._pickler = SnapshotPickler()
        self._held: set[int] = set()  # the keys the child (or the local store) holds
        self._local = SnapshotStore()
        self._ready = False  # the child has started (``READY``)
        self._answered = False  # the child has answered a job
        self._process, self._connection = self._start_child()
        self._courier = threading.Thread(target=self._loop, name=f"{name} courier", daemon=True)
        self._courier.start()

    @property
    def pid(self) -> int | None:
        return None if self.fallback else self._process.pid

    @property
    def ready(self) -> bool:
        """The child has started (its imports done: it takes jobs at once)."""
        return self._ready and not self.fallback

    def submit(self, job: SolveJob, tag: Any = None) -> None:
        """Pickle the job's snapshots now (the caller goes on changing its estimators) and
        hand them to the courier: the shared objects the child holds go as keys
        (``SnapshotPickler``). The snapshots need not be copies (``copies_on_submit``:
        ``TeamPipeline.start_solve(copy=False)`` spares the deep copy)."""
        snapshots = {name: job.snapshots[name] for name in job.teams}
        data, needed = self._pickler.dumps((job.full, snapshots))
        self._put((job, tag, data, needed))

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
        process = self._context.Process(target=self._target, args=(theirs,), name=self.name)
        process.daemon = True
        process.start()
        theirs.close()  # the child's end lives in the child only: its death closes the pipe
        self._held, self._ready, self._answered = set(), False, False  # it gets everything
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
                job, tag, data, needed = entry
                self._solve(job, data, needed)
                self._finish(job, tag)
            elif not (self._closed or self.fallback):
                self._check_idle_child()

    def _check_idle_child(self) -> None:
        """Note that the child started; replace it if it died."""
        with contextlib.suppress(EOFError, OSError):  # a dead child: found below
            if not self._ready and self._connection.poll():
                self._await_ready()
        if not self._process.is_alive():
            self._restart("while idle")

    def _await_ready(self) -> None:
        if self._connection.recv_bytes() != READY:
            raise OSError("the solver process did not start as expected")
        self._ready = True

    def _solve(self, job: SolveJob, data: bytes, needed: dict[int, bytes]) -> None:
        """Run the job in the child (in this process once fallen back); its results and
        solutions into the job. A child that dies during it is replaced and the job run
        again, once."""
        started = time.perf_counter()
        for attempt in range(2):
            try:
                results, solutions, seconds = self._answer(data, needed)
                break
            except (EOFError, OSError):
                died = self._restart("during a solve")
                if attempt or self._closed:
                    job.results = {name: SolverDiedError(died) for name in job.teams}
                    job.seconds = time.perf_counter() - started
                    return
        self._held = set(needed)
        job.results, job.seconds = results, seconds
        job.snapshots = solutions

    def _answer(self, data: bytes, needed: dict[int, bytes]) -> tuple:
        """``solve_snapshot`` in the child (or here): the keys, the bytes it lacks, the
        snapshot's bytes."""
        new = {k: b for k, b in needed.items() if k not in self._held}
        if self.fallback:
            return solve_snapshot(self._local, list(needed), new, data)
        if not self._ready:
            self._await_ready()
        parts = (pickle.dumps((list(needed), list(new))), *new.values(), data)
        for part in parts:
            self._connection.send_bytes(part)
        self.sent_bytes = sum(map(len, parts))
        answer = pickle.loads(self._connection.recv_bytes())
        self._answered = True
        self.failed_starts, self.problem = 0, ""
        return answer

    def _restart(self, when: str) -> str:
        """Replace a dead child (after the back-off if it failed to start; none
        after ``max_failures`` such deaths: fall back); returns what happened."""
        self._process.join(REAP_TIMEOUT)
        code = self._process.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        self._connection.close()
        if self._closed:  # shutting down: no new child
            return f"the solver process ended {when} ({how}) while closing"
        if self._ready and (self._answered or when == "while idle"):
            return self._replace(f"the solver process ended {when} ({how})")
        self.failed_starts += 1
        failed = (
            f"the solver process failed to start ({how}, {when}; at start-up or in its first "
            f"solve), {self.failed_starts} times in a row"
        )
        if self.failed_starts >= self._max_failures:
            return self._fall_back(failed)
        delay = min(self._backoff[0] * 2 ** (self.failed_starts - 1), self._backoff[1])
        self.problem = (
            f"{failed}: a new one starts in {delay:g} s (a solve fails if two children in a "
            f"row die on it; after {self._max_failures} failed starts the solves run in the "
            "node's process). "
            "Check the log for the child's error (an import failing, memory) and the Python "
            "environment"
        )
        self.events.append(self.problem)
        with self._lock:
            self._lock.wait_for(lambda: self._closed, delay)
        if self._closed:
            return self.problem
        return self._replace(self.problem)

    def _replace(self, why: str) -> str:
        self._process, self._connection = self._start_child()
        self.restarts += 1
        message = (
            f"{why}; the new solver process (pid {self._process.pid}) runs the solves (a "
            "solve under way is run again, once). If it repeats, check the memory (dmesg: "
            "out-of-memory kills) and report it"
        )
        if not self.problem:  # a failed start's problem is the event
            self.events.append(message)
        return message

    def _fall_back(self, failed: str) -> str:
        self.fallback = True
        self._held = set()
        self.problem = (
            f"{failed}: the solves now run in the node's process (they share its interpreter "
            "with the updates: slower updates while they run). Check the log for the child's error "
            "(an import failing, memory) and restart the node"
        )
        self.events.append(self.problem)
        return self.problem
