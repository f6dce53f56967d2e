#!/usr/bin/env python3
"""The Kubernetes API server next to the store it serves, side by side in one run.

A real ``shiftnet apiserver`` process over a fresh SQLite store (HTTPS, the
kubeconfig and admin bearer token it writes, a free loopback port) is
measured against the same kind of store used in-process through
``shiftnet.client.Client``:

* **creates**: K Routes per round on each of the sides, the same number in
  flight on each: through the API with the official client; through the API
  with ``Client.create`` over the ``kube://`` store (what shiftnet's remote
  components use); through the API from ``wrk`` for ``--wrk-seconds`` (a C
  client that costs next to nothing: the server's own ceiling,
  ``apiserver_wrk.py``); and ``Client.create`` straight into a second fresh
  SQLite store in this process. Rounds rotate which side goes first; creates/s,
  p50/p99 latency and the CPU per create of the server and of the client
  (``/proc``), median over rounds, and each API side's rate over the store's
  in the same round;
* **list** of ``--routes`` Routes, as JSON and as a Table (``Accept:
  application/json;as=Table;v=v1;g=meta.k8s.io``), next to ``Store.list`` of
  the same rows in-process; interleaved rounds, median;
* **watch fan-out**: ``--watchers`` watches of all Routes (one connection
  each, in a child process) while ``--watch-creates`` Routes are created
  through the API; the delay from commit to every watcher, next to one
  in-process ``Store.watch`` on the same SQLite file (another child process);
* **RSS** of the API server process: idle, and with all the routes and the
  watchers connected (after the lists), and its peak.

The official ``kubernetes`` Python client (urllib3: a pool of HTTP/1.1
keep-alive connections, one thread per request in flight) is configured
from the kubeconfig the server wrote, as is the ``kube://`` store
(``kubernetes_asyncio``: one event loop, an aiohttp keep-alive pool); the
lists and watches use the official client. The ``--routes`` listed are
the API's creates plus Routes written through ``Client`` into the API
server's SQLite file. Prints a table with a verdict against each goal and
writes JSON.

    .venv/bin/python bench/apiserver.py            # full: 10,000 routes, 20 watchers
    .venv/bin/python bench/apiserver.py --quick    # smoke run, about 10 s
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
from apiserver_wrk import wrk_creates
from kubernetes.watch.watch import iter_resp_lines

ROOT = Path(__file__).resolve().parent.parent
SHIFTNET = Path(sys.executable).with_name("shiftnet")
GROUP, VERSION, PLURAL = "route.openshift.io", "v1", "routes"
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io"
CREATE_NS = "bench-create"
WATCH_NS = "bench-watch"
WRK_NS = "bench-wrk"  # wrk makes as many as it can in its time: deleted after the rounds
SEED_NAMESPACES = 10
CLK_TCK = os.sysconf("SC_CLK_TCK")

# The API server's goals (docs/performance.md)
CREATE_RATIO_GOAL = 0.5
LIST_GOAL_S = 1.0
WATCH_P99_GOAL_MS = 100.0
RSS_GOAL_MB = 300.0


# ------------------------------------------------------------------ helpers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def status_kb(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def voluntary_switches(pid: int | str) -> int:
    """Voluntary context switches of every thread of a process so far: each is a thread
    going to sleep (waiting for another thread, a lock, the GIL or the network)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:  # the thread ended meanwhile
            continue
    return total


def own_cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def route_body(namespace: str, name: str) -> dict[str, Any]:
    """A plain Route as a user would write it (no TLS: PEM checks would dominate)."""
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "bench"}},
        "spec": {
            "host": f"{name}.{namespace}.bench.example.test",
            "to": {"kind": "Service", "name": "web"},
            "port": {"targetPort": "http"},
        },
    }


def namespace_body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


# ------------------------------------------------------------------ processes

PROFILED = """
import cProfile, runpy, sys, time
out = sys.argv.pop(1)
sys.argv.pop(0)
prof = cProfile.Profile(time.thread_time)
try:
    prof.runcall(runpy.run_path, sys.argv[0], run_name="__main__")
except SystemExit:
    pass
finally:
    prof.dump_stats(out)
"""


