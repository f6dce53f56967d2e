"""Backend weights and the balance switch as OpenShift's router renders them
(``calculateServiceWeights`` and the template's ``ActiveServiceUnits``)."""

from __future__ import annotations

import re

import pytest
from tests.support import routes as f

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.render import RenderPaths, render_haproxy
from shiftnet.router.model import build_model

CONFIG = RouterConfig(share_backends=False)  # ROUTER_LOAD_BALANCE_ALGORITHM leastconn
PATHS = RenderPaths(run_dir="/run/x", default_certificate="/etc/x.pem")

Backends = list[tuple[str, int | None, int]]  # (service, weight, pods); the first is spec.to

# (id, backends, annotations, {service: weight of each of its servers}, balance)
CASES: list[tuple[str, Backends, dict[str, str], dict[str, int], str]] = [
    ("one service, one pod", [("a", None, 1)], {}, {"a": 1}, "leastconn"),
    ("one service, three pods", [("a", 100, 3)], {}, {"a": 1}, "leastconn"),
    ("one service of weight 256", [("a", 256, 2)], {}, {"a": 1}, "leastconn"),
    ("weight 0 alone", [("a", 0, 2)], {}, {}, "leastconn"),
    ("alternate of weight 0: one active", [("a", 100, 2), ("b", 0, 1)], {}, {"a": 1}, "leastconn"),
    (
        "alternate without pods: weights as one active, balance as two",
        [("a", 100, 2), ("b", 50, 0)],
        {},
        {"a": 1},
        "roundrobin",
    ),
    (
        "OpenShift's example: 20 over 2, 10 over 4",
        [("a", 20, 2), ("b", 10, 4)],
        {},
        {"a": 256, "b": 64},
        "roundrobin",
    ),
    ("1 against 256", [("a", 1, 1), ("b", 256, 1)], {}, {"a": 1, "b": 256}, "roundrobin"),
    (
        "equal weights",
        [("a", 100, 1), ("b", 100, 1), ("c", 100, 1)],
        {},
        {"a": 256, "b": 256, "c": 256},
        "roundrobin",
    ),
    (
        "a scaled weight never below 1",
        [("a", 256, 1), ("b", 1, 4)],
        {},
        {"a": 256, "b": 1},
        "roundrobin",
    ),
    (
        "a service named twice: the last weight",
        [("a", 100, 2), ("a", 10, 2)],
        {},
        {"a": 1},
        "leastconn",
    ),
    (
        "a service named twice, then another",
        [("a", 100, 1), ("b", 100, 1), ("a", 50, 1)],
        {},
        {"a": 128, "b": 256},
        "roundrobin",
    ),
    (
        "the balance annotation wins",
        [("a", 20, 2), ("b", 10, 4)],
        {"haproxy.router.openshift.io/balance": "source"},
        {"a": 256, "b": 64},
        "source",
    ),
    (
        "an invalid balance annotation: the switch",
        [("a", 20, 2), ("b", 10, 4)],
        {"haproxy.router.openshift.io/balance": "fastest"},
        {"a": 256, "b": 64},
        "roundrobin",
    ),
]


def _route(backends: Backends, annotations: dict[str, str], **kw: object) -> object:
    (to, weight, _), *alternates = backends
    return f.route(
        "r",
        service=to,
        weight=weight,
        alternates=[(n, 100 if w is None else w) for n, w, _ in alternates],
        annotations=annotations,
        **kw,  # type: ignore[arg-type]
    )


def _endpoints(backends: Backends) -> list[object]:
    pods: dict[str, int] = {}
    for name, _, count in backends:
        pods[name] = count
    out: list[object] = []
    for i, (name, count) in enumerate(pods.items()):
        if count:
            out.append(f.endpoints(name, [f"10.{i}.0.{j + 1}" for j in range(count)]))
    return out


@pytest.mark.parametrize(
    ("backends", "annotations", "weights", "balance"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_weights_and_balance(
    backends: Backends, annotations: dict[str, str], weights: dict[str, int], balance: str
) -> None:
    for tls in (None, {"termination": "passthrough"}):
        route = _route(backends, annotations, tls=tls)
        model = build_model(admit([route], [], CONFIG), _endpoints(backends))  # type: ignore[list-item]
        (policy,) = model.policies
        got: dict[str, set[int]] = {}
        for server in policy.servers:
            got.setdefault(server.pool.removeprefix("ns_"), set()).add(server.weight)
        assert got == {name: {w} for name, w in weights.items()}
        cfg = render_haproxy(model, CONFIG, PATHS)["haproxy.cfg"].decode()
        default = "leastconn" if tls is None else "source"
        want = default if balance == "leastconn" else balance
        name = "be_http:ns:r" if tls is None else "be_tcp:ns:r"
        block = re.search(rf"^backend {name}\b.*?(?=\n\n|\Z)", cfg, re.S | re.M)
        assert block is not None
        assert re.findall(r"^  balance (\S+)", block.group(0), re.M) == [want]
