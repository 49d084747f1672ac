"""Solver-process loops that fail, for ``SolverProcess(target=...)`` in the tests (a module
of their own: the spawned child imports it, not a test module)."""

from __future__ import annotations

import os
from multiprocessing.connection import Connection

from inertia_estimation_ros.core.solver_process import READY, serve


def fail_at_start(connection: Connection) -> None:
    """A child whose start-up fails (an import error, say)."""
    os._exit(3)


def fail_in_first_solve(connection: Connection) -> None:
    """A child that starts, then dies on the first job it reads."""
    connection.send_bytes(READY)
    connection.recv_bytes()
    os._exit(4)


def serve_once_the_parent_left(connection: Connection) -> None:
    """The child's loop, started only once the parent's end has closed: a node closed while
    its child still started up (on a fast machine the child gets to say READY)."""
    connection.poll(None)  # readable at the parent's end of file
    serve(connection)