@dataclass
class Children:
    """Every process this run started, stopped in reverse order (also on Ctrl-C)."""

    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def add(self, proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass
class Server:
    home: Path
    port: int
    proc: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def store_url(self) -> str:
        return f"sqlite://{self.home}/state.db"

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"


def start_server(home: Path, children: Children, profile: str | None = None) -> Server:
    """``shiftnet apiserver`` on a free loopback port; returns once it printed its kubeconfig.

    ``profile``: run it under cProfile timed by the CPU time of its main thread (on a
    shared machine wall time charges a call with the time others held the CPU); the
    stats are written there when it stops."""
    port = free_port()
    prefix = [sys.executable, "-c", PROFILED, profile] if profile else []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHIFTNET_", "KUBE"))}
    env["SHIFTNET_HOME"] = str(home)
    home.mkdir(mode=0o700)
    logfile = home.parent / "apiserver.log"
    with logfile.open("w") as log:
        proc = children.add(
            subprocess.Popen(
                [*prefix, str(SHIFTNET), "--store", f"sqlite://{home}/state.db", "apiserver",
                 "--api-listen", f"127.0.0.1:{port}"],
                env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                start_new_session=True,  # Ctrl-C reaches the bench, which stops it in order
            )
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("apiserver exited:\n" + logfile.read_text()[-2000:])
        if "export KUBECONFIG=" in logfile.read_text():
            return Server(home, port, proc)
        time.sleep(0.05)
    raise RuntimeError("apiserver did not start in 60 s:\n" + logfile.read_text()[-2000:])


@dataclass
class Api:
    """The official client from the server's kubeconfig, ``pool`` keep-alive connections."""

    client: Any
    objects: Any
    core: Any

    @classmethod
    def connect(cls, kubeconfig: Path, pool: int) -> Api:
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), client_configuration=cfg, persist_config=False
        )
        cfg.connection_pool_maxsize = pool
        client = kubernetes.client.ApiClient(cfg)
        return cls(
            client, kubernetes.client.CustomObjectsApi(client), kubernetes.client.CoreV1Api(client)
        )

    def create_route(self, namespace: str, name: str) -> None:
        try:
            self.objects.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, route_body(namespace, name)
            )
        except kubernetes.client.ApiException as err:
            raise RuntimeError(f"create {namespace}/{name}: {err.status} {err.body}") from None

    def list_routes(self, accept: str) -> bytes:
        resp = self.objects.list_cluster_custom_object(
            GROUP, VERSION, PLURAL, _preload_content=False, _headers={"Accept": accept}
        )
        if resp.status != 200:
            raise RuntimeError(f"list routes: {resp.status} {resp.data[:300]!r}")
        return bytes(resp.data)

    def close(self) -> None:
        self.client.close()


# ------------------------------------------------------------------ creates


@dataclass
class CreateRound:
    side: str
    count: int
    seconds: float
    latencies: list[float]
    cpu_ms_per_create: float  # the server's (API side) or this process's (store side)
    client_cpu_ms_per_create: float = 0.0
    switches_per_create: float = 0.0  # voluntary, of the same process's threads
    percentiles_ms: tuple[float, float] | None = None  # p50, p99 as wrk reports them

    def summary(self) -> dict[str, float]:
        p50, p99 = self.percentiles_ms or (
            statistics.median(self.latencies) * 1000,
            pct(self.latencies, 0.99) * 1000,
        )
        return {
            "creates_per_s": round(self.count / self.seconds, 1),
            "p50_ms": round(p50, 2),
            "p99_ms": round(p99, 2),
            "cpu_ms_per_create": round(self.cpu_ms_per_create, 3),
            "client_cpu_ms_per_create": round(self.client_cpu_ms_per_create, 3),
            "switches_per_create": round(self.switches_per_create, 2),
        }


def api_creates(
    api: Api, namespace: str, names: list[str], concurrency: int
) -> tuple[float, list[float], dict[str, tuple[float, float]]]:
    """Create ``names`` through the API: seconds, latencies, name -> (sent, answered) times."""
    latencies: list[float] = []
    times: dict[str, tuple[float, float]] = {}

    def one(name: str) -> None:
        sent = time.time()
        t0 = time.perf_counter()
        api.create_route(namespace, name)
        latencies.append(time.perf_counter() - t0)
        times[name] = (sent, time.time())

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency, thread_name_prefix="create") as pool:
        for done in [pool.submit(one, n) for n in names]:
            done.result()
    return time.perf_counter() - t0, latencies, times


