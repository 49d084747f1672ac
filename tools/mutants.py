"""Named mutants: plausible bugs in core/ and ros/conversions.py that the tests must see.

Run: make mutants   (or .venv/bin/python tools/mutants.py [--only NAME_PART])

Each mutant replaces one exact piece of source text in a fresh copy of the tree (the
worktree is never touched) and runs the tests that should catch it. A mutant is killed
when those tests fail; a survivor is a test gap, or an accepted one listed with its reason
in docs/developer/mutants.md. Not part of CI: it runs the named tests once per mutant.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "inertia_estimation_ros"


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # inside the package
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments


def misstated_std(
    name: str,
    path: str,
    site: tuple[str, str],
    tests: tuple[str, ...],
    sizes: tuple[str, ...] = ("small", "large"),
) -> tuple[Mutant, ...]:
    """Mutants stating a std 20 % too small or too large: ``site`` is the source text and the
    text after which the covariance is scaled (by 0.64 or 1.44)."""
    old, at = site
    factor = {"small": 0.64, "large": 1.44}
    return tuple(
        Mutant(
            f"{name} 20 % too {size}",
            path,
            old,
            old.replace(at, f"{at}{factor[size]} * ", 1),
            tests,
        )
        for size in sizes
    )


GRASP_COV = "    covariance = covariance_from_information(information)\n    return GraspKinematics("
POSE_COV = "    covariance = covariance_from_information(information)[:n, :n]"
MUTANTS = (
    Mutant(
        "to_inertia: ixz and iyz swapped",
        "ros/conversions.py",
        "ixz=float(I_c[0, 2]),\n        iyy=float(I_c[1, 1]),\n        iyz=float(I_c[1, 2]),",
        "ixz=float(I_c[1, 2]),\n        iyy=float(I_c[1, 1]),\n        iyz=float(I_c[0, 2]),",
        ("test/test_conversions.py",),
    ),
    Mutant(
        "to_inertia: sign of ixy flipped",
        "ros/conversions.py",
        "ixy=float(I_c[0, 1]),",
        "ixy=-float(I_c[0, 1]),",
        ("test/test_conversions.py",),
    ),
    Mutant(
        "sdp._set_prior: metric replaced by a scaled identity",
        "core/identification/sdp.py",
        "            L = np.linalg.cholesky(0.5 * (M + M.T) / mean_square",
        "            M = np.trace(M) / n * np.eye(n)\n"
        "            L = np.linalg.cholesky(0.5 * (M + M.T) / mean_square",
        ("test/test_identification_sdp.py", "-k", "prior"),
    ),
    Mutant(
        "team_pipeline._degraded: the sub-team's grasps thrown away",
        "core/team_pipeline.py",
        "grasps = tuple(latest.get(g.robot_id, g) for g in estimate.grasps)",
        "grasps = tuple(g for g in estimate.grasps)",
        ("test/test_coordinator.py", "-k", "silent_robot_is_an_error"),
    ),
    Mutant(
        "estimate._consistent: projection in the identity metric",
        "core/cooperative/estimate.py",
        "project_to_consistent(theta, weight, settings.consistency_margin)",
        "project_to_consistent(theta, None, settings.consistency_margin)",
        ("test/test_cooperative_online.py", "-k", "information_metric"),
    ),
    *misstated_std(
        "refine_grasps: stated std",
        "core/cooperative/grasp_kinematics.py",
        (GRASP_COV, "= "),
        ("test/test_cooperative_kinematics.py", "-k", "calibrated and twists"),
    ),
    *misstated_std(
        "refine_grasps_from_poses: stated std",
        "core/cooperative/grasp_kinematics.py",
        (POSE_COV, "= "),
        ("test/test_cooperative_kinematics.py", "-k", "calibrated and poses"),
        sizes=("small",),
    ),
    Mutant(
        "spatial.adjoint: lever-arm block on the wrong side",
        "core/spatial.py",
        "Ad[3:, :3] = skew(p) @ R",
        "Ad[3:, :3] = R @ skew(p)",
        ("test/test_spatial.py", "test/test_regressor.py"),
    ),
    Mutant(
        "spatial.ad: the v x omega block dropped",
        "core/spatial.py",
        "    out[3:, :3] = skew(V[3:])\n",
        "",
        ("test/test_spatial.py", "test/test_regressor.py"),
    ),
    Mutant(
        "inertia_matrix: Ixz and Iyz swapped",
        "core/inertial.py",
        "[[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]",
        "[[xx, xy, yz], [xy, yy, xz], [yz, xz, zz]]",
        ("test/test_inertial.py", "test/test_regressor.py"),
    ),
    Mutant(
        "HomeGravity: direction std floor 10 x larger",
        "core/cooperative/grasp_kinematics.py",
        "return max(float(np.sqrt(spread / 2.0 / n)), self.floor)",
        "return max(float(np.sqrt(spread / 2.0 / n)), 10 * self.floor)",
        ("test/test_cooperative_kinematics.py", "-k", "gravity"),
    ),
    *misstated_std(
        "TeamEstimate: stated payload std",
        "core/cooperative/estimate.py",
        ("        theta_covariance=covariance,\n", "="),
        ("test/test_cooperative_dynamics.py", "-k", "calibrated"),
        sizes=("large", "small"),
    ),
    Mutant(
        "_pose_noise: position floor 10 % instead of 1 % (in std) of the angle part",
        "core/cooperative/grasp_kinematics.py",
        "floor = np.array([1e-18, 1e-4 * theta[0]",
        "floor = np.array([1e-18, 1e-2 * theta[0]",
        ("test/test_cooperative_kinematics.py",),
    ),
    Mutant(
        "robust_weights: Huber threshold halved",
        "core/cooperative/grasp_kinematics.py",
        "return np.minimum(1.0, scale / np.maximum(u, 1e-300))",
        "return np.minimum(1.0, 0.5 * scale / np.maximum(u, 1e-300))",
        ("test/test_cooperative_kinematics.py",),
    ),
)


def stale(mutants: tuple[Mutant, ...] = MUTANTS) -> list[str]:
    """Why each mutant that no longer applies does not: its text must occur exactly once in
    today's source and its test files must exist (checked by test/test_mutants.py)."""
    problems = []
    for mutant in mutants:
        count = (ROOT / PACKAGE / mutant.path).read_text().count(mutant.old)
        if count != 1:
            problems.append(f"{mutant.name}: the text to mutate occurs {count} times")
        missing = [t for t in mutant.tests if t.startswith("test/") and not (ROOT / t).exists()]
        problems += [f"{mutant.name}: no test file {t}" for t in missing]
    return problems


