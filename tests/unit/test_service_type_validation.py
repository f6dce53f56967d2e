"""Service validation of node ports, traffic policies and the load-balancer fields, in
Kubernetes' words (the field, the value, the reason)."""

from __future__ import annotations

from typing import Any

import pytest

from shiftnet.api import parse_object
from shiftnet.api.validation import validate
from shiftnet.errors import InvalidObject


def check(spec: dict[str, Any]) -> str | None:
    svc = parse_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "a"},
            "spec": {"ports": [{"port": 80}], **spec},
        }
    )
    try:
        validate(svc)
    except InvalidObject as exc:
        return str(exc).split(": ", 1)[1]
    return None


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"type": "NodePort", "externalTrafficPolicy": "Local"}, None),
        ({"type": "LoadBalancer", "internalTrafficPolicy": "Local"}, None),
        ({"externalIPs": ["192.0.2.1"], "externalTrafficPolicy": "Cluster"}, None),
        (
            {"type": "NodePort", "externalTrafficPolicy": "Nearby"},
            'spec.externalTrafficPolicy: Unsupported value: "Nearby": supported values: '
            '"Cluster", "Local"',
        ),
        (
            {"externalTrafficPolicy": "Local"},
            'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for '
            "externally-accessible services",
        ),
        (
            {"internalTrafficPolicy": "local"},
            'spec.internalTrafficPolicy: Unsupported value: "local": supported values: '
            '"Cluster", "Local"',
        ),
        ({"type": "LoadBalancer", "loadBalancerIP": "127.60.0.1"}, None),
        (
            {"loadBalancerIP": "127.60.0.1"},
            "spec.loadBalancerIP: Forbidden: may only be used when `type` is 'LoadBalancer'",
        ),
        (
            {"type": "NodePort", "allocateLoadBalancerNodePorts": False},
            "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is "
            "'LoadBalancer'",
        ),
        (
            {"type": "LoadBalancer", "healthCheckNodePort": 30500},
            "spec.healthCheckNodePort: Invalid value: 30500: may only be set when `type` is "
            "'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
        ),
        (
            {
                "type": "NodePort",
                "ports": [
                    {"name": "a", "port": 80, "nodePort": 30080},
                    {"name": "b", "port": 81, "nodePort": 30080},
                ],
            },
            "spec.ports[1].nodePort: Duplicate value: 30080",
        ),
        (
            {
                "type": "NodePort",
                "ports": [
                    {"name": "a", "port": 53, "nodePort": 30053},
                    {"name": "b", "port": 53, "protocol": "UDP", "nodePort": 30053},
                ],
            },
            None,
        ),
    ],
)
def test_service_external_fields(spec: dict[str, Any], error: str | None) -> None:
    assert check(spec) == error
