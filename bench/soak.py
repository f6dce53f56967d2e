#!/usr/bin/env python3
"""A bounded soak: `shiftnet up` under churn and traffic, watched for leaks.

Runs a real `shiftnet up` (own state directory, free high ports, its own
loopback ranges) with three pods behind a Service and a Route, then for
``--minutes``:

* traffic, each a bounded loop of short connections (one request a
  connection): HTTP and HTTPS (an edge Route: a TLS handshake each) through
  the router, HTTP to the ClusterIP (user-space proxy), DNS over UDP and over
  TCP to the cluster DNS, and the API server over HTTPS with the admin token
  (a get, then a watch opened and dropped after its first event);
* churn through the store: Routes created and deleted, Services created and
  deleted (proxy listeners, DNS records, Endpoints), and a pod of its own
  deleted and created again;
* every ``--sample`` seconds, the open descriptors and RSS of the `shiftnet
  up` process and of its HAProxy processes, and the size of the store's
  files (``state.db`` and its write-ahead log).

The traffic only ever targets the stable Service and Routes, which the churn
never touches: any failed request is a defect. At the first failed request
through the router, what `shiftnet diagnose route` finds is kept in the report.
The table shows descriptors and memory after warm-up, at the end and at their
peak; JSON goes to ``bench/results/soak.json``.

    .venv/bin/python bench/soak.py                 # 30 minutes
    .venv/bin/python bench/soak.py --minutes 2     # a smoke run
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.message
import dns.query
import dns.rdatatype
import yaml

REPO = Path(__file__).resolve().parents[1]
SHIFTNET = Path(sys.executable).parent / "shiftnet"
HOST = "soak.example.test"
TLS_HOST = "soak-edge.example.test"
SERVICE_PORT = 18080
PODS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pod_yaml(name: str, app: str) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: soak
  labels: {{app: {app}}}
  annotations: {{shiftnet.io/workdir: "{REPO / "examples" / "demo"}"}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
    - name: web
      command: ["python3", "podserver.py"]
      ports: [{{name: web, containerPort: 8080}}]
      readinessProbe:
        httpGet: {{path: /healthz, port: web}}
        periodSeconds: 1
        failureThreshold: 2
"""


def service_yaml(name: str, app: str) -> str:
    return f"""apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: soak}}
spec:
  selector: {{app: {app}}}
  ports: [{{name: http, port: {SERVICE_PORT}, targetPort: web}}]
"""


def route_yaml(name: str, host: str, service: str, tls: str = "") -> str:
    return f"""apiVersion: route.openshift.io/v1
kind: Route
metadata: {{name: {name}, namespace: soak}}
spec:
  host: {host}
  to: {{kind: Service, name: {service}}}
{tls}"""


EDGE = "  tls: {termination: edge}\n"  # the router's default certificate


def write_manifests(folder: Path) -> None:
    docs = ["apiVersion: v1\nkind: Namespace\nmetadata: {name: soak}\n"]
    docs += [pod_yaml(f"hello-{i}", "hello") for i in range(1, PODS + 1)]
    docs += [service_yaml("hello", "hello"), route_yaml("hello", HOST, "hello")]
    docs += [route_yaml("hello-edge", TLS_HOST, "hello", EDGE)]
    (folder / "soak.yaml").write_text("---\n".join(docs))


# ------------------------------------------------------------------ processes


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def haproxy_pids(state: Path) -> list[int]:
    """HAProxy processes whose command line names this state directory."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"haproxy") and str(state).encode() in b" ".join(argv):
            out.append(int(proc.name))
    return sorted(out)


@dataclass
class Sample:
    t: float
    up_fds: int
    up_rss_kib: int
    haproxy_fds: int
    haproxy_rss_kib: int
    haproxy_processes: int
    store_kib: int
    wal_kib: int


def file_kib(path: Path) -> int:
    try:
        return path.stat().st_size // 1024
    except OSError:
        return 0


def take_sample(t0: float, up_pid: int, state: Path) -> Sample:
    fds = rss = n = 0
    for pid in haproxy_pids(state):
        with contextlib.suppress(OSError):
            fds += fd_count(pid)
            rss += rss_kib(pid)
            n += 1
    db = state / "state.db"
    return Sample(
        time.monotonic() - t0, fd_count(up_pid), rss_kib(up_pid), fds, rss, n,
        file_kib(db), file_kib(db.with_name("state.db-wal")),
    )  # fmt: skip


# ------------------------------------------------------------------ traffic


@dataclass
class Loop:
    """One traffic loop's counts; the first few failures kept for the report."""

    name: str
    ok: int = 0
    failed: int = 0
    examples: list[str] = field(default_factory=list)
    # Run once, at the first failure, while the cause may still be there.
    on_first_failure: Any = None
    snapshot: str = ""

    def fail(self, what: str) -> None:
        self.failed += 1
        if len(self.examples) < 5:
            self.examples.append(f"{time.strftime('%H:%M:%S')} {what}")
        if self.failed == 1 and self.on_first_failure is not None:
            self.snapshot = self.on_first_failure()


