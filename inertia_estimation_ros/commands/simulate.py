"""``inertia_estimation simulate``: run a scenario in MuJoCo and write its rosbag2."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from ..data import SCENARIOS, shipped_scenarios
from .lazy import lazy_module

yaml = lazy_module("yaml")  # loads on first use: a bad argument is answered first


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run a simulation scenario (YAML) in MuJoCo and write a rosbag2",
        description=(
            "Run a scenario from config/scenarios/*.yaml and write, into --out: the rosbag2 "
            "(bag/; raw driver topics, GraspState per robot, /clock and /ground_truth/...), "
            "the resolved scenario (scenario.yaml), the ground truth (ground_truth.yaml) "
            "and each robot's URDF (urdf/<id>.urdf)."
        ),
        epilog=(
            "examples:\n"
            "  inertia_estimation simulate --list\n"
            "  inertia_estimation simulate test_graph --out runs/first  # 4 s, the smallest\n"
            "  inertia_estimation simulate paper000_mocobots --out runs/paper000 --seed 3"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "scenario",
        nargs="?",
        help="scenario: a YAML path, or a shipped scenario's name (see --list), e.g. test_graph",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the shipped scenarios: duration and purpose"
    )
    parser.add_argument("--out", type=Path, help="output folder (default: <name>_seed<seed>)")
    parser.add_argument(
        "--storage", choices=("mcap", "sqlite3"), default="mcap", help="bag storage (mcap)"
    )
    parser.add_argument("--seed", type=int, help="random seed (default: the scenario's)")
    parser.add_argument(
        "--force", action="store_true", help="replace the outputs of an earlier run in --out"
    )
    parser.add_argument(
        "--no-ground-truth",
        action="store_true",
        help="leave the /ground_truth/... topics out of the bag (they stay in ground_truth.yaml)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(scenario_list())
        return 0
    problem = _arguments_problem(args)  # before the simulator's imports: a quick answer
    if problem:
        print(f"error: {problem}")
        return 2

    from ..sim.ground_truth import ground_truth_document
    from ..sim.scenario import ScenarioError, load_scenario
    from ..sim.topics import message_count, write_simulation_bag
    from .progress import progress_bar

    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as error:
        print(f"error: {error}")
        return 2
    seed = scenario.seed if args.seed is None else args.seed
    out = args.out or Path(f"{scenario.name}_seed{seed}")
    problem = _output_problem(out, args.force)
    if problem:
        print(f"error: {problem}")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    if hasattr(scenario, "simulate_to"):  # a scenario with its own topics (tray_balancing)
        print(scenario.simulate_to(out, args.storage))
        return 0

    with progress_bar(round(scenario.duration, 3), "sim s", "simulate") as bar:

        def advance(fraction: float) -> None:
            bar.update(round(fraction * scenario.duration, 3) - bar.n)

        result = scenario.run(seed=seed, progress=advance)
    ground_truth = not args.no_ground_truth
    if hasattr(scenario, "write_outputs"):  # scenario types with their own topics (aerial)
        return scenario.write_outputs(result, out, args.storage, ground_truth)
    with progress_bar(message_count(result, ground_truth), "msg", "write bag", 0) as bar:
        write_simulation_bag(result, out / "bag", args.storage, ground_truth, bar.update)

    config = dict(scenario.config, seed=seed)
    (out / "scenario.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (out / "ground_truth.yaml").write_text(
        yaml.safe_dump(ground_truth_document(result), sort_keys=False)
    )
    (out / "urdf").mkdir(exist_ok=True)
    for rid, record in result.robots.items():
        (out / "urdf" / f"{rid}.urdf").write_text(record.urdf)
    rtf = result.duration / result.wall_time
    print(
        f"{result.duration:.1f} s simulated in {result.wall_time:.1f} s (real-time factor "
        f"{rtf:.1f}); wrote {out / 'bag'} ({args.storage})"
    )
    return 0


def _arguments_problem(args: argparse.Namespace) -> str:
    """What is wrong with the command line ('' if nothing), found without the numerics: no
    scenario, a scenario that is neither a file nor a shipped name, an unusable --out. The
    scenario is resolved to its path in ``args.scenario``."""
    from ..data import data_file

    if not args.scenario:
        return "name a scenario (a YAML file, or one of `inertia_estimation simulate --list`)"
    try:
        args.scenario = data_file(args.scenario, SCENARIOS)
    except FileNotFoundError:
        names = ", ".join(entry.name for entry in shipped_scenarios())
        return (
            f"no scenario {args.scenario}: give a YAML file or a shipped scenario ({names}; "
            "`inertia_estimation simulate --list` says what each is for)"
        )
    return _output_problem(args.out, args.force, remove=False) if args.out else ""


def scenario_list() -> str:
    """The shipped scenarios: name, simulated duration, purpose; the smallest marked."""
    from ..sim.scenario import ScenarioError, load_scenario

    rows = []
    for entry in shipped_scenarios():
        try:
            duration = float(load_scenario(entry.path).duration)
        except (ScenarioError, AttributeError):
            duration = float("nan")
        rows.append((entry.name, duration, _shortened(entry.purpose, 100)))
    smallest = min((r for r in rows if r[1] == r[1]), key=lambda r: r[1], default=None)
    width = max((len(r[0]) for r in rows), default=4) + 2
    lines = [f"{'scenario':<{width}}{'duration':>9}  purpose"]
    for row in rows:
        mark = "  <- the smallest: try it first" if row is smallest else ""
        lines.append(f"{row[0]:<{width}}{row[1]:>7.1f} s  {row[2]}{mark}")
    lines.append("run one: inertia_estimation simulate <scenario> --out <folder>")
    return "\n".join(lines)


def _shortened(text: str, width: int) -> str:
    return text if len(text) <= width else text[: text.rfind(" ", 0, width)] + " ..."


OUTPUTS = ("bag", "scenario.yaml", "ground_truth.yaml", "urdf")


def _output_problem(out: Path, force: bool, remove: bool = True) -> str:
    """Why ``out`` cannot take the outputs ('' if it can); with ``force`` (and ``remove``) an
    earlier run's outputs are removed first."""
    if out.exists() and not out.is_dir():
        return f"{out} is a file: choose a folder for --out"
    existing = [name for name in OUTPUTS if (out / name).exists()]
    if existing and not force:
        return (
            f"{out} exists with {', '.join(existing)} of an earlier run: choose another "
            "--out, or add --force to replace them"
        )
    for name in existing if remove else []:
        path = out / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return ""
