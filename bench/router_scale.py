"""Router scale benchmark: shiftnet's router vs an OpenShift-style configuration.

    .venv/bin/python bench/router_scale.py [--sizes 10,1000,10000] [--quick]
        [--json bench/results/router_scale.json] [--churn-seconds 60]

In one run, on this machine, for each route count N and two workloads
(``shared``: every service has the same pod, so only the route lookup differs;
``own``: every route has its own pod address) it measures requests/s with wrk
(random Host headers and paths, see ``routerbench/wrk.py``) through

* shiftnet: the real ``shiftnet router`` process on a tmp sqlite store whose
  Namespace/Service/Endpoints/Route objects were written with ``Client``;
* OpenShift: a 3.x-style configuration of the same routes (``map_reg`` over
  ``base``, OpenShift's sort order, one backend per route) in a plain HAProxy;
* direct: straight to one pod, no router (the limit).

Before measuring, each configuration answers a sample of requests, which
must reach the pod of the route the routing rules choose. At the largest N
of the last workload it also measures: route created -> first 200, pod
ready -> traffic (and whether it needed a reload), render time, reloads,
router and HAProxy RSS, and a wrk run with a route or endpoint change every
second (failed requests). Pods are one nginx listening on many loopback
addresses (``routerbench/responder.py``). Every process started is stopped by
pid, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))

from routerbench import baseline, lookup_only, openshift_cfg, procs, wrk  # noqa: E402
from routerbench.http import get, routing_check  # noqa: E402
from routerbench.responder import Responder  # noqa: E402
from routerbench.shiftnet_side import (  # noqa: E402
    RouterProcess,
    endpoints,
    populate,
    render_times,
    route,
    service,
)
from routerbench.workload import (  # noqa: E402
    NAMESPACE,
    OWN,
    SHARED,
    BenchRoute,
    pod_ip,
    pods_of,
    requests,
    routes,
    sample,
    spare_ip,
)

from shiftnet.api import Endpoints, Route  # noqa: E402
from shiftnet.client import Client  # noqa: E402
from shiftnet.router.haproxy.process import fit_limits  # noqa: E402
from shiftnet.store import open_store  # noqa: E402

SPARES = 400  # responder addresses no route uses at first (pods that become ready, churn)
PROBES = 200


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


async def wait_statuses(client: Client, n: int, timeout: float = 900.0) -> float:
    """Seconds until ``n`` routes carry an ingress status (the router's start-up writes)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        done = sum(1 for r in await client.list(Route, namespace=NAMESPACE) if r.status.ingress)
        if done >= n:
            return time.monotonic() - t0
        await asyncio.sleep(2.0)
    raise RuntimeError(f"router wrote fewer than {n} route statuses in {timeout}s")


def combine(runs: list[dict]) -> dict:
    """Several interleaved wrk rounds of one configuration: medians, and summed errors."""
    med = lambda key: round(statistics.median(r[key] for r in runs), 2)  # noqa: E731
    return {
        "rps": med("rps"),
        "p50_ms": med("p50_ms"),
        "p99_ms": med("p99_ms"),
        "rounds_rps": [r["rps"] for r in runs],
        "requests": sum(r["requests"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "non_2xx": sum(r["non_2xx"] for r in runs),
        "socket_errors": sum(r["socket_errors"] for r in runs),
    }


def probes_for(reqs: list, workload: str, pods: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    return [(h, p, pods[r.name][0]) for h, p, r in sample(reqs, PROBES)]


class Bench:
    def __init__(self, args: argparse.Namespace, base: Path) -> None:
        self.args = args
        self.base = base
        self.pod_port = procs.free_port()
        limits = fit_limits(50000)
        self.maxconn, self.nbthread = limits.maxconn, limits.nbthread
        self.rows: list[dict[str, Any]] = []
        self.extras: dict[str, Any] = {}

    def wrk(self, url: str, targets: Path, tag: str, seconds: float | None = None) -> dict:
        res = wrk.run(
            url,
            targets,
            self.base,
            seconds or self.args.duration,
            connections=self.args.connections,
            tag=tag,
        )
        return res.as_dict()

    # ------------------------------------------------------------- per size
    async def size(
        self,
        workload: str,
        n: int,
        client: Client,
        router: RouterProcess,
        rs: list[BenchRoute],
        pods: dict[str, list[str]],
        ref: tuple[RouterProcess, Path] | None = None,
        render: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        reqs = requests(rs)
        targets = wrk.write_targets(self.base / f"targets-{workload}-{n}.txt", reqs)
        probes = probes_for(reqs, workload, pods)
        row: dict[str, Any] = {
            "workload": workload,
            "routes": n,
            "hosts": len({r.host for r in rs}),
            "request_targets": len(reqs),
        }
        row["shiftnet_wrong"] = await routing_check(router.http_port, probes)
        row["render"] = render or await render_times(router.store_url, router.work_dir)
        live = (router.work_dir / "conf" / "haproxy.cfg").read_text()
        row["shiftnet_maxconn"] = int(live.split("maxconn", 1)[1].split()[0])
        row["shiftnet_config_lines"] = live.count("\n")
        row["shiftnet_check_s"] = round(baseline.PlainHAProxy(router.work_dir / "conf").check(), 2)
        # OpenShift-style baseline on the same routes and pods.
        os_dir = self.base / f"os-{workload}-{n}"
        os_port = procs.free_port()
        t0 = time.perf_counter()
        files = openshift_cfg.render(
            rs,
            pods,
            os_port,
            self.pod_port,
            self.maxconn,
            self.nbthread,
            str(self.base / f"os-{workload}-{n}.sock"),
        )
        row["openshift_render_s"] = round(time.perf_counter() - t0, 3)
        openshift_cfg.write(os_dir, files)
        hp = baseline.PlainHAProxy(os_dir)
        lk_dir, lk = self.base / f"lk-{workload}-{n}", None
        try:
            row["openshift_check_s"] = round(hp.check(), 2)
            row["openshift_start_s"] = round(hp.start(os_port), 2)
            row["openshift_wrong"] = await routing_check(os_port, probes)
            runs: dict[str, list[dict]] = {"shiftnet": [], "openshift": [], "direct": []}
            urls = {
                "shiftnet": f"http://127.0.0.1:{router.http_port}/",
                "openshift": f"http://127.0.0.1:{os_port}/",
                "direct": f"http://{pod_ip(0)}:{self.pod_port}/",
            }
            tfiles = dict.fromkeys(urls, targets)
            # HAProxy processes per configuration, for its CPU time per request
            haproxies = {"shiftnet": str(router.work_dir) + "/", "openshift": str(os_dir) + "/"}
            if ref is not None:  # the smallest size, measured in the same rounds
                runs["shiftnet_ref"] = []
                urls["shiftnet_ref"] = f"http://127.0.0.1:{ref[0].http_port}/"
                tfiles["shiftnet_ref"] = ref[1]
                haproxies["shiftnet_ref"] = str(ref[0].work_dir) + "/"
            if n > self.args.sizes[0] and not self.args.no_lookup_only:
                lk_port = procs.free_port()
                row["lookup_only_backend"] = await lookup_only.write(
                    client,
                    lk_dir,
                    lk_port,
                    procs.free_port(),
                    row["shiftnet_maxconn"],
                    self.nbthread,
                )
                lk = baseline.PlainHAProxy(lk_dir)
                lk.start(lk_port)
                runs["lookup_only"] = []
                urls["lookup_only"] = f"http://127.0.0.1:{lk_port}/"
                tfiles["lookup_only"] = targets
                haproxies["lookup_only"] = str(lk_dir) + "/"
            cpu0, wall0 = procs.cpu_seconds(router.proc.pid), time.monotonic()
            warm: dict[str, list[float]] = {which: [] for which in urls}
            cpu_us: dict[str, list[float]] = {which: [] for which in haproxies}
            for k in range(self.args.rounds):  # interleaved: the machine is shared and noisy
                # The two routers of the lookup ratio run back to back, in turns first,
                # so a change in the machine's load between runs biases neither.
                pair = ["shiftnet", "shiftnet_ref"] if k % 2 == 0 else ["shiftnet_ref", "shiftnet"]
                order = [w for w in pair if w in urls] + [w for w in urls if w not in pair]
                log(f"{workload} N={n}: round {k + 1}/{self.args.rounds} ({', '.join(order)})")
                for which in order:
                    url = urls[which]
                    if self.args.warmup > 0:  # steady state: see --warmup
                        warm[which].append(
                            self.wrk(url, tfiles[which], f"warm-{which}", seconds=self.args.warmup)[
                                "rps"
                            ]
                        )
                    pids = procs.haproxy_family(haproxies[which]) if which in haproxies else []
                    c0 = sum(procs.cpu_seconds(p) for p in pids)
                    res = self.wrk(url, tfiles[which], f"{which}-{workload}-{n}-{k}")
                    runs[which].append(res)
                    if pids and res["requests"]:
                        used = sum(procs.cpu_seconds(p) for p in pids) - c0
                        cpu_us[which].append(round(1e6 * used / res["requests"], 1))
            # CPU the router process itself spent while wrk ran (stats polling, syncs):
            # it competes with HAProxy for the same two cores.
            row["router_cpu_share_during_rounds"] = round(
                (procs.cpu_seconds(router.proc.pid) - cpu0) / (time.monotonic() - wall0), 3
            )
            for which, rs_ in runs.items():
                row[which] = combine(rs_)
                row[which]["warmup_rps"] = warm[which]
                if cpu_us.get(which):
                    row[which]["haproxy_cpu_us_per_request"] = cpu_us[which]
                    row[which]["haproxy_cpu_us_per_request_median"] = round(
                        statistics.median(cpu_us[which]), 1
                    )
            row["openshift_haproxy_rss_mb"] = round(hp.rss_kb() / 1024, 1)
        finally:
            hp.stop()
            shutil.rmtree(os_dir, ignore_errors=True)
            if lk is not None:
                lk.stop()
            shutil.rmtree(lk_dir, ignore_errors=True)
        row["router_rss_mb"] = round(router.router_rss_kb() / 1024, 1)
        hrss, hcount = router.haproxy_rss_kb()
        row["shiftnet_haproxy_rss_mb"] = round(hrss / 1024, 1)
        row["shiftnet_haproxy_processes"] = hcount
        m = router.metrics()
        row["reloads"] = m.get("shiftnet_router_reloads_total", 0)
        row["runtime_updates"] = m.get("shiftnet_router_runtime_updates_total", 0)
        sn, os_ = row["shiftnet"]["rps"], row["openshift"]["rps"]
        row["shiftnet_over_openshift"] = round(sn / os_, 2) if os_ else None
        if "shiftnet_ref" in row and row["shiftnet_ref"]["rps"]:
            row["shiftnet_over_ref"] = round(sn / row["shiftnet_ref"]["rps"], 2)
            # the same ratio per round (the two runs back to back), median over rounds
            row["shiftnet_over_ref_paired"] = round(
                statistics.median(
                    a / b
                    for a, b in zip(
                        row["shiftnet"]["rounds_rps"],
                        row["shiftnet_ref"]["rounds_rps"],
                        strict=True,
                    )
                    if b
                ),
                2,
            )
        if "lookup_only" in row and row.get("shiftnet_ref", {}).get("rps"):
            row["lookup_only_over_ref"] = round(
                row["lookup_only"]["rps"] / row["shiftnet_ref"]["rps"], 2
            )
        return row

    # ------------------------------------------------------------- workload
    async def workload(self, workload: str, extras: bool) -> None:
        wdir = self.base / workload
        wdir.mkdir()
        store_url = f"sqlite://{wdir}/state.db"
        store = open_store(store_url)
        client = Client(store)
        router: RouterProcess | None = None
        have = 0
        # A second router on its own store with the smallest route set, running all
        # along: each size's rounds also measure it, so "req/s at N / at the smallest
        # N" compares numbers taken minutes apart on a shared machine no more.
        lo = self.args.sizes[0]
        ref_store = open_store(f"sqlite://{wdir}/ref.db")
        ref_rs = routes(lo)
        ref_pods = {r.name: pods_of(r, workload) for r in ref_rs}
        await populate(Client(ref_store), ref_rs, ref_pods, self.pod_port)
        ref_router = RouterProcess(
            self.base / f"f{workload[0]}{lo}", f"sqlite://{wdir}/ref.db", self.args.reload_interval
        )
        ref_router.start()
        ref_targets = wrk.write_targets(self.base / f"targets-ref-{workload}.txt", requests(ref_rs))
        await ref_router.wait_ready(
            ref_rs[-1].host, ref_rs[-1].path or "/", ref_pods[ref_rs[-1].name][0]
        )
        try:
            for n in self.args.sizes:
                rs = routes(n)
                pods = {r.name: pods_of(r, workload) for r in rs}
                if router is not None:
                    router.stop()  # quiet while the store fills; restarted on the bigger store
                log(f"{workload} N={n}: writing {n - have} routes (+ services, endpoints)")
                secs = await populate(client, rs[have:], pods, self.pod_port)
                have = n
                work = self.base / f"r{workload[0]}{n}"
                # The cold pass is pure computation: timed before the router starts, so
                # its start-up (status writes, the first reloads) does not compete.
                render = await render_times(store_url, work / "router")  # as RouterProcess
                log(
                    f"{workload} N={n}: written in {secs:.1f}s, cold pass "
                    f"{render['runs_total_s']} s; starting shiftnet router"
                )
                router = RouterProcess(work, store_url, self.args.reload_interval)
                router.start()
                last = rs[-1]
                serve_s = await router.wait_ready(last.host, last.path or "/", pods[last.name][0])
                status_s = await wait_statuses(client, n)
                log(
                    f"{workload} N={n}: serving after {serve_s:.1f}s, statuses after "
                    f"+{status_s:.1f}s"
                )
                row = await self.size(
                    workload,
                    n,
                    client,
                    router,
                    rs,
                    pods,
                    ref=(ref_router, ref_targets),
                    render=render,
                )
                row["router_first_serve_s"] = round(serve_s, 2)
                row["router_statuses_s"] = round(serve_s + status_s, 2)
                row["store_write_s"] = round(secs, 1)
                self.rows.append(row)
                self.print_row(row)
            if extras and router is not None:
                rs = routes(self.args.sizes[-1])
                await self.extra_measurements(client, router, rs)
        finally:
            if router is not None:
                router.stop()
            ref_router.stop()
            await store.close()
            await ref_store.close()

    # ------------------------------------------------------------- extras
    async def extra_measurements(
        self, client: Client, router: RouterProcess, rs: list[BenchRoute]
    ) -> None:
        n = len(rs)
        port = router.http_port
        ex: dict[str, Any] = {"routes": n, "reload_interval": self.args.reload_interval}
        spare = iter(range(SPARES))

        # Route created -> first 200, one route at a time.
        lat: list[float] = []
        reloads0 = router.metrics().get("shiftnet_router_reloads_total", 0)
        log(f"extras N={n}: route created -> first 200 x{self.args.samples}")
        budget_end = time.monotonic() + self.args.samples_budget
        for k in range(self.args.samples):
            if k >= 10 and time.monotonic() > budget_end:
                log(
                    f"extras: route-add budget of {self.args.samples_budget:.0f}s spent "
                    f"after {k} samples"
                )
                break
            name, ip = f"add-{k:03d}", spare_ip(next(spare))
            host = f"{name}.add.example.com"
            await client.create(service(name, self.pod_port))
            await client.create(endpoints(name, [ip], self.pod_port))
            await asyncio.sleep(0.3)  # the Service/Endpoints sync settles first
            t0 = time.monotonic()
            await client.create(route(BenchRoute(0, name, host, "")))
            while True:
                status, body = await get(port, host, "/", timeout=2)
                if status == 200 and body == ip:
                    break
                if time.monotonic() - t0 > 60:
                    raise RuntimeError(f"route {name} not served in 60s")
                await asyncio.sleep(0.01)
            lat.append(time.monotonic() - t0)
        ex["route_add_samples"] = len(lat)
        ex["route_add_p50_s"] = round(pct(lat, 50), 3)
        ex["route_add_p99_s"] = round(pct(lat, 99), 3)
        ex["route_add_max_s"] = round(max(lat), 3)
        ex["route_add_reloads"] = (
            router.metrics().get("shiftnet_router_reloads_total", 0) - reloads0
        )

        # Pod ready -> traffic: 0 -> 1 ready pods, and 1 -> 2 (a scale-up).
        for label, first_ready in (("pod_ready_0to1", False), ("pod_ready_1to2", True)):
            names = [f"{label.replace('_', '-')}-{k}" for k in range(self.args.pod_samples)]
            plan = {}
            for name in names:
                a, b = spare_ip(next(spare)), spare_ip(next(spare))
                plan[name] = (a, b)
                await client.create(service(name, self.pod_port))
                ready = [a] if first_ready else []
                not_ready = [b] if first_ready else [a]
                await client.create(endpoints(name, ready, self.pod_port, not_ready))
                await client.create(route(BenchRoute(0, name, f"{name}.ready.example.com", "")))
            # wait until every one of these routes is served (503 or 200, not the unknown host)
            await asyncio.sleep(1.0)
            for name in names:
                host = f"{name}.ready.example.com"
                want = plan[name][0] if first_ready else None
                t0 = time.monotonic()
                while time.monotonic() - t0 < 120:
                    status, body = await get(port, host, "/", timeout=2)
                    if (want and status == 200 and body == want) or (not want and status == 503):
                        break
                    await asyncio.sleep(0.05)
            await asyncio.sleep(1.5)
            m0 = router.metrics()
            lat = []
            budget_end = time.monotonic() + self.args.samples_budget / 3
            for name in names:
                if len(lat) >= 3 and time.monotonic() > budget_end:
                    log(f"extras: {label} budget spent after {len(lat)} samples")
                    break
                a, b = plan[name]
                host = f"{name}.ready.example.com"
                new = b if first_ready else a
                ready = [a, b] if first_ready else [a]

                def make_ready(obj: Endpoints, ready: list[str] = ready) -> Endpoints:
                    obj.subsets = endpoints(obj.metadata.name, ready, self.pod_port).subsets
                    return obj

                t0 = time.monotonic()
                await client.mutate(Endpoints, NAMESPACE, name, make_ready)
                while True:
                    status, body = await get(port, host, "/", timeout=2)
                    if status == 200 and body == new:
                        break
                    if time.monotonic() - t0 > 60:
                        raise RuntimeError(f"{name}: new pod got no traffic in 60s")
                    await asyncio.sleep(0.002)
                lat.append(time.monotonic() - t0)
                await asyncio.sleep(1.0)  # let a reload this change caused settle first
            m1 = router.metrics()
            ex[label] = {
                "p50_ms": round(pct(lat, 50) * 1000, 1),
                "p99_ms": round(pct(lat, 99) * 1000, 1),
                "samples": len(lat),
                "reloads": m1.get("shiftnet_router_reloads_total", 0)
                - m0.get("shiftnet_router_reloads_total", 0),
                "runtime_updates": m1.get("shiftnet_router_runtime_updates_total", 0)
                - m0.get("shiftnet_router_runtime_updates_total", 0),
                "fallbacks": m1.get("shiftnet_router_runtime_fallbacks_total", 0)
                - m0.get("shiftnet_router_runtime_fallbacks_total", 0),
            }
            log(f"extras: {label} {ex[label]}")

        # A wrk run with one route or endpoint change per second.
        log(f"extras N={n}: {self.args.churn_seconds}s wrk with a change every second")
        reqs = requests(rs)
        targets = wrk.write_targets(self.base / "targets-churn.txt", reqs)
        churn_names = [f"churn-{k:03d}" for k in range(self.args.churn_seconds // 2 + 2)]
        for name in churn_names:
            await client.create(service(name, self.pod_port))
            await client.create(endpoints(name, [spare_ip(next(spare))], self.pod_port))
        flips = [rs[i * max(1, n // 16)] for i in range(16)]
        flip_spare = {r.name: spare_ip(next(spare)) for r in flips}
        await asyncio.sleep(2.0)
        m0 = router.metrics()
        task = asyncio.create_task(
            asyncio.to_thread(
                self.wrk, f"http://127.0.0.1:{port}/", targets, "churn", self.args.churn_seconds
            )
        )
        changes = {"route_create": 0, "route_delete": 0, "endpoint_change": 0}
        created: list[str] = []
        t_start = time.monotonic()
        tick = 0
        while time.monotonic() - t_start < self.args.churn_seconds - 1:
            tick += 1
            if tick % 2 == 1:
                if tick % 4 == 1 or not created:
                    name = churn_names[len(created) % len(churn_names)]
                    await client.create(route(BenchRoute(0, name, f"{name}.churn.example.com", "")))
                    created.append(name)
                    changes["route_create"] += 1
                else:
                    await client.delete(Route, NAMESPACE, created[-1])
                    changes["route_delete"] += 1
            else:
                r = flips[(tick // 2) % len(flips)]
                own = pods_of(r, OWN)[0]

                def flip(obj: Endpoints, r: BenchRoute = r, own: str = own) -> Endpoints:
                    cur = obj.subsets[0].addresses[0].ip if obj.subsets else own
                    nxt = flip_spare[r.name] if cur == own else own
                    obj.subsets = endpoints(r.name, [nxt], self.pod_port).subsets
                    return obj

                await client.mutate(Endpoints, NAMESPACE, r.name, flip)
                changes["endpoint_change"] += 1
            await asyncio.sleep(max(0.0, t_start + tick - time.monotonic()))
        churn = await task
        m1 = router.metrics()
        ex["churn"] = {
            "seconds": self.args.churn_seconds,
            "changes": changes,
            "wrk": churn,
            "failed_requests": churn["errors"],
            "reloads": m1.get("shiftnet_router_reloads_total", 0)
            - m0.get("shiftnet_router_reloads_total", 0),
            "runtime_updates": m1.get("shiftnet_router_runtime_updates_total", 0)
            - m0.get("shiftnet_router_runtime_updates_total", 0),
        }
        log(f"extras: churn {ex['churn']}")
        ex["router_rss_mb"] = round(router.router_rss_kb() / 1024, 1)
        hrss, hcount = router.haproxy_rss_kb()
        ex["haproxy_rss_mb"] = round(hrss / 1024, 1)
        ex["haproxy_processes"] = hcount
        m = router.metrics()
        ex["reloads_total"] = m.get("shiftnet_router_reloads_total", 0)
        ex["runtime_updates_total"] = m.get("shiftnet_router_runtime_updates_total", 0)
        ex["runtime_fallbacks_total"] = m.get("shiftnet_router_runtime_fallbacks_total", 0)
        ex["reload_seconds_avg"] = (
            round(
                m["template_router_reload_seconds_sum"] / m["template_router_reload_seconds_count"],
                3,
            )
            if m.get("template_router_reload_seconds_count")
            else None
        )
        ex["write_config_seconds_avg"] = (
            round(
                m["template_router_write_config_seconds_sum"]
                / m["template_router_write_config_seconds_count"],
                3,
            )
            if m.get("template_router_write_config_seconds_count")
            else None
        )
        self.extras = ex

    # ------------------------------------------------------------- output
    @staticmethod
    def print_row(row: dict[str, Any]) -> None:
        log(
            f"{row['workload']} N={row['routes']}: shiftnet {row['shiftnet']['rps']:.0f} req/s "
            f"(errors {row['shiftnet']['errors']}, wrong {row['shiftnet_wrong']}), "
            f"openshift {row['openshift']['rps']:.0f} req/s (errors {row['openshift']['errors']}, "
            f"wrong {row['openshift_wrong']}), direct {row['direct']['rps']:.0f} req/s; "
            f"render cold {row['render']['render_cold_s']}s"
        )
        for which in ("shiftnet", "shiftnet_ref", "lookup_only", "openshift"):
            if which in row:
                log(
                    f"  {which}: rounds {row[which]['rounds_rps']} req/s, HAProxy CPU "
                    f"{row[which].get('haproxy_cpu_us_per_request', [])} us/request"
                )

    def verdicts(self) -> list[tuple[str, str, bool | None]]:
        out: list[tuple[str, str, bool | None]] = []
        by = {(r["workload"], r["routes"]): r for r in self.rows}
        lo, hi = self.args.sizes[0], self.args.sizes[-1]
        if (SHARED, lo) in by and (SHARED, hi) in by:
            big = by[(SHARED, hi)]
            ratio = big.get("shiftnet_over_ref", 0.0)
            a, b = by[(SHARED, lo)]["shiftnet"]["rps"], big["shiftnet"]["rps"]
            apart = b / a if a else 0.0
            cpu = [
                by[(SHARED, hi)].get(k, {}).get("haproxy_cpu_us_per_request_median")
                for k in ("shiftnet_ref", "shiftnet", "lookup_only")
            ]
            out.append(
                (
                    f"lookup: shared pods, shiftnet req/s at N={hi} / at N={lo} >= 0.9 "
                    f"(same rounds; per-round pairs: {big.get('shiftnet_over_ref_paired')}; "
                    f"runs minutes apart: {apart:.2f}; HAProxy CPU us/request at "
                    f"N={lo} / N={hi} / N={hi} one backend: {cpu[0]} / {cpu[1]} / {cpu[2]}; "
                    f"one backend / N={lo}: {big.get('lookup_only_over_ref')})",
                    f"{ratio:.2f}",
                    ratio >= 0.9,
                )
            )
        if (OWN, hi) in by:
            r = by[(OWN, hi)]["shiftnet_over_openshift"] or 0.0
            out.append(
                (f"own pods N={hi}: shiftnet / OpenShift-style req/s >= 5", f"{r:.2f}", r >= 5)
            )
        wrong = sum(r["shiftnet_wrong"] for r in self.rows)
        out.append(("shiftnet routes every probe to the right pod", f"{wrong} wrong", wrong == 0))
        ex = self.extras
        if ex:
            out.append(
                (
                    f"route created -> first 200 p50 < 1 s (N={ex['routes']})",
                    f"p50 {ex['route_add_p50_s']}s p99 {ex['route_add_p99_s']}s "
                    f"({ex['route_add_samples']} routes)",
                    ex["route_add_p50_s"] < 1.0,
                )
            )
            for label in ("pod_ready_0to1", "pod_ready_1to2"):
                d = ex[label]
                out.append(
                    (
                        f"{label.replace('_', ' ')} -> traffic p50 < 100 ms "
                        "(reloads counted, not awaited)",
                        f"p50 {d['p50_ms']}ms, reloads {d['reloads']:.0f}, runtime updates "
                        f"{d['runtime_updates']:.0f}, fallbacks {d['fallbacks']:.0f}",
                        d["p50_ms"] < 100,
                    )
                )
            out.append(
                ("router RSS < 300 MB", f"{ex['router_rss_mb']} MB", ex["router_rss_mb"] < 300)
            )
            c = ex["churn"]
            out.append(
                (
                    f"{c['seconds']} s wrk with a change every second: 0 failed",
                    f"{c['failed_requests']} failed of {c['wrk']['requests']}",
                    c["failed_requests"] == 0,
                )
            )
        if self.rows:
            big = self.rows[-1]["render"]
            whole = big["admit_s"] + big["model_s"] + big["render_cold_s"]
            out.append(
                (
                    f"render {big['routes']} routes < 1 s (cold render step, fresh process)",
                    f"{big['render_cold_s']:.2f}s; warm {big['render_warm_s']:.2f}s",
                    big["render_cold_s"] < 1.0,
                )
            )
            out.append(
                (
                    f"whole cold pass {big['routes']} routes < 1 s "
                    "(admission+model+render; the router does it once, at start)",
                    f"{whole:.2f}s (runs {big.get('runs_total_s')})",
                    whole < 1.0,
                )
            )
        return out

    def table(self) -> str:
        lines = [
            "| workload | routes | shiftnet req/s | shiftnet at smallest N, same rounds | "
            "OpenShift-style req/s | direct req/s | "
            "shiftnet/OpenShift | shiftnet p99 ms | OpenShift p99 ms | errors sn/os | "
            "wrong sn/os | "
            "render cold s | router RSS MB | HAProxy RSS MB sn/os |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|",
        ]
        for r in self.rows:
            rd = r["render"]
            lines.append(
                f"| {r['workload']} | {r['routes']:,} | {r['shiftnet']['rps']:,.0f} | "
                f"{r.get('shiftnet_ref', {}).get('rps', 0):,.0f} | "
                f"{r['openshift']['rps']:,.0f} | {r['direct']['rps']:,.0f} | "
                f"{r['shiftnet_over_openshift']} | {r['shiftnet']['p99_ms']} | "
                f"{r['openshift']['p99_ms']} | "
                f"{r['shiftnet']['errors']}/{r['openshift']['errors']} | "
                f"{r['shiftnet_wrong']}/{r['openshift_wrong']} | "
                f"{rd['admit_s'] + rd['model_s'] + rd['render_cold_s']:.2f} | "
                f"{r['router_rss_mb']} | {r['shiftnet_haproxy_rss_mb']}/"
                f"{r['openshift_haproxy_rss_mb']} |"
            )
        lines.append("")
        lines.append("| target | measured | met |")
        lines.append("|---|---|---|")
        for what, val, ok in self.verdicts():
            lines.append(f"| {what} | {val} | {'yes' if ok else 'NO'} |")
        return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--sizes", default="10,1000,10000", help="route counts, ascending (default 10,1000,10000)"
    )
    p.add_argument("--workloads", default=f"{SHARED},{OWN}")
    p.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run")
    p.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="interleaved wrk rounds per configuration (median reported; 5: per-round "
        "noise on this machine is ±20 %%, the lookup target is 10 %%)",
    )
    p.add_argument("--connections", type=int, default=64)
    p.add_argument(
        "--no-lookup-only",
        action="store_true",
        help="skip the diagnostic configuration that serves every route's lookup "
        "from one backend (routerbench/lookup_only.py)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=2.0,
        help="seconds of unmeasured wrk right before each measured run (0: none). "
        "HAProxy keeps idle connections per server and purges those unused "
        "for 5 s; while the other configurations run, a 10,000-route router "
        "loses them, and its first seconds open a connection per backend",
    )
    p.add_argument("--churn-seconds", type=int, default=60)
    p.add_argument("--samples", type=int, default=50, help="routes for created -> first 200")
    p.add_argument(
        "--samples-budget",
        type=float,
        default=420.0,
        help="stop route-add sampling after this many seconds (at least 10 samples)",
    )
    p.add_argument("--pod-samples", type=int, default=10)
    p.add_argument(
        "--reload-interval",
        default="0s",
        help="RELOAD_INTERVAL for the router (default 0s: every change as fast "
        "as the reload path allows; OpenShift's default is 5s)",
    )
    p.add_argument(
        "--no-extras",
        action="store_true",
        help="only the req/s rounds (no latency, pod-ready or churn measurements)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: sizes 10,200, 3 s wrk runs, 10 s churn, 5 samples",
    )
    p.add_argument("--json", default=str(ROOT / "bench" / "results" / "router_scale.json"))
    args = p.parse_args(argv)
    if args.quick:
        if args.sizes == "10,1000,10000":
            args.sizes = "10,200"
        args.duration, args.churn_seconds, args.rounds = 3.0, 10, 2
        args.samples, args.pod_samples = 5, 3
    args.sizes = sorted(int(s) for s in str(args.sizes).split(","))
    args.workloads = [w for w in args.workloads.split(",") if w]
    for w in args.workloads:
        if w not in (SHARED, OWN):
            p.error(f"--workloads: unknown workload {w!r} (use {SHARED},{OWN})")
    return args


async def run(args: argparse.Namespace, base: Path) -> Bench:
    bench = Bench(args, base)
    biggest = args.sizes[-1]
    addrs = [pod_ip(i) for i in range(biggest)] + [spare_ip(i) for i in range(SPARES)]
    log(f"starting nginx on {len(addrs)} loopback addresses, port {bench.pod_port}")
    responder = Responder(base / "nginx", addrs, bench.pod_port).start()
    try:
        for i, w in enumerate(args.workloads):
            await bench.workload(w, extras=i == len(args.workloads) - 1 and not args.no_extras)
    finally:
        responder.stop()
    return bench


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="rb-", dir="/tmp"))

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    try:
        bench = asyncio.run(run(args, base))
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        procs.stop_all()
        procs.kill_haproxy(str(base))
        shutil.rmtree(base, ignore_errors=True)
    table = bench.table()
    print()
    print(table)
    out = {
        "started": started,
        "command": "python bench/router_scale.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": {
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "nofile": __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE),
        },
        "haproxy_maxconn": bench.maxconn,
        "haproxy_nbthread": bench.nbthread,
        "args": {k: v for k, v in vars(args).items() if k != "json"},
        "rows": bench.rows,
        "extras": bench.extras,
        "verdicts": [{"target": a, "measured": b, "met": c} for a, b, c in bench.verdicts()],
        "table": table,
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"\nJSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
