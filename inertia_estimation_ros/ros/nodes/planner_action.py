"""The planner node's ``~/plan_balancing`` action (``inertia_estimation_ros/action/PlanBalancing``).

Planning takes seconds, so the ROS convention is an action: the goal is a tray position,
feedback comes after every SQP iteration (QP status, balancing residual, distance of the
iterate from the goal) and once more when the verification SDPs start, and the result says
whether a certified trajectory was published and, if not, why. A cancel request stops the
planner at the next iteration (the goal ends canceled, nothing is published); one that
arrives after the last iteration changes nothing unless the SDP refuses the plan and a
re-plan round (``replan_rounds``) starts. The ``~/plan`` Trigger service stays
for callers without action clients (it plans to the last goal and answers when done). The
plan runs on the node's planning thread; the execute callback, a coroutine, awaits it without
holding the executor, and the feedback is published from the planning thread.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup

from ...action import PlanBalancing
from ...core.planning.planner import Iteration, PlanningError

if TYPE_CHECKING:
    from .planner_node import PlannerNode

ACTION_NAME = "~/plan_balancing"
ACTION_TYPE = "inertia_estimation_ros/action/PlanBalancing"


class PlanCanceledError(PlanningError):
    """The action's client canceled the goal."""


def add_plan_action(node: PlannerNode) -> ActionServer:
    """Serve ``~/plan_balancing`` on ``node`` (see the module docstring)."""

    async def execute(handle: ServerGoalHandle) -> PlanBalancing.Result:
        frame = handle.request.goal.header.frame_id
        if frame and frame != node.p.frame_id:
            handle.abort()
            return _result(False, f"goal in frame '{frame}', expected '{node.p.frame_id}'")
        p = handle.request.goal.point
        node.goal = goal = np.array([p.x, p.y, p.z])

        stopped = []

        def feedback(it: Iteration) -> None:
            if handle.is_cancel_requested:
                stopped.append(it.index)
                raise PlanCanceledError("canceled by the action client")
            handle.publish_feedback(_feedback("planning", it))
            if it.index == it.of:
                handle.publish_feedback(_feedback("verifying", it))

        def plan() -> tuple[bool, str, object]:  # on the planning thread
            certified, message = node.plan("~/plan_balancing goal", goal, on_iteration=feedback)
            return certified, message, node.last_outcome

        certified, message, outcome = await node.planning.submit(plan)
        if stopped:  # a cancel that arrives after planning changes nothing
            handle.canceled()
        elif certified:
            handle.succeed()
        else:
            handle.abort()
        return _result(certified, message, outcome)

    return ActionServer(
        node,
        PlanBalancing,
        ACTION_NAME,
        execute_callback=execute,
        goal_callback=lambda _: GoalResponse.ACCEPT,
        cancel_callback=lambda _: CancelResponse.ACCEPT,
        callback_group=ReentrantCallbackGroup(),
    )


def _feedback(stage: str, it: Iteration) -> PlanBalancing.Feedback:
    return PlanBalancing.Feedback(
        stage=stage,
        iteration=it.index,
        iterations=it.of,
        qp_status=it.qp_status,
        balancing_rms=it.balancing_rms,
        goal_distance=it.goal_distance,
        elapsed=it.elapsed,
    )


def _result(certified: bool, message: str, outcome: object = None) -> PlanBalancing.Result:
    result = PlanBalancing.Result(certified=certified, message=message, max_violation=math.nan)
    if outcome is not None:
        result.max_violation = float(outcome.worst[1].max_violation)
        result.planning_time = float(outcome.plan.solve_time)
        result.duration = float(outcome.plan.times[-1])
    return result
