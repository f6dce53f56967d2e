"""The DNS reads EndpointSlices: a Service with slices is answered from them, not its Endpoints."""

from __future__ import annotations

from typing import Any

import dns.rcode
import pytest
from tests.support.dns import endpoints, headless
from tests.support.dns_cluster import Cluster

from shiftnet.api import EndpointSlice

pytestmark = pytest.mark.integration

NAME = "api.default.svc.cluster.local"


def ips(m) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(rd.to_text() for rr in m.answer for rd in rr)


def es(name: str, endpoints: list[dict[str, Any]]) -> EndpointSlice:
    return EndpointSlice.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": {"kubernetes.io/service-name": "api"},
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        }
    )


async def test_headless_answers_come_from_every_slice_ready_endpoints(cluster: Cluster) -> None:
    await cluster.client.create(headless("api", ports=[{"name": "http", "port": 80}]))
    # Endpoints say one thing; once slices exist they are what counts
    await cluster.client.create(endpoints("api", addresses=[{"ip": "127.10.0.9"}]))
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.10.0.9"])
    await cluster.client.create(es("api-a", [{"addresses": ["127.10.0.2"], "hostname": "api-0"}]))
    await cluster.client.create(
        es(
            "api-b",
            [
                {"addresses": ["127.10.0.3"], "conditions": {"ready": True}},
                {
                    "addresses": ["127.10.0.4"],
                    "conditions": {"ready": False, "serving": True, "terminating": True},
                },
            ],
        )
    )
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.10.0.2", "127.10.0.3"])
    await cluster.until(f"api-0.{NAME}", "A", lambda m: ips(m) == ["127.10.0.2"])
    await cluster.client.delete(EndpointSlice, "default", "api-a")
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.10.0.3"])
    await cluster.until(f"api-0.{NAME}", "A", lambda m: m.rcode() == dns.rcode.NXDOMAIN)
    await cluster.client.delete(EndpointSlice, "default", "api-b")
    await cluster.until(NAME, "A", lambda m: ips(m) == ["127.10.0.9"])  # back to Endpoints