def http_once(addr: str, port: int, host: str) -> str | None:
    conn = http.client.HTTPConnection(addr, port, timeout=5)
    try:
        conn.request("GET", "/", headers={"Host": host})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200 or not body.startswith(b"pod="):
            return f"status {resp.status} body {body[:120]!r}"
        return None
    except OSError as exc:
        return f"{exc.__class__.__name__}: {exc}"
    finally:
        conn.close()


def https_once(port: int, host: str) -> str | None:
    """One TLS handshake (SNI ``host``) and one request through the router."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    request = f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            ctx.wrap_socket(raw, server_hostname=host) as tls,
        ):
            tls.sendall(request)
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
    except OSError as exc:
        return f"{exc.__class__.__name__}: {exc}"
    head, _, body = data.partition(b"\r\n\r\n")
    if head.split(b" ", 2)[1:2] != [b"200"] or not body.startswith(b"pod="):
        return f"answer {data[:120]!r}"
    return None


@dataclass
class Api:
    """The API server's address and the admin credential, read from the kubeconfig."""

    port: int
    token: str
    ctx: ssl.SSLContext

    @classmethod
    def from_kubeconfig(cls, path: Path, port: int) -> Api:
        config = yaml.safe_load(path.read_text())
        ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
        ctx = ssl.create_default_context(cadata=ca.decode())
        ctx.check_hostname = False  # the certificate names the server; we dial 127.0.0.1
        return cls(port, config["users"][0]["user"]["token"], ctx)

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=5, context=self.ctx)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            resp = conn.getresponse()
            # a watch: its first event line is enough; the connection is then dropped
            body = resp.readline() if "watch=" in path else resp.read()
            return resp.status, body
        finally:
            conn.close()


def api_once(api: Api, step: list[int]) -> str | None:
    """A get of the stable Service; every other call a watch dropped after its first event."""
    step[0] += 1
    watch = step[0] % 2 == 0
    path = "/api/v1/namespaces/soak/services" + (
        "?watch=1&fieldSelector=metadata.name%3Dhello" if watch else "/hello"
    )
    try:
        status, body = api.get(path)
    except OSError as exc:
        return f"{exc.__class__.__name__}: {exc}"
    if status != 200 or b'"hello"' not in body:
        return f"{'watch' if watch else 'get'}: status {status} body {body[:120]!r}"
    return None


def dns_once(port: int, name: str, want: str, tcp: bool) -> str | None:
    query = dns.message.make_query(name, dns.rdatatype.A)
    try:
        if tcp:
            answer = dns.query.tcp(query, "127.0.0.1", port=port, timeout=5)
        else:
            answer = dns.query.udp(query, "127.0.0.1", port=port, timeout=5)
    except (OSError, dns.exception.DNSException) as exc:
        return f"{exc.__class__.__name__}: {exc}"
    got = [r.address for rrset in answer.answer for r in rrset if hasattr(r, "address")]
    return None if got == [want] else f"answer {got}"


def run_loop(loop: Loop, once: Any, rate: float, stop: threading.Event) -> None:
    period = 1.0 / rate
    next_at = time.monotonic()
    while not stop.is_set():
        problem = once()
        if problem is None:
            loop.ok += 1
        else:
            loop.fail(problem)
        next_at += period
        delay = next_at - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            next_at = time.monotonic()


