"""``shiftnet apply`` of a Route that exists: checked as an update (OpenShift's
``ValidateRouteUpdate``), so a value a release once let through is kept while untouched."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from tests.support.cli import Shiftnet, one_error_line

from shiftnet.store import open_store

pytestmark = pytest.mark.integration

LONG_HOST = "a" * 64 + ".example.com"


def manifest(host: str, *, weight: int = 100, wildcard: str = "None", path: str = "/a#b") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": "web", "namespace": "demo"},
            "spec": {
                "host": host,
                "path": path,
                "wildcardPolicy": wildcard,
                "to": {"kind": "Service", "name": "web", "weight": weight},
            },
        }
    )


@pytest.fixture
def sn(tmp_path: Path) -> Shiftnet:
    sn = Shiftnet(f"sqlite:///{tmp_path}/state.db", tmp_path / "home")
    stored = yaml.safe_load(manifest(LONG_HOST))

    async def seed() -> None:  # as an older release stored it, past today's create rules
        store = open_store(sn.store)
        try:
            await store.create("routes", stored)
        finally:
            await store.close()

    asyncio.run(seed())
    return sn


def test_apply_keeps_an_untouched_grandfathered_host_and_path(sn: Shiftnet) -> None:
    out = sn.ok("apply", "-f", "-", input=manifest(LONG_HOST, weight=5))
    assert out.strip() == "route.route.openshift.io/web configured"
    assert "weight: 5" in sn.ok("get", "route", "web", "-n", "demo", "-o", "yaml")


def test_apply_refuses_a_wildcard_policy_change_and_writes_nothing(sn: Shiftnet) -> None:
    rev = sn.revision()
    res = sn.run("apply", "-f", "-", input=manifest(LONG_HOST, wildcard="Subdomain"))
    assert res.returncode != 0
    line = one_error_line(res.stderr)
    assert 'spec.wildcardPolicy: Invalid value: "Subdomain": field is immutable' in line
    assert sn.revision() == rev


def test_apply_checks_a_changed_path(sn: Shiftnet) -> None:
    res = sn.run("apply", "-f", "-", input=manifest(LONG_HOST, path="/c d"))
    assert res.returncode != 0
    assert 'spec.path: Invalid value: "/c d": cannot contain # or spaces' in one_error_line(
        res.stderr
    )


def test_a_new_route_meets_the_create_rules(sn: Shiftnet) -> None:
    res = sn.run("apply", "-f", "-", input=manifest(LONG_HOST).replace("name: web", "name: new"))
    assert res.returncode != 0
    assert "each part between dots must be no more than 63 characters" in one_error_line(res.stderr)


def test_apply_prints_upstreams_warning_for_host_and_subdomain(tmp_path: Path) -> None:
    sn = Shiftnet(f"sqlite:///{tmp_path}/fresh.db", tmp_path / "home2")
    doc = manifest("both.example.com", path="/").replace("  to:", "  subdomain: both\n  to:")
    res = sn.run("apply", "-f", "-", input=doc)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "route.route.openshift.io/web created"
    assert res.stderr.strip() == "Warning: spec.host is set; spec.subdomain may be ignored"
