"""One name for the second service network's annotation: the master writes it, the DNS reads it."""

from __future__ import annotations

from pathlib import Path

import shiftnet
from shiftnet.api import ClusterNetwork
from shiftnet.api.network import SECONDARY_SERVICE_NETWORK_ANNOTATION
from shiftnet.dns.records import network_cidrs
from shiftnet.master.service_families import ServiceNetworks


def test_master_and_dns_read_the_same_annotation() -> None:
    cn = ClusterNetwork.model_validate(
        {
            "metadata": {
                "name": "default",
                "annotations": {SECONDARY_SERVICE_NETWORK_ANNOTATION: "fd00:30::/112"},
            },
            "network": "10.1.0.0/16",
            "serviceNetwork": "172.30.0.0/16",
        }
    )
    networks = ServiceNetworks.of(cn)
    assert networks is not None and networks.secondary == "fd00:30::/112"
    assert network_cidrs([cn]) == ["172.30.0.0/16", "fd00:30::/112", "10.1.0.0/16"]


def test_the_annotation_is_spelled_in_one_module() -> None:
    literal = '"' + SECONDARY_SERVICE_NETWORK_ANNOTATION + '"'
    src = Path(next(iter(shiftnet.__path__)))
    spelled = sorted(str(p.relative_to(src)) for p in src.rglob("*.py") if literal in p.read_text())
    assert spelled == ["api/network.py"]
