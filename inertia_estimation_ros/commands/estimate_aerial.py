"""``inertia_estimation estimate`` on an aerial team's bag (``simulate`` of an
``aerial_cable_team`` scenario, or a recording of the same topics): the aerial coordinator's
estimator (``core/aerial/team_estimation.py``) on every robot's mocap and rotor speeds and the
payload's mocap, faster than real time. Prints the human wrench's and the tensions' errors
against the ground truth when the bag has it; ``--report`` plots the wrench against the truth
and the tensions per robot."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path

from .lazy import lazy_module

np = lazy_module("numpy")  # loads on first use: arguments are checked first
yaml = lazy_module("yaml")

ROBOT_POSE = re.compile(r"^/([^/]+)/mocap/pose$")
PAYLOAD_POSE, PAYLOAD_TWIST = "/payload/mocap/pose", "/payload/mocap/twist"
TRUTH_WRENCH = "/ground_truth/human_wrench"
AXES = ("F_x", "F_y", "F_z", "M_x", "M_y", "M_z")
PLOTS = ("human_wrench.png", "tensions.png")


def is_aerial_bag(topics: dict[str, str]) -> bool:
    """A bag of an aerial team: the payload's mocap, no robot grasp_state."""
    return PAYLOAD_POSE in topics and not any(t.endswith("/grasp_state") for t in topics)


@dataclass
class AerialBagRun:
    """Per estimate (one per payload mocap sample): stamp, human wrench (F, M) in the payload
    frame with its std, contact; per robot the tension and its std; from the bag the truth
    (same layout) when recorded; the estimator (counters, reasons)."""

    robots: list[str]
    time: np.ndarray
    wrench: np.ndarray  # (Q, 6) force then moment, payload frame
    wrench_std: np.ndarray
    contact: np.ndarray
    tension: np.ndarray  # (Q, n)
    tension_std: np.ndarray
    reasons: dict[str, int] = field(default_factory=dict)  # degraded reason (robot: cause) -> count
    truth_time: np.ndarray | None = None
    truth_wrench: np.ndarray | None = None  # (Q', 6) force then moment, payload frame
    truth_tension: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)


def team_description(bag: Path, team: Path | None) -> Path:
    """``team``, or the ground_truth.yaml that ``simulate`` wrote beside the bag."""
    if team is not None:
        return team
    for candidate in (bag.parent / "ground_truth.yaml", bag / "ground_truth.yaml"):
        if candidate.exists():
            return candidate
    raise ValueError(
        f"{bag} is an aerial bag: give --team <team description YAML> (robots, cables, payload: "
        "see config/aerial_team_paper002.yaml); none found beside the bag"
    )


def estimate_aerial_bag(
    bag: Path, team: Path, robots: list[str] | None = None, method: str = "dynamic"
) -> AerialBagRun:
    from ..bags import bag_topics, read_bag
    from ..core.aerial.team_estimation import (
        AerialEstimatorSettings,
        AerialTeamEstimator,
        AerialTeamModel,
    )

    topics = bag_topics(bag)
    robots = robots or sorted(m.group(1) for t in topics if (m := ROBOT_POSE.match(t)))
    robots = [r for r in robots if r != "payload"]
    model = AerialTeamModel.from_document(yaml.safe_load(team.read_text()), robots)
    estimator = AerialTeamEstimator(model, AerialEstimatorSettings(method=method))
    wanted = [PAYLOAD_POSE, PAYLOAD_TWIST]
    for rid in robots:
        wanted += [f"/{rid}/mocap/pose", f"/{rid}/mocap/twist", f"/{rid}/rotor_speeds"]
    missing = [t for t in wanted if t not in topics]
    if missing:
        raise ValueError(f"{bag} has no {missing}: record every robot's mocap and rotor speeds")
    truth = [t for t in topics if t == TRUTH_WRENCH or t.endswith("/cable_tension")]
    feeder = _Feeder(estimator)
    for message in read_bag(bag, wanted + truth, deserialize="rclpy"):
        feeder.push(message.topic, message.message)
    return feeder.result(robots)


