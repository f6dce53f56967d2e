"""``shiftnet dns``: run the cluster DNS; ``shiftnet dns resolv-conf NS``: a pod's resolv.conf."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from shiftnet.dns.config import (
    DEFAULT_CHASE_TIMEOUT,
    DEFAULT_DOMAIN,
    DEFAULT_LISTEN,
    DEFAULT_MAX_TCP_CONNECTIONS,
    DEFAULT_POD_MODE,
    DEFAULT_TCP_IDLE_TIMEOUT,
    NODATA_OR_CNAME,
    NODATA_OR_RRSETS,
    NXDOMAIN_OR_NODATA,
    DNSConfig,
)
from shiftnet.dns.resolvconf import render_resolv_conf


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "dns",
        help="serve cluster DNS (service names) from the store",
        description="Answer <svc>.<ns>.svc.<domain> and friends from Services and Endpoints "
        "(Kubernetes DNS schema 1.1.0); forward other names to --upstream resolvers.",
    )
    _common(p)
    p.add_argument(
        "--ttl",
        type=int,
        help="TTL of cluster answers in seconds (env SHIFTNET_DNS_TTL; default 5)",
    )
    p.add_argument(
        "--upstream",
        action="append",
        default=[],
        metavar="ADDR[:PORT]",
        help="resolver for names outside the cluster domain; repeatable "
        "(env SHIFTNET_DNS_UPSTREAM, comma-separated). Without one, such queries are REFUSED",
    )
    p.add_argument(
        "--tcp-idle-timeout",
        type=float,
        metavar="SECONDS",
        help="close a TCP client that sends no query for this long (env "
        f"SHIFTNET_DNS_TCP_IDLE_TIMEOUT; default {DEFAULT_TCP_IDLE_TIMEOUT:g})",
    )
    p.add_argument(
        "--chase-timeout",
        type=float,
        metavar="SECONDS",
        help="give up looking an ExternalName's target up upstream after this long and answer "
        f"the CNAME alone (env SHIFTNET_DNS_CHASE_TIMEOUT; default {DEFAULT_CHASE_TIMEOUT:g})",
    )
    p.add_argument(
        "--max-tcp-connections",
        type=int,
        metavar="N",
        help="TCP clients served at once; at the limit the longest idle one is closed to admit "
        f"a new one (env SHIFTNET_DNS_MAX_TCP_CONNECTIONS; default {DEFAULT_MAX_TCP_CONNECTIONS})",
    )
    p.add_argument(
        "--headless-empty",
        choices=NXDOMAIN_OR_NODATA,
        help="answer for a headless service without ready endpoints: nxdomain (CoreDNS, the "
        "default) or nodata (the Kubernetes DNS specification); env SHIFTNET_DNS_HEADLESS_EMPTY",
    )
    p.add_argument(
        "--empty-non-terminal",
        choices=NXDOMAIN_OR_NODATA,
        help="answer for a name with only names below it (_tcp.<svc>..., 0.3.10.in-addr.arpa): "
        "nxdomain (CoreDNS, the default) or nodata (RFC 8020); env "
        "SHIFTNET_DNS_EMPTY_NON_TERMINAL",
    )
    p.add_argument(
        "--externalname-other",
        choices=NODATA_OR_CNAME,
        help="answer for an ExternalName asked for a type other than A, AAAA or CNAME: nodata "
        "(CoreDNS, the default) or cname (RFC 1034: the client follows it); env "
        "SHIFTNET_DNS_EXTERNALNAME_OTHER",
    )
    p.add_argument(
        "--any-query",
        choices=NODATA_OR_RRSETS,
        help="answer for qtype ANY: nodata (CoreDNS, the default: the name's rcode, no "
        "records) or rrsets (every RRset at the name); env SHIFTNET_DNS_ANY_QUERY",
    )
    p.add_argument(
        "--dns-version-other",
        choices=NXDOMAIN_OR_NODATA,
        help="answer for dns-version.<domain> asked for a type other than TXT: nxdomain "
        "(CoreDNS, the default) or nodata (the name exists); env "
        "SHIFTNET_DNS_DNS_VERSION_OTHER",
    )
    p.add_argument(
        "--pods",
        choices=("disabled", "insecure", "verified"),
        help="pod records <a-b-c-d>.<ns>.pod.<domain>: insecure answers any address in a "
        "namespace that exists, verified only a pod's own, disabled none (env "
        f"SHIFTNET_DNS_PODS; default {DEFAULT_POD_MODE}, as Kubernetes configures CoreDNS)",
    )
    p.add_argument(
        "--wildcards",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="answer kube-dns wildcard queries ('*' as the endpoint, service, namespace, port "
        "or protocol label; env SHIFTNET_DNS_WILDCARDS; default off, as CoreDNS 1.9+)",
    )
    p.add_argument(
        "--metrics-listen",
        metavar="ADDR:PORT",
        default=os.environ.get("SHIFTNET_DNS_METRICS_LISTEN") or None,
        help="serve Prometheus metrics (CoreDNS's names) on ADDR:PORT/metrics; :PORT means "
        "127.0.0.1 (env SHIFTNET_DNS_METRICS_LISTEN; default off)",
    )
    p.set_defaults(func=run_server)
    sub = p.add_subparsers(dest="dns_command", metavar="[resolv-conf NAMESPACE]")
    rc = sub.add_parser(
        "resolv-conf",
        help="print the resolv.conf a pod of NAMESPACE gets",
        description="Print the search path, nameserver and options a pod of NAMESPACE uses.",
    )
    rc.add_argument("namespace", metavar="NAMESPACE")
    _common(rc)
    rc.set_defaults(func=run_resolv_conf)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--listen",
        metavar="ADDR:PORT",
        default=argparse.SUPPRESS,
        help=f"UDP and TCP address (env SHIFTNET_DNS_LISTEN; default {DEFAULT_LISTEN})",
    )
    p.add_argument(
        "--domain",
        default=argparse.SUPPRESS,
        help=f"cluster domain (env SHIFTNET_DNS_DOMAIN; default {DEFAULT_DOMAIN})",
    )


def _config(args: argparse.Namespace) -> DNSConfig:
    return DNSConfig.build(
        listen=getattr(args, "listen", None),
        domain=getattr(args, "domain", None),
        ttl=getattr(args, "ttl", None),
        upstreams=getattr(args, "upstream", []),
        headless_empty=getattr(args, "headless_empty", None),
        empty_non_terminal=getattr(args, "empty_non_terminal", None),
        externalname_other=getattr(args, "externalname_other", None),
        any_query=getattr(args, "any_query", None),
        dns_version_other=getattr(args, "dns_version_other", None),
        tcp_idle_timeout=getattr(args, "tcp_idle_timeout", None),
        max_tcp_connections=getattr(args, "max_tcp_connections", None),
        chase_timeout=getattr(args, "chase_timeout", None),
        pod_mode=getattr(args, "pods", None),
        wildcards=getattr(args, "wildcards", None),
    )


def run_resolv_conf(args: argparse.Namespace) -> int:
    from shiftnet.errors import InvalidInput

    cfg = _config(args)
    try:
        text = render_resolv_conf(
            args.namespace, [(cfg.listen_host, cfg.listen_port)], cfg.zone_domain
        )
    except ValueError as exc:
        raise InvalidInput(f"namespace {args.namespace!r} is invalid: {exc}") from None
    sys.stdout.write(text)
    return 0


def run_server(args: argparse.Namespace) -> int:
    from shiftnet.cli.runtime import metrics_address, run_async, serve_metrics

    cfg = _config(args)
    if args.metrics_listen:
        metrics_address(args.metrics_listen)  # a bad flag fails before anything starts

    async def serve() -> int:
        from shiftnet.dns import DNSServer
        from shiftnet.private_files import ensure_private_dir
        from shiftnet.store import open_store

        if args.store.startswith("sqlite:"):
            ensure_private_dir(args.state_dir)
        store = open_store(args.store)
        server = DNSServer(store, cfg)
        endpoint = None
        try:
            await server.start()
            if args.metrics_listen:  # the collector turns on per-query counting: only if served
                from shiftnet.dns.metrics import DNSCollector

                endpoint = serve_metrics(args.metrics_listen, DNSCollector(server))
            host, port = server.address
            print(f"cluster DNS for {cfg.zone_domain} on {host}:{port} (udp, tcp)", flush=True)
            if endpoint is not None:
                print(f"metrics on {endpoint.url}", flush=True)
            await asyncio.Event().wait()
        finally:
            if endpoint is not None:
                endpoint.stop()
            await server.stop()
            await store.close()
        return 0

    return int(run_async(serve))
