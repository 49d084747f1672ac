"""Every benchmark's tables on a docs page: ``with benchmark_page("name"): main()`` copies what
the benchmark prints into ``docs/benchmarks/<name>.md`` (with the command that printed it and
when), so that the documentation's tables come from the benchmarks, never from a hand.

The page is written only when the benchmark ends normally; its output still goes to the
terminal as it is printed.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


class _Tee(io.TextIOBase):
    """A text stream that writes to the terminal and keeps a copy."""

    def __init__(self, terminal: io.TextIOBase) -> None:
        self.terminal, self.copy = terminal, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.terminal.write(text)

    def flush(self) -> None:
        self.terminal.flush()


def page_text(name: str, command: str, output: str, when: str) -> str:
    """The Markdown page of one benchmark run."""
    return (
        f"# Benchmark: {name}\n\n"
        f"Written by `{command}` on {when} ({os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f};\ntimings vary 2-3x with the machine's load). Do not edit: run "
        "the benchmark again to update this page.\n\n"
        f"```\n{output.rstrip()}\n```\n"
    )


@contextlib.contextmanager
def benchmark_page(name: str, folder: Path = DOCS) -> Iterator[None]:
    """Copy stdout into ``folder/<name>.md`` when the block ends without an exception."""
    script = Path(sys.argv[0])
    command = shlex.join([".venv/bin/python", f"bench/{script.name}", *sys.argv[1:]])
    tee, started = _Tee(sys.stdout), time.time()
    with contextlib.redirect_stdout(tee):
        yield
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(page_text(name, command, tee.copy.getvalue(), when))
    print(f"wrote {folder / f'{name}.md'}")
