"""Pure parts of the node agent: env building, status, restart rules, probe thresholds."""

from __future__ import annotations

from pathlib import Path

import pytest

from shiftnet.api import Container, Probe, parse_object
from shiftnet.api.core import ContainerStatus
from shiftnet.errors import ConfigError
from shiftnet.sdn.config import NodeConfig, check_node_name
from shiftnet.sdn.container import backoff_delay, should_restart
from shiftnet.sdn.environment import container_argv, container_env, expand
from shiftnet.sdn.local import LocalNetwork
from shiftnet.sdn.pods import spec_hash, working_dir
from shiftnet.sdn.podstatus import ContainerView, build_pod_status, pod_phase
from shiftnet.sdn.probes import ProbeResult, ProbeTracker, http_request, resolve_port
from shiftnet.sdn.workdir import WORKDIR_ANNOTATION, resolve_workdir_annotation


def container(**kw: object) -> Container:
    base: dict[str, object] = {
        "name": "c",
        "command": ["run"],
        "ports": [{"containerPort": 8080, "name": "web"}],
    }
    base.update(kw)
    return Container.model_validate(base)


def test_expand_follows_kubernetes_rules() -> None:
    env = {"A": "1", "B": "two"}
    assert expand("$(A)-$(B)", env) == "1-two"
    assert expand("$(MISSING)", env) == "$(MISSING)"
    assert expand("$$(A)", env) == "$(A)"
    assert expand("no refs", env) == "no refs"


def test_container_env_sets_pod_identity_and_lets_env_override() -> None:
    c = container(
        env=[
            {"name": "PORT", "value": "9999"},
            {"name": "URL", "value": "http://$(POD_IP):$(PORT)"},
        ]
    )
    env = container_env(
        c,
        namespace="ns",
        pod_name="p",
        pod_ip="127.10.0.2",
        host_ip="127.0.0.1",
        node_name="n",
        host_env={"PATH": "/bin", "SECRET": "x"},
    )
    assert env["POD_IP"] == "127.10.0.2" and env["POD_NAME"] == "p" and env["POD_NAMESPACE"] == "ns"
    assert env["PORT"] == "9999"
    assert env["URL"] == "http://127.10.0.2:9999"
    assert env["PATH"] == "/bin"
    assert "SECRET" not in env


def test_argv_is_command_then_args_expanded() -> None:
    c = container(command=["python3", "-m", "http.server"], args=["--bind", "$(POD_IP)", "$(PORT)"])
    assert container_argv(c, {"POD_IP": "127.10.0.9", "PORT": "80"}) == [
        "python3",
        "-m",
        "http.server",
        "--bind",
        "127.10.0.9",
        "80",
    ]


@pytest.mark.parametrize(
    ("policy", "code", "restart"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 137, True),
        ("Never", 1, False),
        ("Never", 0, False),
    ],
)
def test_restart_policy(policy: str, code: int, restart: bool) -> None:
    assert should_restart(policy, code) is restart


def test_backoff_doubles_and_is_capped() -> None:
    assert [backoff_delay(n, 1.0, 10.0) for n in range(6)] == [0.0, 1.0, 2.0, 4.0, 8.0, 10.0]


def view(
    name: str,
    *,
    ready: bool = False,
    started: bool = True,
    finished: bool = False,
    code: int | None = None,
) -> ContainerView:
    return ContainerView(
        status=ContainerStatus(name=name, ready=ready),
        started_once=started,
        finished=finished,
        exit_code=code,
    )


def test_pod_phase() -> None:
    assert pod_phase([]) == "Pending"
    assert pod_phase([view("a", started=False)]) == "Pending"
    assert pod_phase([view("a")]) == "Running"
    assert pod_phase([view("a", finished=True, code=0)]) == "Succeeded"
    assert (
        pod_phase([view("a", finished=True, code=0), view("b", finished=True, code=2)]) == "Failed"
    )
    assert pod_phase([view("a", finished=True, code=0), view("b")]) == "Running"


def test_status_ready_only_when_every_container_is() -> None:
    kw = {"pod_ip": "127.10.0.2", "host_ip": "127.0.0.1", "start_time": "t0", "ready_since": "t1"}
    half = build_pod_status([view("b", ready=True), view("a")], **kw)  # type: ignore[arg-type]
    ready = {c.type: c for c in half.conditions}["Ready"]
    assert ready.status == "False" and ready.message == "containers with unready status: [a]"
    assert [c.name for c in half.container_statuses] == ["a", "b"]  # sorted: deterministic
    full = build_pod_status([view("a", ready=True), view("b", ready=True)], **kw)  # type: ignore[arg-type]
    assert {c.type: c.status for c in full.conditions}["Ready"] == "True"
    assert full.pod_ip == "127.10.0.2" and full.host_ip == "127.0.0.1"
    # Same input, same bytes.
    assert (
        build_pod_status([view("a", ready=True), view("b", ready=True)], **kw).to_dict()
        == full.to_dict()
    )  # type: ignore[arg-type]


def test_probe_tracker_thresholds() -> None:
    t = ProbeTracker(Probe(success_threshold=2, failure_threshold=3))
    ok, bad = ProbeResult(True), ProbeResult(False, "nope")
    assert not t.record(ok) and not t.ready  # one success < successThreshold
    assert t.record(ok) and t.ready
    assert not t.record(bad) and not t.record(bad) and t.ready
    assert t.record(bad) and not t.ready and t.last_message == "nope"
    assert not t.record(ok) and not t.ready
    assert t.record(ok) and t.ready


