"""Which node ``diagnose`` checks from when an SDN lab is up under the state directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shiftnet.diagnose.lab_site import lab_site
from shiftnet.errors import ConfigError


def _lab(state_dir: Path, prefix: str, *, router: bool = True) -> None:
    nodes = [
        {"name": f"{prefix}-node{i}", "netns": f"{prefix}-node{i}", "hostIP": f"192.168.250.1{i}"}
        for i in (1, 2)
    ]
    processes = [
        {"role": "apiserver", "pid": 10, "netns": f"{prefix}-master", "log": "a.log"},
        {"role": "dns", "pid": 11, "netns": f"{prefix}-node2", "log": "d.log"},
    ]
    if router:
        processes.append({"role": "router", "pid": 12, "netns": f"{prefix}-node1", "log": "r.log"})
    record = {
        "prefix": prefix,
        "nodes": nodes,
        "processes": processes,
        "store": f"sqlite:///{state_dir}/lab/{prefix}/state.db",
        "dns": "192.168.250.12:53",
    }
    (state_dir / "lab" / prefix).mkdir(parents=True)
    (state_dir / "lab" / prefix / "lab.json").write_text(json.dumps(record))


def test_the_routers_node_its_home_the_labs_store_and_dns(tmp_path: Path) -> None:
    _lab(tmp_path, "sn-la")
    site = lab_site(tmp_path)
    assert site is not None
    assert (site.prefix, site.node, site.netns) == ("sn-la", "sn-la-node1", "sn-la-node1")
    assert site.home == tmp_path / "lab" / "sn-la" / "machines" / "sn-la-node1"
    assert site.store == f"sqlite:///{tmp_path}/lab/sn-la/state.db"
    assert site.dns == "192.168.250.12:53"


def test_a_lab_without_a_router_is_checked_from_its_dns_node(tmp_path: Path) -> None:
    _lab(tmp_path, "sn-la", router=False)
    site = lab_site(tmp_path)
    assert site is not None and site.node == "sn-la-node2"


def test_no_lab_or_a_router_of_its_own_is_diagnosed_in_place(tmp_path: Path) -> None:
    assert lab_site(tmp_path) is None
    (tmp_path / "lab" / "sn-lb").mkdir(parents=True)
    (tmp_path / "lab" / "sn-lb" / "lab.json").write_text("{not json")
    assert lab_site(tmp_path) is None
    _lab(tmp_path, "sn-la")
    (tmp_path / "router-router" / "conf").mkdir(parents=True)
    (tmp_path / "router-router" / "conf" / "haproxy.cfg").write_text("global\n")
    assert lab_site(tmp_path) is None


def test_two_labs_up_is_one_sentence_naming_both(tmp_path: Path) -> None:
    _lab(tmp_path, "sn-la")
    _lab(tmp_path, "sn-lb")
    with pytest.raises(ConfigError, match=r"holds 2 labs that are up \(sn-la, sn-lb\)"):
        lab_site(tmp_path)
