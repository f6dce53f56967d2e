"""What a pod's resolver reads, per dnsPolicy and dnsConfig, as the kubelet writes it."""

from __future__ import annotations

from typing import Any

from shiftnet.api import Pod
from shiftnet.sdn.podresolver import (
    ResolverConfig,
    parse_resolv_conf,
    pod_resolver,
    render_hosts,
    render_resolv_conf,
    resolver_environment,
)

NODE = parse_resolv_conf(
    "# the node's own\nnameserver 192.0.2.53\nnameserver 192.0.2.54 # second\n"
    "search corp.example\noptions edns0 ndots:1\n"
)
DNS = ("10.1.0.1", 53)


def _pod(name: str = "web-0", ns: str = "demo", **spec: Any) -> Pod:
    body = {"containers": [{"name": "c", "command": ["true"]}], **spec}
    return Pod.model_validate({"metadata": {"name": name, "namespace": ns}, "spec": body})


def test_node_resolv_conf_is_read() -> None:
    assert (NODE.nameservers, NODE.searches, NODE.options) == (
        ("192.0.2.53", "192.0.2.54"),
        ("corp.example",),
        ("edns0", "ndots:1"),
    )


def test_cluster_first_is_the_cluster_dns_with_the_search_path_and_ndots_5() -> None:
    text = render_resolv_conf(pod_resolver(_pod(), node=NODE, cluster_dns=DNS))
    assert text == (
        "search demo.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        "nameserver 10.1.0.1\n"
        "options ndots:5\n"
    )
    with_host_net = pod_resolver(
        _pod(dnsPolicy="ClusterFirstWithHostNet"), node=NODE, cluster_dns=DNS
    )
    assert with_host_net == pod_resolver(_pod(), node=NODE, cluster_dns=DNS)


def test_cluster_dns_on_another_port_keeps_the_nodes_nameservers_and_says_why() -> None:
    cfg = pod_resolver(_pod(), node=NODE, cluster_dns=("127.0.0.1", 8053))
    assert cfg.nameservers == ("192.0.2.53", "192.0.2.54")
    assert cfg.searches[0] == "demo.svc.cluster.local"
    assert render_resolv_conf(cfg).startswith(
        "# cluster DNS listens on 127.0.0.1 port 8053, which resolv.conf cannot name: "
        "SHIFTNET_DNS_SERVER=127.0.0.1:8053\n"
    )


def test_default_and_no_cluster_dns_are_the_nodes() -> None:
    for cfg in (
        pod_resolver(_pod(dnsPolicy="Default"), node=NODE, cluster_dns=DNS),
        pod_resolver(_pod(), node=NODE, cluster_dns=None),
    ):
        assert (cfg.nameservers, cfg.searches, cfg.options) == (
            NODE.nameservers,
            NODE.searches,
            NODE.options,
        )


def test_none_takes_only_dns_config() -> None:
    pod = _pod(
        dnsPolicy="None",
        dnsConfig={
            "nameservers": ["192.0.2.1"],
            "searches": ["ns1.svc.cluster-domain.example", "my.dns.search.suffix."],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
        },
    )
    text = render_resolv_conf(pod_resolver(pod, node=NODE, cluster_dns=DNS))
    assert text == (
        "search ns1.svc.cluster-domain.example my.dns.search.suffix\n"
        "nameserver 192.0.2.1\n"
        "options ndots:2 edns0\n"
    )


def test_dns_config_merges_into_cluster_first() -> None:
    pod = _pod(
        dnsConfig={
            "nameservers": ["10.1.0.1", "192.0.2.9"],
            "searches": ["svc.cluster.local", "extra.example"],
            "options": [{"name": "ndots", "value": "1"}, {"name": "single-request"}],
        }
    )
    cfg = pod_resolver(pod, node=NODE, cluster_dns=DNS)
    assert cfg.nameservers == ("10.1.0.1", "192.0.2.9")  # no duplicates
    assert cfg.searches == (
        "demo.svc.cluster.local",
        "svc.cluster.local",
        "cluster.local",
        "corp.example",
        "extra.example",
    )
    assert cfg.options == ("ndots:1", "single-request")  # the pod's value wins


def test_limits_cut_and_bad_values_left_out_and_named() -> None:
    pod = _pod(
        dnsPolicy="None",
        dnsConfig={
            "nameservers": ["192.0.2.1", "192.0.2.2", "192.0.2.3", "not-an-ip"],
            "options": [{"name": "ndots", "value": "2\nnameserver 6.6.6.6"}],
        },
    )
    cfg = pod_resolver(pod, node=ResolverConfig(), cluster_dns=DNS)
    assert cfg.nameservers == ("192.0.2.1", "192.0.2.2", "192.0.2.3")
    assert cfg.options == ()
    assert "nameserver 'not-an-ip'" in cfg.skipped
    assert "6.6.6.6" not in render_resolv_conf(cfg).replace("option 'ndots", "")


def test_hosts_file_with_fqdn_and_host_aliases() -> None:
    pod = _pod(
        hostname="db-0",
        subdomain="db",
        hostAliases=[
            {"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]},
            {"ip": "10.1.2.3", "hostnames": ["foo.remote"]},
        ],
    )
    text = render_hosts(pod, ["10.1.0.7"])
    lines = text.splitlines()
    assert lines[0].startswith("# Kubernetes-managed hosts file")
    assert "127.0.0.1\tlocalhost" in lines and "::1\tlocalhost ip6-localhost ip6-loopback" in lines
    assert "10.1.0.7\tdb-0.db.demo.svc.cluster.local\tdb-0" in lines
    assert lines[-3:] == [
        "# Entries added by HostAliases.",
        "127.0.0.1\tfoo.local\tbar.local",
        "10.1.2.3\tfoo.remote",
    ]


def test_hosts_file_without_subdomain_names_the_pod_and_the_environment_matches() -> None:
    pod = _pod(name="a" * 70)
    assert f"10.1.0.7\t{'a' * 63}" in render_hosts(pod, ["10.1.0.7"]).splitlines()
    cfg = pod_resolver(_pod(), node=NODE, cluster_dns=DNS)
    env = resolver_environment(cfg, "web-0")
    assert env == {
        "HOSTNAME": "web-0",
        "LOCALDOMAIN": "demo.svc.cluster.local svc.cluster.local cluster.local corp.example",
        "RES_OPTIONS": "ndots:5",
    }
