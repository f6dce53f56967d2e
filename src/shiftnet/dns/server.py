"""The cluster DNS server: informers in, UDP and TCP answers out.

Services, their endpoints (EndpointSlices, or Endpoints where a Service has
no slices: :mod:`shiftnet.service_endpoints`), Namespaces and the
ClusterNetwork (and Pods, when pod records are ``verified``) arrive through
the shared informers; every burst of changes rebuilds the
:class:`~shiftnet.dns.zone.Zone` once (coalesced) and swaps it into the
:class:`~shiftnet.dns.responder.Responder`. A burst of nothing but pod
changes that leaves the namespaces as they were only gives the zone a new
snapshot of the pod index (:mod:`shiftnet.dns.podindex`). The UDP socket
is drained in a loop on each readiness event (one epoll wake-up serves many
queries), which is what lets one Python core answer tens of thousands of
queries a second. Nothing a client sends can stop the loop: every packet is
handled inside its own guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from typing import Any

from shiftnet.api import ClusterNetwork, Endpoints, EndpointSlice, Namespace, Pod, Service
from shiftnet.dns.chase import chase
from shiftnet.dns.config import DNSConfig
from shiftnet.dns.podindex import PodIPIndex
from shiftnet.dns.records import network_cidrs
from shiftnet.dns.responder import Chase, Forward, Responder
from shiftnet.dns.tcp_slots import TCPSlots
from shiftnet.dns.traffic import Traffic
from shiftnet.dns.upstream import Upstreams
from shiftnet.dns.zone import MAX_CNAME_CHAIN, Zone, ZoneConfig, build_zone
from shiftnet.errors import ConfigError, shorten
from shiftnet.informer import Informers
from shiftnet.runner import CoalescingRunner
from shiftnet.service_endpoints import ServiceEndpoints
from shiftnet.store.base import Store

log = logging.getLogger(__name__)

UDP_BATCH = 256  # datagrams handled per readiness event before yielding to the loop
RCVBUF = 4 * 1024 * 1024
TCP_BACKLOG = 1024  # a burst of new TCP clients waits in the kernel, not in SYN retries


class DNSServer:
    """``DNSServer(store, config)``: ``await start()``, answer queries, ``await stop()``."""

    def __init__(
        self, store: Store, config: DNSConfig | None = None, *, informers: Informers | None = None
    ) -> None:
        self.store = store
        self.config = config or DNSConfig()
        self.informers = informers or Informers(store)
        self._own_informers = informers is None
        self.zone_config = ZoneConfig(
            domain=self.config.zone_domain,
            ttl=self.config.ttl,
            nameservers=self._nameservers(),
            headless_empty_nxdomain=self.config.headless_empty_nxdomain,
            pod_mode=self.config.pod_mode,
            wildcards=self.config.wildcards,
            empty_non_terminal_nxdomain=self.config.empty_non_terminal_nxdomain,
            externalname_other_cname=self.config.externalname_other_cname,
            any_rrsets=self.config.any_rrsets,
            dns_version_other_nxdomain=self.config.dns_version_other_nxdomain,
        )
        self.upstreams = (
            Upstreams(self.config.upstreams, timeout=self.config.upstream_timeout)
            if self.config.upstreams
            else None
        )
        self.responder = Responder(
            build_zone([], [], self.zone_config),
            forwarding=self.upstreams is not None,
            max_udp_size=self.config.max_udp_size,
        )
        self.runner = CoalescingRunner(
            self._rebuild, min_interval=self.config.sync_interval, name="dns-zone"
        )
        self.stats: dict[str, int] = {
            "udp_queries": 0,
            "tcp_queries": 0,
            "fast_answers": 0,
            "forwarded": 0,
            "chased": 0,
            "dropped": 0,
            "internal_errors": 0,
            "zone_builds": 0,
            "pod_updates": 0,
            "tcp_evicted": 0,
            "tcp_refused": 0,
        }
        # CoreDNS's series (metrics.py): counted only once a collector asks for them,
        # since counting costs each query a few microseconds (docs/dns.md, Metrics)
        self.traffic: Traffic | None = None
        self._udp: socket.socket | None = None
        self._tcp: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._tcp_slots: TCPSlots[asyncio.StreamWriter] = TCPSlots(self.config.max_tcp_connections)
        self._forwards = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pod_index = PodIPIndex()  # verified pod records
        # each Service's endpoints from its EndpointSlices (its Endpoints when it has none)
        self.service_endpoints = ServiceEndpoints(self.informers)
        self._records_dirty = True  # something besides pods changed since the last build

    def count_traffic(self) -> Traffic:
        """Start counting queries for CoreDNS's series (idempotent); returns the counts."""
        if self.traffic is None:
            self.traffic = Traffic()
        return self.traffic

    def _nameservers(self) -> tuple[str, ...]:
        host = self.config.listen_host
        return () if host in ("0.0.0.0", "::") else (host,)

    # ------------------------------------------------------------ lifecycle

    @property
    def zone(self) -> Zone:
        return self.responder.zone

    @property
    def address(self) -> tuple[str, int]:
        """Where the server listens (the real port when the config asked for port 0)."""
        if self._udp is None:
            raise RuntimeError("DNS server is not started")
        host, port = self._udp.getsockname()[:2]
        return host, port

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        for kind in self._kinds():
            handler = self._pod_changed if kind is Pod else self._changed
            self.informers.informer(kind).add_handler(handler)
        await self.informers.start()
        await self._rebuild()
        await self.runner.start()
        try:
            await self._bind_both()
        except OSError as exc:
            await self.stop()
            where = f"{self.config.listen_host}:{self.config.listen_port}"
            raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
        log.info(
            "dns serving address=%s:%d domain=%s upstreams=%d",
            *self.address,
            self.config.zone_domain,
            len(self.config.upstreams),
        )

    async def _bind_both(self) -> None:
        """UDP and TCP on the same port; with port 0, retry until both get the same one."""
        for attempt in range(10):
            self._bind_udp()
            try:
                await self._start_tcp()
                return
            except OSError:
                self._close_udp()
                if self.config.listen_port != 0 or attempt == 9:
                    raise

    def _close_udp(self) -> None:
        if self._udp is not None and self._loop is not None:
            self._loop.remove_reader(self._udp.fileno())
            self._udp.close()
            self._udp = None

    def _bind_udp(self) -> None:
        host, port = self.config.listen_host, self.config.listen_port
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        udp = socket.socket(family, socket.SOCK_DGRAM)
        try:
            udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
            udp.setblocking(False)
            udp.bind((host, port))
        except OSError:
            udp.close()
            raise
        self._udp = udp
        assert self._loop is not None
        self._loop.add_reader(udp.fileno(), self._on_udp_readable)

    async def _start_tcp(self) -> None:
        host, port = self.address
        self._tcp = await asyncio.start_server(
            self._serve_tcp, host, port, reuse_address=True, backlog=TCP_BACKLOG
        )

    async def stop(self) -> None:
        await self.runner.stop()
        self._close_udp()
        if self._tcp is not None:
            self._tcp.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._tcp.wait_closed(), 1.0)
            self._tcp = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._own_informers:
            await self.informers.stop()

    async def __aenter__(self) -> DNSServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------ zone

    def _kinds(self) -> list[type[Any]]:
        """What the zone is made of; Pods only when pod records are checked against them."""
        kinds: list[type[Any]] = [Service, Endpoints, EndpointSlice, Namespace, ClusterNetwork]
        return [*kinds, Pod] if self.config.pod_mode == "verified" else kinds

    def _changed(self, _event: str, _old: object, _new: object) -> None:
        self._records_dirty = True
        self.runner.kick()

    def _pod_changed(self, _event: str, old: Pod | None, new: Pod | None) -> None:
        if self._pod_index.changed(old, new):
            self._records_dirty = True  # a namespace gained its first pod or lost its last
        self.runner.kick()

    async def _rebuild(self) -> None:
        """Recompute the zone from the informer caches and swap it in; when only pods
        changed, the same zone with the pod index's new snapshot."""
        verified = self.config.pod_mode == "verified"
        if verified and not self._records_dirty:
            self.responder.set_zone(self.zone.with_pods(self._pod_index.snapshot()))
            self.stats["pod_updates"] += 1
            return
        started = time.perf_counter()
        self._records_dirty = False
        namespaces = {n.metadata.name for n in self.informers.informer(Namespace).list()}
        if verified:
            self._pod_index.reset(self.informers.informer(Pod).list())
            namespaces |= self._pod_index.namespaces()  # no Namespace object needed
        serial = max(max(self.informers.informer(k).revision for k in self._kinds()), 1)
        zone = build_zone(
            self.informers.informer(Service).list(),
            self.service_endpoints.list(),
            self.zone_config,
            serial=serial,
            namespaces=namespaces,
            pods=self._pod_index.snapshot(),
            networks=network_cidrs(self.informers.informer(ClusterNetwork).list()),
        )
        self.responder.set_zone(zone)
        self.stats["zone_builds"] += 1
        for p in zone.problems:
            log.warning(
                "left out of dns kind=%s namespace=%s name=%s reason=%s",
                p.kind,
                shorten(p.namespace),
                shorten(p.name),
                shorten(p.reason),
            )
        log.debug(
            "zone rebuilt serial=%d rrsets=%d seconds=%.4f",
            serial,
            len(zone),
            time.perf_counter() - started,
        )

    async def sync(self) -> None:
        """Rebuild now (tests and callers that just wrote to the store)."""
        await self.runner.flush()

    # ------------------------------------------------------------ UDP

    def _on_udp_readable(self) -> None:
        sock = self._udp
        if sock is None:
            return
        responder = self.responder
        stats = self.stats
        traffic = self.traffic
        clock = time.perf_counter
        for _ in range(UDP_BATCH):
            try:
                data, addr = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. an ICMP error queued for an earlier reply
                continue
            stats["udp_queries"] += 1
            if traffic is not None:
                start = clock()
                qtype = traffic.request(data, "udp", "2" if len(addr) > 2 else "1")
            else:
                start, qtype = 0.0, ""
            try:
                reply = responder.fast(data)
                if reply is not None:
                    stats["fast_answers"] += 1
                else:
                    reply = self._slow_udp(data, addr, qtype, start)
                if reply is not None:
                    sock.sendto(reply, addr)
                    if traffic is not None:
                        traffic.response(reply, "udp", qtype, clock() - start)
            except (BlockingIOError, InterruptedError):
                stats["dropped"] += 1  # send buffer full: the client retries
            except OSError:
                stats["dropped"] += 1
            except Exception as exc:  # a bug must cost one answer, never the server
                stats["internal_errors"] += 1
                log.error(
                    "dns query failed peer=%s error=%r",
                    addr,
                    exc,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )

    def _slow_udp(self, data: bytes, addr: Any, qtype: str, start: float) -> bytes | None:
        result = self.responder.respond(data, udp=True)
        if isinstance(result, (Forward, Chase)):
            self._forward(result, lambda wire: self._send_udp(wire, addr, qtype, start), udp=True)
            return None
        if result is None:
            self.stats["dropped"] += 1
        return result

    def _send_udp(self, wire: bytes, addr: Any, qtype: str, start: float) -> None:
        if self._udp is not None:
            with contextlib.suppress(OSError):
                self._udp.sendto(wire, addr)
                if self.traffic is not None:
                    self.traffic.response(wire, "udp", qtype, time.perf_counter() - start)

    # ------------------------------------------------------------ forwarding

    def _forward(self, work: Forward | Chase, send: Any, *, udp: bool) -> None:
        if self._forwards >= self.config.max_forwards_in_flight:
            self.stats["dropped"] += 1
            return
        assert self._loop is not None
        task = self._loop.create_task(self._answer_forwarded(work, send, udp))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _upstream_answer(self, work: Forward | Chase, udp: bool) -> bytes:
        """The response to a forwarded question, or to an ExternalName with its target chased."""
        assert self.upstreams is not None
        if isinstance(work, Chase):
            self.stats["chased"] += 1
            found = work.found
            assert found.chase is not None
            q = work.query.question[0]
            extra = await chase(
                self.upstreams,
                found.chase,
                q.rdtype,
                timeout=self.config.chase_timeout,
                links=MAX_CNAME_CHAIN - len(found.answer),
            )
            return self.responder.render_chased(work.query, found, extra, udp=udp)
        self.stats["forwarded"] += 1
        q = work.query.question[0]
        answer = await self.upstreams.resolve(q.name, q.rdtype, q.rdclass)
        return self.responder.render_forwarded(work.query, answer, udp=udp)

    async def _answer_forwarded(self, work: Forward | Chase, send: Any, udp: bool) -> None:
        self._forwards += 1
        try:
            send(await self._upstream_answer(work, udp))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.stats["internal_errors"] += 1
            log.error("forwarding failed error=%r", exc, exc_info=log.isEnabledFor(logging.DEBUG))
        finally:
            self._forwards -= 1

    # ------------------------------------------------------------ TCP

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Queries on one connection until the client leaves, stays idle too long, or is
        evicted to admit a newer client (see :mod:`shiftnet.dns.tcp_slots`)."""
        slots = self._tcp_slots
        admitted, evicted = slots.admit(writer)
        if evicted is not None:
            self.stats["tcp_evicted"] += 1
            evicted.close()  # its reader sees EOF: its own task ends and releases nothing more
        if not admitted:
            self.stats["tcp_refused"] += 1
            writer.close()
            return
        idle = self.config.tcp_idle_timeout
        peer = writer.get_extra_info("peername")
        family = "2" if isinstance(peer, tuple) and len(peer) > 2 else "1"
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readexactly(2), idle)
                    length = int.from_bytes(head, "big")
                    if length == 0:
                        break  # an empty message cannot be framed: the stream is garbage
                    data = await asyncio.wait_for(reader.readexactly(length), idle)
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    break
                if not slots.holds(writer):
                    break  # evicted while its query arrived
                slots.busy(writer)
                self.stats["tcp_queries"] += 1
                traffic = self.traffic
                start = time.perf_counter()
                qtype = traffic.request(data, "tcp", family) if traffic is not None else ""
                reply = await self._answer_tcp(data)
                if reply is not None:
                    writer.write(len(reply).to_bytes(2, "big") + reply)
                    await asyncio.wait_for(writer.drain(), idle)  # a client that never reads
                    if traffic is not None:
                        traffic.response(reply, "tcp", qtype, time.perf_counter() - start)
                slots.idle(writer)
        except (ConnectionError, TimeoutError):
            pass
        except Exception as exc:
            self.stats["internal_errors"] += 1
            log.error("dns tcp failed error=%r", exc, exc_info=log.isEnabledFor(logging.DEBUG))
        finally:
            slots.release(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer_tcp(self, data: bytes) -> bytes | None:
        result = self.responder.respond(data, udp=False)
        if not isinstance(result, (Forward, Chase)):
            return result
        return await self._upstream_answer(result, udp=False)