def run(mutant: Mutant, python: str) -> tuple[str, float]:
    """'killed', 'SURVIVED' or 'error: ...' and the seconds it took."""
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        copy = Path(tmp)
        ignore = shutil.ignore_patterns("__pycache__", ".hypothesis")
        shutil.copytree(ROOT / PACKAGE, copy / PACKAGE, ignore=ignore)
        shutil.copytree(ROOT / "test", copy / "test", ignore=ignore)
        shutil.copy(ROOT / "pyproject.toml", copy)
        source = copy / PACKAGE / mutant.path
        text = source.read_text()
        if text.count(mutant.old) != 1:
            return f"error: the text to mutate occurs {text.count(mutant.old)} times", 0.0
        source.write_text(text.replace(mutant.old, mutant.new))
        start = time.perf_counter()
        command = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests]
        environment = {**os.environ, "PYTHONPATH": str(copy)}
        result = subprocess.run(command, cwd=copy, env=environment, capture_output=True)
        seconds = time.perf_counter() - start
    if result.returncode == 1:
        return "killed", seconds
    if result.returncode == 0:
        return "SURVIVED", seconds
    return f"error: pytest exit code {result.returncode}", seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run the mutants whose name contains this")
    parser.add_argument(
        "--check", action="store_true", help="only check that every mutant still applies"
    )
    args = parser.parse_args()
    if problems := stale():
        print("stale mutants (update their text in MUTANTS):\n  " + "\n  ".join(problems))
        return 1
    if args.check:
        print(f"all {len(MUTANTS)} mutants apply")
        return 0
    survivors = []
    print("| Mutant | where | result | time |\n|---|---|---|---|", flush=True)
    for mutant in MUTANTS:
        if args.only not in mutant.name:
            continue
        result, seconds = run(mutant, sys.executable)
        print(f"| {mutant.name} | {mutant.path} | {result} | {seconds:.0f} s |", flush=True)
        if result != "killed":
            survivors.append(mutant.name)
    print(f"survivors: {len(survivors)}" + "".join(f"\n  {name}" for name in survivors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
