"""``inertia_estimation bag-repair``: recover the messages of a bag whose writer was killed."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bag-repair",
        help="recover the messages of an mcap bag whose writer was killed or cut off",
        description=(
            "A recorder killed by SIGKILL, a crash or a full disk leaves a bag folder without "
            "metadata.yaml and an mcap file without its index. This reads every complete "
            "record of that file in order, writes them to a new bag in its place, and keeps "
            "the damaged folder next to it as <bag>.damaged (delete it once you are happy)."
        ),
        epilog=(
            "examples:\n"
            "  inertia_estimation bag-repair runs/live\n"
            "  inertia_estimation bag-repair runs/live && inertia_estimation estimate runs/live"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bag", type=Path, help="the damaged bag folder")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..bags import BagError, repair_bag

    try:
        result = repair_bag(args.bag)
    except (BagError, OSError) as error:
        print(f"error: {error}")
        return 2
    for topic, n in sorted(result.counts.items()):
        print(f"{n:8d}  {topic}")
    print(
        f"recovered {sum(result.counts.values())} messages on {len(result.counts)} topics "
        f"into {args.bag} ({result.lost_bytes} bytes at the end of the file held no complete "
        f"record); the damaged bag is kept as {result.backup}"
    )
    return 0
