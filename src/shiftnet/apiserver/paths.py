"""Resource URLs into what they name (pure).

``/api/v1/namespaces/web/pods/p1/log`` → group "", version v1, namespace web,
resource pods, name p1, subresource log. Both prefixes ``/api/v1`` and
``/apis/<group>/<version>`` share one parser.
"""

from __future__ import annotations

from dataclasses import dataclass

from shiftnet.apiserver.resources import ResourceInfo, find


@dataclass(frozen=True)
class Target:
    """What one request URL names; ``resource`` None means the group version itself."""

    group: str
    version: str
    resource: ResourceInfo | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    unknown: str | None = None  # a resource name that is not served


def _prefix(parts: list[str]) -> tuple[str, str, list[str]] | None:
    if len(parts) >= 2 and parts[0] == "api":
        return "", parts[1], parts[2:]
    if len(parts) >= 3 and parts[0] == "apis":
        return parts[1], parts[2], parts[3:]
    return None


def parse_path(path: str) -> Target | None:
    """The target of ``path``, or None for a URL outside the resource tree."""
    parts = [p for p in path.split("/") if p]
    head = _prefix(parts)
    if head is None:
        return None
    group, version, rest = head
    if not rest:
        return Target(group, version)
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        # /namespaces/<ns>/<resource>[/<name>[/<sub>]] unless it is the namespace's own
        # subresource (/namespaces/<name>/status), which only the core group has.
        candidate = find(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
        elif not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")):
            return Target(group, version, unknown=rest[2])
    info = find(group, version, rest[0])
    if info is None:
        return Target(group, version, unknown=rest[0])
    if len(rest) > 3:
        return Target(group, version, unknown="/".join(rest))
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else None
    return Target(group, version, info, namespace, name, sub)
