"""The router's incremental path keeps no memory per Route that is gone.

Routes with new names are created and deleted (ten alive at a time) through
admission, the model and the HAProxy assembly, as the router does under churn:
after a warm-up past every per-name cap, the memory they hold stays flat.
"""

from __future__ import annotations

import gc
import tracemalloc

from tests.support import routes as f

from shiftnet.api import Endpoints, Namespace, Route, Service
from shiftnet.router.admission import route_key
from shiftnet.router.admission_index import AdmissionIndex
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.assembly import Assembly
from shiftnet.router.haproxy.render import RenderPaths
from shiftnet.router.model_index import ModelIndex

PATHS = RenderPaths(run_dir="/run/sn", default_certificate="/run/sn/default.pem")
ALIVE = 10
WARM_ROUNDS = 1500  # past every per-name cap of the router's code
MEASURED_ROUNDS = 1000
ALLOWED_GROWTH = 64 * 1024  # bytes; a per-name memo without a small cap grows ~270 B a round


class Churn:
    def __init__(self) -> None:
        config = RouterConfig()
        self.service: dict[tuple[str, str], Service] = {
            ("soak", "hello"): f.service("hello", [("http", 80, 8080)], namespace="soak")
        }
        self.endpoints: dict[tuple[str, str], Endpoints] = {
            ("soak", "hello"): f.endpoints("hello", ["127.10.0.2"], namespace="soak")
        }
        self.namespaces = {"soak": Namespace.model_validate({"metadata": {"name": "soak"}})}
        self.index = AdmissionIndex(config)
        self.models = ModelIndex(
            lambda ns, n: self.endpoints.get((ns, n)), lambda ns, n: self.service.get((ns, n))
        )
        self.assembly = Assembly(config, PATHS)
        self.index.reset([], list(self.namespaces.values()))
        self.alive: list[Route] = []

    def step(self, i: int) -> None:
        name = f"churn-{i}"
        new = f.route(name, f"{name}.soak.test", namespace="soak", service="hello")
        changed: dict[tuple[str, str], Route | None] = {route_key(new): new}
        self.alive.append(new)
        if len(self.alive) > ALIVE:
            changed[route_key(self.alive.pop(0))] = None
        decided = self.index.update(changed, self.namespaces)
        admitted = {
            k: (
                (self.index.admitted[k], self.index.host_of(k))
                if k in self.index.admitted
                else None
            )
            for k in decided
        }
        self.assembly.update(self.models.update(admitted, set()))
        assert self.assembly.files()  # rendered, as the router does before each apply

    def run(self, rounds: int, start: int) -> None:
        for i in range(start, start + rounds):
            self.step(i)


def test_router_memory_is_flat_under_route_churn() -> None:
    churn = Churn()
    tracemalloc.start()
    try:
        churn.run(WARM_ROUNDS, 0)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        churn.run(MEASURED_ROUNDS, WARM_ROUNDS)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(churn.index.admitted) == ALIVE
    assert grown < ALLOWED_GROWTH, f"{grown} bytes kept after {MEASURED_ROUNDS} rounds of churn"
