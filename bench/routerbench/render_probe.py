"""One cold admission + model + render over a store's routes, in a fresh process.

Why a process of its own: "cold" must mean no memo entry and no warm
string cache from an earlier run, and nothing else in the process (the
benchmark's own objects, an event loop) competing or inflating garbage
collection. ``render_times`` runs this a few times and reports the best.
Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from shiftnet.api import Endpoints, Namespace, Route, Service
from shiftnet.client import Client
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import render as render_mod
from shiftnet.router.model import build_model
from shiftnet.store import open_store


async def _load(store_url: str) -> tuple[list, list, list, list]:
    store = open_store(store_url)
    try:
        client = Client(store)
        return (
            await client.list(Route),
            await client.list(Namespace),
            await client.list(Endpoints),
            await client.list(Service),
        )
    finally:
        await store.close()


def main() -> None:
    store_url, work_dir = sys.argv[1], sys.argv[2]
    routes, nss, eps, svcs = asyncio.run(_load(store_url))
    config = RouterConfig.from_env({"ROUTER_BIND_ADDRESS": "127.0.0.1"})
    paths = render_mod.RenderPaths(
        run_dir=f"{work_dir}/run", default_certificate=f"{work_dir}/default.pem"
    )
    t0 = time.perf_counter()
    result = admit(routes, nss, config)
    t1 = time.perf_counter()
    model = build_model(result, eps, svcs)
    t2 = time.perf_counter()
    files = render_mod.render(model, config, paths).files
    t3 = time.perf_counter()
    render_mod.render(model, config, paths)
    t4 = time.perf_counter()
    print(
        json.dumps(
            {
                "routes": len(routes),
                "admit_s": round(t1 - t0, 3),
                "model_s": round(t2 - t1, 3),
                "render_cold_s": round(t3 - t2, 3),
                "render_warm_s": round(t4 - t3, 3),
                "config_bytes": sum(len(v) for v in files.values()),
            }
        )
    )


if __name__ == "__main__":
    main()
