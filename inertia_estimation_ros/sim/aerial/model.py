"""The MJCF of an aerial cable team: a free payload, free quadrotors with a thrust and three
body-moment actuators each, and cables as spatial tendons limited to their length (so that
they go slack on their own and pull only when taut)."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from .config import AerialConfig

CABLE_SOLREF = "0.004 1"  # [s] time constant of the cable's length limit (>= 2 timesteps)


def robot_name(k: int) -> str:
    return f"robot_{k + 1}"


def _numbers(x: np.ndarray) -> str:
    return " ".join(f"{v:.9g}" for v in np.asarray(x).ravel())


def _payload_body(config: AerialConfig) -> str:
    payload = config.payload
    hull = np.vstack([payload.attach * [1, 1, 0] + [0, 0, -0.01], payload.attach * [1, 1, 0]])
    sites = "".join(
        f'<site name="attach_{k + 1}" pos="{_numbers(r)}" size="0.01" rgba="1 0.5 0 1"/>'
        for k, r in enumerate(payload.attach)
    )
    return (
        f'<body name="payload" pos="{_numbers(config.start)}"><freejoint name="payload"/>'
        f'<inertial pos="0 0 0" mass="{payload.mass:.9g}" '
        f'diaginertia="{_numbers(payload.inertia)}"/>'
        f'<geom type="mesh" mesh="payload" rgba="0.3 0.3 0.8 1"/>{sites}</body>'
    ), f'<mesh name="payload" vertex="{_numbers(hull)}"/>'


def _robot_body(config: AerialConfig, k: int, position: np.ndarray) -> str:
    quad, name = config.quadrotor, robot_name(k)
    d = quad.arm / np.sqrt(2.0)
    rotors = "".join(
        f'<geom type="cylinder" size="{quad.arm / 2:.4g} 0.003" pos="{sx * d:.4g} {sy * d:.4g} '
        '0.02" rgba="0.2 0.2 0.2 0.4"/>'
        for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1))
    )
    return (
        f'<body name="{name}" pos="{_numbers(position)}"><freejoint name="{name}"/>'
        f'<inertial pos="0 0 0" mass="{quad.mass:.9g}" diaginertia="{_numbers(quad.inertia)}"/>'
        f'<geom type="box" size="{d:.4g} {d:.4g} 0.015" rgba="0.8 0.2 0.2 1"/>{rotors}'
        f'<site name="{name}" size="0.01"/></body>'
    )


def _actuators(config: AerialConfig, k: int) -> str:
    quad, name = config.quadrotor, robot_name(k)
    moment = quad.max_thrust * quad.arm  # generous; the rotor model limits what is applied
    parts = [
        f'<general name="{name}_thrust" site="{name}" gear="0 0 1 0 0 0" ctrlrange="0 '
        f'{quad.max_thrust:.6g}"/>'
    ]
    for axis, gear in enumerate(("0 0 0 1 0 0", "0 0 0 0 1 0", "0 0 0 0 0 1")):
        parts.append(
            f'<general name="{name}_moment_{"xyz"[axis]}" site="{name}" gear="{gear}" '
            f'ctrlrange="{-moment:.6g} {moment:.6g}"/>'
        )
    return "".join(parts)


def initial_robot_positions(config: AerialConfig) -> np.ndarray:
    """Robots straight above their attach points on taut cables (notes section 6.2)."""
    return config.start + config.payload.attach + [0.0, 0.0, config.cable_length]


def mjcf(config: AerialConfig) -> str:
    payload, mesh = _payload_body(config)
    robots = initial_robot_positions(config)
    bodies = "".join(_robot_body(config, k, robots[k]) for k in range(config.n))
    tendons = "".join(
        f'<spatial name="cable_{k + 1}" limited="true" range="0 {config.cable_length:.9g}" '
        f'solreflimit="{CABLE_SOLREF}" width="0.004" rgba="0.1 0.1 0.1 1">'
        f'<site site="{robot_name(k)}"/><site site="attach_{k + 1}"/></spatial>'
        for k in range(config.n)
    )
    actuators = "".join(_actuators(config, k) for k in range(config.n))
    sensors = "".join(
        f'<tendonlimitfrc name="tension_{k + 1}" tendon="cable_{k + 1}"/>'
        f'<accelerometer name="attach_accel_{k + 1}" site="attach_{k + 1}"/>'
        for k in range(config.n)
    )
    return (
        f'<mujoco model="{config.name}"><option timestep="{config.timestep:.9g}" '
        'gravity="0 0 -9.81" integrator="implicitfast"><flag contact="disable"/></option>'
        f"<asset>{mesh}</asset>"
        f"<worldbody><light pos='0 0 5'/>{payload}{bodies}</worldbody>"
        f"<tendon>{tendons}</tendon><actuator>{actuators}</actuator>"
        f"<sensor>{sensors}</sensor></mujoco>"
    )


@dataclass(frozen=True)
class ModelIndex:
    """Addresses in the compiled model."""

    payload_body: int
    robot_bodies: np.ndarray
    tension: np.ndarray  # sensordata address of each cable's limit force
    attach_accel: np.ndarray  # sensordata address of each attach point's accelerometer
    attach_sites: np.ndarray
    tendon: np.ndarray


def compile_model(config: AerialConfig) -> tuple[mujoco.MjModel, ModelIndex]:
    model = mujoco.MjModel.from_xml_string(mjcf(config))

    def sensor(name: str) -> int:
        return int(model.sensor_adr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, name)])

    index = ModelIndex(
        payload_body=mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "payload"),
        robot_bodies=np.array(
            [
                mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, robot_name(k))
                for k in range(config.n)
            ]
        ),
        tension=np.array([sensor(f"tension_{k + 1}") for k in range(config.n)]),
        attach_accel=np.array([sensor(f"attach_accel_{k + 1}") for k in range(config.n)]),
        attach_sites=np.array(
            [
                mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, f"attach_{k + 1}")
                for k in range(config.n)
            ]
        ),
        tendon=np.array(
            [
                mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_TENDON, f"cable_{k + 1}")
                for k in range(config.n)
            ]
        ),
    )
    return model, index
