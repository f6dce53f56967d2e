"""wrk runs with random Host headers and paths, results read back as JSON from Lua.

Why Lua: every request must pick a random (host, path) of the route set, so
all hosts and all paths of path-routed hosts are hit; the requests are
pre-formatted once per thread so the generator costs the same for every
configuration. ``done()`` writes the summary as JSON (no text scraping).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from routerbench import procs

WRK = "/usr/bin/wrk"

LUA = r"""
local targets = {}
local path = os.getenv("RB_TARGETS")
for line in io.lines(path) do
  local host, p = line:match("^(%S+) (%S+)$")
  if host then targets[#targets + 1] = {host, p} end
end
local reqs = {}

function init(args)
  local seed = tonumber(tostring({}):match("0x(%x+)") or "1", 16) or 1
  math.randomseed(seed % 2147483647)
  for i, t in ipairs(targets) do
    reqs[i] = wrk.format("GET", t[2], {["Host"] = t[1]})
  end
end

function request()
  return reqs[math.random(#reqs)]
end

function done(summary, latency, requests)
  local e = summary.errors
  local f = io.open(os.getenv("RB_OUT"), "w")
  f:write(string.format(
    '{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,' ..
    '"timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
  f:close()
end
"""


@dataclass
class WrkResult:
    requests: int
    seconds: float
    rps: float
    errors: int  # connect + read + write + timeout + non-2xx/3xx answers
    non_2xx: int
    socket_errors: int
    p50_ms: float
    p99_ms: float

    def as_dict(self) -> dict:
        return asdict(self)


def write_targets(path: Path, reqs: list[tuple[str, str, object]]) -> Path:
    path.write_text("".join(f"{h} {p}\n" for h, p, _ in reqs))
    return path


def run(
    url: str,
    targets: Path,
    work: Path,
    seconds: float,
    connections: int = 64,
    threads: int = 2,
    tag: str = "wrk",
) -> WrkResult:
    script = work / "random_targets.lua"
    if not script.exists():
        script.write_text(LUA)
    out = work / f"{tag}.json"
    out.unlink(missing_ok=True)
    env = dict(os.environ, RB_TARGETS=str(targets), RB_OUT=str(out))
    cmd = [
        WRK,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "5s",
        "-s",
        str(script),
        url,
    ]
    proc = procs.spawn(cmd, work / f"{tag}.log", env=env)
    try:
        proc.wait(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        procs.stop(proc.pid)
        raise RuntimeError(f"wrk did not finish: {cmd}") from None
    procs.stop(proc.pid)
    if not out.exists():
        raise RuntimeError(f"wrk wrote no result; see {work / (tag + '.log')}")
    d = json.loads(out.read_text())
    secs = d["duration_us"] / 1e6
    sock = d["connect"] + d["read"] + d["write"] + d["timeout"]
    return WrkResult(
        requests=d["requests"],
        seconds=round(secs, 2),
        rps=round(d["requests"] / secs, 1) if secs else 0.0,
        errors=sock + d["status"],
        non_2xx=d["status"],
        socket_errors=sock,
        p50_ms=round(d["p50_us"] / 1000, 2),
        p99_ms=round(d["p99_us"] / 1000, 2),
    )
