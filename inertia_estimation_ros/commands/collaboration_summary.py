"""What ``inertia_estimation demo --collaborate`` prints at the end (issue 14): from the bag,
how far the payload went with the person and how well the coordinator saw the person's force.

The person acts where the simulator's ``/ground_truth/human_wrench`` is not zero. Over the
last such stretch (the ``collaborate`` phase; the earlier ones are the guided estimation
phases): the payload's displacement and rotation (``/ground_truth/payload_pose``), the
person's RMS force, and how well the coordinator's ``/external_wrench`` force (axes of {s},
like the truth's) saw it (``force_error_figures``): its RMS error against the truth at its
stamp, the delay of its content (the robot nodes' causal low-pass and the robots' own
lag: the truth that long before the stamp fits it best) and the RMS error left at that
delay, the stated covariance's chi-square per degree of freedom (1 if it holds) over the
span, over its first ``PULL`` seconds (the person's pull: the payload accelerates) with the
share of the force's components within their 1 sigma (0.68 if it holds), and the RMS error,
chi-square per dof and 1-sigma share while nobody touches the payload (the second before the
person acts).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..bags import read_bag
from ..core import spatial as sp
from ..ros.conversions import pose_matrix, seconds, vector3


def _series(bag: Path, topic: str, value: object) -> tuple[np.ndarray, np.ndarray]:
    rows = [(seconds(m.message.header.stamp), value(m.message)) for m in read_bag(bag, [topic])]
    if not rows:
        return np.zeros(0), np.zeros((0, 3))
    t, values = zip(*rows, strict=True)
    return np.array(t), np.array(values)


def _pose(msg: object) -> np.ndarray:
    T = pose_matrix(msg.pose)
    return np.concatenate([T[:3, 3], np.ravel(T[:3, :3])])


def collaboration_figures(bag: Path) -> dict[str, float] | None:
    """The figures of the module docstring; None if the person never acted."""
    t_h, force = _series(bag, "/ground_truth/human_wrench", lambda m: vector3(m.wrench.force))
    acting = np.linalg.norm(force, axis=1) > 1e-6
    if not acting.any():
        return None
    # The person's last stretch (a human also guides the payload in the estimation phases).
    last = np.flatnonzero(acting)[-1]
    idle = np.flatnonzero(~acting[:last])
    first = idle[-1] + 1 if len(idle) else 0
    acting[:first] = False
    start, end = t_h[first], t_h[last]
    t_p, poses = _series(bag, "/ground_truth/payload_pose", _pose)
    span = (t_p >= start) & (t_p <= end)
    first, last = poses[span][0], poses[span][-1]
    turn = sp.log3(last[3:].reshape(3, 3) @ first[3:].reshape(3, 3).T)
    t_e, estimate = _series(bag, "/external_wrench", _force_and_covariance)
    figures = {
        "seconds": float(end - start),
        "moved [m]": float(np.linalg.norm(last[:3] - first[:3])),
        "turned [deg]": float(np.rad2deg(np.linalg.norm(turn))),
        "person RMS force [N]": float(np.sqrt(np.mean(np.sum(force[acting] ** 2, axis=1)))),
    }
    estimate = estimate.reshape(len(t_e), 4, 3)
    return figures | force_error_figures(
        t_h, force, t_e, estimate[:, 0], estimate[:, 1:], (start, end)
    )


def _force_and_covariance(msg: object) -> np.ndarray:
    """(force, its 3x3 covariance) of an ExternalWrench, flattened (the force block first)."""
    return np.concatenate(
        [vector3(msg.wrench.force), np.reshape(msg.covariance, (6, 6))[:3, :3]], axis=None
    )


MAX_DELAY = 0.3  # [s] the longest content delay looked for
DELAY_STEP = 0.005  # [s]
IDLE = 1.0  # [s] before the person acts: nobody touches the payload
PULL = 3.5  # [s] from the person's first force: the pull (the demo's path: 3 s)


def force_error_figures(
    t_h: np.ndarray,
    force_h: np.ndarray,
    t_e: np.ndarray,
    force_e: np.ndarray,
    covariance_e: np.ndarray,
    span: tuple[float, float],
) -> dict[str, float]:
    """The estimate's force (stamps t_e, (K, 3), covariances (K, 3, 3)) against the true
    force (stamps t_h, (M, 3)) within ``span`` (module docstring); NaN without estimates."""
    start, end = span
    used = (t_e >= start) & (t_e <= end)
    pull = used & (t_e < start + PULL)
    idle = (t_e >= start - IDLE) & (t_e < start)
    nan = float("nan")
    if not used.any():
        return dict.fromkeys(_ERROR_FIGURES, nan)

    def truth(t: np.ndarray) -> np.ndarray:
        return np.stack([np.interp(t, t_h, force_h[:, k]) for k in range(3)], axis=1)

    def rms(error: np.ndarray) -> float:
        return float(np.sqrt(np.mean(np.sum(error**2, axis=1)))) if len(error) else nan

    def chi2_per_dof(within: np.ndarray) -> float:
        error = force_e[within] - truth(t_e[within])
        whitened = np.linalg.solve(covariance_e[within], error[..., None])[..., 0]
        return float(np.mean(np.einsum("ki,ki->k", error, whitened)) / 3) if len(error) else nan

    def within_sigma(within: np.ndarray) -> float:
        sigma = np.sqrt(np.diagonal(covariance_e[within], axis1=1, axis2=2))
        error = np.abs(force_e[within] - truth(t_e[within]))
        return float(np.mean(error <= sigma)) if len(error) else nan

    error = force_e[used] - truth(t_e[used])
    delays = np.arange(0.0, MAX_DELAY + DELAY_STEP / 2, DELAY_STEP)
    delayed = [rms(force_e[used] - truth(t_e[used] - d)) for d in delays]

    values = (
        rms(error),
        float(delays[int(np.argmin(delayed))] * 1e3),
        float(min(delayed)),
        chi2_per_dof(used),
        chi2_per_dof(pull),
        within_sigma(pull),
        rms(force_e[idle]),
        chi2_per_dof(idle),
        within_sigma(idle),
    )
    return dict(zip(_ERROR_FIGURES, values, strict=True))


_ERROR_FIGURES = (
    "force estimate RMS error [N]",
    "force estimate delay [ms]",
    "RMS error at that delay [N]",
    "force chi-square per dof",
    "force chi-square per dof, pull",
    "force within 1 sigma, pull",
    "RMS error, nobody touching [N]",
    "chi-square/dof, nobody touching",
    "within 1 sigma, nobody touching",
)


def print_collaboration(bag: Path) -> None:
    figures = collaboration_figures(bag)
    if figures is None:
        print("\ncollaboration: the person never acted (no collaborate phase in the scenario?)")
        return
    print("\nCollaboration (the person's pull, from the bag):")
    for name, value in figures.items():
        print(f"  {name:32s} {value:8.3f}")
