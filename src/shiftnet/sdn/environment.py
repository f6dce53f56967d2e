"""A container's environment and argv, built the way Kubernetes builds them.

Pure: the agent passes in everything it knows about the pod. The variables
shiftnet sets (POD_IP, POD_NAME, POD_NAMESPACE, PORT, ...) come first so a
container's own ``env`` may override them; ``$(VAR)`` references in env
values, command and args expand from earlier variables, ``$$`` escapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from shiftnet.api import Container

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")

# Passed through from the agent so commands like ``python3`` resolve; a real
# container would get these from its image.
HOST_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: unknown references stay as written."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REF.sub(sub, text)


def first_port(container: Container) -> int | None:
    return container.ports[0].container_port if container.ports else None


def container_env(
    container: Container,
    *,
    namespace: str,
    pod_name: str,
    pod_ip: str,
    host_ip: str,
    node_name: str,
    host_env: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    env = {k: host_env[k] for k in HOST_VARIABLES if k in host_env}
    env["HOSTNAME"] = pod_name  # the pod's hostname, when ``extra`` says it
    env.update(extra or {})
    env.update(
        {
            "POD_NAME": pod_name,
            "POD_NAMESPACE": namespace,
            "POD_IP": pod_ip,
            "HOST_IP": host_ip,
            "NODE_NAME": node_name,
        }
    )
    port = first_port(container)
    if port is not None:
        env["PORT"] = str(port)
    for var in container.env:
        env[var.name] = expand(var.value, env)
    return env


def container_argv(container: Container, env: Mapping[str, str]) -> list[str]:
    """command + args with ``$(VAR)`` expanded; empty when the container has no command."""
    return [expand(a, env) for a in [*container.command, *container.args]]