class _Feeder:
    """Messages to the estimator; an estimate once every robot has passed a payload stamp."""

    def __init__(self, estimator):  # noqa: ANN001
        self.estimator, self.rows, self.truth, self.tension_truth = estimator, [], [], {}
        self.pending: float | None = None
        self.reasons: dict[str, int] = {}

    def push(self, topic: str, msg) -> None:  # noqa: ANN001
        from ..ros.conversions import pose_matrix, seconds, vector3, wrench_vector

        est = self.estimator
        t = seconds(msg.header.stamp)
        if self.pending is not None and t > self.pending + 1e-9:
            self._estimate(self.pending)
            self.pending = None
        parts = topic.strip("/").split("/")
        if topic == TRUTH_WRENCH:
            w = wrench_vector(msg.wrench)
            self.truth.append((t, np.concatenate([w[3:], w[:3]])))
        elif topic.endswith("/cable_tension"):
            self.tension_truth.setdefault(parts[1], []).append(
                (t, np.linalg.norm(vector3(msg.vector)))
            )
        elif topic.endswith("/pose"):
            T = pose_matrix(msg.pose)
            if parts[0] == "payload":
                est.payload_pose(t, T[:3, 3], T[:3, :3])
            else:
                est.robot_pose(parts[0], t, T[:3, 3], T[:3, :3])
        elif topic.endswith("/twist"):
            v, w = vector3(msg.twist.linear), vector3(msg.twist.angular)
            if parts[0] == "payload":
                est.payload_twist(t, v, w)
                self.pending = t
            else:
                est.robot_twist(parts[0], t, v, w)
        else:
            est.rotor_speeds(parts[0], t, np.asarray(msg.velocity, dtype=float))

    def _estimate(self, t: float) -> None:
        e = self.estimator.estimate(t)
        if not e.valid:
            return
        for reason in e.reasons:
            key = reason.split(" for ")[0].split(" (")[0]
            self.reasons[key] = self.reasons.get(key, 0) + 1
        M_F = e.in_payload_frame(e.wrench.wrench)
        R = e.payload_R
        std_F = np.sqrt(np.einsum("ij,jk,ik->i", R.T, e.wrench.covariance[:3, :3], R.T))
        self.rows.append(
            (t, np.r_[M_F[3:], M_F[:3]], np.r_[std_F, e.wrench.std[3:]], e.contact,
             e.tension, e.tension_std)
        )  # fmt: skip

    def result(self, robots: list[str]) -> AerialBagRun:
        if self.pending is not None:
            self._estimate(self.pending)
        if not self.rows:
            raise ValueError("no estimate: the bag never had every robot's and the payload's mocap")
        columns = list(zip(*self.rows, strict=True))
        run = AerialBagRun(
            robots, *(np.array(c) for c in columns), reasons=self.reasons,
            counters=self.estimator.robot_counters(),
        )  # fmt: skip
        if self.truth:
            run.truth_time = np.array([t for t, _ in self.truth])
            run.truth_wrench = np.array([w for _, w in self.truth])
        run.truth_tension = {
            rid: (np.array([t for t, _ in s]), np.array([m for _, m in s]))
            for rid, s in self.tension_truth.items()
        }
        return run