async def store_creates(
    client: Any, namespace: str, names: list[str], concurrency: int
) -> tuple[float, list[float]]:
    """The same Routes straight into a store: parse + validate + write, as the API does."""
    from shiftnet.api import Route

    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(name: str) -> None:
        body = route_body(namespace, name)
        async with gate:
            t0 = time.perf_counter()
            await client.create(Route.model_validate(body))
            latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(n) for n in names))
    return time.perf_counter() - t0, latencies


# official client | Client over kube:// | wrk (C) | Client over sqlite://
SIDES = ("api", "kube", "wrk", "store")


def create_rounds(
    api: Api,
    server: Server,
    clients: dict[str, Any],
    runner: asyncio.Runner,
    args: argparse.Namespace,
) -> list[CreateRound]:
    """Rounds of K creates on each side, the side that goes first rotating each round.

    ``clients``: ``Client`` over the API server (``kube``) and over a fresh SQLite
    store in this process (``store``): the same call, the same concurrency."""
    rounds: list[CreateRound] = []
    k, pid = args.creates, server.proc.pid
    sides = args.sides
    for r in range(args.rounds):
        turn = r % len(sides)
        for side in sides[turn:] + sides[:turn]:
            names = [f"{side}-{r}-{i}" for i in range(k)]
            watched = "self" if side == "store" else pid
            srv0, own0, sw0 = cpu_seconds(pid), own_cpu_seconds(), voluntary_switches(watched)
            if side == "wrk":
                rounds.append(wrk_round(server, args, r, pid))
                print(f"  round {r + 1} {side:<5} {rounds[-1].summary()}", flush=True)
                continue
            if side == "api":
                secs, lat, _ = api_creates(api, CREATE_NS, names, args.concurrency)
            else:
                coro = store_creates(clients[side], CREATE_NS, names, args.concurrency)
                secs, lat = runner.run(coro)
            srv, own = cpu_seconds(pid) - srv0, own_cpu_seconds() - own0
            switches = (voluntary_switches(watched) - sw0) / k
            if side == "store":  # this process is the whole path
                rounds.append(CreateRound(side, k, secs, lat, own * 1000 / k, 0.0, switches))
            else:
                rounds.append(
                    CreateRound(side, k, secs, lat, srv * 1000 / k, own * 1000 / k, switches)
                )
            print(f"  round {r + 1} {side:<5} {rounds[-1].summary()}", flush=True)
    return rounds


def wrk_round(server: Server, args: argparse.Namespace, r: int, pid: int) -> CreateRound:
    """``wrk`` creating Routes for ``--wrk-seconds``, as many connections as creates in flight."""
    token = (server.home / "apiserver" / "admin.token").read_text().strip()
    srv0, sw0 = cpu_seconds(pid), voluntary_switches(pid)
    run = wrk_creates(
        server.url, token, WRK_NS, f"wrk-{r}-", args.wrk_seconds, args.concurrency,
        server.home.parent,
    )  # fmt: skip
    srv, switches = cpu_seconds(pid) - srv0, voluntary_switches(pid) - sw0
    n = run.creates
    return CreateRound(
        "wrk", n, run.seconds, [], srv * 1000 / n, run.client_cpu_s * 1000 / n, switches / n,
        (run.p50_ms, run.p99_ms),
    )  # fmt: skip


def median_round(rounds: list[CreateRound], side: str) -> dict[str, float]:
    """Each figure of one side's rounds, the median over the rounds."""
    mine = [r.summary() for r in rounds if r.side == side]
    return {key: statistics.median(s[key] for s in mine) for key in mine[0]}


def paired_ratio(rounds: list[CreateRound], side: str) -> float:
    """``side``'s rate over the store's within each round (back to back), median over the
    rounds: a load change between rounds moves both sides of a pair alike."""
    api = [r for r in rounds if r.side == side]
    store = [r for r in rounds if r.side == "store"]
    pairs = [(a.count / a.seconds) / (s.count / s.seconds) for a, s in zip(api, store, strict=True)]
    return round(statistics.median(pairs), 3)


# ------------------------------------------------------------------ seeding


async def seed(store_url: str, count: int) -> float:
    """``count`` Routes over SEED_NAMESPACES namespaces, written through ``Client``."""
    from shiftnet.api import Namespace, Route
    from shiftnet.client import Client
    from shiftnet.store import open_store

    store = open_store(store_url)
    client = Client(store)
    t0 = time.perf_counter()
    try:
        for n in range(SEED_NAMESPACES):
            await client.create(Namespace.model_validate(namespace_body(f"bench-{n}")))
        for i in range(count):
            ns = f"bench-{i % SEED_NAMESPACES}"
            await client.create(Route.model_validate(route_body(ns, f"seed-{i}")))
    finally:
        await store.close()
    return time.perf_counter() - t0


