"""The checks of ``diagnose route``, in the order the router document lists what must hold.

1. the client uses the route's host and port; 2. DNS resolves the host to the
router; 3. nothing in front (no layer-4 balancer here) stops the connection;
4. the router admits the route and HAProxy's lookup picks it; 5. the route is
in the rendered configuration; 6. HAProxy runs that configuration; 7. the
pod list is right and at least one pod works; then a real request.
Pure: each check is a function of :class:`RouteFacts`.
"""

from __future__ import annotations

from shiftnet.api.selectors import Selector
from shiftnet.diagnose.result import Check, Report
from shiftnet.diagnose.route_facts import (
    Admission,
    BackendService,
    PodView,
    RouteFacts,
    RouterView,
)
from shiftnet.router.admission import shard_selects
from shiftnet.router.haproxy.names import REDIRECT_BACKEND

OWED_RELOAD_LATE = 60.0  # seconds: the router reloads within 30 s of a runtime-only change
ANY_ADDRESS = ("", "*", "0.0.0.0", "::")


def _route(f: RouteFacts) -> str:
    return f"{f.namespace}/{f.name}"


def _admitted(f: RouteFacts) -> list[Admission]:
    return [a for a in f.admissions if a.admitted]


def serving_routers(f: RouteFacts) -> list[RouterView]:
    """Routers running here that admitted the route (else every router running here)."""
    names = {a.router for a in _admitted(f)}
    chosen = [r for r in f.routers if r.name in names]
    return chosen or list(f.routers)


def _bind(router: RouterView, scheme: str) -> tuple[str, int] | None:
    return router.https_bind if scheme == "https" else router.http_bind


def _schemes(f: RouteFacts) -> tuple[str, ...]:
    """The schemes a client can use for this route (the router answers on these ports)."""
    if f.termination == "http":
        return ("http",)
    if f.termination == "passthrough":
        return ("https",) if f.insecure_policy != "Redirect" else ("https", "http")
    if f.insecure_policy in ("Allow", "Redirect"):
        return ("https", "http")
    return ("https",)


def client_address(f: RouteFacts) -> str:
    """The address the client connects to: --resolve, else DNS, else the router's own."""
    if f.target.resolve:
        return f.target.resolve
    if f.resolved:
        return f.resolved[0]
    routers = serving_routers(f)
    bind = _bind(routers[0], f.target.scheme) if routers else None
    return bind[0] if bind and bind[0] not in ANY_ADDRESS else "127.0.0.1"


def check_client(f: RouteFacts) -> Check:
    name = "client uses the route's host and port"
    if not f.host:
        return Check(
            name,
            False,
            f"route {_route(f)} has no host (no spec.host, and no router gave it one)",
            "set spec.host, or spec.subdomain with a router that has ROUTER_DOMAIN",
        )
    routers = serving_routers(f)
    if not routers:
        return Check(
            name,
            False,
            "no router runs from this state directory, so no port serves the route",
            "start one: `shiftnet up` or `shiftnet router`",
        )
    t = f.target
    schemes = _schemes(f)
    router = routers[0]
    if t.scheme not in schemes:
        bind = _bind(router, schemes[0])
        port = bind[1] if bind else None
        return Check(
            name,
            False,
            f"{t.url()} uses {t.scheme} but route {_route(f)} ({f.termination}) is served "
            f"over {' and '.join(schemes)}",
            f"use {t.__class__(schemes[0], t.host, port, t.path, True).url()}",
        )
    bind = _bind(router, t.scheme)
    if bind is None:
        return Check(
            name,
            False,
            f"router `{router.name}` has no {t.scheme} listener",
            "set the router's ROUTER_SERVICE_HTTP(S)_PORT",
        )
    if t.from_url and t.effective_port != bind[1]:
        right = t.__class__(t.scheme, t.host, bind[1], t.path, True).url()
        return Check(
            name,
            False,
            f"{t.url()} goes to port {t.effective_port} but router `{router.name}` "
            f"serves {t.scheme} on port {bind[1]}",
            f"use {right}",
        )
    return Check(name, True, f"{t.url(bind[1])} (router `{router.name}`)")


