"""``inertia_estimation plan``: a robust balancing trajectory for objects on a carried tray
(paper 004), from a YAML object description, optionally with the CoM polytope taken from
the last PayloadEstimate of a bag; prints the plan summary and its verification (Eq. 13)
and saves it (.npz) only if it is certified.

Object description (YAML)::

    objects:                      # in the tray frame {e}, origin on the tray surface
      - {name: box, shape: box, size: [0.15, 0.15, 0.6], centre_xy: [0, 0], mu: 0.2,
         com_lo: [-0.06, -0.06, 0.0], com_hi: [0.06, 0.06, 0.6]}   # com_lo/hi optional
      - {name: can, shape: cylinder, radius: 0.04, height: 0.2, centre_xy: [0.08, 0]}
    robot: tray                   # tray (free-flying) or ridgeback_ur10 (the paper's 9 DoF)
    start: [0, 0, 1, 0, 0, 0]     # tray: pose x, y, z, roll, pitch, yaw; ridgeback_ur10: the
                                  # 9 joint positions (default: the paper's home pose)
    goal: [2, 0, 1]               # tray position
    method: robust                # robust / center / top
    duration: 5.0                 # T [s]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .lazy import lazy_module

np = lazy_module("numpy")  # loads on first use: arguments are checked first

EXIT_REFUSED = 2


def objects_from_spec(spec: dict) -> list:
    """The BalancedObjects of a description (validated; ScenarioError names the key)."""
    from ..core.planning.objects import BalancedObject
    from ..sim.scenario import Section

    out = []
    for k, item in enumerate(Section(spec, "plan").items("objects")):
        s = Section(item, f"plan.objects[{k}]")
        shape = s.string("shape", "box", choices=("box", "cylinder"))
        common = {
            "name": s.string("name", f"object_{k}"),
            "centre_xy": tuple(s.vector("centre_xy", 2, [0.0, 0.0])),
            "mu": s.number("mu", 0.2, low=0.0),
        }
        if shape == "box":
            obj = BalancedObject.box(tuple(s.vector("size", 3)), **common)
        else:
            obj = BalancedObject.cylinder(
                s.number("radius", positive=True), s.number("height", positive=True), **common
            )
        if s.has("com_lo") or s.has("com_hi"):
            obj = obj.with_com_box(s.vector("com_lo", 3), s.vector("com_hi", 3))
        s.done()
        out.append(obj)
    return out


def _estimate_from_bag(path: Path, topic: str) -> Any:
    from ..bags import read_bag

    last = None
    for message in read_bag(path, [topic], deserialize="rclpy"):
        last = message.message
    if last is None:
        raise ValueError(f"{path} has no message on {topic}")
    return last


def missing_inputs(*paths: Path | None) -> str:
    """'no file ...' for the first input path that does not exist ('' if all do), checked
    before the planner's imports so that a typo is answered at once."""
    missing = [p for p in paths if p is not None and not p.exists()]
    return f"no file {missing[0]}" if missing else ""


def run(args: argparse.Namespace) -> int:
    from ..data import data_file

    try:  # a path, or a bare name in the package's config/planning/ (e.g. tall_box)
        args.objects = data_file(args.objects, "config/planning")
    except FileNotFoundError:
        pass  # refused just below, naming the path as given
    problem = missing_inputs(args.objects, args.estimate_bag)
    if problem:
        print(f"plan refused: {problem}")
        return EXIT_REFUSED

    import yaml

    from ..core.consistency import ConsistencyError
    from ..core.planning.objects import PolytopeError
    from ..core.planning.planner import PlannerSettings, PlanningError
    from ..core.planning.session import ROBOTS, plan_and_verify, save_plan
    from ..sim.scenario import ScenarioError, Section

    try:
        spec = yaml.safe_load(args.objects.read_text())
        objects = objects_from_spec(spec)
        section = Section(spec, "plan")
        section.items("objects")
        robot = section.string("robot", "tray", choices=ROBOTS)
        start = _start(section, robot)
        goal = section.vector("goal", 3)
        method = section.string("method", "robust", choices=("robust", "center", "top"))
        settings = PlannerSettings(duration=section.number("duration", 5.0, positive=True))
        section.done()
        if args.estimate_bag is not None:
            objects = _inform(objects, _estimate_from_bag(args.estimate_bag, args.topic), args)
        outcome = plan_and_verify(
            objects, method, settings, start, goal, args.max_solves, robot=robot,
            replan_rounds=args.replan_rounds,
        )  # fmt: skip
    except (
        OSError,
        ValueError,
        ScenarioError,
        PolytopeError,
        PlanningError,
        ConsistencyError,
    ) as error:
        print(f"plan refused: {error}")
        return EXIT_REFUSED
    print(outcome.summary())
    if not outcome.certified:
        print("not saved: the plan is not certified; lengthen `duration` or shrink the polytope")
        return EXIT_REFUSED
    if args.out is not None:
        save_plan(args.out, outcome.plan, spec)
        print(f"saved {args.out}")
    return 0


def _start(section: Any, robot: str) -> np.ndarray:
    if robot == "tray":
        return section.vector("start", 6, [0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    from ..core.planning.robot import HOME, NQ

    return section.vector("start", NQ, list(HOME))


def _inform(objects: list, msg: Any, args: argparse.Namespace) -> list:
    """The first object's CoM polytope from the estimate (k sigma, clipped, inset)."""
    from ..core.planning.objects import ComEstimate, informed_com_box
    from ..core.spatial import transform

    T_e_s = transform(np.eye(3), -np.asarray(args.tray_offset, dtype=float))
    estimate = ComEstimate.from_parameters(
        np.asarray(msg.parameters),
        np.asarray(msg.parameter_covariance).reshape(10, 10),
        bool(msg.com_valid),
        T_e_s,
    )
    informed, used = informed_com_box(objects[0], estimate, args.k_sigma)
    print(
        f"CoM polytope of '{informed.name}' from the estimate: [{np.round(informed.com_lo, 3)}, "
        f"{np.round(informed.com_hi, 3)}]"
        + ("" if used else " (estimate not valid yet: the paper's full-height box)")
    )
    return [informed, *objects[1:]]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="plan a verified robust balancing trajectory for a carried tray",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "objects",
        type=Path,
        help="YAML object description (see above): a path or a name in "
        "config/planning/, e.g. tall_box",
    )
    parser.add_argument("--out", type=Path, help="save the certified plan here (.npz)")
    parser.add_argument("--estimate-bag", type=Path, help="bag with PayloadEstimate messages")
    parser.add_argument("--topic", default="/payload_estimate", help="its estimate topic")
    parser.add_argument("--k-sigma", type=float, default=3.0, help="CoM box half-width in sigma")
    parser.add_argument(
        "--tray-offset",
        type=float,
        nargs=3,
        default=[0.0, 0.0, 0.0],
        help="p_s_e: the tray frame's origin in the estimate's frame {s} (same axes) [m]",
    )
    parser.add_argument(
        "--max-solves", type=int, default=400, help="SDP budget per object (branch and bound)"
    )
    parser.add_argument(
        "--replan-rounds",
        type=int,
        default=2,
        choices=range(6),
        metavar="N",
        help="re-plans with a 10x balancing weight w_s while the SDP refuses the plan (0-5)",
    )
    parser.set_defaults(run=run)