# ------------------------------------------------------------------ watch fan-out
# Each side runs in a child process of its own (``--_watchers api|store``) so
# that the creator's work never delays a watcher's clock. A child prints
# "ready" once every watch is connected, "done" once it has every expected
# event (or its deadline passed) and its arrivals are written, and then keeps
# its watches open until its stdin closes: the RSS is measured with them.


def api_watchers(opts: argparse.Namespace) -> None:
    """``opts.count`` watches of all Routes through the official client, one thread each."""
    api = Api.connect(Path(opts.kubeconfig), opts.count)
    arrivals: list[dict[str, float]] = [{} for _ in range(opts.count)]
    lock = threading.Lock()
    state = {"connected": 0, "finished": 0}
    all_connected, all_seen = threading.Event(), threading.Event()

    def one(i: int) -> None:
        resp = api.objects.list_cluster_custom_object(
            GROUP, VERSION, PLURAL, watch=True, resource_version=opts.revision,
            timeout_seconds=int(opts.deadline) * 2, _preload_content=False,
        )  # fmt: skip
        with lock:
            state["connected"] += 1
            if state["connected"] == opts.count:
                all_connected.set()
        mine = arrivals[i]
        for line in iter_resp_lines(resp):  # type: ignore[no-untyped-call]
            now = time.time()
            meta = json.loads(line)["object"].get("metadata") or {}
            if meta.get("namespace") != opts.namespace:
                continue
            mine[str(meta.get("name"))] = now
            if len(mine) == opts.expect:
                with lock:
                    state["finished"] += 1
                    if state["finished"] == opts.count:
                        all_seen.set()

    for i in range(opts.count):
        threading.Thread(target=one, args=(i,), daemon=True, name=f"watch-{i}").start()
    if not all_connected.wait(60):
        raise RuntimeError(f"only {state['connected']} of {opts.count} watches connected")
    report_and_linger(opts, all_seen.wait, arrivals)


def store_watcher(opts: argparse.Namespace) -> None:
    """The reference: one ``Store.watch`` of Routes on the server's SQLite file."""
    from shiftnet.store import open_store

    arrivals: dict[str, float] = {}
    all_seen = threading.Event()
    started = threading.Event()

    async def watch() -> None:
        store = open_store(opts.store)
        try:
            events = store.watch(PLURAL, int(opts.revision))
            started.set()
            async for ev in events:
                now = time.time()
                meta = ev.object.get("metadata") or {}
                if meta.get("namespace") == opts.namespace:
                    arrivals[str(meta.get("name"))] = now
                    if len(arrivals) == opts.expect:
                        all_seen.set()
        finally:
            await store.close()

    threading.Thread(target=asyncio.run, args=(watch(),), daemon=True, name="watch").start()
    if not started.wait(30):
        raise RuntimeError(f"the store watch on {opts.store} did not start")
    time.sleep(0.2)  # the watch has taken its first look at the store
    report_and_linger(opts, all_seen.wait, [arrivals])


def report_and_linger(
    opts: argparse.Namespace, wait_all: Callable[[float], bool], arrivals: list[dict[str, float]]
) -> None:
    print("ready", flush=True)
    wait_all(opts.deadline)
    Path(opts.out).write_text(json.dumps(arrivals))
    print("done", flush=True)
    sys.stdin.read()  # until the parent closes it; the daemon threads end with the process


