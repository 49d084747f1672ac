"""``inertia_estimation verify``: re-verify a saved plan (worst case over every realizable
inertia, paper 004 Eq. 13) for the objects it was planned for, or for another description.

Exit code 0 if certified, 1 if not, 2 if the inputs are unusable.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from .plan import EXIT_REFUSED, missing_inputs

    problem = missing_inputs(args.plan, args.objects)
    if problem:
        print(f"verify refused: {problem}")
        return EXIT_REFUSED

    import yaml

    from ..core.consistency import ConsistencyError
    from ..core.planning.objects import PolytopeError
    from ..core.planning.session import PlanOutcome, load_plan, verify_plan
    from ..sim.scenario import ScenarioError
    from .plan import objects_from_spec

    try:
        plan, spec = load_plan(args.plan)
        if args.objects is not None:
            spec = yaml.safe_load(args.objects.read_text())
        objects = objects_from_spec(spec)
        outcome = PlanOutcome(plan, verify_plan(plan, objects, args.max_solves))
    except (OSError, ValueError, ScenarioError, PolytopeError, ConsistencyError) as error:
        print(f"verify refused: {error}")
        return EXIT_REFUSED
    print(outcome.summary())
    return 0 if outcome.certified else 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="verify a saved balancing plan against every realizable inertia",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("plan", type=Path, help="a plan saved by `inertia_estimation plan`")
    parser.add_argument("--objects", type=Path, help="verify for this description instead")
    parser.add_argument(
        "--max-solves", type=int, default=400, help="SDP budget per object (branch and bound)"
    )
    parser.set_defaults(run=run)
