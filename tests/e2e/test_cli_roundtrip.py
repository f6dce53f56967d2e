"""apply, get, describe, delete of the seed examples through the real ``shiftnet`` command,
against SQLite and a Kubernetes API (``kube``); the first test against a real etcd too.

Above the ``Store`` protocol the command runs the same code whatever the backend;
SQLite and etcd differ only below it, and the store contract suite checks both there
(tests/integration/store/test_contract.py). A Kubernetes API is another path: the API
server admits, defaults and fills in fields the command then prints.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import yaml
from tests.support.cli import Shiftnet
from tests.support.stores import TEST_NAMESPACES, etcd_server, store_url  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "examples" / "seeds"
SIT = SEEDS / "004-sit-jenkins-passthrough.yaml"
KURYR = SEEDS / "003-mynamespace-test.yaml"

# What OpenShift's `oc describe route` prints for the sit/jenkins passthrough route, as
# OpenShift's HAProxy router guide shows it.
OC_DESCRIBE_SIT_JENKINS = """\
Name: sitjenkins.com.cn
Namespace: sit
Labels: app=jenkins-ephemeral
template=jenkins-ephemeral-template
Annotations: <none>
Requested Host: sitjenkins.com.cn
Path: <none>
TLS Termination: passthrough
Endpoint Port: web
Service: jenkins
Weight: 100 (100%)
Endpoints: 10.128.2.15:8080, 10.131.0.10:8080
"""

pytestmark = pytest.mark.integration

# Every test but the first: the command over SQLite and over a Kubernetes API.
SQLITE_AND_KUBE = pytest.mark.parametrize("store_url", ["sqlite", "kube"], indirect=True)


@pytest.fixture
def sn(store_url: str, tmp_path: Path) -> Shiftnet:  # noqa: F811
    return Shiftnet(store_url, tmp_path / "home")


def squeeze(text: str) -> list[str]:
    """Lines with runs of blanks collapsed, blank lines dropped (layout-insensitive compare)."""
    return [re.sub(r"\s+", " ", ln.strip()) for ln in text.splitlines() if ln.strip()]


def apply_seeds(sn: Shiftnet) -> str:
    return sn.ok("apply", "-f", str(SEEDS))


def test_apply_creates_then_reports_unchanged(sn: Shiftnet) -> None:
    assert apply_seeds(sn).splitlines() == [
        "namespace/mynamespace created",
        "route.route.openshift.io/test created",
        "service/s1 created",
        "endpoints/s1 created",
        "namespace/sit created",
        "service/jenkins created",
        "endpoints/jenkins created",
        "route.route.openshift.io/sitjenkins.com.cn created",
    ]
    rev = sn.revision()
    again = apply_seeds(sn).splitlines()
    assert len(again) == 8 and all(line.endswith(" unchanged") for line in again)
    assert sn.revision() == rev  # unchanged writes nothing


@SQLITE_AND_KUBE
def test_describe_passthrough_route_shows_what_oc_describe_shows(sn: Shiftnet) -> None:
    sn.ok("apply", "-f", str(SIT))
    out = sn.ok("describe", "route", "sitjenkins.com.cn", "-n", "sit")
    got = squeeze(out)
    # Every line of oc's output, in oc's order (shiftnet adds Created and
    # Insecure Policy between them, as oc does).
    want = squeeze(OC_DESCRIBE_SIT_JENKINS)
    positions = [got.index(line) for line in want]
    assert positions == sorted(positions), got
    assert "Insecure Policy: <none>" in got


@SQLITE_AND_KUBE
def test_kuryr_route_round_trips(sn: Shiftnet) -> None:
    sn.ok("apply", "-f", str(KURYR))
    table = sn.ok("get", "routes", "-n", "mynamespace").splitlines()
    assert table[0].split() == [
        "NAME",
        "HOST/PORT",
        "PATH",
        "SERVICES",
        "PORT",
        "TERMINATION",
        "WILDCARD",
    ]
    assert table[1].split() == ["test", "www.example.com", "s1", "<all>", "None"]
    desc = squeeze(sn.ok("describe", "route", "test", "-n", "mynamespace"))
    for line in (
        "Name: test",
        "Namespace: mynamespace",
        "Requested Host: www.example.com",
        "TLS Termination: <none>",
        "Endpoint Port: <all endpoint ports>",
        "Service: s1",
        "Weight: 100 (100%)",
        "Endpoints: 10.1.0.11:8080, 10.1.1.12:8080",
    ):
        assert line in desc
    raw = yaml.safe_load(sn.ok("get", "route", "test", "-n", "mynamespace", "-o", "yaml"))
    assert (
        raw["apiVersion"] == "route.openshift.io/v1"
    )  # the seed's v1 is served as the group version
    assert raw["spec"]["to"] == {"kind": "Service", "name": "s1", "weight": 100}
    assert raw["spec"]["wildcardPolicy"] == "None"


@SQLITE_AND_KUBE
def test_get_tables_for_core_kinds(sn: Shiftnet) -> None:
    apply_seeds(sn)
    svc = sn.ok("get", "svc", "-n", "sit").splitlines()
    assert svc[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert svc[1].split()[:5] == ["jenkins", "ClusterIP", "<pending>", "<none>", "80/TCP"]
    eps = sn.ok("get", "ep", "-A").splitlines()
    assert eps[0].split() == ["NAMESPACE", "NAME", "ENDPOINTS", "AGE"]
    assert eps[1].split()[:3] == ["mynamespace", "s1", "10.1.0.11:8080,10.1.1.12:8080"]
    assert eps[2].split()[:3] == ["sit", "jenkins", "10.128.2.15:8080,10.131.0.10:8080"]
    ns = [ln.split()[:2] for ln in sn.ok("get", "ns").splitlines()]
    # The kube backend's API server starts with the store tests' namespaces.
    ns = [row for row in ns if row[0] not in TEST_NAMESPACES]
    assert ns == [["NAME", "STATUS"], ["mynamespace", "Active"], ["sit", "Active"]]
    routes = sn.ok("get", "routes", "-A", "-o", "name").splitlines()
    assert routes == ["route.route.openshift.io/test", "route.route.openshift.io/sitjenkins.com.cn"]
    labelled = sn.ok(
        "get", "svc,ep", "-A", "-l", "app=jenkins-ephemeral", "-o", "name"
    ).splitlines()
    assert labelled == ["service/jenkins", "endpoints/jenkins"]
    res = sn.run("get", "po")
    assert res.returncode == 0 and res.stdout == ""
    assert res.stderr.strip() == "No resources found in default namespace."


@SQLITE_AND_KUBE
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_output_applies_back_unchanged(sn: Shiftnet, fmt: str) -> None:
    apply_seeds(sn)
    dumped = sn.ok("get", "routes,svc,ep", "-A", "-o", fmt)
    doc = json.loads(dumped) if fmt == "json" else yaml.safe_load(dumped)
    assert doc["kind"] == "List" and len(doc["items"]) == 6
    rev = sn.revision()
    out = sn.ok("apply", "-f", "-", input=dumped).splitlines()
    assert len(out) == 6 and all(line.endswith(" unchanged") for line in out), out
    assert sn.revision() == rev


@SQLITE_AND_KUBE
def test_changed_spec_is_configured_and_status_and_cluster_ip_are_kept(
    sn: Shiftnet, tmp_path: Path
) -> None:
    sn.ok("apply", "-f", str(SIT))
    # What the cluster adds: an allocated ClusterIP and a router's admission status.
    asyncio.run(_cluster_writes(sn.store))
    docs = list(yaml.safe_load_all(SIT.read_text()))
    route = next(d for d in docs if d["kind"] == "Route")
    route["spec"]["to"]["weight"] = 50
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump_all(docs))
    lines = sn.ok("apply", "-f", str(changed)).splitlines()
    assert "route.route.openshift.io/sitjenkins.com.cn configured" in lines
    assert (
        "service/jenkins unchanged" in lines
    )  # the manifest has no clusterIP: keep the allocated one
    stored = yaml.safe_load(sn.ok("get", "route", "sitjenkins.com.cn", "-n", "sit", "-o", "yaml"))
    assert stored["spec"]["to"]["weight"] == 50
    assert stored["status"]["ingress"][0]["routerName"] == "default"
    svc = yaml.safe_load(sn.ok("get", "svc", "jenkins", "-n", "sit", "-o", "yaml"))
    assert svc["spec"]["clusterIP"] == "127.30.0.9"
    desc = squeeze(sn.ok("describe", "route", "sitjenkins.com.cn", "-n", "sit"))
    assert "Weight: 50 (100%)" in desc
    assert any(line.startswith("exposed on router default") for line in desc), desc
    table = sn.ok("get", "svc", "-n", "sit").splitlines()
    assert table[1].split()[2] == "127.30.0.9"


async def _cluster_writes(url: str) -> None:
    from shiftnet.api import Route, RouteIngress, RouteIngressCondition, Service
    from shiftnet.client import Client
    from shiftnet.store import open_store

    store = open_store(url)
    client = Client(store)
    try:

        def admit(r: Route) -> Route:
            r.status.ingress = [
                RouteIngress(
                    host=r.spec.host,
                    router_name="default",
                    conditions=[
                        RouteIngressCondition(
                            type="Admitted",
                            status="True",
                            last_transition_time="2026-01-01T00:00:00Z",
                        )
                    ],
                )
            ]
            return r

        def allocate(s: Service) -> Service:
            s.spec.cluster_ip = "127.30.0.9"
            return s

        await client.mutate(Route, "sit", "sitjenkins.com.cn", admit)
        await client.mutate(Service, "sit", "jenkins", allocate)
    finally:
        await store.close()


@SQLITE_AND_KUBE
def test_delete_by_name_and_by_file(sn: Shiftnet) -> None:
    apply_seeds(sn)
    assert (
        sn.ok("delete", "route", "test", "-n", "mynamespace")
        == 'route.route.openshift.io "test" deleted\n'
    )
    res = sn.run("get", "route", "test", "-n", "mynamespace")
    assert res.returncode == 1 and "not found" in res.stderr
    assert sn.ok("delete", "-f", str(SIT)).splitlines() == [
        'namespace "sit" deleted',
        'service "jenkins" deleted',
        'endpoints "jenkins" deleted',
        'route.route.openshift.io "sitjenkins.com.cn" deleted',
    ]
    assert sn.ok("get", "svc", "-A", "-o", "name").splitlines() == ["service/s1"]
    missing = sn.run("delete", "svc", "nope")
    assert missing.returncode == 1 and 'services "nope" not found' in missing.stderr
    assert sn.run("delete", "svc", "nope", "--ignore-not-found").returncode == 0
