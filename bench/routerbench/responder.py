"""The pods: one nginx (Debian nginx-light) answering on many loopback addresses.

Why nginx: a Python responder would be the bottleneck long before HAProxy is;
nginx answers a fixed body in C. Why many addresses: a "pod" in the benchmark
is an endpoint address, and routes "each on its own pods" need thousands of
distinct ones, so nginx listens on ``127.77.x.y:PORT`` for every pod and on
spare ``127.78.x.y:PORT`` addresses for pods that become ready later. The body
is the address that answered (``$server_addr``), so the benchmark can check
that a request reached the pod of the right route.

Why several nginx processes: every listening address costs nginx a descriptor,
and this sandbox caps every process at 20,000. One nginx on 10,400 addresses
had room for about 8,600 connections, fewer than the idle keep-alive
connections a 10,000-route router keeps to its pods (one per busy backend), so
nginx closed them under HAProxy's feet and wrk saw read errors. Real pods are
separate processes with their own limits, so the addresses are spread over
processes of at most :data:`ADDRS_PER_PROCESS` each.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from routerbench import procs

NGINX = "/usr/sbin/nginx"
ADDRS_PER_PROCESS = 2500


def config(prefix: Path, addrs: list[str], port: int, workers: int = 1) -> str:
    listens = "".join(f"    listen {a}:{port};\n" for a in addrs)
    return f"""worker_processes {workers};
worker_rlimit_nofile 19500;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
daemon off;
events {{ worker_connections 19000; multi_accept on; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/tmp;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server {{
{listens}    location / {{ default_type text/plain; return 200 "$server_addr\\n"; }}
  }}
}}
"""


class Responder:
    """The pods: ``addrs`` spread over one nginx per :data:`ADDRS_PER_PROCESS` addresses."""

    def __init__(self, prefix: Path, addrs: list[str], port: int, workers: int = 1) -> None:
        step = ADDRS_PER_PROCESS
        self.shards = [
            _Nginx(prefix / f"n{i // step}", addrs[i : i + step], port, workers)
            for i in range(0, len(addrs), step)
        ]

    def start(self) -> Responder:
        for shard in self.shards:
            shard.start()
        return self

    def stop(self) -> None:
        for shard in self.shards:
            shard.stop()


class _Nginx:
    """One nginx process listening on ``addrs``."""

    def __init__(self, prefix: Path, addrs: list[str], port: int, workers: int = 1) -> None:
        self.prefix, self.addrs, self.port, self.workers = prefix, addrs, port, workers
        self.proc = None

    def start(self) -> _Nginx:
        self.prefix.mkdir(parents=True, exist_ok=True)
        (self.prefix / "tmp").mkdir(exist_ok=True)
        conf = self.prefix / "nginx.conf"
        conf.write_text(config(self.prefix, self.addrs, self.port, self.workers))
        self.proc = procs.spawn(
            [NGINX, "-p", str(self.prefix), "-c", str(conf)], self.prefix / "stdout.log"
        )
        deadline = time.monotonic() + 30
        last = self.addrs[-1]
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((last, self.port), timeout=1):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        "nginx exited: " + (self.prefix / "error.log").read_text()[-500:]
                    ) from None
                time.sleep(0.1)
        raise RuntimeError("nginx did not start listening in 30 s")

    def stop(self) -> None:
        if self.proc is not None:
            procs.stop(self.proc.pid)
            self.proc = None
