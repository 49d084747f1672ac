"""Sensor models, per robot and independently seeded.

Each robot draws its own constant errors (encoder zero offsets, wrench bias and
scale, IMU biases) once from its own generator ``numpy.random.default_rng([seed,
robot_index])``, and each kind of per-sample draw (drop-outs, clock jitter, position,
velocity, wrench, gyro and accelerometer noise) from its own generator
``default_rng([seed, robot_index, k])``. So changing one robot's model never changes
another's noise, a seed reproduces a run exactly, and a run drawn in chunks (the
simulation node steps incrementally) gets the same numbers as a run drawn at once.
Models (all default to ideal):

* encoders: joint positions with a zero offset, white noise and quantization
  (``linear_resolution`` [m], ``angular_resolution_deg``); joint velocities with
  white noise (what a driver reports);
* wrench: an F/T sensor (``source: ft_sensor``) or the joint efforts
  (``source: joint_torque``), with white noise, a constant bias and a per-axis
  scale error ``1 + e``;
* IMU (optional): gyro and accelerometer with white noise and constant biases;
* clock: the robot stamps a sample taken at simulation time t with
  ``t (1 + drift_ppm 1e-6) + offset + u``, u uniform in [-jitter, jitter];
* drop-outs: each sample is lost with probability ``dropout``;
* rate: 100 to 1000 Hz.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .scenario import ScenarioError, Section

RATE_RANGE_HZ = (100.0, 1000.0)
NOISE_STREAMS = ("dropout", "jitter", "position", "velocity", "wrench", "gyro", "accel")
WRENCH_SOURCES = ("ft_sensor", "joint_torque")


@dataclass(frozen=True)
class EncoderModel:
    linear_resolution: float = 0.0  # [m], 0: no quantization
    angular_resolution: float = 0.0  # [rad]
    linear_noise: float = 0.0  # [m] std
    angular_noise: float = 0.0  # [rad] std
    linear_offset_std: float = 0.0  # [m], constant per joint
    angular_offset_std: float = 0.0  # [rad], constant per joint
    linear_velocity_noise: float = 0.0  # [m/s] std
    angular_velocity_noise: float = 0.0  # [rad/s] std


@dataclass(frozen=True)
class WrenchModel:
    source: str = "ft_sensor"
    force_noise: float = 0.0  # [N] std (prismatic joints' efforts for joint_torque)
    torque_noise: float = 0.0  # [N m] std (revolute joints' efforts for joint_torque)
    force_bias_std: float = 0.0
    torque_bias_std: float = 0.0
    scale_error_std: float = 0.0  # std of e in the per-axis gain 1 + e


@dataclass(frozen=True)
class ImuModel:
    enabled: bool = False
    gyro_noise: float = 0.0  # [rad/s] std
    accel_noise: float = 0.0  # [m/s^2] std
    gyro_bias_std: float = 0.0
    accel_bias_std: float = 0.0


@dataclass(frozen=True)
class ClockModel:
    offset: float = 0.0  # [s]
    jitter: float = 0.0  # [s], half-width of a uniform jitter
    drift_ppm: float = 0.0


@dataclass(frozen=True)
class SensorConfig:
    rate_hz: float = 100.0
    encoder: EncoderModel = field(default_factory=EncoderModel)
    wrench: WrenchModel = field(default_factory=WrenchModel)
    imu: ImuModel = field(default_factory=ImuModel)
    clock: ClockModel = field(default_factory=ClockModel)
    dropout: float = 0.0  # probability that a sample is lost

    @classmethod
    def from_config(cls, section: Section) -> SensorConfig:
        """From the YAML ``sensors`` mapping; angles are given in degrees (``*_deg``)."""
        rate = section.number("rate_hz", 100.0, low=RATE_RANGE_HZ[0], high=RATE_RANGE_HZ[1])
        enc = section.section("encoder", {})
        encoder = EncoderModel(
            linear_resolution=enc.number("linear_resolution", 0.0, low=0.0),
            angular_resolution=np.deg2rad(enc.number("angular_resolution_deg", 0.0, low=0.0)),
            linear_noise=enc.number("linear_noise", 0.0, low=0.0),
            angular_noise=np.deg2rad(enc.number("angular_noise_deg", 0.0, low=0.0)),
            linear_offset_std=enc.number("linear_offset_std", 0.0, low=0.0),
            angular_offset_std=np.deg2rad(enc.number("angular_offset_std_deg", 0.0, low=0.0)),
            linear_velocity_noise=enc.number("linear_velocity_noise", 0.0, low=0.0),
            angular_velocity_noise=np.deg2rad(
                enc.number("angular_velocity_noise_deg", 0.0, low=0.0)
            ),
        )
        enc.done()
        wr = section.section("wrench", {})
        wrench = WrenchModel(
            source=wr.string("source", "ft_sensor", WRENCH_SOURCES),
            force_noise=wr.number("force_noise", 0.0, low=0.0),
            torque_noise=wr.number("torque_noise", 0.0, low=0.0),
            force_bias_std=wr.number("force_bias_std", 0.0, low=0.0),
            torque_bias_std=wr.number("torque_bias_std", 0.0, low=0.0),
            scale_error_std=wr.number("scale_error_std", 0.0, low=0.0, high=0.5),
        )
        wr.done()
        im = section.section("imu", {})
        imu = ImuModel(
            enabled=im.boolean("enabled", False),
            gyro_noise=im.number("gyro_noise", 0.0, low=0.0),
            accel_noise=im.number("accel_noise", 0.0, low=0.0),
            gyro_bias_std=im.number("gyro_bias_std", 0.0, low=0.0),
            accel_bias_std=im.number("accel_bias_std", 0.0, low=0.0),
        )
        im.done()
        cl = section.section("clock", {})
        clock = ClockModel(
            offset=cl.number("offset", 0.0, low=-0.5, high=1e6),
            jitter=cl.number("jitter", 0.0, low=0.0, high=0.45 / rate),
            drift_ppm=cl.number("drift_ppm", 0.0, low=-1e4, high=1e4),
        )
        cl.done()
        dropout = section.number("dropout", 0.0, low=0.0, high=0.5)
        section.done()
        return cls(rate, encoder, wrench, imu, clock, dropout)


def _quantize(x: np.ndarray, step: float) -> np.ndarray:
    return np.round(x / step) * step if step > 0 else x


class RobotSensors:
    """One robot's sensors: constant errors drawn at construction, then applied to streams.

    ``linear`` marks the prismatic joints (the others are revolute).
    """

    def __init__(self, config: SensorConfig, linear: np.ndarray, seed: int, robot_index: int):
        self.config = config
        self.linear = np.asarray(linear, dtype=bool)
        self.rng = np.random.default_rng([seed, robot_index])
        self.noise = {
            name: np.random.default_rng([seed, robot_index, k])
            for k, name in enumerate(NOISE_STREAMS, start=1)
        }
        enc, wr, imu = config.encoder, config.wrench, config.imu
        n = len(self.linear)
        self.joint_offset = self.rng.normal(size=n) * np.where(
            self.linear, enc.linear_offset_std, enc.angular_offset_std
        )
        # Wrench channels: 6 for an F/T sensor (moment first), one per joint for efforts.
        if wr.source == "ft_sensor":
            self.wrench_linear = np.array([False] * 3 + [True] * 3)
        else:
            self.wrench_linear = self.linear
        m = len(self.wrench_linear)
        self.wrench_bias = self.rng.normal(size=m) * np.where(
            self.wrench_linear, wr.force_bias_std, wr.torque_bias_std
        )
        self.wrench_scale = 1.0 + self.rng.normal(size=m) * wr.scale_error_std
        self.gyro_bias = self.rng.normal(size=3) * imu.gyro_bias_std
        self.accel_bias = self.rng.normal(size=3) * imu.accel_bias_std

    def errors(self) -> dict[str, object]:
        """The drawn constant errors: the ground truth of this robot's sensor model."""
        return {
            "joint_offset": self.joint_offset.tolist(),
            "wrench_bias": self.wrench_bias.tolist(),
            "wrench_scale": self.wrench_scale.tolist(),
            "gyro_bias": self.gyro_bias.tolist(),
            "accel_bias": self.accel_bias.tolist(),
            "clock_offset": self.config.clock.offset,
            "clock_drift_ppm": self.config.clock.drift_ppm,
        }

    def kept(self, count: int) -> np.ndarray:
        """Mask of the samples that are not dropped."""
        return self.noise["dropout"].random(count) >= self.config.dropout

    def stamps(self, t: np.ndarray) -> np.ndarray:
        """The robot clock's stamps of samples taken at simulation times t."""
        clock = self.config.clock
        jitter = (
            self.noise["jitter"].uniform(-clock.jitter, clock.jitter, size=len(t))
            if clock.jitter
            else 0.0
        )
        return t * (1.0 + 1e-6 * clock.drift_ppm) + clock.offset + jitter

    def joints(self, q: np.ndarray, dq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Measured joint positions and velocities (Q, n)."""
        enc = self.config.encoder
        noise = np.where(self.linear, enc.linear_noise, enc.angular_noise)
        q_meas = q + self.joint_offset + self.noise["position"].normal(size=q.shape) * noise
        step = np.where(self.linear, enc.linear_resolution, enc.angular_resolution)
        q_meas = np.stack([_quantize(q_meas[:, j], step[j]) for j in range(q.shape[1])], axis=1)
        v_noise = np.where(self.linear, enc.linear_velocity_noise, enc.angular_velocity_noise)
        return q_meas, dq + self.noise["velocity"].normal(size=dq.shape) * v_noise

    def wrench(self, W: np.ndarray) -> np.ndarray:
        """Measured wrench channels (Q, 6) or joint efforts (Q, n): scale, bias, noise."""
        wr = self.config.wrench
        noise = np.where(self.wrench_linear, wr.force_noise, wr.torque_noise)
        draw = self.noise["wrench"].normal(size=W.shape)
        return W * self.wrench_scale + self.wrench_bias + draw * noise

    def imu(self, gyro: np.ndarray, accel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Measured angular velocity and specific force (Q, 3) each."""
        cfg = self.config.imu
        gyro_meas = (
            gyro + self.gyro_bias + self.noise["gyro"].normal(size=gyro.shape) * cfg.gyro_noise
        )
        accel_meas = (
            accel + self.accel_bias + self.noise["accel"].normal(size=accel.shape) * cfg.accel_noise
        )
        return gyro_meas, accel_meas


def check_rate(rate_hz: float, timestep: float, where: str) -> int:
    """Physics steps per sample; the sample period must be a whole number of steps."""
    steps = round(1.0 / (rate_hz * timestep))
    if steps < 1 or abs(steps * timestep * rate_hz - 1.0) > 1e-9:
        raise ScenarioError(
            f"{where}: a {rate_hz} Hz sensor needs a period that is a whole number of physics "
            f"steps of {timestep} s; choose a rate that divides {1.0 / timestep:g} Hz"
        )
    return steps