def spawn_watchers(
    children: Children, tmp: Path, role: str, extra: list[str], expect: int, deadline: float
) -> tuple[subprocess.Popen[str], Path]:
    out = tmp / f"arrivals-{role}.json"
    proc = children.add(
        subprocess.Popen(
            [sys.executable, __file__, "--_watchers", role, "--_out", str(out),
             "--_expect", str(expect), "--_deadline", str(deadline), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True,
        )
    )  # fmt: skip
    return proc, out


def wait_line(proc: subprocess.Popen[str], want: str, timeout: float) -> None:
    """Until the child prints ``want`` (bounded by its own deadline and ``timeout``)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"watcher child exited before {want!r} (code {proc.wait()})")
        if line.strip() == want:
            return
    raise RuntimeError(f"watcher child did not report {want!r} in {timeout:.0f} s")


def delays(
    arrivals: list[dict[str, float]], times: dict[str, tuple[float, float]]
) -> dict[str, float]:
    """Per created Route: the delay until the last watcher had it, from answer and from send."""
    from_answer: list[float] = []
    from_send: list[float] = []
    missing = 0
    for name, (sent, answered) in times.items():
        got = [a.get(name) for a in arrivals]
        if any(t is None for t in got):
            missing += 1
            continue
        last = max(t for t in got if t is not None)
        from_answer.append(last - answered)
        from_send.append(last - sent)
    if not from_answer:
        return {"missing": missing}
    return {
        "p50_ms": round(statistics.median(from_answer) * 1000, 2),
        "p99_ms": round(pct(from_answer, 0.99) * 1000, 2),
        "max_ms": round(max(from_answer) * 1000, 2),
        "from_send_p50_ms": round(statistics.median(from_send) * 1000, 2),
        "from_send_p99_ms": round(pct(from_send, 0.99) * 1000, 2),
        "events": len(from_answer),
        "missing": missing,
    }


def watch_phase(
    api: Api, server: Server, children: Children, tmp: Path, args: argparse.Namespace
) -> tuple[dict[str, Any], list[subprocess.Popen[str]]]:
    head = api.objects.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=1)
    revision = head["metadata"]["resourceVersion"]
    deadline = max(120.0, args.watch_creates * 0.2)
    common = ["--_revision", revision, "--_namespace", WATCH_NS]
    api_w, api_out = spawn_watchers(
        children, tmp, "api",
        ["--_kubeconfig", str(server.kubeconfig), "--_count", str(args.watchers), *common],
        args.watch_creates, deadline,
    )  # fmt: skip
    store_w, store_out = spawn_watchers(
        children, tmp, "store", ["--_store", server.store_url, *common],
        args.watch_creates, deadline,
    )  # fmt: skip
    wait_line(api_w, "ready", 90)
    wait_line(store_w, "ready", 90)
    names = [f"w-{i}" for i in range(args.watch_creates)]
    srv0, watchers0 = cpu_seconds(server.proc.pid), cpu_seconds(api_w.pid)
    secs, _, times = api_creates(api, WATCH_NS, names, args.watch_concurrency)
    srv_cpu = cpu_seconds(server.proc.pid) - srv0
    print(f"watch: {len(names)} creates in {secs:.2f} s", flush=True)
    wait_line(api_w, "done", deadline + 30)
    watchers_cpu = cpu_seconds(api_w.pid) - watchers0
    wait_line(store_w, "done", deadline + 30)
    result = {
        "api": delays(json.loads(api_out.read_text()), times),
        "store": delays(json.loads(store_out.read_text()), times),
        "creates_per_s": round(len(names) / secs, 1),
        "server_cpu_ms_per_create": round(srv_cpu * 1000 / len(names), 2),
        # the watching client's own cost: all its watchers together, per created Route
        "watchers_cpu_ms_per_create": round(watchers_cpu * 1000 / len(names), 2),
    }
    return result, [api_w, store_w]


# ------------------------------------------------------------------ lists


def list_rounds(
    api: Api, runner: asyncio.Runner, server: Server, expect: int, rounds: int
) -> dict[str, dict[str, Any]]:
    """Every Route as JSON, as a Table, and from the store in-process; interleaved rounds.

    Next to the time, the CPU the list cost the server (this process, for the store):
    on a loaded machine the time grows with the run queue, the CPU does not."""
    from shiftnet.store import open_store

    store = open_store(server.store_url)
    times: dict[str, list[float]] = {"json": [], "table": [], "store": []}
    cpu: dict[str, list[float]] = {how: [] for how in times}
    sizes: dict[str, int] = {}
    try:
        for r in range(rounds):
            order = ["json", "table", "store"]
            for how in order[r % 3 :] + order[: r % 3]:
                t0 = time.perf_counter()
                if how == "store":
                    own0 = own_cpu_seconds()
                    listed = runner.run(store.list(PLURAL, None))
                    times[how].append(time.perf_counter() - t0)
                    cpu[how].append(own_cpu_seconds() - own0)
                    count = len(listed.items)
                else:
                    srv0 = cpu_seconds(server.proc.pid)
                    body = api.list_routes(TABLE_ACCEPT if how == "table" else "application/json")
                    times[how].append(time.perf_counter() - t0)
                    cpu[how].append(cpu_seconds(server.proc.pid) - srv0)
                    sizes[how] = len(body)
                    doc = json.loads(body)
                    count = len(doc["rows"] if how == "table" else doc["items"])
                if count != expect:
                    raise RuntimeError(f"list {how} returned {count} routes, expected {expect}")
    finally:
        runner.run(store.close())
    return {
        how: {
            "median_s": round(statistics.median(ts), 4),
            "min_s": round(min(ts), 4),
            "max_s": round(max(ts), 4),
            "cpu_s": round(statistics.median(cpu[how]), 3),
            "bytes": sizes.get(how, 0),
        }
        for how, ts in times.items()
    }


# ------------------------------------------------------------------ the run


def run(args: argparse.Namespace, tmp: Path, children: Children) -> dict[str, Any]:
    from shiftnet.api import Namespace
    from shiftnet.client import Client
    from shiftnet.store import open_store

    server = start_server(tmp / "home", children, args.server_profile)
    pid = server.proc.pid
    rss: dict[str, float] = {"idle": round(status_kb(pid, "VmRSS") / 1024, 1)}
    result: dict[str, Any] = {"rss_mb": rss}
    print(f"apiserver pid={pid} {server.url}, idle RSS {rss['idle']} MB", flush=True)

    api = Api.connect(server.kubeconfig, args.concurrency)
    with asyncio.Runner() as runner:
        side_store = open_store(f"sqlite://{tmp}/side/state.db")
        kube_store = open_store(f"kube://{server.kubeconfig}")
        clients = {"store": Client(side_store), "kube": Client(kube_store)}
        try:
            for ns in (CREATE_NS, WATCH_NS, WRK_NS):
                api.core.create_namespace(namespace_body(ns))
            runner.run(clients["store"].create(Namespace.model_validate(namespace_body(CREATE_NS))))
            # open the pools' connections (TLS handshakes) and load lazily imported code
            warm = {
                side: [f"warm-{side}-{i}" for i in range(2 * args.concurrency)] for side in SIDES
            }
            api_creates(api, CREATE_NS, warm["api"], args.concurrency)
            for side in ("kube", "store"):
                runner.run(store_creates(clients[side], CREATE_NS, warm[side], args.concurrency))

            print(f"creates: {args.rounds} rounds x {args.creates} per side", flush=True)
            rounds = create_rounds(api, server, clients, runner, args)
            result["creates"] = {s: median_round(rounds, s) for s in args.sides}
            pairs = (("api", "paired_ratio"), ("kube", "kube_paired_ratio"), ("wrk", "wrk_ratio"))
            for side, key in pairs:
                if side in args.sides:
                    result["creates"][key] = paired_ratio(rounds, side)
            result["creates"]["rounds"] = [{"side": r.side, **r.summary()} for r in rounds]
            if args.creates_only:
                return result
            # the API server's store holds the official client's and the kube side's creates
            api.objects.delete_collection_namespaced_custom_object(
                GROUP, VERSION, WRK_NS, PLURAL, _request_timeout=600
            )
            made = sum(args.rounds * args.creates + len(warm[side]) for side in ("api", "kube"))
            seed_count = args.routes - made - args.watch_creates
            if seed_count < 0:
                raise RuntimeError("--routes is smaller than the routes the creates make")
            secs = runner.run(seed(server.store_url, seed_count))
            print(f"seeded {seed_count} routes through Client in {secs:.1f} s", flush=True)

            result["watch"], watchers = watch_phase(api, server, children, tmp, args)
            rss["routes_and_watchers"] = round(status_kb(pid, "VmRSS") / 1024, 1)

            print(f"lists: {args.list_rounds} rounds, watchers connected", flush=True)
            result["list"] = list_rounds(api, runner, server, args.routes, args.list_rounds)
            rss["after_lists"] = round(status_kb(pid, "VmRSS") / 1024, 1)
            rss["peak"] = round(status_kb(pid, "VmHWM") / 1024, 1)
            for proc in watchers:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(30)
        finally:
            api.close()
            runner.run(side_store.close())
            runner.run(kube_store.close())
    return result


# ------------------------------------------------------------------ report


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def create_rows(
    args: argparse.Namespace, res: dict[str, Any]
) -> list[tuple[str, str, str, str, str, str]]:
    """Both API clients' creates next to the in-process store's."""
    store = res["creates"]["store"]
    rows = []
    for side, label, key in (
        ("api", "official client (threads)", "paired_ratio"),
        ("kube", "Client over kube://", "kube_paired_ratio"),
        ("wrk", "wrk (C, 1 thread)", "wrk_ratio"),
    ):
        if side not in res["creates"]:
            continue
        got, ratio = res["creates"][side], res["creates"][key]
        rows += [
            (f"creates/s, {label}", f"{got['creates_per_s']:.0f}",
             f"{store['creates_per_s']:.0f}", f"{ratio:.2f}", f">= {CREATE_RATIO_GOAL} x store",
             verdict(ratio >= CREATE_RATIO_GOAL)),
            ("  latency p50 / p99 (ms)", f"{got['p50_ms']:.1f} / {got['p99_ms']:.1f}",
             f"{store['p50_ms']:.1f} / {store['p99_ms']:.1f}", "", "", ""),
            ("  CPU ms per create: server + client | store",
             f"{got['cpu_ms_per_create']:.2f} + {got['client_cpu_ms_per_create']:.2f}",
             f"{store['cpu_ms_per_create']:.2f}", "", "", ""),
            ("  thread sleeps per create: server | store", f"{got['switches_per_create']:.2f}",
             f"{store['switches_per_create']:.2f}", "", "", ""),
        ]  # fmt: skip
    return rows


def create_header() -> tuple[str, str, str, str, str, str]:
    return ("measure", "API server (HTTPS)", "store (in-process)", "API/store", "goal", "verdict")


def print_rows(rows: list[tuple[str, str, str, str, str, str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print()
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(width) for c, width in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * width for width in widths))


def report(args: argparse.Namespace, res: dict[str, Any]) -> None:
    lj, lt, ls = res["list"]["json"], res["list"]["table"], res["list"]["store"]
    wa, ws = res["watch"]["api"], res["watch"]["store"]
    rss = res["rss_mb"]
    n, w = f"{args.routes:,}", args.watchers
    rows = [
        create_header(),
        *create_rows(args, res),
        (f"list {n} routes, JSON (s)", f"{lj['median_s']:.3f}", f"{ls['median_s']:.3f}",
         f"{lj['median_s'] / ls['median_s']:.1f}", f"< {LIST_GOAL_S:g} s",
         verdict(lj["median_s"] < LIST_GOAL_S)),
        (f"list {n} routes, Table (s)", f"{lt['median_s']:.3f}", f"{ls['median_s']:.3f}",
         f"{lt['median_s'] / ls['median_s']:.1f}", f"< {LIST_GOAL_S:g} s",
         verdict(lt["median_s"] < LIST_GOAL_S)),
        ("  CPU s per list: JSON / Table | store",
         f"{lj['cpu_s']:.2f} / {lt['cpu_s']:.2f}", f"{ls['cpu_s']:.2f}", "", "", ""),
        (f"watch delay, all {w} | 1 watcher, p50 (ms)", f"{wa.get('p50_ms', 0):.1f}",
         f"{ws.get('p50_ms', 0):.1f}", "", "", ""),
        (f"watch delay, all {w} | 1 watcher, p99 (ms)", f"{wa.get('p99_ms', 0):.1f}",
         f"{ws.get('p99_ms', 0):.1f}", "", f"< {WATCH_P99_GOAL_MS:g} ms",
         verdict(wa.get("p99_ms", 1e9) < WATCH_P99_GOAL_MS and not wa.get("missing"))),
        ("  p99 from the create's send (ms)", f"{wa.get('from_send_p99_ms', 0):.1f}",
         f"{ws.get('from_send_p99_ms', 0):.1f}", "", "", ""),
        (f"RSS, {n} routes + {w} watchers (MB)",
         f"{rss['after_lists']:.0f} (peak {rss['peak']:.0f})", f"idle {rss['idle']:.0f}", "",
         f"< {RSS_GOAL_MB:g} MB", verdict(rss["after_lists"] < RSS_GOAL_MB)),
    ]  # fmt: skip
    print_rows(rows)
    load = " ".join(f"{x:.2f}" for x in res["load_before"])
    load_after = " ".join(f"{x:.2f}" for x in res["load_after"])
    print(
        f"\ncreates: {args.concurrency} in flight per side; "
        f"medians of {args.rounds} create rounds x {args.creates} per side and "
        f"{args.list_rounds} list rounds; watch: {args.watch_creates} creates, "
        f"{args.watch_concurrency} in flight ({res['watch']['creates_per_s']:.0f}/s; CPU per "
        f"create: server {res['watch']['server_cpu_ms_per_create']:.2f} ms, the {w} watchers "
        f"{res['watch']['watchers_cpu_ms_per_create']:.2f} ms), "
        f"{wa.get('missing', '?')} events missing; API/store creates: the median of the rounds' "
        f"paired ratios (store: Client over sqlite:// in this process); "
        f"load average {load} before, {load_after} after"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--routes", type=int, default=10_000, help="Routes listed (default 10000)")
    ap.add_argument("--creates", type=int, default=500, help="creates per side and round")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved create rounds (median)")
    ap.add_argument("--concurrency", type=int, default=8, help="creates in flight per side")
    ap.add_argument("--wrk-seconds", type=int, default=2, help="how long wrk creates in each round")
    ap.add_argument("--list-rounds", type=int, default=5, help="interleaved list rounds (median)")
    ap.add_argument("--watchers", type=int, default=20)
    ap.add_argument("--watch-creates", type=int, default=1000)
    ap.add_argument(
        "--watch-concurrency",
        type=int,
        default=1,
        help="creates in flight during the watch (1: the answer comes right after the commit)",
    )
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "apiserver.json"))
    ap.add_argument(
        "--creates-only",
        action="store_true",
        help="only the create rounds: print their table, write no JSON",
    )
    ap.add_argument(
        "--sides",
        default=",".join(SIDES),
        help="with --creates-only: the create sides to run, of api,kube,wrk,store (store always)",
    )
    ap.add_argument(
        "--server-profile",
        metavar="PATH",
        help="run the API server under cProfile and write its stats to PATH when it stops",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1000 routes, 2 rounds x 100 creates, 200 watched creates",
    )
    # the watcher child processes (internal)
    for name in ("watchers", "out", "kubeconfig", "revision", "namespace", "store"):
        ap.add_argument(f"--_{name}", help=argparse.SUPPRESS)
    for name in ("expect", "count"):
        ap.add_argument(f"--_{name}", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--_deadline", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    chosen = {s.strip() for s in args.sides.split(",") if s.strip()} | {"store"}
    if not args.creates_only:
        chosen = set(SIDES)
    if chosen - set(SIDES):
        ap.error(f"--sides: unknown side(s) {', '.join(sorted(chosen - set(SIDES)))}")
    args.sides = [s for s in SIDES if s in chosen]
    if args.quick:
        args.routes, args.creates, args.rounds, args.wrk_seconds = 1000, 100, 2, 1
        args.list_rounds, args.watch_creates = 3, 200
    return args


def child_main(args: argparse.Namespace) -> int:
    opts = argparse.Namespace(
        out=args._out, kubeconfig=args._kubeconfig, revision=args._revision,
        namespace=args._namespace, store=args._store, expect=args._expect,
        count=args._count, deadline=args._deadline,
    )  # fmt: skip
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    roles = {"api": api_watchers, "store": store_watcher}
    if args._watchers not in roles:
        print(f"error: --_watchers must be one of {', '.join(roles)}", file=sys.stderr)
        return 2
    try:
        roles[args._watchers](opts)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def kubernetes_asyncio_version() -> str:
    from importlib.metadata import version

    return version("kubernetes_asyncio")


def main() -> int:
    args = parse_args()
    if args._watchers:
        return child_main(args)
    if not SHIFTNET.exists():
        print(f"error: {SHIFTNET} is missing: run with the project's venv", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    # also when started with SIGINT ignored (a background job of a script)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    children = Children()
    tmp = Path(tempfile.mkdtemp(prefix="sn-bench-api-"))
    load_before = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}", flush=True)
    try:
        res = run(args, tmp, children)
    except KeyboardInterrupt:
        print("interrupted: stopping what the benchmark started", file=sys.stderr)
        return 130
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        children.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    res["load_before"] = list(load_before)
    res["load_after"] = list(os.getloadavg())
    if args.creates_only:
        print_rows([create_header(), *create_rows(args, res)])
        print(f"\nload average {' '.join(f'{x:.2f}' for x in res['load_before'])} before, "
              f"{' '.join(f'{x:.2f}' for x in res['load_after'])} after")  # fmt: skip
        return 0
    report(args, res)
    out = {
        "benchmark": "apiserver",
        "params": {k: v for k, v in vars(args).items() if not k.startswith("_")},
        "client": {
            "api": f"kubernetes {kubernetes.__version__} (urllib3 keep-alive pool, threads)",
            "kube": "shiftnet Client over kube:// "
            f"(kubernetes_asyncio {kubernetes_asyncio_version()})",
        },
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "results": res,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