def check_dns(f: RouteFacts) -> Check:
    name = "DNS resolves the host to the router"
    routers = serving_routers(f)
    bind = _bind(routers[0], f.target.scheme) if routers else None
    if bind is None:
        return Check(name, False, "no router listener to compare with", "start a router")
    listen, port = bind
    want = "127.0.0.1" if listen in ANY_ADDRESS else listen
    hint = f"add `--resolve {f.host}:{port}:{want}` to curl, or a hosts entry `{want} {f.host}`"
    if f.target.resolve:
        ok = listen in ANY_ADDRESS or f.target.resolve == listen
        found = f"--resolve gives {f.target.resolve} for {f.host} (the resolver is not asked)"
        if ok:
            return Check(name, True, f"{found}; the router listens on {listen or '*'}")
        return Check(name, False, f"{found} but the router listens on {listen}", hint)
    if not f.resolved:
        why = f" ({f.resolve_error})" if f.resolve_error else ""
        return Check(name, False, f"the system resolver has no address for {f.host}{why}", hint)
    if listen in ANY_ADDRESS or listen in f.resolved:
        return Check(name, True, f"{f.host} -> {', '.join(f.resolved)}")
    return Check(
        name,
        False,
        f"DNS answers {', '.join(f.resolved)} for {f.host} but the router listens on {listen}",
        hint,
    )


def check_balancer(f: RouteFacts) -> Check:
    name = "nothing in front of HAProxy blocks the connection"
    if not f.reachable:
        return Check(name, False, "no address to connect to", "start a router")
    failed = {where: err for where, err in f.reachable.items() if err}
    if not failed:
        return Check(
            name,
            True,
            f"no layer-4 balancer here; {', '.join(sorted(f.reachable))} accepts connections",
        )
    where, err = sorted(failed.items())[0]
    return Check(
        name,
        False,
        f"{where}: {err}",
        "is the router running there? start `shiftnet up` or `shiftnet router`; "
        "a balancer in front must forward this port to the router",
    )


def _claim_fix(reason: str) -> str:
    if reason == "HostAlreadyClaimed":
        return "use another host or path, or delete the older route"
    return "correct the route as the message says (`shiftnet describe route`)"


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none"


def _shard_text(router: RouterView) -> str:
    """A router's shard as its environment spells it."""
    assert router.shard is not None
    route_sel, ns_sel = router.shard
    parts = [f"ROUTE_LABELS `{route_sel}`"] if not route_sel.empty else []
    if not ns_sel.empty:
        parts.append(f"NAMESPACE_LABELS `{ns_sel}`")
    return " and ".join(parts) or "every route"


def _selects(f: RouteFacts, router: RouterView) -> bool:
    """The router's recorded shard selects the route (the admission's own test)."""
    assert router.shard is not None
    return shard_selects(*router.shard, f.route_labels, f.namespace_labels)


def _changes(selector: Selector, labels: dict[str, str], what: str) -> list[str]:
    """The label changes that make ``selector`` select ``labels`` (``what``: route, namespace)."""
    out: list[str] = []
    for req in selector.requirements:
        if req.matches(labels):
            continue
        if req.op in ("=", "in"):
            out.append(f"{what} label {req.key}={req.values[0]}")
        elif req.op == "exists":
            out.append(f"{what} label {req.key}")
        else:
            out.append(f"no {what} label {req.key}={labels.get(req.key, '')}")
    return out


def _no_shard_selects(f: RouteFacts, recorded: list[RouterView]) -> Check:
    shards = "; ".join(f"router `{r.name}` serves {_shard_text(r)}" for r in recorded)
    fixes = []
    for r in recorded:
        assert r.shard is not None
        wanted = _changes(r.shard[0], f.route_labels, "route")
        wanted += _changes(r.shard[1], f.namespace_labels, f"namespace `{f.namespace}`")
        fixes.append(f"{', '.join(wanted)} (router `{r.name}`)")
    return Check(
        "a router admits the route and its lookup picks it",
        False,
        f"no router's shard selects route {_route(f)} (route labels: {_labels(f.route_labels)}; "
        f"namespace labels: {_labels(f.namespace_labels)}): {shards}",
        "give the route or its namespace the labels of a shard: " + "; or ".join(fixes),
    )


