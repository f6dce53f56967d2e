"""Pod status from the state of its containers: phase, conditions, counts. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from shiftnet.api.base import Condition
from shiftnet.api.core import ContainerStatus, PodStatus


@dataclass(frozen=True)
class ContainerView:
    status: ContainerStatus
    started_once: bool
    finished: bool  # exited and will not be restarted
    exit_code: int | None


def pod_phase(containers: list[ContainerView]) -> str:
    """Kubernetes phases: Pending until a container started, Succeeded/Failed when
    every container finished for good, Running otherwise."""
    if not containers:
        return "Pending"
    if all(c.finished for c in containers):
        return "Succeeded" if all(c.exit_code == 0 for c in containers) else "Failed"
    if not any(c.started_once for c in containers):
        return "Pending"
    return "Running"


def build_pod_status(
    containers: list[ContainerView],
    *,
    pod_ip: str,
    host_ip: str,
    start_time: str,
    ready_since: str,
    message: str | None = None,
) -> PodStatus:
    """The status the agent reports; ``ready_since`` is when readiness last changed."""
    phase = pod_phase(containers)
    all_ready = bool(containers) and all(c.status.ready for c in containers) and phase == "Running"
    flag = "True" if all_ready else "False"
    not_ready = sorted(c.status.name for c in containers if not c.status.ready)
    reason = (
        None
        if all_ready
        else ("PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady")
    )
    detail = (
        None
        if all_ready or reason == "PodCompleted"
        else f"containers with unready status: [{' '.join(not_ready)}]"
    )
    conditions = [
        Condition(type="Initialized", status="True", last_transition_time=start_time),
        Condition(
            type="Ready",
            status=flag,
            reason=reason,
            message=detail,
            last_transition_time=ready_since,
        ),
        Condition(
            type="ContainersReady",
            status=flag,
            reason=reason,
            message=detail,
            last_transition_time=ready_since,
        ),
        Condition(type="PodScheduled", status="True", last_transition_time=start_time),
    ]
    return PodStatus(
        phase=phase,
        conditions=conditions,
        message=message,
        host_ip=host_ip,
        pod_ip=pod_ip,
        start_time=start_time,
        container_statuses=sorted((c.status for c in containers), key=lambda s: s.name),
    )


def stopped_status(status: PodStatus, when: str, message: str) -> PodStatus:
    """What a pod's status says after its node agent stopped it (and will start it again
    when it comes back): Pending, not ready, every container waiting."""
    out = status.model_copy(deep=True)
    out.phase = "Pending"
    out.message = message
    out.reason = "NodeAgentStopped"
    for cond in out.conditions:
        if cond.type in ("Ready", "ContainersReady"):
            if cond.status != "False":
                cond.last_transition_time = when
            cond.status = "False"
            cond.reason = "NodeAgentStopped"
            cond.message = message
    for cs in out.container_statuses:
        cs.ready = False
        cs.started = False
        cs.state = {"waiting": {"reason": "NodeAgentStopped", "message": message}}
    return out