def _at(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """values at the stamps ``at`` (nearest earlier-or-equal sample)."""
    index = np.clip(np.searchsorted(times, at + 1e-9) - 1, 0, len(times) - 1)
    return values[index]


def summary(run: AerialBagRun) -> str:
    """The table: per axis RMSE and mean sigma of the human wrench (against the truth when
    recorded), per robot tension RMSE, contact share, degraded reasons and UKF counts."""
    lines = [f"aerial team {', '.join(run.robots)}: {len(run.time)} estimates"]
    header = f"{'axis':6s} {'RMSE':>9s} {'mean sigma':>11s} {'|err|/sigma RMS':>16s}"
    if run.truth_wrench is not None:
        truth = _at(run.truth_time, run.truth_wrench, run.time)
        error = run.wrench - truth
        rmse = np.sqrt(np.mean(error**2, axis=0))
        z = np.sqrt(np.mean((error / run.wrench_std) ** 2, axis=0))
        lines += ["human wrench (payload frame) against /ground_truth/human_wrench:", header]
        for k, axis in enumerate(AXES):
            unit = "N" if k < 3 else "N m"
            lines.append(
                f"{axis:6s} {rmse[k]:9.4f} {run.wrench_std[:, k].mean():11.4f} {z[k]:16.2f}  {unit}"
            )
    for k, rid in enumerate(run.robots):
        mean, sigma = run.tension[:, k].mean(), run.tension_std[:, k].mean()
        line = f"tension {rid}: mean {mean:.3f} N, sigma {sigma:.3f} N"
        if rid in run.truth_tension:
            true = _at(*run.truth_tension[rid], run.time)
            line += f", RMSE {np.sqrt(np.mean((run.tension[:, k] - true) ** 2)):.4f} N"
        lines.append(line)
    lines.append(f"contact (outside the dead band): {100 * run.contact.mean():.1f} % of estimates")
    degraded = [f"{key} ({n} estimates)" for key, n in sorted(run.reasons.items())]
    lines.append("degraded: " + ("; ".join(degraded) if degraded else "never"))
    for rid, counts in run.counters.items():
        lines.append(f"UKF {rid}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return "\n".join(lines)


def write_aerial_report(out: Path, run: AerialBagRun, bag: Path) -> Path:
    """report.md (the summary) and two plots: the human wrench per axis with its 2-sigma band
    against the truth, and the tensions per robot with their 2-sigma bands against the truth."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    t0 = run.time[0]
    fig, axes = plt.subplots(6, 1, figsize=(9, 11), sharex=True)
    for k, (ax, axis) in enumerate(zip(axes, AXES, strict=True)):
        t, w, s = run.time - t0, run.wrench[:, k], run.wrench_std[:, k]
        ax.fill_between(t, w - 2 * s, w + 2 * s, alpha=0.3, label="2 sigma")
        ax.plot(t, w, label="estimate")
        if run.truth_wrench is not None:
            ax.plot(run.truth_time - t0, run.truth_wrench[:, k], "k--", label="truth")
        ax.set_ylabel(f"{axis} [{'N' if k < 3 else 'N m'}]")
    axes[0].legend(loc="upper right")
    axes[-1].set_xlabel("time [s]")
    fig.suptitle("human wrench on the payload (payload frame)")
    fig.tight_layout()
    fig.savefig(out / PLOTS[0], dpi=90)
    plt.close(fig)
    fig, axes = plt.subplots(len(run.robots), 1, figsize=(9, 2.5 * len(run.robots)), sharex=True)
    for k, (ax, rid) in enumerate(zip(np.atleast_1d(axes), run.robots, strict=True)):
        t, mu, s = run.time - t0, run.tension[:, k], run.tension_std[:, k]
        ax.fill_between(t, mu - 2 * s, mu + 2 * s, alpha=0.3)
        ax.plot(t, mu, label="UKF")
        if rid in run.truth_tension:
            ax.plot(run.truth_tension[rid][0] - t0, run.truth_tension[rid][1], "k--", label="truth")
        ax.set_ylabel(f"{rid} [N]")
    np.atleast_1d(axes)[0].legend(loc="upper right")
    fig.suptitle("cable tensions")
    fig.tight_layout()
    fig.savefig(out / PLOTS[1], dpi=90)
    plt.close(fig)
    text = f"# Aerial estimate of {bag}\n\n```\n{summary(run)}\n```\n\n"
    text += "".join(f"![{p}]({p})\n\n" for p in PLOTS)
    (out / "report.md").write_text(text)
    return out / "report.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--team",
        type=Path,
        help="aerial bags: the team description YAML (default: the ground_truth.yaml that "
        "simulate wrote beside the bag)",
    )
    parser.add_argument(
        "--method",
        choices=("dynamic", "quasi_static"),
        default="dynamic",
        help="aerial bags: the human-wrench estimator (eq. 38 or eq. 39; default dynamic)",
    )


def run_aerial(args: argparse.Namespace, bag: Path) -> int:
    """The aerial branch of ``estimate``: summary table, and the report with --report."""
    run = estimate_aerial_bag(bag, team_description(bag, args.team), args.robots, args.method)
    print(summary(run))
    if args.report:
        print(f"report: {write_aerial_report(args.report, run, bag)}")
    return 0
