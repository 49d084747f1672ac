"""``inertia_estimation``: the command-line tool. One subcommand per module under ``commands/``.

Run ``inertia_estimation --help`` for the list, ``inertia_estimation <command> --help`` for each.
"""

from __future__ import annotations

import argparse
import sys

from .commands import (
    bag_repair,
    demo,
    estimate,
    plan,
    record,
    replay,
    report,
    simulate,
    verify,
)

COMMANDS = [demo, simulate, record, bag_repair, replay, estimate, report, plan, verify]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inertia_estimation",
        description="Payload estimation for robot teams: simulate, record, replay and estimate.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="<command>")
    for module in COMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
