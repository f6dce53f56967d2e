"""Markdown for docs/performance.md from a router_scale JSON result.

.venv/bin/python bench/routerbench/report.py bench/results/router_scale.json
"""

from __future__ import annotations

import json
import sys


def extras_table(ex: dict) -> str:
    c = ex["churn"]
    ch = c["changes"]
    rows = [
        (
            f"route created → first 200 ({ex['route_add_samples']} routes, one at a time)",
            f"p50 {ex['route_add_p50_s']} s, p99 {ex['route_add_p99_s']} s, "
            f"max {ex['route_add_max_s']} s; {ex['route_add_reloads']:.0f} reloads",
        ),
    ]
    for label, what in (("pod_ready_0to1", "0 → 1"), ("pod_ready_1to2", "1 → 2")):
        d = ex[label]
        rows.append(
            (
                f"pod ready → traffic, {what} ready pods ({d['samples']} routes)",
                f"p50 {d['p50_ms']} ms, p99 {d['p99_ms']} ms; "
                f"{d['runtime_updates']:.0f} runtime updates, {d['reloads']:.0f} reloads, "
                f"{d['fallbacks']:.0f} fallbacks",
            )
        )
    rows += [
        (
            "reload / write+check (metric averages over the router's run)",
            f"{ex['reload_seconds_avg']} s / {ex['write_config_seconds_avg']} s",
        ),
        (
            f"{c['seconds']} s wrk, one change per second ({ch['route_create']} route creates, "
            f"{ch['route_delete']} deletes, {ch['endpoint_change']} endpoint changes)",
            f"**{c['failed_requests']} failed** of {c['wrk']['requests']:,} requests; "
            f"{c['reloads']:.0f} reloads, {c['runtime_updates']:.0f} runtime updates in the window",
        ),
        (
            "reloads / runtime updates / fallbacks over the router's whole run",
            f"{ex['reloads_total']:.0f} / {ex['runtime_updates_total']:.0f} / "
            f"{ex['runtime_fallbacks_total']:.0f}",
        ),
        (
            "router RSS / HAProxy RSS (master + workers) at the end",
            f"{ex['router_rss_mb']} MB / {ex['haproxy_rss_mb']} MB "
            f"({ex['haproxy_processes']} processes)",
        ),
    ]
    out = ["| measurement | result |", "|---|---|"]
    out += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(out)


def per_size(rows: list[dict]) -> str:
    out = [
        "| workload | routes | first served / statuses s | haproxy -c s sn/os | "
        "admit / model / render cold / warm s | router CPU share in rounds | maxconn |",
        "|---|---:|---|---|---|---:|---:|",
    ]
    for r in rows:
        rd = r["render"]
        out.append(
            f"| {r['workload']} | {r['routes']:,} | {r['router_first_serve_s']} / "
            f"{r['router_statuses_s']} | {r['shiftnet_check_s']} / {r['openshift_check_s']} | "
            f"{rd['admit_s']} / {rd['model_s']} / {rd['render_cold_s']} / {rd['render_warm_s']} | "
            f"{r.get('router_cpu_share_during_rounds', '')} | {r.get('shiftnet_maxconn', '')} |"
        )
    return "\n".join(out)


def main() -> None:
    with open(sys.argv[1]) as fh:
        d = json.load(fh)
    print(d["table"])
    print()
    print(per_size(d["rows"]))
    if d.get("extras"):
        print()
        print(extras_table(d["extras"]))


if __name__ == "__main__":
    main()
