"""``inertia_estimation``: the command-line tool. One subcommand per module under ``commands/``.

Run ``inertia_estimation --help`` for the list, ``inertia_estimation <command> --help`` for each.
A command line that names its command imports that command's module alone (``estimate`` does
not load the simulator's, the recorder's or the planner's modules).
"""

from __future__ import annotations

import argparse
import gc
import sys
from importlib import import_module

# Each command's name and its module under ``commands/``, in the order ``--help`` lists them.
COMMANDS = {
    "demo": "demo",
    "simulate": "simulate",
    "record": "record",
    "bag-repair": "bag_repair",
    "replay": "replay",
    "estimate": "estimate",
    "report": "report",
    "plan": "plan",
    "verify": "verify",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone."""
    parser = argparse.ArgumentParser(
        prog="inertia_estimation",
        description="Payload estimation for robot teams: simulate, record, replay and estimate.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="<command>")
    for name, module in COMMANDS.items():
        if command in (None, name):
            import_module(f"{__package__}.commands.{module}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv``; None: this program's own (``sys.argv``), after which the
    process ends: its objects are then frozen (``gc.freeze``) so that the interpreter's
    shutdown does not collect them one by one (~0.1 s of CPU after ``estimate`` of a
    310-s bag; nothing is left open by then, and a shutdown never promised more)."""
    program = argv is None
    argv = sys.argv[1:] if program else argv
    named = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(named).parse_args(argv)
    code = int(args.run(args) or 0)
    if program:
        gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(main())
