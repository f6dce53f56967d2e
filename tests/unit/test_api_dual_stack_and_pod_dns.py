"""Validation of a Service's dual-stack fields and a Pod's resolver fields, with
Kubernetes' rules and messages (one table row per rule)."""

from __future__ import annotations

from typing import Any

import pytest

from shiftnet.api import Pod, Service
from shiftnet.api.validation import errors


def _service(**spec: Any) -> Service:
    body: dict[str, Any] = {"ports": [{"port": 80}], "selector": {"app": "web"}, **spec}
    return Service.model_validate({"metadata": {"name": "web", "namespace": "demo"}, "spec": body})


def _pod(**spec: Any) -> Pod:
    body: dict[str, Any] = {"containers": [{"name": "c", "command": ["true"]}], **spec}
    return Pod.model_validate({"metadata": {"name": "p", "namespace": "demo"}, "spec": body})


def _messages(obj: Service | Pod) -> list[str]:
    return [str(e) for e in errors(obj)]


SERVICE_OK = [
    {},
    {"ipFamilyPolicy": "PreferDualStack"},
    {"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv6", "IPv4"]},
    {"clusterIP": "172.30.0.10"},
    {"clusterIP": "172.30.0.10", "clusterIPs": ["172.30.0.10"]},
    {"clusterIP": "172.30.0.10", "clusterIPs": ["172.30.0.10", "fd00::a"]},
    {"clusterIP": "fd00::a", "clusterIPs": ["fd00::a", "172.30.0.10"], "ipFamilies": ["IPv6"]},
    {"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4", "IPv6"]},
]


@pytest.mark.parametrize("spec", SERVICE_OK)
def test_valid_dual_stack_services(spec: dict[str, Any]) -> None:
    assert _messages(_service(**spec)) == []


SERVICE_BAD = [
    (
        {"clusterIP": "172.30.0.10", "clusterIPs": ["172.30.0.11"]},
        'spec.clusterIPs: Invalid value: "172.30.0.11": first value must match `clusterIP`',
    ),
    (
        {"clusterIPs": ["172.30.0.10"]},
        'spec.clusterIPs: Invalid value: "172.30.0.10": must be empty when `clusterIP` is '
        "not specified",
    ),
    (
        {"ipFamilies": ["IPv5"]},
        'spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"',
    ),
    ({"ipFamilies": ["IPv4", "IPv4"]}, 'spec.ipFamilies[1]: Duplicate value: "IPv4"'),
    (
        {"ipFamilyPolicy": "DualStack"},
        'spec.ipFamilyPolicy: Unsupported value: "DualStack": supported values: '
        '"PreferDualStack", "RequireDualStack", "SingleStack"',
    ),
    (
        {"clusterIP": "None", "clusterIPs": ["None", "172.30.0.10"]},
        "spec.clusterIPs: Invalid value: \"None,172.30.0.10\": 'None' must be the first and "
        "only value",
    ),
    (
        {"clusterIP": "172.30.0.10", "clusterIPs": ["172.30.0.10", "nope"]},
        'spec.clusterIPs[1]: Invalid value: "nope": must be a valid IP address '
        "(e.g. 10.9.8.7 or 2001:db8::ffff)",
    ),
    (
        {"clusterIP": "172.30.0.10", "clusterIPs": ["172.30.0.10", "172.30.0.11"]},
        'spec.clusterIPs: Invalid value: "172.30.0.10,172.30.0.11": may specify no more than '
        "one IP for each IP family",
    ),
    (
        {"clusterIP": "172.30.0.10", "clusterIPs": ["172.30.0.10", "fd00::a", "fd00::b"]},
        'spec.clusterIPs: Invalid value: "172.30.0.10,fd00::a,fd00::b": may only hold up to '
        "2 values",
    ),
    (
        {"clusterIP": "172.30.0.10", "ipFamilies": ["IPv6"], "clusterIPs": ["172.30.0.10"]},
        'spec.clusterIPs[0]: Invalid value: "172.30.0.10": expected an IPv6 value as '
        "indicated by `ipFamilies[0]`",
    ),
    (
        {"type": "ExternalName", "externalName": "example.com", "ipFamilyPolicy": "SingleStack"},
        "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
    ),
    (
        {"type": "ExternalName", "externalName": "example.com", "ipFamilies": ["IPv4"]},
        "spec.ipFamilies: Forbidden: may not be set for ExternalName services",
    ),
]


