"""``inertia_estimation report``: a folder with a markdown summary and PNG plots of a bag's
estimate: the estimate +- 1 sigma against the ground truth (when the bag has it),
convergence, residuals and excitation.

``comparison_table`` (the final table of ``estimate`` and ``demo``) and ``write_report`` are
used by those commands too. Every number comes from ``PayloadEstimate`` messages (the offline
pipeline's, the live coordinator's recorded ones, and the simulator's ground truth), read
through ``ros.conversions`` and ``core.cooperative.payload_properties``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .lazy import lazy_module

np = lazy_module("numpy")  # loads on first use: arguments are checked first

PLOTS = ("convergence.png", "residuals.png", "excitation.png")
SOURCES = {
    "offline": "Estimated offline by the coordinator's pipeline on the bag (`inertia_estimation "
    "estimate`), ending with a solve from scratch.",
    "live": "Estimated live by the coordinator node; its last estimate is a solve from scratch "
    "(`~/estimate_now`) on all the data.",
}


@dataclass(frozen=True)
class Row:
    """One quantity of the table; ``truth`` is None when unknown, ``sigma`` None if invalid."""

    name: str
    value: float
    sigma: float | None
    truth: float | None


@dataclass(frozen=True)
class Quantities:
    """The numbers of a PayloadEstimate message, each with its standard deviation."""

    stamp: float
    grasps: dict  # robot id -> (p_s_i (3), its std (3), rotation vector [deg] (3), std (3))
    mass: tuple | None  # (value, std)
    com: tuple | None  # (p_s_c, std) arrays
    inertia: tuple | None  # ([Ixx, Iyy, Izz, Ixy, Ixz, Iyz], std)
    moments: tuple | None  # (principal moments, std)


def quantities(msg: Any) -> Quantities:
    """What a PayloadEstimate (estimate or ground truth) says, with 1-sigma from its
    covariances (parameter_covariance propagated to mass, CoM and inertia at first order)."""
    from ..core.cooperative.payload_properties import payload_properties
    from ..core.spatial import log3, log3_covariance
    from ..ros.conversions import covariance_matrix, seconds, transform_matrix

    grasps = {}
    if msg.grasps_valid:
        for g in msg.grasps:
            T = transform_matrix(g.transform)
            C = covariance_matrix(g.covariance)  # core order (dphi, dp); None: zero
            C = np.zeros((6, 6)) if C is None else C
            std = np.sqrt(np.clip(np.diag(C), 0, None))
            rotvec = np.rad2deg(log3(T[:3, :3]))
            # the rotation vector's own sigma, not that of the perturbation dphi
            rotvec_C = log3_covariance(T[:3, :3], C[:3, :3])
            rotvec_std = np.rad2deg(np.sqrt(np.clip(np.diag(rotvec_C), 0, None)))
            grasps[g.robot_id] = (T[:3, 3], std[3:], rotvec, rotvec_std)
    theta = np.asarray(msg.parameters, dtype=float)
    covariance = np.asarray(msg.parameter_covariance, dtype=float).reshape(10, 10)
    mass = com = inertia = moments = None
    if msg.mass_valid and theta[0] > 0:
        props = payload_properties(theta, covariance)

        def std(C: np.ndarray) -> np.ndarray:
            return np.sqrt(np.clip(np.diag(C), 0, None))

        mass = (props.mass, float(np.sqrt(max(props.mass_variance, 0.0))))
        if msg.com_valid:
            com = (props.p_s_c, std(props.p_s_c_covariance))
        if msg.inertia_valid:
            I_c, order = props.inertia_about_com, [0, 3, 5, 1, 2, 4]
            entries = np.array([I_c[0, 0], I_c[1, 1], I_c[2, 2], I_c[0, 1], I_c[0, 2], I_c[1, 2]])
            inertia = (entries, std(props.inertia_about_com_covariance)[order])
            moments = (props.principal_moments, std(props.principal_moments_covariance))
    return Quantities(seconds(msg.header.stamp), grasps, mass, com, inertia, moments)


def comparison_rows(estimate: Any, truth: Any = None) -> list[Row]:
    """The table's rows: every non-reference grasp frame, mass, CoM, inertia about the CoM
    and principal moments, with 1-sigma and, when ``truth`` is given, the true values."""
    est, true = quantities(estimate), quantities(truth) if truth is not None else None
    rows = []

    def add(name: str, part: tuple | None, true_part: tuple | None, index: int = 0) -> None:
        if part is None:
            rows.append(Row(name, float("nan"), None, _at(true_part, index)))
            return
        value, sigma = (np.atleast_1d(part[0])[index], np.atleast_1d(part[1])[index])
        rows.append(Row(name, float(value), float(sigma), _at(true_part, index)))

    for g in estimate.grasps:
        if g.robot_id == estimate.reference_robot_id:
            continue
        mine, theirs = est.grasps.get(g.robot_id), true.grasps.get(g.robot_id) if true else None
        for k, axis in enumerate("xyz"):
            add(f"T_s_{g.robot_id} p{axis} [m]", mine and mine[:2], theirs and theirs[:2], k)
        for k, axis in enumerate("xyz"):
            add(
                f"T_s_{g.robot_id} rotvec {axis} [deg]",
                mine and mine[2:],
                theirs and theirs[2:],
                k,
            )
    add("mass [kg]", est.mass, true.mass if true else None)
    for k, axis in enumerate("xyz"):
        add(f"CoM {axis} [m]", est.com, true.com if true else None, k)
    for k, name in enumerate(("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")):
        add(f"{name} about CoM [kg m^2]", est.inertia, true.inertia if true else None, k)
    for k in range(3):
        add(f"principal moment {k + 1} [kg m^2]", est.moments, true.moments if true else None, k)
    return rows


def _at(part: tuple | None, index: int) -> float | None:
    return None if part is None else float(np.atleast_1d(part[0])[index])


def _cells(row: Row) -> list[str]:
    if row.sigma is None:
        value = sigma = "not valid"
    else:
        value, sigma = f"{row.value:.5g}", f"{row.sigma:.2g}"
    cells = [row.name, value, sigma]
    if row.truth is None:
        return cells + ["", "", ""]
    cells.append(f"{row.truth:.5g}")
    if row.sigma is None:
        return cells + ["", ""]
    error = row.value - row.truth
    ratio = f"{abs(error) / row.sigma:.2f}" if row.sigma > 0 else "inf"
    return cells + [f"{error:+.2g}", ratio]


HEADER = ["quantity", "estimate", "+-1 sigma", "truth", "error", "|error|/sigma"]


def comparison_table(estimate: Any, truth: Any = None) -> str:
    """Plain-text table of ``comparison_rows`` (stage and advice below it)."""
    rows = [HEADER] + [_cells(r) for r in comparison_rows(estimate, truth)]
    widths = [max(len(r[k]) for r in rows) for k in range(len(HEADER))]
    lines = [
        "  ".join(
            [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        )
        for r in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    lines.append(_footer(estimate))
    return "\n".join(lines)


def _footer(estimate: Any) -> str:
    stages = ("WAITING", "KINEMATICS", "STATICS", "DYNAMICS", "FROZEN")
    text = (
        f"stage {stages[estimate.stage]}, {'' if estimate.physically_consistent else 'not '}"
        f"physically consistent (margin {estimate.consistency_margin:.3g} kg m^2); samples "
        f"kinematics {estimate.samples_kinematics}, static {estimate.samples_static}, dynamic "
        f"{estimate.samples_dynamic}, rejected {estimate.samples_rejected}"
    )
    return "\n".join([text] + [f"advice: {a}" for a in estimate.advice])


def markdown_table(estimate: Any, truth: Any = None) -> str:
    rows = [_cells(r) for r in comparison_rows(estimate, truth)]
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


# ----- plots -----------------------------------------------------------------------------------
def _history_series(history: list) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """name -> (times, values, stds) of the valid quantities over a list of estimates."""
    out: dict[str, list] = {}
    for msg in history:
        q = quantities(msg)
        parts = {"mass [kg]": q.mass}
        if q.com is not None:
            parts |= {f"CoM {a} [m]": (q.com[0][k], q.com[1][k]) for k, a in enumerate("xyz")}
        if q.moments is not None:
            parts |= {
                f"principal moment {k + 1} [kg m^2]": (q.moments[0][k], q.moments[1][k])
                for k in range(3)
            }
        for rid, (p, p_std, _, _) in q.grasps.items():
            if np.any(p):
                parts |= {f"p {rid} {a} [m]": (p[k], p_std[k]) for k, a in enumerate("xyz")}
        for name, part in parts.items():
            if part is not None:
                out.setdefault(name, []).append((q.stamp, part[0], part[1]))
    return {k: tuple(np.array(v).T) for k, v in out.items()}


def plot_convergence(
    path: Path, history: list, truth: Any, live: list, t0: float, source: str
) -> None:
    import matplotlib.pyplot as plt

    series = _history_series(history)
    recorded = _history_series(live) if live else {}
    truth_series = _history_series([truth]) if truth is not None else {}
    names = sorted(series, key=lambda n: (n.startswith("p "), n))
    columns = 3
    rows = max(1, -(-len(names) // columns))
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 2.4 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        t, value, std = series[name]
        # Against the truth, the error itself: its size reads off the axis directly.
        true = truth_series[name][1][0] if name in truth_series else 0.0
        ax.plot(t - t0, value - true, "C0.-", label=source)
        low, high = value - std - true, value + std - true
        ax.fill_between(t - t0, low, high, color="C0", alpha=0.25, label="+-1 sigma")
        if name in recorded:
            t_live, v_live, _ = recorded[name]
            ax.plot(t_live - t0, v_live - true, "C1-", lw=0.8, label="live")
        if name in truth_series:
            ax.axhline(0.0, color="k", ls="--", lw=0.8, label="truth")
        ax.ticklabel_format(axis="y", useOffset=False)  # plain tick labels, no "1e-5+0.7"
        ax.set_title(f"{name}: error" if name in truth_series else name, fontsize=9)
        ax.set_xlabel("time [s]", fontsize=8)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    if names:
        axes.flat[0].legend(fontsize=7)
    against = " minus the truth" if truth_series else ""
    fig.suptitle(f"Convergence of the estimate{against} (shaded: +-1 sigma)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


@dataclass(frozen=True)
class TeamData:
    """Every robot's recorded samples on the reference robot's time base (for the plots)."""

    t: np.ndarray  # (K,) reference stamps
    V: dict  # robot -> (K, 6)
    dV: dict
    F: dict
    g: dict


def team_data(bag: Path, robots: list[str], reference: str, max_offset: float = 0.2) -> TeamData:
    """The bag's grasp samples, others interpolated (vectors, linearly) at the reference's
    stamps shifted by their clock offsets (``cooperative.estimate_clock_offset``)."""
    from ..bags import read_bag
    from ..core.cooperative import estimate_clock_offset
    from ..core.samples import GraspSeries
    from ..ros.conversions import grasp_sample

    samples: dict[str, list] = {r: [] for r in robots}
    for message in read_bag(bag, [f"/{r}/grasp_state" for r in robots], deserialize="rclpy"):
        sample = grasp_sample(message.message)
        if sample.robot_id in samples and np.all(np.isfinite(sample.V_i)):
            samples[sample.robot_id].append(sample)
    series = {r: GraspSeries.from_samples(s) for r, s in samples.items()}
    ref = series[reference]
    t = ref.t
    keep = np.ones(len(t), dtype=bool)
    fields = {"V": {}, "dV": {}, "F": {}, "g": {}}
    for rid, s in series.items():
        speed = np.linalg.norm(s.V_i[:, :3], axis=1)
        offset = 0.0
        if rid != reference:
            offset = estimate_clock_offset(
                t, np.linalg.norm(ref.V_i[:, :3], axis=1), s.t, speed, max_offset
            ).offset
        at = t + offset
        keep &= (at >= s.t[0]) & (at <= s.t[-1])
        order = np.argsort(s.t)
        for name, values in (("V", s.V_i), ("dV", s.dV_i), ("F", s.F_i), ("g", s.g_i)):
            values = np.nan_to_num(values if values is not None else np.zeros((len(s.t), 3)))
            fields[name][rid] = np.stack(
                [np.interp(at, s.t[order], values[order, j]) for j in range(values.shape[1])],
                axis=1,
            )
    select = {name: {r: v[keep] for r, v in f.items()} for name, f in fields.items()}
    return TeamData(t[keep], **select)


def plot_residuals(path: Path, data: TeamData, estimate: Any, t0: float) -> None:
    """Net-wrench residual (measured sum of the robots' wrenches in {s} minus Y theta) and
    each robot's angular-velocity residual omega_i - R_i_s omega_s, with the final estimate."""
    import matplotlib.pyplot as plt

    from ..core import spatial as sp
    from ..core.regressor import body_regressor
    from ..ros.conversions import transform_matrix

    reference = estimate.reference_robot_id
    T_s_i = {g.robot_id: transform_matrix(g.transform) for g in estimate.grasps}
    fig, axes = plt.subplots(3, 1, figsize=(11, 8), sharex=True)
    t = data.t - t0
    if estimate.grasps_valid and estimate.mass_valid:
        F_s = sum(sp.adjoint(sp.inverse(T_s_i[r])).T @ F.T for r, F in data.F.items()).T
        theta = np.asarray(estimate.parameters, dtype=float)
        predicted = body_regressor(data.V[reference], data.dV[reference], data.g[reference]) @ theta
        residual = F_s - predicted
        for k, axis in enumerate("xyz"):
            axes[0].plot(t, residual[:, 3 + k], lw=0.6, label=f"f{axis}")
            axes[1].plot(t, residual[:, k], lw=0.6, label=f"m{axis}")
    axes[0].set_ylabel("net force residual [N]")
    axes[1].set_ylabel("net moment residual [N m]")
    if estimate.grasps_valid:
        omega_s = data.V[reference][:, :3]
        for rid, V in data.V.items():
            if rid != reference:
                R_i_s = T_s_i[rid][:3, :3].T
                error = np.linalg.norm(V[:, :3] - omega_s @ R_i_s.T, axis=1)
                axes[2].plot(t, error, lw=0.6, label=rid)
    axes[2].set_ylabel("|omega_i - R_i_s omega_s| [rad/s]")
    axes[2].set_xlabel("time [s]")
    for ax in axes:
        if ax.lines:
            ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("Residuals with the final estimate")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_excitation(path: Path, data: TeamData, history: list, reference: str, t0: float) -> None:
    """The reference robot's angular speed and acceleration with the detected phases
    (``cooperative.offline.detect_phases``), and the condition numbers over time."""
    import matplotlib.pyplot as plt

    from ..core.cooperative import EstimatorSettings
    from ..core.cooperative.offline import detect_phases
    from ..core.samples import GraspSeries

    t = data.t - t0
    series = {
        r: GraspSeries(r, data.t, np.zeros((len(t), 4, 4)), data.V[r], data.dV[r], data.F[r])
        for r in data.V
    }
    phases = detect_phases(series, EstimatorSettings()) if len(t) else np.array([])
    fig, axes = plt.subplots(3, 1, figsize=(11, 8), sharex=True)
    axes[0].plot(t, np.linalg.norm(data.V[reference][:, :3], axis=1), lw=0.6)
    axes[0].set_ylabel("|omega| [rad/s]")
    axes[1].plot(t, np.linalg.norm(data.dV[reference][:, :3], axis=1), lw=0.6)
    axes[1].set_ylabel("|alpha| [rad/s^2]")
    colors = {"static": "C2", "moving": "C1"}
    for ax in axes[:2]:
        for phase, color in colors.items():
            ax.fill_between(
                t,
                0,
                1,
                where=phases == phase,
                color=color,
                alpha=0.15,
                transform=ax.get_xaxis_transform(),
                label=phase,
            )
    axes[0].legend(fontsize=7, loc="upper right")
    for name in ("kinematics", "statics", "dynamics"):
        points = [
            (
                m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec - t0,
                getattr(m, f"{name}_condition_number"),
            )
            for m in history
        ]
        points = [(x, y) for x, y in points if 0 < y < np.inf]
        if points:
            axes[2].semilogy(*np.array(points).T, ".-", label=name)
    axes[2].set_ylabel("condition number")
    axes[2].set_xlabel("time [s]")
    if axes[2].lines:
        axes[2].legend(fontsize=7)
    fig.suptitle(f"Excitation ({reference}'s grasp frame; shaded: detected phases)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ----- the report ------------------------------------------------------------------------------
def report_folder_problem(out: Path, force: bool = False) -> str:
    """Why the report cannot go into ``out`` ('' if it can), checked before the estimate runs:
    a file in the way, a folder that is not writable, or an earlier report (kept unless
    ``force``)."""
    if out.exists() and not out.is_dir():
        return f"{out} is a file, not a folder: choose another folder for the report"
    existing = [name for name in ("report.md", *PLOTS) if (out / name).exists()]
    if existing and not force:
        return (
            f"{out} already holds {', '.join(existing)}: choose another folder, or add "
            "--force to overwrite them"
        )
    ancestor = out
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, so {out} cannot be created: choose another folder"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot write into {ancestor}: choose a folder you can write to"
    return ""


def write_report(out: Path, run: Any, bag: Path) -> Path:
    """The report folder of an ``estimate_bag`` result: report.md and the PNG plots."""
    import matplotlib

    matplotlib.use("Agg")
    out.mkdir(parents=True, exist_ok=True)
    history = run.history
    t0 = min(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in history[:1] + run.live[:1])
    data = team_data(bag, run.robots, run.reference)
    if len(data.t):
        t0 = min(t0, float(data.t[0]))
    plot_convergence(out / PLOTS[0], history, run.truth, run.live, t0, run.source)
    plot_residuals(out / PLOTS[1], data, run.final, t0)
    plot_excitation(out / PLOTS[2], data, history, run.reference, t0)
    (out / "report.md").write_text(_markdown(run, bag))
    return out / "report.md"


def _markdown(run: Any, bag: Path) -> str:
    final, pipeline = run.final, run.pipeline
    lines = [
        f"# Payload estimate: {bag}",
        "",
        f"Robots {', '.join(run.robots)}; reference {run.reference} (its grasp frame is {{s}}). "
        + SOURCES[run.source],
        "",
        "## Final estimate" + (" against the ground truth" if run.truth is not None else ""),
        "",
        markdown_table(final, run.truth),
        "",
        _footer(final).replace("\nadvice: ", "\n- "),
        "",
    ]
    if run.live:
        lines += [
            "## The live coordinator's last estimate (recorded)",
            "",
            markdown_table(run.live[-1], run.truth),
            "",
        ]
    if pipeline is not None:
        refused = sum(pipeline.rejected.values())
        dropped = sum(pipeline.dropped().values())
        lines += [
            "## Input",
            "",
            f"Samples accepted per robot: {dict(pipeline.accepted)}; refused: {refused} "
            f"{dict(pipeline.rejected) if refused else ''}; sets not formed by the aligner: "
            f"{dropped}; estimator updates: {pipeline.updates}; restarts: {pipeline.resets}.",
            "",
        ]
    lines += ["## Plots", ""] + [f"![{p[:-4]}]({p})" for p in PLOTS]
    return "\n".join(lines) + "\n"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from .estimate import add_bag_arguments

    parser = subparsers.add_parser(
        "report",
        help="write a markdown report with plots of a bag's estimate",
        description=(
            "Run the coordinator's pipeline on a bag (as `estimate` does) and write a folder: "
            "report.md (the final estimate +- 1 sigma against the ground truth when the bag "
            "has /ground_truth/payload, the live coordinator's last estimate when the bag has "
            "/payload_estimate, input counts) and PNG plots: convergence.png (each quantity "
            "over time with its 1-sigma band, live and offline), residuals.png (net wrench "
            "and angular-velocity residuals with the final estimate) and excitation.png "
            "(angular speed and acceleration, detected phases, condition numbers)."
        ),
        epilog=(
            "examples:\n"
            "  inertia_estimation report runs/demo/bag --out runs/demo/report\n"
            "  inertia_estimation report bag --out report --config sim_paper000.yaml --period 2"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bag_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="report folder")
    parser.add_argument(
        "--force", action="store_true", help="overwrite the report already in --out"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .estimate import INPUT_ERRORS, bag_problem, run_on_bag

    problem = report_folder_problem(args.out, args.force) or bag_problem(args.bag)
    if problem:
        print(f"error: {problem}")
        return 2
    try:
        result = run_on_bag(args)
        path = write_report(args.out, result, args.bag)
    except INPUT_ERRORS as error:
        print(f"error: {error}")
        return 2
    print(comparison_table(result.final, result.truth))
    print(f"report: {path}")
    return 0
