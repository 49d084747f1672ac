"""Every benchmark's tables on a docs page: ``with benchmark_page("name"): main()`` copies what
the benchmark prints into ``docs/benchmarks/<name>.md`` (with the command that printed it and
when), so that the documentation's tables come from the benchmarks, never from a hand.

A page holds one section per command line: a run replaces the section of its own command and
keeps the others, so ``--quick`` runs and full runs (or ``--robot`` variants) stand side by
side, each with its date. A section is written only when the benchmark ends normally; its
output still goes to the terminal as it is printed.

Each run also rewrites the list of pages and sections in ``docs/benchmarks/index.md``
(between its ``pages:begin``/``pages:end`` markers); ``python bench/doc_page.py`` does that
alone, ``--check`` only says whether it is current (exit 1 if not).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
HEADING = re.compile(r"^## `(.+)`$", re.MULTILINE)
INDEX_MARKERS = ("<!-- pages:begin -->", "<!-- pages:end -->")


class _Tee(io.TextIOBase):
    """A text stream that writes to the terminal and keeps a copy."""

    def __init__(self, terminal: io.TextIOBase) -> None:
        self.terminal, self.copy = terminal, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.terminal.write(text)

    def flush(self) -> None:
        self.terminal.flush()


def section_text(command: str, output: str, when: str) -> str:
    """The Markdown section of one run: its command, when, the machine, what it printed."""
    return (
        f"## `{command}`\n\n"
        f"Written on {when} ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        "timings vary 2-3x with the machine's load).\n\n"
        f"```\n{output.rstrip()}\n```\n"
    )


def page_header(name: str) -> str:
    return (
        f"# Benchmark: {name}\n\n"
        "Do not edit: each section below was written by the command it names (through\n"
        "`bench/doc_page.py`); run that command again to update its section. The other\n"
        "sections stay as their own runs left them.\n\n"
    )


def sections_of(text: str) -> dict[str, str]:
    """A page's sections by command, in page order (each with its heading)."""
    starts = [match.start() for match in HEADING.finditer(text)] + [len(text)]
    return {
        HEADING.match(text, start)[1]: text[start:end].rstrip("\n") + "\n"
        for start, end in zip(starts, starts[1:], strict=False)
    }


def updated_page(name: str, old: str, command: str, section: str) -> str:
    """The page ``old`` with the section of ``command`` replaced (or added at the end)."""
    sections = sections_of(old)
    sections[command] = section
    return page_header(name) + "\n".join(sections.values())


@contextlib.contextmanager
def benchmark_page(name: str, folder: Path = DOCS) -> Iterator[None]:
    """Copy stdout into the section of this command line in ``folder/<name>.md`` when the
    block ends without an exception."""
    script = Path(sys.argv[0])
    command = shlex.join([".venv/bin/python", f"bench/{script.name}", *sys.argv[1:]])
    tee, started = _Tee(sys.stdout), time.time()
    with contextlib.redirect_stdout(tee):
        yield
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
    page = folder / f"{name}.md"
    old = page.read_text() if page.exists() else ""
    section = section_text(command, tee.copy.getvalue(), when)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(updated_page(name, old, command, section))
    index = folder / "index.md"
    if index.exists() and INDEX_MARKERS[0] in index.read_text():
        index.write_text(updated_index(index.read_text(), folder))
    print(f"wrote the section `{command}` of {page}")


def index_list(folder: Path = DOCS) -> str:
    """The index's list: every benchmark page with the commands of its sections and when."""
    lines = []
    for page in sorted(folder.glob("*.md")):
        if page.name == "index.md":
            continue
        lines.append(f"- [{page.stem}]({page.name}):")
        for command, section in sections_of(page.read_text()).items():
            first = section.split("\n\n")[1].split(" (")[0].replace("\n", " ")
            lines.append(f"  - `{command}`: {first}")
    return "\n".join(lines)


def updated_index(text: str, folder: Path = DOCS) -> str:
    begin, end = INDEX_MARKERS
    head, rest = text.split(begin, 1)
    return f"{head}{begin}\n{index_list(folder)}\n{end}{rest.split(end, 1)[1]}"


def main() -> int:
    parser = argparse.ArgumentParser(description="rewrite docs/benchmarks/index.md's page list")
    parser.add_argument("--check", action="store_true", help="only check that it is current")
    args = parser.parse_args()
    index = DOCS / "index.md"
    current, new = index.read_text(), updated_index(index.read_text())
    if args.check:
        print(f"{index} is " + ("current" if new == current else "OUT OF DATE"))
        return int(new != current)
    index.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