def diagnose_route(env: dict[str, str], route: str = "hello") -> str:
    """What `shiftnet diagnose` finds for a stable route, right after a failure."""
    try:
        proc = subprocess.run(
            [str(SHIFTNET), "diagnose", "route", route, "-n", "soak"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "shiftnet diagnose did not answer within 60 s"
    return (proc.stdout + proc.stderr).strip()


# ------------------------------------------------------------------ churn


@dataclass
class Churn:
    routes_created: int = 0
    routes_deleted: int = 0
    services_created: int = 0
    services_deleted: int = 0
    pod_restarts: int = 0
    errors: list[str] = field(default_factory=list)


def shiftnet(env: dict[str, str], *args: str, stdin: str | None = None) -> None:
    proc = subprocess.run(
        [str(SHIFTNET), *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )
    if proc.returncode != 0:
        raise RuntimeError(f"shiftnet {' '.join(args)}: {proc.stderr.strip()[:300]}")


def churn_loop(env: dict[str, str], interval: float, churn: Churn, stop: threading.Event) -> None:
    """Routes and Services come and go (at most 10 alive); a pod restarts every 30 steps."""
    rng = random.Random(7)
    routes: list[str] = []
    services: list[str] = []
    step = 0
    while not stop.wait(interval):
        step += 1
        try:
            if len(routes) < 10 and (not routes or rng.random() < 0.6):
                name = f"churn-{step}"
                shiftnet(
                    env, "apply", "-f", "-", stdin=route_yaml(name, f"{name}.soak.test", "hello")
                )
                routes.append(name)
                churn.routes_created += 1
            else:
                shiftnet(env, "delete", "route", routes.pop(0), "-n", "soak")
                churn.routes_deleted += 1
            if len(services) < 10 and (not services or rng.random() < 0.6):
                name = f"churn-svc-{step}"
                shiftnet(env, "apply", "-f", "-", stdin=service_yaml(name, "hello"))
                services.append(name)
                churn.services_created += 1
            else:
                shiftnet(env, "delete", "service", services.pop(0), "-n", "soak")
                churn.services_deleted += 1
            if step % 30 == 0:
                with contextlib.suppress(RuntimeError):
                    shiftnet(env, "delete", "pod", "restarted", "-n", "soak")
                shiftnet(env, "apply", "-f", "-", stdin=pod_yaml("restarted", "restarted"))
                churn.pod_restarts += 1
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            if len(churn.errors) < 5:
                churn.errors.append(str(exc))


# ------------------------------------------------------------------ the run


def cluster_ip(env: dict[str, str]) -> str:
    proc = subprocess.run(
        [str(SHIFTNET), "get", "service", "hello", "-n", "soak", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(proc.stdout)["spec"]["clusterIP"])


def wait_serving(check: Any, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    problem = check()
    while problem is not None:
        if time.monotonic() > deadline:
            raise SystemExit(f"soak: {what} never answered: {problem}")
        time.sleep(0.5)
        problem = check()


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


def table(samples: list[Sample], warm: float) -> list[tuple[str, int, int, int, int]]:
    after = [s for s in samples if s.t >= warm] or samples
    rows = []
    for label, attr in (
        ("shiftnet up: open descriptors", "up_fds"),
        ("shiftnet up: RSS KiB", "up_rss_kib"),
        ("HAProxy: open descriptors", "haproxy_fds"),
        ("HAProxy: RSS KiB", "haproxy_rss_kib"),
        ("store: state.db KiB", "store_kib"),
        ("store: write-ahead log KiB", "wal_kib"),
    ):
        values = [getattr(s, attr) for s in after]
        rows.append((label, values[0], values[-1], max(values), int(statistics.median(values))))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--rate", type=float, default=20.0, help="requests/s of each traffic loop")
    p.add_argument("--churn-interval", type=float, default=2.0, metavar="SECONDS")
    p.add_argument("--sample", type=float, default=10.0, metavar="SECONDS")
    p.add_argument("--warm-up", type=float, default=60.0, metavar="SECONDS")
    p.add_argument("--json", default=str(REPO / "bench" / "results" / "soak.json"))
    args = p.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="shiftnet-soak-"))
    state = tmp / "state"
    write_manifests(tmp)
    http_port, https_port, dns_port, api_port = free_port(), free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIFTNET_")}
    env.update(
        SHIFTNET_HOME=str(state),
        SHIFTNET_CLUSTERS_DIR=str(tmp / "clusters"),  # claims of this run only
        ROUTER_SERVICE_HTTP_PORT=str(http_port),
        ROUTER_SERVICE_HTTPS_PORT=str(https_port),
        STATS_PORT=str(free_port()),
        SHIFTNET_DNS_LISTEN=f"127.0.0.1:{dns_port}",
        SHIFTNET_API_LISTEN=f"127.0.0.1:{api_port}",
    )
    net = random.randint(140, 199)
    up_log = (tmp / "up.log").open("w")
    up = subprocess.Popen(
        [str(SHIFTNET), "up", "-f", str(tmp / "soak.yaml"), "--node-name", "soak",
         "--cluster-network", f"127.{net}.0.0/16", "--service-network", f"127.{net + 1}.0.0/16"],
        env=env, stdout=up_log, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp,
    )  # fmt: skip
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        print(f"soak: shiftnet up pid {up.pid}, state {state}, log {tmp / 'up.log'}", flush=True)
        wait_serving(lambda: http_once("127.0.0.1", http_port, HOST), "the router")
        vip = cluster_ip(env)
        wait_serving(lambda: http_once(vip, SERVICE_PORT, HOST), "the ClusterIP")
        name = "hello.soak.svc.cluster.local"
        wait_serving(lambda: dns_once(dns_port, name, vip, tcp=False), "the DNS")
        wait_serving(lambda: https_once(https_port, TLS_HOST), "the router's edge route")
        api = Api.from_kubeconfig(state / "kubeconfig", api_port)
        api_step = [0]
        wait_serving(lambda: api_once(api, api_step), "the API server")
        loops = {
            "router (HTTP)": lambda: http_once("127.0.0.1", http_port, HOST),
            "router (HTTPS, edge)": lambda: https_once(https_port, TLS_HOST),
            "API server (HTTPS)": lambda: api_once(api, api_step),
            "ClusterIP (user-space proxy)": lambda: http_once(vip, SERVICE_PORT, HOST),
            "DNS over UDP": lambda: dns_once(dns_port, name, vip, tcp=False),
            "DNS over TCP": lambda: dns_once(dns_port, name, vip, tcp=True),
        }
        counts = {k: Loop(k) for k in loops}
        counts["router (HTTP)"].on_first_failure = lambda: diagnose_route(env)
        counts["router (HTTPS, edge)"].on_first_failure = lambda: diagnose_route(env, "hello-edge")
        churn = Churn()
        for key, once in loops.items():
            threads.append(
                threading.Thread(target=run_loop, args=(counts[key], once, args.rate, stop))
            )
        threads.append(
            threading.Thread(target=churn_loop, args=(env, args.churn_interval, churn, stop))
        )
        for t in threads:
            t.start()
        t0 = time.monotonic()
        samples = [take_sample(t0, up.pid, state)]
        end = t0 + args.minutes * 60
        while time.monotonic() < end:
            time.sleep(min(args.sample, max(0.0, end - time.monotonic())))
            if up.poll() is not None:
                raise SystemExit(
                    f"soak: shiftnet up exited ({up.returncode}); see {tmp / 'up.log'}"
                )
            samples.append(take_sample(t0, up.pid, state))
            last = samples[-1]
            done = sum(c.ok + c.failed for c in counts.values())
            failed = sum(c.failed for c in counts.values())
            print(
                f"soak: {last.t / 60:5.1f}/{args.minutes:g} min  requests {done} failed {failed}  "
                f"up fds {last.up_fds} rss {last.up_rss_kib // 1024} MiB  "
                f"haproxy fds {last.haproxy_fds}  wal {last.wal_kib} KiB  "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        stop.set()
        for t in threads:
            t.join(timeout=90)
    finally:
        stop.set()
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGINT)
            try:
                up.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait()
        up_log.close()

    rows = table(samples, args.warm_up)
    print(f"\nsoak: {args.minutes:g} min, machine load at the end {load()}\n")
    print(f"| {'measure':<32} | {'after warm-up':>13} | {'end':>9} | {'peak':>9} | {'median':>9} |")
    print(f"|{'-' * 34}|{'-' * 15}|{'-' * 11}|{'-' * 11}|{'-' * 11}|")
    for label, first, last, peak, med in rows:
        print(f"| {label:<32} | {first:>13} | {last:>9} | {peak:>9} | {med:>9} |")
    print(f"\n| {'traffic':<30} | {'requests':>9} | {'failed':>7} |")
    print(f"|{'-' * 32}|{'-' * 11}|{'-' * 9}|")
    for c in counts.values():
        print(f"| {c.name:<30} | {c.ok + c.failed:>9} | {c.failed:>7} |")
        for example in c.examples:
            print(f"    {example}")
        if c.snapshot:
            print(f"    at the first failure, shiftnet diagnose said:\n{c.snapshot}")
    print(
        f"\nchurn: {churn.routes_created} routes created, {churn.routes_deleted} deleted; "
        f"{churn.services_created} services created, {churn.services_deleted} deleted; "
        f"{churn.pod_restarts} pod restarts; {len(churn.errors)} churn errors"
    )
    for err in churn.errors:
        print(f"    {err}")
    keys = ("measure", "after_warm_up", "end", "peak", "median")
    traffic = {
        c.name: {
            "requests": c.ok + c.failed,
            "failed": c.failed,
            "examples": c.examples,
            "snapshot": c.snapshot,
        }
        for c in counts.values()
    }
    result = {
        "minutes": args.minutes,
        "rate": args.rate,
        "load_at_end": os.getloadavg(),
        "samples": [s.__dict__ for s in samples],
        "table": [dict(zip(keys, r, strict=True)) for r in rows],
        "traffic": traffic,
        "churn": churn.__dict__,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    failed = sum(c.failed for c in counts.values())
    if failed:
        print(f"soak: failures: the cluster's log and state are kept in {tmp}")
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