@pytest.mark.parametrize(("spec", "want"), SERVICE_BAD)
def test_invalid_dual_stack_services(spec: dict[str, Any], want: str) -> None:
    assert want in _messages(_service(**spec))


POD_OK = [
    {},
    {"dnsPolicy": "ClusterFirst"},
    {"dnsPolicy": "Default"},
    {"dnsPolicy": "ClusterFirstWithHostNet"},
    {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["192.0.2.1", "2001:db8::1"]}},
    {
        "dnsConfig": {
            "searches": ["corp.example.", "example.net"],
            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
        }
    },
    {"hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]}]},
    {"hostname": "web-0", "subdomain": "web"},
]


@pytest.mark.parametrize("spec", POD_OK)
def test_valid_pod_resolver_fields(spec: dict[str, Any]) -> None:
    assert _messages(_pod(**spec)) == []


POD_BAD = [
    (
        {"dnsPolicy": "Cluster"},
        'spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirst", '
        '"ClusterFirstWithHostNet", "Default", "None"',
    ),
    ({"dnsPolicy": ""}, "spec.dnsPolicy: Required value"),
    (
        {"dnsPolicy": "None"},
        "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
    ),
    (
        {"dnsPolicy": "None", "dnsConfig": {"searches": ["a.example"]}},
        "spec.dnsConfig.nameservers: Required value: must provide at least one DNS "
        "nameserver when `dnsPolicy` is None",
    ),
    (
        {"dnsConfig": {"nameservers": ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"]}},
        'spec.dnsConfig.nameservers: Invalid value: "192.0.2.1,192.0.2.2,192.0.2.3,192.0.2.4": '
        "must not have more than 3 nameservers",
    ),
    (
        {"dnsConfig": {"nameservers": ["dns.example"]}},
        'spec.dnsConfig.nameservers[0]: Invalid value: "dns.example": must be a valid IP '
        "address (e.g. 10.9.8.7 or 2001:db8::ffff)",
    ),
    (
        {"dnsConfig": {"searches": [f"s{i}.example" for i in range(33)]}},
        "must not have more than 32 search paths",
    ),
    (
        {"dnsConfig": {"searches": ["a" * 60 + f".x{i}" for i in range(32)]}},
        "must not have more than 2048 characters (including spaces) in the search list",
    ),
    (
        {"dnsConfig": {"searches": ["Bad_Domain"]}},
        'spec.dnsConfig.searches[0]: Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain',
    ),
    (
        {"dnsConfig": {"options": [{"value": "2"}]}},
        "spec.dnsConfig.options[0]: Required value: must not be empty",
    ),
    (
        {"dnsConfig": {"options": [{"name": "ndots", "value": "2\nnameserver 6.6.6.6"}]}},
        "spec.dnsConfig.options[0].value: Invalid value: ",
    ),
    (
        {"hostAliases": [{"ip": "not-an-ip", "hostnames": ["a"]}]},
        'spec.hostAliases[0].ip: Invalid value: "not-an-ip": must be a valid IP address',
    ),
    (
        {"hostAliases": [{"ip": "192.0.2.9", "hostnames": ["ok", "no spaces"]}]},
        'spec.hostAliases[0].hostnames[1]: Invalid value: "no spaces": a lowercase RFC 1123',
    ),
]


@pytest.mark.parametrize(("spec", "want"), POD_BAD)
def test_invalid_pod_resolver_fields(spec: dict[str, Any], want: str) -> None:
    got = _messages(_pod(**spec))
    assert any(want in m for m in got), got
