"""``planner_node``: verified robust balancing trajectories for the carried tray (paper 004).

A thin adapter over ``core.planning``: the latched ``PayloadEstimate`` becomes the object's
CoM polytope (k sigma around the estimated CoM, clipped to the object inset by 1.5 cm;
the paper's full-height box while the CoM is not valid, if allowed), a goal pose or the
``~/plan`` service starts a plan (Eq. 7) from the last goal, every plan is verified
against every realizable inertia (Eq. 13), and only a certified plan is published.
Every refusal (no or unusable estimate, empty polytope, unreachable goal, infeasible QP,
uncertified plan) is a diagnostic and the service's message, never a trajectory.

Plans (seconds of SQP and SDPs) run one after the other on a thread of their own
(``runtime.BackgroundCalls``): the executor thread only starts them (a goal, a moved CoM) or
awaits them in coroutine callbacks (``~/plan``, the ``~/plan_balancing`` action,
``~/mode/balancing``), so the admittance's reference keeps its rate while a plan is computed
and the node spins on rclpy's events executor (issue 14's latency and CPU: the
multi-threaded one costs 10-100x at p99, ``bench/echo_chain.py --table``; the
single-threaded one several times the CPU per callback).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, PoseStamped, Transform, Twist, Vector3
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import ColorRGBA, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import (
    JointTrajectory,
    MultiDOFJointTrajectory,
    MultiDOFJointTrajectoryPoint,
)
from visualization_msgs.msg import Marker, MarkerArray

from ...core.collaboration.modes import PlanningStart
from ...core.consistency import ConsistencyError
from ...core.planning.objects import BalancedObject, ComEstimate, PolytopeError, informed_com_box
from ...core.planning.planner import (
    METHODS,
    Iteration,
    PlannerSettings,
    PlanningError,
    TrayPlan,
)
from ...core.planning.session import ROBOTS, PlanOutcome, plan_and_verify
from ...core.planning.tray import body_motion, rotation
from ...core.spatial import transform
from ...msg import PayloadEstimate
from .. import admittance_mode
from ..conversions import pose_matrix, to_quaternion, to_vector3
from ..interface import LATCHED_QOS, RELIABLE_QOS, NodeInterface, Service, Topic
from ..parameters import Param, ParameterError, declare
from ..runtime import BackgroundCalls, diagnostics, run_executable
from .planner_action import ACTION_NAME, ACTION_TYPE, add_plan_action
from .planner_robot import JOINT_TOPIC, first_start, joint_trajectory, next_start, tray_positions

# The executor planner_node spins on: rclpy's events executor (one thread, its wait loop in
# C++; plans run on their own thread). Its callbacks cost a fraction of the single-threaded
# executor's, which rebuilds its wait set of ~25 entities in Python at every wake-up; a
# coroutine awaiting a plan is polled at most every 2 ms (``runtime.PolledFuture``).
EXECUTOR = "events"

INTERFACE = NodeInterface(
    executable="planner_node",
    description=(
        "Robust balancing trajectories for the tray the team carries (paper 004; "
        "`core/planning/`): the object's CoM polytope comes from the latched estimate "
        "(k sigma, clipped, inset), a goal or `~/plan` starts the planner (3 SQP iterations), "
        "each plan is verified for every realizable inertia (Eq. 13) and published only if "
        "certified. Re-plans when the estimated CoM moves by more than `replan_com_change`."
    ),
    publishes=[
        Topic(
            "~/trajectory",
            "trajectory_msgs/msg/MultiDOFJointTrajectory",
            "latched",
            "robot tray: the certified tray trajectory (joint `tray`: pose, world velocity, "
            "acceleration)",
        ),
        Topic(
            JOINT_TOPIC,
            "trajectory_msgs/msg/JointTrajectory",
            "latched",
            "robot ridgeback_ur10: the certified plan of the 9 joints (base x, y, yaw + UR10)",
        ),
        Topic(
            "~/verification",
            "std_msgs/msg/String",
            "latched",
            "JSON: certified, worst-case violation, when, which face, or the refusal",
        ),
        Topic(
            "~/markers",
            "visualization_msgs/msg/MarkerArray",
            "latched",
            "CoM polytope and contact polygon (tray frame), planned path, worst-case point",
        ),
        Topic(
            "/diagnostics",
            "diagnostic_msgs/msg/DiagnosticArray",
            "reliable",
            "last plan or refusal: cause, worst case, planning time, polytope",
        ),
        *admittance_mode.PUBLISHES,
    ],
    subscribes=[
        Topic(
            "payload_estimate",
            "inertia_estimation_ros/msg/PayloadEstimate",
            "latched",
            "the coordinator's estimate: the CoM and its covariance in {s}",
        ),
        Topic("~/goal", "geometry_msgs/msg/PoseStamped", "reliable", "goal tray position (plans)"),
        *admittance_mode.SUBSCRIBES,
    ],
    services=[
        Service("~/plan", "std_srvs/srv/Trigger", "plan to the last goal now"),
        Service(
            ACTION_NAME,
            ACTION_TYPE,
            "action: plan to a goal position, feedback per SQP iteration, result certified or why",
        ),
        *admittance_mode.SERVICES,
    ],
    parameters=[
        Param("object_shape", "string", "box", "box or cylinder", choices=("box", "cylinder")),
        Param(
            "object_size",
            "double_array",
            [0.15, 0.15, 0.6],
            "box: [l_x, l_y, h]; cylinder: [diameter, diameter, h] [m]",
            bounds=(1e-3, 5.0),
            length=3,
        ),
        Param("mu", "double", 0.2, "friction coefficient for verification", bounds=(0.0, 2.0)),
        Param(
            "tray_offset",
            "double_array",
            [0.0, 0.0, 0.0],
            "p_s_e: the tray surface frame's origin in the estimate's frame {s} (same axes) [m]",
            length=3,
        ),
        Param(
            "k_sigma", "double", 3.0, "CoM box half-width in standard deviations", bounds=(0, 10)
        ),
        Param(
            "require_valid_estimate",
            "bool",
            True,
            "refuse while the CoM is not valid; false: plan with the paper's full-height box",
        ),
        Param("method", "string", "robust", "robust, center or top", choices=METHODS),
        Param(
            "robot",
            "string",
            "tray",
            "tray (the carried tray's pose) or ridgeback_ur10 (the paper's 9-DoF robot's joints)",
            choices=ROBOTS,
        ),
        Param("duration", "double", 5.0, "plan duration T [s]", bounds=(0.5, 60.0)),
        Param(
            "start_pose",
            "double_array",
            [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            "robot tray: first start [x, y, z, roll, pitch, yaw]; later plans start at the goal",
            length=6,
        ),
        Param("frame_id", "string", "world", "frame of goals and trajectories", nonempty=True),
        Param("tray_frame", "string", "tray", "frame of the tray surface (markers)", nonempty=True),
        Param(
            "replan_com_change",
            "double",
            0.01,
            "re-plan when the estimated CoM moves by more than this [m]",
            bounds=(0.0, 1.0),
        ),
        Param("max_solves", "int", 400, "verification SDP budget per object", bounds=(1, 100000)),
        Param(
            "replan_rounds",
            "int",
            2,
            "re-plans with a 10x balancing weight w_s when the SDP refuses a plan",
            bounds=(0, 5),
        ),
        *admittance_mode.PARAMETERS,
    ],
)


class PlannerNode(Node):
    """The planner node (see the module docstring); rclpy ``Node`` keyword arguments pass."""

    def __init__(self, **kwargs: object):
        super().__init__("planner_node", **kwargs)
        self.p = declare(self, INTERFACE.parameters)
        size = self.p.object_size
        try:
            if self.p.object_shape == "box":
                self.object = BalancedObject.box(tuple(size), mu=self.p.mu)
            else:
                self.object = BalancedObject.cylinder(size[0] / 2, size[2], mu=self.p.mu)
        except PolytopeError as error:
            raise ParameterError(
                f"parameter '{self.get_fully_qualified_name()}.object_size' = {size}: {error}"
            ) from None
        self.T_e_s = transform(np.eye(3), -np.asarray(self.p.tray_offset))
        self.estimate: ComEstimate | None = None
        self.estimate_error = ""
        self.planned_com: np.ndarray | None = None
        self.goal: np.ndarray | None = None
        self.start = first_start(self.p.robot, self.p.start_pose)
        self.planning = BackgroundCalls(self, "planner")  # plans, in the order asked
        self._replan_queued = False
        self._trajectory = self.create_publisher(
            MultiDOFJointTrajectory, "~/trajectory", LATCHED_QOS
        )
        self._joints = self.create_publisher(JointTrajectory, JOINT_TOPIC, LATCHED_QOS)
        self._verification = self.create_publisher(String, "~/verification", LATCHED_QOS)
        self._markers = self.create_publisher(MarkerArray, "~/markers", LATCHED_QOS)
        self._diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
        group = ReentrantCallbackGroup()  # a callback awaiting a plan holds no other
        self.create_subscription(
            PayloadEstimate,
            "payload_estimate",
            self._on_estimate,
            LATCHED_QOS,
            callback_group=group,
        )
        self.create_subscription(
            PoseStamped, "~/goal", self._on_goal, RELIABLE_QOS, callback_group=group
        )
        self.create_service(Trigger, "~/plan", self._on_plan, callback_group=group)
        self.last_outcome: PlanOutcome | None = None
        self._action = add_plan_action(self)
        self.admittance = admittance_mode.AdmittanceMode(
            self, self.p, self.plan_balancing, self.T_e_s, diagnostics_out=self._diagnostics
        )

    # ----- inputs ------------------------------------------------------------------------
    def _on_estimate(self, msg: PayloadEstimate) -> None:
        self.admittance.on_estimate(msg)
        try:
            self.estimate = ComEstimate.from_parameters(
                np.asarray(msg.parameters),
                np.asarray(msg.parameter_covariance).reshape(10, 10),
                bool(msg.com_valid),
                self.T_e_s,
            )
            self.estimate_error = ""
        except PolytopeError as error:
            self.estimate, self.estimate_error = None, f"unusable PayloadEstimate: {error}"
            self._report("ERROR", self.estimate_error, {})
            return
        if self._com_moved() and self.goal is not None and not self._replan_queued:
            self._replan_queued = True  # one re-plan waits at most, with the newest estimate
            self.planning.submit(self._replan)

    def _com_moved(self) -> bool:
        """The valid estimated CoM moved by more than ``replan_com_change`` since the plan."""
        estimate = self.estimate
        return (
            self.planned_com is not None
            and estimate is not None
            and estimate.valid
            and np.linalg.norm(estimate.p_e_c - self.planned_com) > self.p.replan_com_change
        )

    def _replan(self) -> None:
        """On the planning thread: re-plan if the CoM still moved (a plan since may not)."""
        self._replan_queued = False
        if self._com_moved():
            self.plan("the estimated CoM moved", self.goal)

    def _on_goal(self, msg: PoseStamped) -> None:
        if msg.header.frame_id and msg.header.frame_id != self.p.frame_id:
            self._report("ERROR", f"goal in frame '{msg.header.frame_id}', expected "
                         f"'{self.p.frame_id}': transform it first", {})  # fmt: skip
            return
        self.goal = pose_matrix(msg.pose)[:3, 3]
        self.planning.submit(self.plan, "new goal", self.goal)

    async def _on_plan(
        self, request: Trigger.Request, response: Trigger.Response
    ) -> Trigger.Response:
        if self.goal is None:
            response.success, response.message = False, "no goal yet: publish one on ~/goal"
            return response
        answer = await self.planning.submit(self.plan, "~/plan called", self.goal)
        response.success, response.message = answer
        return response

    # ----- planning ----------------------------------------------------------------------
    def _object(self) -> tuple[BalancedObject, str]:
        """The object with its CoM polytope; PolytopeError with the reason if refused."""
        if self.estimate_error:
            raise PolytopeError(self.estimate_error)
        if self.estimate is None or not self.estimate.valid:
            if self.p.require_valid_estimate:
                raise PolytopeError(
                    "no PayloadEstimate with a valid CoM yet: excite the payload (see its "
                    "advice) or set require_valid_estimate false to plan for the full-height box"
                )
            return self.object, "uninformed (paper's full-height box)"
        informed, _ = informed_com_box(self.object, self.estimate, self.p.k_sigma)
        return informed, f"informed ({self.p.k_sigma:g} sigma)"

    async def plan_balancing(self, start: PlanningStart) -> tuple[TrayPlan | None, bool, str]:
        """The balancing mode's plan from the reference's state ``start`` to the last goal:
        (plan, certified?, message), computed on the planning thread."""
        if self.p.robot != "tray" or self.goal is None:
            why = "robot is not tray" if self.goal is not None else "no goal yet: publish ~/goal"
            return None, False, why
        return await self.planning.submit(self._balancing_plan, start, self.goal)

    def _balancing_plan(
        self, start: PlanningStart, goal: np.ndarray
    ) -> tuple[TrayPlan | None, bool, str]:
        certified, message = self.plan("balancing mode", goal, start=start)
        return (self.last_outcome.plan if self.last_outcome else None), certified, message

    def plan(
        self,
        reason: str,
        goal: np.ndarray,
        on_iteration: Callable[[Iteration], None] | None = None,
        start: PlanningStart | None = None,
    ) -> tuple[bool, str]:
        """Plan to ``goal``, verify and publish; (certified?, message). On the planning
        thread (``self.planning``: one plan at a time). ``on_iteration`` sees each SQP
        iteration and may raise ``PlanningError`` to stop; ``start``: plan from this moving
        state instead of the last goal at rest."""
        self.last_outcome = None
        try:
            obj, source = self._object()
            settings = PlannerSettings(duration=self.p.duration)
            outcome = plan_and_verify(
                [obj], self.p.method, settings,
                self.start if start is None else start.q, goal, self.p.max_solves,
                robot=self.p.robot, on_iteration=on_iteration,
                replan_rounds=self.p.replan_rounds,
                start_rates=None if start is None else start.rates,
            )  # fmt: skip
            self.last_outcome = outcome
        except (PolytopeError, PlanningError) as error:
            return self._refuse(str(error))
        except ConsistencyError as error:
            return self._refuse(f"the verification SDP could not be solved: {error}")
        values = {
            "reason": reason,
            "polytope": f"{source}: [{np.round(obj.com_lo, 3)}, {np.round(obj.com_hi, 3)}]",
            "planning_time_ms": f"{1e3 * outcome.plan.solve_time:.0f}",
            "worst_case": f"{outcome.worst[1].max_violation:+.3f}",
        }
        self._publish_verification(outcome, source)
        self._publish_markers(obj, outcome)
        if not outcome.certified:
            return self._refuse(
                f"plan not certified (worst case {outcome.worst[1].max_violation:+.3f} at "
                f"t = {outcome.worst[1].time:.2f} s, after {len(outcome.rounds)} "
                "round(s) of re-planning): lengthen `duration`"
            )
        if outcome.plan.robot == "tray":
            self._trajectory.publish(self._trajectory_message(outcome))
        else:
            stamp = self.get_clock().now().to_msg()
            self._joints.publish(joint_trajectory(outcome.plan, self.p.frame_id, stamp))
        self.start = next_start(outcome.plan, goal)
        self.planned_com = None if self.estimate is None else self.estimate.p_e_c
        message = "certified plan published: " + outcome.summary().replace("\n", "; ")
        self._report("OK", "certified plan published", values)
        return True, message

    def _refuse(self, message: str) -> tuple[bool, str]:
        self.get_logger().error(f"plan refused: {message}")
        self._verification.publish(
            String(data=json.dumps({"certified": False, "refused": message}))
        )
        self._report("ERROR", f"plan refused: {message}", {})
        return False, f"plan refused: {message}"

    # ----- outputs -----------------------------------------------------------------------
    def _report(self, level: str, message: str, values: dict) -> None:
        self._diagnostics.publish(diagnostics(self, level, message, values))

    def _publish_verification(self, outcome: PlanOutcome, source: str) -> None:
        name, worst = outcome.worst
        data = {
            "certified": outcome.certified,
            "max_violation": worst.max_violation,
            "time": worst.time,
            "face": worst.row,
            "object": name,
            "exact": worst.exact,
            "polytope": source,
            "rounds": [round_.describe() for round_ in outcome.rounds],
        }
        self._verification.publish(String(data=json.dumps(data)))

    def _trajectory_message(self, outcome: PlanOutcome) -> MultiDOFJointTrajectory:
        plan = outcome.plan
        msg = MultiDOFJointTrajectory(joint_names=["tray"])
        msg.header.frame_id = self.p.frame_id
        msg.header.stamp = self.get_clock().now().to_msg()
        V, dV, _ = body_motion(plan.X)
        R = rotation(plan.X[:, :6])
        for k, t in enumerate(plan.times):
            omega_w = R[k] @ V[k, :3]
            alpha_w = R[k] @ dV[k, :3]
            point = MultiDOFJointTrajectoryPoint(
                transforms=[
                    Transform(translation=to_vector3(plan.X[k, :3]), rotation=to_quaternion(R[k]))
                ],
                velocities=[Twist(linear=to_vector3(plan.X[k, 6:9]), angular=to_vector3(omega_w))],
                accelerations=[
                    Twist(linear=to_vector3(plan.X[k, 12:15]), angular=to_vector3(alpha_w))
                ],
            )
            point.time_from_start.sec = int(t)
            point.time_from_start.nanosec = int(round((t - int(t)) * 1e9))
            msg.points.append(point)
        return msg

    def _publish_markers(self, obj: BalancedObject, outcome: PlanOutcome) -> None:
        stamp = self.get_clock().now().to_msg()
        name, worst = outcome.worst

        def marker(ns: str, kind: int, frame: str, color: tuple) -> Marker:
            m = Marker(ns=ns, id=0, type=kind, action=Marker.ADD)
            m.header.frame_id, m.header.stamp = frame, stamp
            m.pose.orientation.w = 1.0
            m.color = ColorRGBA(r=color[0], g=color[1], b=color[2], a=color[3])
            return m

        polytope = marker("com_polytope", Marker.CUBE, self.p.tray_frame, (1.0, 0.6, 0.0, 0.4))
        polytope.pose.position = _point((obj.com_lo + obj.com_hi) / 2)
        polytope.scale = to_vector3(np.maximum(obj.com_hi - obj.com_lo, 1e-3))
        contacts = marker("contact_polygon", Marker.LINE_STRIP, self.p.tray_frame, (0.2, 0.4, 1, 1))
        contacts.scale.x = 0.005
        corners = obj.contacts.points[self._polygon_order(obj.contacts.points)]
        contacts.points = [_point(p) for p in corners]
        contacts.points.append(contacts.points[0])
        path = marker("planned_path", Marker.LINE_STRIP, self.p.frame_id, (0.1, 0.8, 0.1, 1.0))
        path.scale.x = 0.01
        path.points = [_point(p) for p in tray_positions(outcome.plan, outcome.plan.X)]
        red = worst.max_violation > 0
        spot = marker(
            "worst_case",
            Marker.SPHERE,
            self.p.frame_id,
            (1.0 if red else 0.1, 0.1 if red else 0.8, 0.1, 1.0),
        )
        where = tray_positions(outcome.plan, outcome.plan.states(np.array([worst.time])))[0]
        spot.pose.position = _point(where)
        spot.scale = Vector3(x=0.05, y=0.05, z=0.05)
        self._markers.publish(MarkerArray(markers=[polytope, contacts, path, spot]))

    @staticmethod
    def _polygon_order(points: np.ndarray) -> np.ndarray:
        centre = points.mean(axis=0)
        return np.argsort(np.arctan2(points[:, 1] - centre[1], points[:, 0] - centre[0]))

    def destroy_node(self) -> None:
        self.planning.stop()
        super().destroy_node()


def _point(p: np.ndarray) -> Point:
    return Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def main() -> int:
    return run_executable("planner_node", executor=EXECUTOR)


if __name__ == "__main__":
    sys.exit(main())
