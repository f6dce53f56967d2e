"""shiftnet's configuration with every HTTP route's map entry pointing at one backend.

Why: the router's lookup target (requests/s at 10,000 routes over those at 10)
assumes that with shared pods "only the route lookup differs" between 10 and
10,000 routes. With one HAProxy backend per
route (OpenShift's layout, and shiftnet's with ``ROUTER_SHARE_BACKENDS=false``)
that is not so: the traffic is also spread over 10,000 backends, servers and
idle-connection pools. This configuration keeps everything the lookup touches
at N routes (the same maps with the same keys, the same backends in HAProxy's
name tree) but serves every request from the first route's backend, so
comparing it with the real router separates the cost of the lookup from the
cost of spreading requests over N backends. With shared backends (the
default) the shared workload's routes already share one backend, and the two
measure the same thing. A diagnostic, never the target's number.
"""

from __future__ import annotations

import re
from pathlib import Path

from shiftnet.api import Endpoints, Namespace, Route, Service
from shiftnet.client import Client
from shiftnet.router.admission import admit
from shiftnet.router.certs import default_certificate
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import render as render_mod
from shiftnet.router.model import build_model

_HTTP_MAPS = render_mod.HTTP_MAPS


async def write(
    client: Client, conf_dir: Path, http_port: int, https_port: int, maxconn: int, nbthread: int
) -> str:
    """Render the store's routes into ``conf_dir`` (maps re-pointed); the backend served."""
    config = RouterConfig.from_env(
        {
            "ROUTER_BIND_ADDRESS": "127.0.0.1",
            "ROUTER_SERVICE_HTTP_PORT": str(http_port),
            "ROUTER_SERVICE_HTTPS_PORT": str(https_port),
            "STATS_PORT": "0",
            "ROUTER_MAX_CONNECTIONS": str(maxconn),
            "ROUTER_THREADS": str(nbthread),
        }
    )
    model = build_model(
        admit(await client.list(Route), await client.list(Namespace), config),
        await client.list(Endpoints),
        await client.list(Service),
    )
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "run").mkdir(exist_ok=True)
    cert = default_certificate(None, conf_dir, "lookup-only.bench")
    paths = render_mod.RenderPaths(run_dir=str(conf_dir / "run"), default_certificate=str(cert))
    files = render_mod.render(model, config, paths).files
    first = re.search(rb"^backend (be_http:\S+) ", files[render_mod.CONFIG_FILE], re.M)
    if first is None:
        raise RuntimeError("lookup-only: no HTTP route backend rendered")
    target = first[1]
    for name in _HTTP_MAPS:
        files[name] = b"".join(
            line.rsplit(b" ", 1)[0] + b" " + target + b"\n"
            for line in files[name].splitlines()
            if line
        )
    for name, data in files.items():
        path = conf_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return target.decode()