def check_admission(f: RouteFacts) -> Check:
    """The routers' status entries, judged against the shards the routers recorded."""
    name = "a router admits the route and its lookup picks it"
    admitted = _admitted(f)
    local = sorted(r.name for r in f.routers)
    reported = {a.router: a for a in f.admissions}
    silent = [n for n in local if n not in reported]
    recorded = [r for r in f.routers if r.shard is not None]
    should = [r for r in recorded if _selects(f, r)]
    if admitted:
        wrong = [r for r in recorded if r not in should and reported.get(r.name) in admitted]
        if wrong:
            return Check(
                name,
                False,
                f"router `{wrong[0].name}` admitted route {_route(f)} but its shard "
                f"({_shard_text(wrong[0])}) does not select it (route labels: "
                f"{_labels(f.route_labels)}; namespace labels: {_labels(f.namespace_labels)})",
                f"the entry is older than the labels: router `{wrong[0].name}` drops it when "
                "it syncs; if it stays, see `shiftnet logs router`",
            )
        served = ", ".join(f"`{a.router}`" for a in admitted)
        found = f"admitted by router {served} on host {admitted[0].host or f.host}"
        picked = [r for r in should if reported.get(r.name) in admitted]
        if picked:
            found += f"; the shard of `{picked[0].name}` ({_shard_text(picked[0])}) selects it"
        for r in should:
            entry = reported.get(r.name)
            if entry is None or not entry.admitted:
                why = f"{entry.reason}: {entry.message}" if entry else "it has not reported"
                found += f"; router `{r.name}` should serve it too but did not ({why})"
        if silent:
            found += f"; not in the shard of {', '.join(f'`{n}`' for n in silent)}"
        return Check(name, True, found)
    for r in should:
        entry = reported.get(r.name)
        if entry is not None:
            return Check(
                name,
                False,
                f"route not admitted by router `{r.name}`: {entry.reason}: {entry.message}",
                _claim_fix(entry.reason),
            )
        return Check(
            name,
            False,
            f"router `{r.name}`'s shard ({_shard_text(r)}) selects route {_route(f)} but the "
            "router has not reported on it",
            f"is router `{r.name}` running? see `shiftnet logs router`",
        )
    refused = [a for a in f.admissions if not a.admitted]
    if refused:
        a = refused[0]
        return Check(
            name,
            False,
            f"route not admitted by router `{a.router}`: {a.reason}: {a.message}",
            _claim_fix(a.reason),
        )
    if recorded:
        return _no_shard_selects(f, recorded)
    who = ", ".join(f"`{n}`" for n in local) or "none"
    return Check(
        name,
        False,
        f"no router reported on route {_route(f)} (routers here: {who}; route labels: "
        f"{_labels(f.route_labels)}): no router's shard selects it",
        "label the route or its namespace to match a router's ROUTE_LABELS / "
        "NAMESPACE_LABELS, or start a router whose shard holds it",
    )


def _routers_admitting(f: RouteFacts) -> list[RouterView]:
    names = {a.router for a in _admitted(f)}
    return [r for r in f.routers if r.name in names]


def redirects(f: RouteFacts) -> bool:
    """A plain-HTTP request to a TLS route with insecure policy Redirect: HAProxy answers 302."""
    return f.target.scheme == "http" and f.termination != "http" and f.insecure_policy == "Redirect"


def _expected(f: RouteFacts, router: RouterView) -> set[str]:
    if redirects(f):
        return {REDIRECT_BACKEND}
    out = set(router.route_backends)
    out.update(router.aliases.get(b, b) for b in router.route_backends)
    return out


def check_rendered(f: RouteFacts) -> Check:
    name = "the route is in HAProxy's configuration"
    routers = _routers_admitting(f)
    if not routers:
        return Check(
            name,
            False,
            "no router running here admitted the route, so none renders it",
            "see check 4",
        )
    for router in routers:
        if not router.route_backends:
            return Check(
                name,
                False,
                f"router `{router.name}` admitted the route but rendered no backend for it",
                "see the router's log (`shiftnet logs router`) and `shiftnet describe route`",
            )
        if router.rendered is None or router.rendered not in _expected(f, router):
            got = router.rendered or "nothing"
            return Check(
                name,
                False,
                f"router `{router.name}`: {router.lookup} answers {got} in the files on disk, "
                f"not {router.route_backends[0]}",
                "a route with a longer path or an older claim takes this request; "
                "see `shiftnet get routes -A`",
            )
    r = routers[0]
    return Check(name, True, f"{r.lookup} -> {r.rendered} (router `{r.name}`)")


def _owed_fix(router: RouterView) -> str:
    if router.master_stopped:
        return (
            f"HAProxy's master (pid {router.master_pid}) is stopped, so it cannot reload: "
            f"continue it (`kill -CONT {router.master_pid}`) or restart the router"
        )
    return (
        "the router reloads within 30 s of a change served through the runtime API; "
        "its reload fails or waits: see `shiftnet logs router`"
    )


