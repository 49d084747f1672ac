"""Settings of the team estimator, validated once, with errors that name the setting."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .grasp_kinematics import ROBUST_LOSSES

KINEMATICS_SOURCES = ("poses", "twists")


@dataclass(frozen=True)
class EstimatorSettings:
    """Tuning of ``TeamEstimator`` and ``estimate_offline``; defaults suit 100 Hz ground teams."""

    # signals
    sample_rate_hz: float = 100.0  # nominal rate of the synchronized sets
    input_cutoff_hz: float | None = None  # causal low-pass on twists, wrenches, gravity (None: off)
    detection_cutoff_hz: float = 2.0  # causal low-pass of the speeds used for phase detection
    # static / moving phase detection (on every robot's filtered signals)
    static_angular_speed: float = 0.02  # [rad/s]
    static_linear_speed: float = 0.01  # [m/s]
    static_angular_acceleration: float = 0.3  # [rad/s^2]
    static_linear_acceleration: float = 0.3  # [m/s^2]
    static_min_duration: float = 0.3  # [s] still this long before samples count as static
    moving_angular_speed: float = 0.03  # [rad/s] rotation needed for grasp kinematics samples
    # grasp kinematics
    kinematics_source: str = "poses"  # "poses" needs fixed home frames; "twists" does not
    robust_loss: str = "huber"  # "none", "huber" or "cauchy" (heavy outliers), per sample
    robust_scale: float = 3.0  # residual norm (in noise standard deviations) where it acts
    min_kinematics_samples: int = 100
    gravity_direction_floor: float = 1e-4  # [rad] trust in the home frames' gravity directions
    # step of every robot's reported grasp pose: its encoder steps through its kinematics (a
    # 14-bit gimbal: 2 pi / 2^14 rad); 0: not quantized (grasp_kinematics.quantization_covariance)
    pose_angle_resolution: float = 0.0  # [rad]
    pose_position_resolution: float = 0.0  # [m]
    # validity: refuse a quantity whose standard deviation exceeds these
    max_rotation_std_deg: float = 1.0
    max_position_std: float = 0.01  # [m]
    max_mass_relative_std: float = 0.02
    max_com_std: float = 0.01  # [m]
    max_inertia_relative_std: float = 0.1  # of the largest principal moment
    excitation_ratio: float = 1e-2  # an axis with less than this share of excitation is advised
    # physical consistency: J(theta) >= margin (None: 1e-6 of the largest J eigenvalue)
    consistency_margin: float | None = None
    # uncertainty: residual autocorrelation lags used to inflate covariances (0: off)
    residual_correlation_lags: int = 30
    # unmeasured external wrenches (a human hand): wrench statistics per segment
    detect_external_wrench: bool = True  # False: every segment is used for mass, CoM, inertia
    segment_seconds: float = 1.0  # [s] longest segment (a new one also starts at each phase)
    max_segments: int = 64  # segments kept; beyond, the two most alike neighbours merge
    external_wrench_false_alarm: float = 1e-4  # test level per segment and judging step
    external_wrench_floor: float = 0.01  # smallest external force set aside, of the weight m g
    # input checks
    sync_tolerance: float = 0.005  # [s] stamps of one synchronized set may differ this much

    def __post_init__(self) -> None:
        positive = [
            f.name
            for f in fields(self)
            if f.type in ("float", "int")
            and f.name not in ("residual_correlation_lags", "external_wrench_floor")
            and not f.name.endswith("_resolution")
        ]
        for name in positive:
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"setting {name} must be a finite number > 0, got {value!r}")
        nyquist = 0.5 * self.sample_rate_hz
        for name in ("input_cutoff_hz", "detection_cutoff_hz"):
            value = getattr(self, name)
            if value is not None and not 0 < value < nyquist:
                raise ValueError(
                    f"setting {name} must lie between 0 and the Nyquist rate {nyquist} Hz, "
                    f"got {value!r}"
                )
        if self.robust_loss not in ROBUST_LOSSES:
            raise ValueError(f"setting robust_loss must be one of {ROBUST_LOSSES}")
        if self.kinematics_source not in KINEMATICS_SOURCES:
            raise ValueError(f"setting kinematics_source must be one of {KINEMATICS_SOURCES}")
        if (
            not isinstance(self.residual_correlation_lags, int)
            or self.residual_correlation_lags < 0
        ):
            raise ValueError("setting residual_correlation_lags must be an integer >= 0")
        if self.consistency_margin is not None and not self.consistency_margin >= 0:
            raise ValueError("setting consistency_margin must be >= 0 or None")
        if self.excitation_ratio >= 1:
            raise ValueError("setting excitation_ratio must be below 1")
        if not isinstance(self.max_segments, int) or self.max_segments < 8:
            raise ValueError("setting max_segments must be an integer >= 8")
        if not self.external_wrench_false_alarm < 0.5:
            raise ValueError("setting external_wrench_false_alarm must lie between 0 and 0.5")
        for name in ("external_wrench_floor", "pose_angle_resolution", "pose_position_resolution"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"setting {name} must be a finite number >= 0, got {value!r}")
