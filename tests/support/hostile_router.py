"""Good routes under a running client, for the router's hostile-tenant tests.

Two tenants (``good-a`` plain HTTP, ``good-b`` edge TLS) with one pod each, a
client thread that asks them in a loop on fresh connections while a test
applies hostile objects elsewhere, and the check that every hostile route got
an answer from the router: admitted, or not admitted with a reason.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from shiftnet.api import Route
from tests.support.backends import Backend
from tests.support.pem import issue
from tests.support.router import RouterEnv, endpoints, namespace, request, route, service

CLIENT_MAX_SECONDS = 600.0  # the client loop stops by itself even if the test hangs
Target = tuple[str, bool, str]  # host, TLS, the pod that must answer
GOOD_TARGETS: list[Target] = [
    ("web.good.example.com", False, "web-1"),
    ("secure.good.example.com", True, "secure-1"),
]
GOOD_PODS = ("web-1", "secure-1")


class Client:
    """Requests to the good routes in a loop on a thread until stopped (or a deadline)."""

    def __init__(self, env: RouterEnv, targets: list[Target] = GOOD_TARGETS) -> None:
        self.env, self.targets = env, targets
        self.ok = 0
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hostile-client", daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + CLIENT_MAX_SECONDS
        i = 0
        while not self._stop.is_set() and time.monotonic() < deadline:
            host, tls, pod = self.targets[i % len(self.targets)]
            i += 1
            port = self.env.https_port if tls else self.env.http_port
            try:
                r = request(port, host, tls=tls)
            except OSError as err:
                self.failed.append(f"{host}: {err!r}")
                continue
            if r.status == 200 and r.backend == pod:
                self.ok += 1
            else:
                self.failed.append(f"{host}: {r.status} {r.backend!r}")

    def __enter__(self) -> Client:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def good_served(env: RouterEnv, targets: list[Target] = GOOD_TARGETS) -> bool:
    for host, tls, pod in targets:
        r = await (env.get_tls(host) if tls else env.get(host))
        if r.status != 200 or r.backend != pod:
            return False
    return True


async def good_routes(env: RouterEnv, web: Backend, secure: Backend) -> None:
    """The two good tenants, served before anything hostile arrives."""
    cert = issue("secure.good.example.com")
    for ns, svc, pod in (("good-a", "web", web), ("good-b", "secure", secure)):
        await env.apply(namespace(ns), service(ns, svc), endpoints(ns, svc, [pod]))
    await env.apply(route("good-a", "web", "web.good.example.com", "web"))
    tls = {"termination": "edge", "certificate": cert.cert_pem, "key": cert.key_pem}
    await env.apply(route("good-b", "secure", "secure.good.example.com", "secure", tls=tls))
    await env.eventually(lambda: good_served(env))


def unanswered(env: RouterEnv, routes: list[Route]) -> list[str]:
    """Routes without this router's answer: no Admitted condition, or False without a reason."""
    out: list[str] = []
    for r in routes:
        entry: Any = next((e for e in r.status.ingress if e.router_name == env.config.name), None)
        cond = entry.conditions[0] if entry is not None and entry.conditions else None
        if cond is None or cond.status not in ("True", "False"):
            out.append(f"{r.metadata.namespace}/{r.metadata.name}: no Admitted condition")
        elif cond.status == "False" and not (cond.reason and cond.message):
            out.append(f"{r.metadata.namespace}/{r.metadata.name}: refused without a reason")
    return out


async def every_route_answered(env: RouterEnv) -> int:
    """Wait until every stored route has this router's answer in its status; how many."""

    async def probe() -> int:
        found = await env.client.list(Route)
        return 0 if unanswered(env, found) else len(found)

    try:
        answered: int = await env.eventually(probe, timeout=20)
    except AssertionError:
        raise AssertionError(unanswered(env, await env.client.list(Route))[:10]) from None
    return answered
