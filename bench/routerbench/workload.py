"""The routes, pods and requests the router benchmark uses (pure: same input, same output).

Why this shape: most hosts carry one route without a path; every fourth host is
"path-routed" with four routes (``""``, ``/app``, ``/api``, ``/api/v2``) so
requests exercise the longest-path rule, ``/foo`` vs ``/foobar`` and the
fall-back to the host's root route. Requests are spread over every host and,
for path-routed hosts, over several paths. Each request knows which route
must answer it, so the benchmark can check that a configuration routes
correctly before it measures how fast.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMESPACE = "bench"
DOMAIN = "bench.example.com"
PATH_SET = ("", "/app", "/api", "/api/v2")
# (request path, index into PATH_SET of the route that must answer it)
PATH_REQUESTS = (
    ("/", 0),
    ("/other/page", 0),
    ("/apple", 0),
    ("/app", 1),
    ("/app/x", 1),
    ("/api/z", 2),
    ("/api/v2", 3),
    ("/api/v2/items/7", 3),
)
PLAIN_REQUESTS = ("/", "/index.html", "/a/b/c")

SHARED = "shared"  # every service has the same pods: only the route lookup differs
OWN = "own"  # every service has its own pod address


@dataclass(frozen=True)
class BenchRoute:
    index: int
    name: str  # route and service name
    host: str
    path: str


def routes(n: int) -> list[BenchRoute]:
    """The first ``n`` routes; ``routes(n)`` is a prefix of ``routes(m)`` for n < m."""
    out: list[BenchRoute] = []
    h = 0
    while len(out) < n:
        host = f"h{h:05d}.{DOMAIN}"
        paths = PATH_SET if h % 4 == 3 else ("",)
        for p in paths:
            if len(out) == n:
                break
            i = len(out)
            out.append(BenchRoute(i, f"r{i:05d}", host, p))
        h += 1
    return out


def pod_ip(i: int) -> str:
    """The ``i``-th pod address (127.77.0.1 ...): away from shiftnet's 127.10/127.30 nets."""
    return f"127.77.{i // 250}.{i % 250 + 1}"


def spare_ip(i: int) -> str:
    """Addresses served by the responder but used by no route yet (pods that become ready)."""
    return f"127.78.{i // 250}.{i % 250 + 1}"


SHARED_PODS = 1  # pods in the shared set (more would add health checks that are no lookup)


def pods_of(route: BenchRoute, workload: str) -> list[str]:
    if workload == SHARED:
        return [pod_ip(i) for i in range(SHARED_PODS)]
    return [pod_ip(route.index)]


def pod_count(n: int, workload: str) -> int:
    return SHARED_PODS if workload == SHARED else n


def _answer(rs: list[BenchRoute], path: str) -> BenchRoute | None:
    best: BenchRoute | None = None
    for r in rs:
        p = r.path.rstrip("/")
        if (not p or path == p or path.startswith(p + "/")) and (
            best is None or len(p) > len(best.path.rstrip("/"))
        ):
            best = r
    return best


def requests(rs: list[BenchRoute]) -> list[tuple[str, str, BenchRoute]]:
    """Every (host, path, expected route) the load generator picks from at random."""
    by_host: dict[str, list[BenchRoute]] = {}
    for r in rs:
        by_host.setdefault(r.host, []).append(r)
    out: list[tuple[str, str, BenchRoute]] = []
    for host in sorted(by_host):
        hrs = by_host[host]
        paths = [p for p, _ in PATH_REQUESTS] if len(hrs) > 1 else list(PLAIN_REQUESTS)
        for p in paths:
            r = _answer(hrs, p)
            if r is not None:
                out.append((host, p, r))
    return out


def sample(reqs: list[tuple[str, str, BenchRoute]], k: int, seed: int = 5) -> list:
    rng = random.Random(seed)
    return [reqs[rng.randrange(len(reqs))] for _ in range(k)]