def _short(config: str | None) -> str:
    """A configuration identity as a reader compares it: the first 12 digits of the digest."""
    if not config:
        return "without an identity"
    return config.rpartition(":")[2][:12]


def _unloaded(router: RouterView) -> bool:
    """HAProxy's own answer names another configuration than the rendered ``haproxy.cfg``,
    and the runtime API does not serve the difference in full either (the driver's record:
    its commands brought the configuration HAProxy loaded up to the rendered one)."""
    running, rendered = router.running_config, router.rendered_config
    if running is None or rendered is None or running == rendered:
        return False
    record = router.loaded
    return not (record.loaded == running and record.served == rendered)


def _unloaded_failure(router: RouterView, owed_after: float) -> Check | None:
    """Check 6's failure when HAProxy runs another configuration than the rendered one."""
    owed = router.reload_owed_seconds
    if not _unloaded(router):
        return None
    if owed is not None and owed <= owed_after and router.running != router.rendered:
        return None  # this very route is served by a spare until the reload it owes
    found = (
        f"HAProxy runs configuration {_short(router.running_config)} but the rendered one "
        f"is {_short(router.rendered_config)}"
    )
    record = router.loaded
    if owed is not None:
        return Check(_RUNNING, False, f"{found}: reload owed since {owed:.0f} s", _owed_fix(router))
    if record.failed:
        since = router.reload_failed_seconds
        ago = f" {since:.0f} s ago" if since is not None else ""
        return Check(
            _RUNNING,
            False,
            f"{found}: the last reload failed{ago} ({record.failed})",
            "the last good configuration keeps serving; see `shiftnet logs router` for why "
            "HAProxy refused the new one",
        )
    fix = (
        _owed_fix(router)
        if router.master_stopped
        else "the router reloads it within its reload interval; if this stays, "
        "see `shiftnet logs router`"
    )
    return Check(_RUNNING, False, f"{found}: not reloaded yet", fix)


_RUNNING = "HAProxy runs that configuration"


def check_running(f: RouteFacts, owed_after: float = OWED_RELOAD_LATE) -> Check:
    """HAProxy's running map answers what the files say, and HAProxy's ``show info`` names the
    rendered configuration (or the runtime API serves the difference)."""
    name = _RUNNING
    routers = _routers_admitting(f)
    if not routers:
        return Check(name, False, "no router running here serves the route", "see check 4")
    for router in routers:
        if not router.master_running:
            return Check(
                name,
                False,
                f"HAProxy of router `{router.name}` is not running",
                "restart the router (`shiftnet up` or `shiftnet router`); see its log",
            )
        if router.running is None:
            return Check(
                name,
                False,
                f"HAProxy of router `{router.name}` does not answer on its runtime socket",
                "restart the router; see its log",
            )
        owed = router.reload_owed_seconds
        owed_text = f"; reload owed since {owed:.0f} s" if owed is not None else ""
        served = router.aliases.get(router.rendered or "", router.rendered)
        if router.running not in (router.rendered, served):
            return Check(
                name,
                False,
                f"HAProxy serves an older configuration: its running {router.lookup} answers "
                f"{router.running or 'nothing'}, the files say {router.rendered or 'nothing'}"
                f"{owed_text}",
                "the router applies it within its reload interval; if this stays, "
                "its reload fails: see `shiftnet logs router`",
            )
        unloaded = _unloaded_failure(router, owed_after)
        if unloaded is not None:
            return unloaded
        if owed is not None and owed > owed_after:
            return Check(
                name,
                False,
                f"HAProxy serves an older configuration: reload owed since {owed:.0f} s",
                _owed_fix(router),
            )
    r = routers[0]
    spare = f", the spare serving {r.rendered}" if r.running != r.rendered else ""
    extra = (
        f" (through the runtime API{spare}; reload owed since {r.reload_owed_seconds:.0f} s)"
        if r.reload_owed_seconds is not None
        else ""
    )
    config = ""
    if r.running_config is not None and r.rendered_config is not None:
        config = f"; configuration {_short(r.running_config)}"
        if r.running_config != r.rendered_config and not _unloaded(r):
            config += f", runtime changes up to the rendered {_short(r.rendered_config)}"
        elif r.running_config != r.rendered_config:
            config += f", the rendered {_short(r.rendered_config)} waits for the reload"
    return Check(name, True, f"running {r.lookup} -> {r.running or 'nothing'}{extra}{config}")