def test_probe_port_by_name_or_number() -> None:
    c = container()
    assert resolve_port("web", c) == 8080
    assert resolve_port(9000, c) == 9000
    assert resolve_port("9001", c) == 9001
    assert resolve_port("nope", c) is None


def test_http_probe_request_cannot_be_split() -> None:
    req = http_request("/a b\r\nX-Evil: 1", "127.10.0.2", 80).decode()
    assert req.startswith("GET /a%20b%0D%0AX-Evil:%201 HTTP/1.1\r\n")
    assert "\r\nX-Evil" not in req
    with pytest.raises(ValueError):
        http_request("/", "host\r\nX: y", 80)


def test_workdir_annotation_is_resolved_against_the_manifest(tmp_path: Path) -> None:
    doc = {"kind": "Pod", "metadata": {"name": "p", "annotations": {WORKDIR_ANNOTATION: "."}}}
    resolve_workdir_annotation(doc, tmp_path)
    assert doc["metadata"]["annotations"][WORKDIR_ANNOTATION] == str(tmp_path / ".")  # type: ignore[index]
    absolute = {"kind": "Pod", "metadata": {"annotations": {WORKDIR_ANNOTATION: "/srv"}}}
    resolve_workdir_annotation(absolute, tmp_path)
    assert absolute["metadata"]["annotations"][WORKDIR_ANNOTATION] == "/srv"  # type: ignore[index]
    svc = {"kind": "Service", "metadata": {"annotations": {WORKDIR_ANNOTATION: "."}}}
    resolve_workdir_annotation(svc, tmp_path)
    assert svc["metadata"]["annotations"][WORKDIR_ANNOTATION] == "."  # type: ignore[index]


def test_working_dir_resolution(tmp_path: Path) -> None:
    pod = parse_object(
        {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"name": "p", "annotations": {WORKDIR_ANNOTATION: "/srv/app"}},
        }
    )
    assert working_dir(pod, None, tmp_path) == "/srv/app"  # type: ignore[arg-type]
    assert working_dir(pod, "sub", tmp_path) == "/srv/app/sub"  # type: ignore[arg-type]
    assert working_dir(pod, "/abs", tmp_path) == "/abs"  # type: ignore[arg-type]
    bare = parse_object({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}})
    assert working_dir(bare, None, tmp_path) == str(tmp_path)  # type: ignore[arg-type]


def test_spec_hash_ignores_labels_but_not_commands() -> None:
    raw = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "command": ["a"]}]},
    }
    a = parse_object(raw)
    raw["metadata"] = {"name": "p", "labels": {"x": "y"}}
    b = parse_object(raw)
    raw["spec"] = {"containers": [{"name": "c", "command": ["b"]}]}
    c = parse_object(raw)
    assert spec_hash(a) == spec_hash(b) != spec_hash(c)  # type: ignore[arg-type]


def test_local_network_needs_loopback_subnets() -> None:
    LocalNetwork().check_subnet("127.10.3.0/24")
    with pytest.raises(ConfigError, match=r"not inside 127\.0\.0\.0/8"):
        LocalNetwork().check_subnet("10.1.0.0/24")


def test_node_config_checks_names_and_modes(tmp_path: Path) -> None:
    assert check_node_name("node-1.example") == "node-1.example"
    with pytest.raises(ConfigError, match='node name "Bad_Name"'):
        NodeConfig(node_name="Bad_Name", state_dir=tmp_path)
    with pytest.raises(ConfigError, match='network mode "ovs"'):
        NodeConfig(node_name="n", state_dir=tmp_path, network="ovs")
    assert NodeConfig(node_name="n", state_dir=tmp_path).node_dir == tmp_path / "nodes" / "n"


@pytest.mark.parametrize("bad", ["../x", "a/b", "..", "", "x..y", "UPPER", "-lead"])
def test_names_that_cannot_be_file_names(bad: str) -> None:
    from shiftnet.errors import InvalidObject
    from shiftnet.sdn.pods import checked_part

    with pytest.raises(InvalidObject, match="cannot be used as a file name"):
        checked_part(bad, "metadata.name")
    assert checked_part("web-1.v2", "metadata.name") == "web-1.v2"


def test_container_env_carries_the_cluster_dns_search_path_and_the_pod_may_override() -> None:
    from shiftnet.api import Pod
    from shiftnet.sdn.podresolver import ResolverConfig, pod_resolver, resolver_environment

    pod = Pod.model_validate(
        {"metadata": {"name": "p", "namespace": "shop"}, "spec": {"containers": [{"name": "c"}]}}
    )
    cfg = pod_resolver(pod, node=ResolverConfig(), cluster_dns=("127.0.0.1", 8053))
    dns_env = resolver_environment(cfg, "p")
    c = container(env=[{"name": "RES_OPTIONS", "value": "ndots:2"}])
    env = container_env(
        c,
        namespace="shop",
        pod_name="p",
        pod_ip="127.10.0.2",
        host_ip="127.0.0.1",
        node_name="n",
        host_env={},
        extra=dns_env,
    )
    assert env["LOCALDOMAIN"] == "shop.svc.cluster.local svc.cluster.local cluster.local"
    assert env["RES_OPTIONS"] == "ndots:2"  # the container's own env wins
