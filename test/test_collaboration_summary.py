"""What ``demo --collaborate`` says of the human-wrench estimate (issue 14,
``commands.collaboration_summary.force_error_figures``): the error against the truth at the
stamp, the delay of the estimate's content and the error left at it, the stated
covariance's chi-square per dof (over the span and its first seconds, the pull) and its
1-sigma share, the error and chi-square with nobody touching."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.commands.collaboration_summary import force_error_figures

RATE, SIGMA = 100.0, 0.3


def _run(delay: float, seed: int = 0) -> dict[str, float]:
    """A person's 0.6 Hz force of 10 N from t = 2 s on, and an estimate that sees it
    ``delay`` late with white noise of SIGMA per axis, stated as such."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, 10.0, 1.0 / RATE)

    def force(t: np.ndarray) -> np.ndarray:
        on = (t >= 2.0)[:, None]
        return on * 10.0 * np.sin(2 * np.pi * 0.6 * (t[:, None] - 2.0) + [0.0, 1.0, 2.0])

    estimate = force(t - delay) + rng.normal(0.0, SIGMA, (len(t), 3))
    covariance = np.broadcast_to(SIGMA**2 * np.eye(3), (len(t), 3, 3))
    return force_error_figures(t, force(t), t, estimate, covariance, (2.0, t[-1]))


def test_a_timely_estimate_within_its_noise() -> None:
    figures = _run(0.0)
    assert figures["force estimate delay [ms]"] == 0.0
    assert figures["force estimate RMS error [N]"] == pytest.approx(SIGMA * np.sqrt(3), rel=0.1)
    assert figures["force chi-square per dof"] == pytest.approx(1.0, rel=0.1)
    assert figures["force chi-square per dof, pull"] == pytest.approx(1.0, rel=0.15)
    assert figures["force within 1 sigma, pull"] == pytest.approx(0.68, abs=0.05)
    assert figures["RMS error, nobody touching [N]"] == pytest.approx(SIGMA * np.sqrt(3), rel=0.2)
    assert figures["chi-square/dof, nobody touching"] == pytest.approx(1.0, rel=0.3)
    assert figures["within 1 sigma, nobody touching"] == pytest.approx(0.68, abs=0.1)


def test_a_late_estimate_shows_its_delay_and_fails_its_covariance() -> None:
    """130 ms late (the demo's estimate on 2026-11-27): the error at the stamp is the delay's,
    far beyond the stated sigma; at the delay only the noise is left."""
    figures = _run(0.13)
    assert figures["force estimate delay [ms]"] == pytest.approx(130.0, abs=5.0)
    late = 2 * np.sin(np.pi * 0.6 * 0.13) * 10.0 * np.sqrt(3 / 2)  # |f(t) - f(t - d)| RMS
    assert figures["force estimate RMS error [N]"] == pytest.approx(late, rel=0.1)
    assert figures["RMS error at that delay [N]"] < 0.7
    assert figures["force chi-square per dof"] > 50.0
    assert figures["force chi-square per dof, pull"] > 50.0
    assert figures["force within 1 sigma, pull"] < 0.2