def unready_fix(unready: list[PodView]) -> str:
    """The fix for unready pods, naming the last probe failure an ``Unhealthy`` Event recorded."""
    fix = "see the pod's log (`shiftnet logs POD -n NS`) and its readinessProbe"
    probed = next((p for p in unready if p.last_probe), None)
    if probed is None:
        return fix
    return f"pod `{probed.name}` last probe: {probed.last_probe}; {fix}"


def _service_problem(svc: BackendService, namespace: str) -> tuple[str, str] | None:
    """(found, fix) when a service cannot take traffic, else None."""
    if not svc.exists:
        return (
            f"service `{namespace}/{svc.name}` does not exist",
            f"create Service {svc.name} in {namespace}, or point the route at an existing one",
        )
    total = len(svc.pods)
    ready = [p for p in svc.pods if p.ready]
    if total == 0 and not svc.members:
        sel = ",".join(f"{k}={v}" for k, v in sorted(svc.selector.items())) or "none"
        return (
            f"service `{svc.name}` selects no pods (selector {sel})",
            "start pods with those labels, or fix the service's selector",
        )
    serving = [m for m in svc.members if m.ready]
    if not ready or not serving:
        unready = [p for p in svc.pods if not p.ready]
        detail = f": pod `{unready[0].name}`: {unready[0].message}" if unready else ""
        return (
            f"{len(ready)} of {total} pods pass their readiness probe{detail}",
            unready_fix(unready),
        )
    working = [m for m in serving if m.connect_error is None]
    if not working:
        m = serving[0]
        return (
            f"0 of {len(serving)} ready endpoints accept connections: pod `{m.pod}` at "
            f"{m.address}:{m.port}: {m.connect_error}",
            f"the pod does not listen on port {m.port}: fix the Service's targetPort "
            "or the container's port",
        )
    return None


def check_pods(f: RouteFacts) -> Check:
    name = "the pod list is right and at least one pod works"
    if not f.services:
        return Check(name, False, "the route names no service", "set spec.to")
    problems: list[tuple[str, str]] = []
    for svc in f.services:
        problem = _service_problem(svc, f.namespace)
        if problem is not None:
            problems.append(problem)
    if len(problems) == len(f.services):
        return Check(name, False, problems[0][0], problems[0][1])
    for router in [] if redirects(f) else _routers_admitting(f):
        if router.servers is not None and not any(s.up for s in router.servers):
            return Check(
                name,
                False,
                f"HAProxy of router `{router.name}` has no server up for the route "
                f"({len(router.servers)} configured)",
                "the pods fail HAProxy's health check: see their logs",
            )
    parts = []
    for svc in f.services:
        ready = sum(1 for p in svc.pods if p.ready)
        works = sum(1 for m in svc.members if m.ready and m.connect_error is None)
        refusing = [m for m in svc.members if m.ready and m.connect_error]
        part = f"service `{svc.name}`: {ready} of {len(svc.pods)} pods ready, {works} accept"
        if refusing:
            part += f" (pod `{refusing[0].pod}`: {refusing[0].connect_error})"
        parts.append(part)
    return Check(name, True, "; ".join(parts))


def check_request(f: RouteFacts) -> Check:
    name = "a real request through the router"
    r = f.request
    if r is None:
        return Check(name, False, "not sent: no address to send it to", "see the checks above")
    if r.status is None:
        return Check(name, False, f"{f.target.url()}: {r.error}", "see the checks above")
    who = r.served_by or "backend and server not known"
    if r.status >= 500:
        return Check(
            name,
            False,
            f"{f.target.url()} answered {r.status} ({who})",
            "HAProxy found no working server: see check 7",
        )
    return Check(name, True, f"{f.target.url()} answered {r.status} ({who})")


def diagnose_route(f: RouteFacts, owed_after: float = OWED_RELOAD_LATE) -> Report:
    """The eight checks; a reload owed longer than ``owed_after`` seconds fails check 6."""
    checks = (
        check_client(f),
        check_dns(f),
        check_balancer(f),
        check_admission(f),
        check_rendered(f),
        check_running(f, owed_after),
        check_pods(f),
        check_request(f),
    )
    return Report(f"route {_route(f)} ({f.target.url()})", checks)
