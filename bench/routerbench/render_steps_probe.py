"""Admission, model and render over a store's routes, up to a given step, in a fresh process.

Why a separate probe: the A/B benchmark (``bench/router_render_ab.py``) runs it
against two trees (whichever ``shiftnet`` is first on ``PYTHONPATH``), once for
CPU times and, under callgrind, once per last step, so that the difference
between "up to step N" and "up to step N-1" is step N's instructions. It only
uses entry points both trees have (``admit``, ``build_model``,
``render(...).files``). Prints one JSON object: the CPU seconds of each step
run, and the file ``shiftnet`` was imported from.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import shiftnet.router.admission as admission_module
from routerbench.render_probe import _load
from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import render as render_mod
from shiftnet.router.model import build_model

STEPS = ("load", "admit", "model", "render_cold", "render_warm")


def main() -> None:
    store_url, work_dir, last = sys.argv[1], sys.argv[2], sys.argv[3]
    upto = STEPS.index(last)
    cpu: dict[str, float] = {}
    t = time.process_time()

    def done(step: str) -> bool:
        nonlocal t
        now = time.process_time()
        cpu[step] = round(now - t, 4)
        t = now
        return STEPS.index(step) >= upto

    routes, nss, eps, svcs = asyncio.run(_load(store_url))
    if not done("load"):
        config = RouterConfig.from_env({"ROUTER_BIND_ADDRESS": "127.0.0.1"})
        paths = render_mod.RenderPaths(
            run_dir=f"{work_dir}/run", default_certificate=f"{work_dir}/default.pem"
        )
        result = admit(routes, nss, config)
        if not done("admit"):
            model = build_model(result, eps, svcs)
            if not done("model"):
                render_mod.render(model, config, paths)
                if not done("render_cold"):
                    render_mod.render(model, config, paths)
                    done("render_warm")
    print(json.dumps({"routes": len(routes), "cpu_s": cpu, "shiftnet": admission_module.__file__}))


if __name__ == "__main__":
    main()
