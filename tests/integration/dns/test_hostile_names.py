"""A hostile tenant against the cluster DNS.

A good Service is asked for in a loop by a client process on loopback while a
tenant writes Services, Endpoints and EndpointSlices whose names, namespaces,
port names, protocols, addresses, ExternalName targets, endpoint hostnames and
every EndpointSlice field (labels naming another namespace's Service among
them) are hostile (tests/support/hostile_services.py); the good headless
Service is read from an EndpointSlice, as DNS reads them first. First through
the validating client,
then, when refused, straight into the store around validation. The good name
must never fail to resolve, every answer the server gives about the tenant's
names must be well-formed DNS holding only valid labels, no log line may be
split by a tenant's newline, and a server restarted on the same store starts
cleanly and answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import pytest
from tests.support.dns import endpoints, headless, service
from tests.support.hostile_services import cases
from tests.support.proxy_cluster import endpoint_slice
from tests.support.proxy_netns import ROOT

from shiftnet.api import parse_object
from shiftnet.client import Client
from shiftnet.dns import DNSConfig, DNSServer
from shiftnet.errors import ShiftnetError
from shiftnet.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

GOOD = "web.default.svc.cluster.local"
LABEL_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")  # "_" for SRV's _port._proto


def start_steady(port: int) -> subprocess.Popen[str]:
    argv = ["dns", "127.0.0.1", str(port), GOOD, "300"]  # at most 300 s
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.steady_client", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate(input="", timeout=60)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


async def ask(server: DNSServer, name: str, rdtype: str) -> dns.message.Message:
    q = dns.message.make_query(name, dns.rdatatype.from_text(rdtype))
    return await dns.asyncquery.udp(q, "127.0.0.1", port=server.address[1], timeout=3)


def assert_clean(answer: dns.message.Message) -> None:
    """Every owner name and every name inside the records is made of valid labels."""
    for rrset in answer.answer + answer.additional:
        names = [rrset.name]
        for rd in rrset:
            for attr in ("target", "exchange"):
                if isinstance(getattr(rd, attr, None), dns.name.Name):
                    names.append(getattr(rd, attr))
        for name in names:
            for label in name.labels:
                text = label.decode("ascii", "replace")
                assert set(text) <= LABEL_CHARS | {"*"}, (name, answer.to_text())
                assert len(label) <= 63


async def test_hostile_tenant_names_do_not_disturb_dns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    client = Client(store)
    servers: list[DNSServer] = []

    async def start() -> DNSServer:
        server = DNSServer(store, DNSConfig(listen_port=0))
        await server.start()
        servers.append(server)
        return server

    steady: subprocess.Popen[str] | None = None
    try:
        await client.create(service("web", cluster_ip="172.30.0.10", ports=[{"port": 80}]))
        await client.create(headless("db", ports=[{"name": "pg", "port": 5432}]))
        await client.create(
            endpoints(
                "db",
                addresses=[{"ip": "10.1.0.2", "hostname": "db-0"}],
                ports=[{"name": "pg", "port": 5432}],
            )
        )
        db_slice = endpoint_slice("db", [("10.1.0.3", 5432)], port_name="pg")
        db_slice.endpoints[0].hostname = "db-1"
        await client.create(db_slice)  # hides the Endpoints above
        server = await start()
        await server.sync()
        steady = await asyncio.to_thread(start_steady, server.address[1])

        refused = accepted = 0
        written: list[Any] = []
        for case in cases("10.201.1.2", 8080):
            try:
                for _, raw in case.objects:
                    await client.create(parse_object(raw))  # type: ignore[type-var]
                accepted += 1
                written.append(case)
                continue
            except ShiftnetError as err:
                assert "\n" not in str(err) and len(str(err)) <= 800, (case.label, str(err)[:300])
                refused += 1
            for resource, body in case.objects:
                try:
                    await store.create(resource, body)
                except ShiftnetError:
                    continue
            written.append(case)
        assert refused > accepted
        await server.sync()

        # Ask about every tenant object, in every shape it could be answered.
        asked = 0
        for case in written:
            meta = case.service.get("metadata", {})
            name, ns = str(meta.get("name", "")), str(meta.get("namespace", ""))
            try:
                base = dns.name.from_text(f"{name}.{ns}.svc.cluster.local")
            except (dns.name.NameTooLong, dns.name.LabelTooLong, dns.name.EmptyLabel):
                continue  # not even askable; nothing can answer it
            for qname, rdtype in (
                (base, "A"),
                (base, "CNAME"),
                (dns.name.from_text("_main._tcp", base), "SRV"),
                (dns.name.from_text("pod-a", base), "A"),
            ):
                answer = await ask(server, qname.to_text(), rdtype)
                assert answer.rcode() in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN), answer.to_text()
                assert_clean(answer)
                asked += 1
        assert asked > 100
        good = await ask(server, GOOD, "A")
        assert [rd.to_text() for rr in good.answer for rd in rr] == ["172.30.0.10"]

        result = await asyncio.to_thread(finish, steady)
        steady = None
        assert result["failed"] == 0, result
        assert result["ok"] > 50, result

        split = [r.getMessage() for r in caplog.records if "\n" in r.getMessage()]
        assert not split, f"a tenant's newline split a log line: {split[0][:200]!r}"
        longest = max(len(r.getMessage()) for r in caplog.records)
        assert longest <= 2000, f"a log line of {longest} characters"

        # A server restarted on this store starts cleanly and answers.
        await server.stop()
        servers.remove(server)
        again = await start()
        answer = await ask(again, GOOD, "A")
        assert [rd.to_text() for rr in answer.answer for rd in rr] == ["172.30.0.10"]
        srv = await ask(again, "_pg._tcp.db.default.svc.cluster.local", "SRV")
        assert [rd.target.to_text() for rr in srv.answer for rd in rr] == [
            "db-1.db.default.svc.cluster.local."
        ], srv.to_text()
    finally:
        if steady is not None and steady.poll() is None:
            steady.kill()
            steady.wait()
        for s in servers:
            await s.stop()
        await store.close()
