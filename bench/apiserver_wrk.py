"""Creates through the API server from ``wrk``: the server's own ceiling, its client nearly free.

Part of ``bench/apiserver.py``. The Python clients spend 0.3-0.5 ms of CPU
per create, on the same 2 CPUs as the server; ``wrk`` (C, one thread, N
keep-alive HTTPS connections) spends a few microseconds, so what it reaches
is what the server alone can do. Each request POSTs a Route with a name of
its own (a counter in wrk's Lua state); wrk runs for a fixed time and
reports the answered requests, the non-201 ones and its latency percentiles.
"""

from __future__ import annotations

import json
import resource
import subprocess
from dataclasses import dataclass
from pathlib import Path

SCRIPT = """\
local n = 0
local prefix = "{prefix}"
local path = "{path}"
local headers = {{
  ["Authorization"] = "Bearer {token}",
  ["Content-Type"] = "application/json",
}}
local body = '{{"apiVersion":"route.openshift.io/v1","kind":"Route",' ..
  '"metadata":{{"name":"%s%d","namespace":"{namespace}"}},' ..
  '"spec":{{"host":"%s%d.bench.example.com","to":{{"kind":"Service","name":"web"}}}}}}'
request = function()
  n = n + 1
  return wrk.format("POST", path, headers, string.format(body, prefix, n, prefix, n))
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write("WRK-RESULT " .. string.format(
    '{{"requests":%d,"seconds":%f,"non2xx":%d,"failed":%d,"p50_us":%d,"p99_us":%d}}\\n',
    summary.requests, summary.duration / 1e6, e.status,
    e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass(frozen=True)
class WrkRun:
    creates: int
    seconds: float
    p50_ms: float
    p99_ms: float
    client_cpu_s: float


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wrk_creates(
    url: str, token: str, namespace: str, prefix: str, seconds: int, connections: int, tmp: Path
) -> WrkRun:
    """``wrk`` POSTing Routes for ``seconds``; every answer must be 201 Created."""
    path = f"/apis/route.openshift.io/v1/namespaces/{namespace}/routes"
    script = tmp / f"{prefix}create.lua"
    script.write_text(SCRIPT.format(prefix=prefix, path=path, token=token, namespace=namespace))
    cpu0 = _children_cpu()
    done = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), url + path],
        capture_output=True, text=True, timeout=seconds + 60, check=True,
    )  # fmt: skip
    line = next(x for x in done.stdout.splitlines() if x.startswith("WRK-RESULT "))
    got = json.loads(line.removeprefix("WRK-RESULT "))
    if got["non2xx"] or got["failed"]:
        raise RuntimeError(f"wrk creates: {got['non2xx']} non-2xx, {got['failed']} failed")
    return WrkRun(
        creates=got["requests"],
        seconds=got["seconds"],
        p50_ms=got["p50_us"] / 1000,
        p99_ms=got["p99_us"] / 1000,
        client_cpu_s=_children_cpu() - cpu0,
    )
