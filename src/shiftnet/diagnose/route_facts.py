"""The facts ``diagnose route`` judges, each as its source reported it.

Pure data: the gatherers fill these in; ``route_checks`` reads them. A
``None`` means the source could not be asked (a router that is not running
here, an unreachable socket), which the checks say instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shiftnet.api.selectors import Selector
from shiftnet.router.haproxy.loaded import LoadedRecord


@dataclass(frozen=True)
class ClientTarget:
    """Where the client goes: the URL given, or the one the route implies."""

    scheme: str  # "http" or "https"
    host: str
    port: int | None  # None: the scheme's default, as a client would use
    path: str
    from_url: bool  # the user gave this URL (else it is derived from the route)
    resolve: str | None = None  # an address given by --resolve (curl's meaning)

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else (443 if self.scheme == "https" else 80)

    def url(self, port: int | None = None) -> str:
        number = port if port is not None else self.port
        where = f"{self.host}:{number}" if number is not None else self.host
        return f"{self.scheme}://{where}{self.path or '/'}"


@dataclass(frozen=True)
class Admission:
    """One router's ``status.ingress`` entry for the route."""

    router: str
    admitted: bool
    reason: str = ""
    message: str = ""
    host: str = ""


@dataclass(frozen=True)
class ServerView:
    """One server of the route's backend in the running HAProxy (``show servers state``)."""

    name: str
    address: str
    port: int
    up: bool
    maintenance: bool


@dataclass(frozen=True)
class RouterView:
    """What one router running from this state directory serves, from its files and HAProxy."""

    name: str
    http_bind: tuple[str, int] | None  # the address HAProxy's ``public`` frontend binds
    https_bind: tuple[str, int] | None
    lookup: str  # the map and key HAProxy looks the request up with
    rendered: str | None  # what that lookup answers in the files on disk ("": no entry)
    running: str | None  # what it answers in HAProxy's running map (None: not reachable)
    route_backends: tuple[str, ...] = ()  # backends the router rendered for the route
    aliases: dict[str, str] = field(default_factory=dict)  # backend -> spare serving it
    servers: tuple[ServerView, ...] | None = None  # None: not asked (no backend, no socket)
    master_running: bool = False
    reload_owed_seconds: float | None = None  # since when runtime changes wait for a reload
    master_pid: int | None = None
    master_stopped: bool = False  # the master process is stopped (SIGSTOP): it cannot reload
    running_config: str | None = None  # the identity HAProxy's ``show info`` reports
    rendered_config: str | None = None  # the identity of ``haproxy.cfg`` on disk (its digest)
    loaded: LoadedRecord = field(default_factory=LoadedRecord)  # run/loaded.json
    reload_failed_seconds: float | None = None  # since the record's last refused reload
    # ROUTE_LABELS and NAMESPACE_LABELS from the router's run/shard.json (None: no record)
    shard: tuple[Selector, Selector] | None = None


@dataclass(frozen=True)
class Member:
    """One endpoint address of a Service the route sends to, and what a connection met."""

    pod: str
    address: str
    port: int
    ready: bool
    connect_error: str | None  # None: a TCP connection was accepted ("" : not tried)


@dataclass(frozen=True)
class PodView:
    name: str
    ready: bool
    message: str  # the Ready condition's message, or the pod's phase
    last_probe: str = ""  # the message of the pod's most recent ``Unhealthy`` Event


@dataclass(frozen=True)
class BackendService:
    """A Service the route points at (``spec.to`` or an alternate backend)."""

    name: str
    exists: bool
    selector: dict[str, str]
    members: tuple[Member, ...]
    pods: tuple[PodView, ...]


@dataclass(frozen=True)
class RequestResult:
    """A real request through the router."""

    status: int | None
    error: str = ""
    served_by: str = ""  # "backend/server" when known from the access log


@dataclass(frozen=True)
class RouteFacts:
    namespace: str
    name: str
    host: str
    path: str
    termination: str  # "http", "edge", "reencrypt", "passthrough"
    insecure_policy: str  # "", "Allow", "Redirect", "None"
    target: ClientTarget
    resolved: tuple[str, ...] | None  # the system resolver's answer (None: not asked)
    resolve_error: str
    reachable: dict[str, str]  # "addr:port" the client would use -> "" or the error
    admissions: tuple[Admission, ...]
    routers: tuple[RouterView, ...]  # every router running from this state directory
    route_labels: dict[str, str]
    services: tuple[BackendService, ...]
    request: RequestResult | None
    namespace_labels: dict[str, str] = field(default_factory=dict)
