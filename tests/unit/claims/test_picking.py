"""The rules that give each local cluster its own loopback networks and ports."""

from __future__ import annotations

import ipaddress

import pytest

from shiftnet.claims.picking import (
    NETWORK_ROLES,
    PORT_ROLES,
    Claims,
    OtherCluster,
    Request,
    describe,
    loopback_pool,
    resolve,
)
from shiftnet.errors import ConfigError
from shiftnet.master.config import DEFAULTS

A = ipaddress.IPv4Address


def free(role: str, port: int, new: bool) -> str | None:
    return None


def busy_ports(*ports: int):
    seen: list[tuple[str, int, bool]] = []

    def user(role: str, port: int, new: bool) -> str | None:
        seen.append((role, port, new))
        return "pid 7 (nginx)" if port in ports else None

    user.seen = seen  # type: ignore[attr-defined]
    return user


def other(path: str, cn: str, sn: str, **ports: int) -> OtherCluster:
    return OtherCluster(path, Claims({"clusterNetwork": cn, "serviceNetwork": sn}, ports))


FIRST = other("/a", "127.10.0.0/16", "127.30.0.0/16", routerHTTP=10080, routerHTTPS=10443, dns=8053)


def test_pools_start_at_the_local_defaults_and_never_overlap() -> None:
    cluster, _, service = DEFAULTS["local"]
    pools = {r.name: r.pool for r in NETWORK_ROLES}
    assert pools["clusterNetwork"][0] == cluster
    assert pools["serviceNetwork"][0] == service
    nets = [ipaddress.ip_network(c) for p in pools.values() for c in p]
    assert len(nets) == 40
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])
    assert all(n.subnet_of(ipaddress.ip_network("127.0.0.0/8")) for n in nets)
    assert loopback_pool("127.10.0.0/16", 3) == ("127.10.0.0/16", "127.11.0.0/16", "127.12.0.0/16")


def test_first_cluster_gets_the_defaults() -> None:
    d = resolve(Request(), [], [], free)
    assert d.claims.networks == {
        "clusterNetwork": "127.10.0.0/16",
        "serviceNetwork": "127.30.0.0/16",
    }
    assert d.claims.ports == {
        "routerHTTP": 10080,
        "routerHTTPS": 10443,
        "routerStats": 1936,
        "dns": 8053,
        "api": 6443,
    }
    assert set(d.origins.values()) == {"new"}


def test_root_tries_80_and_443_first() -> None:
    d = resolve(Request(root=True), [], [], free)
    assert (d.claims.ports["routerHTTP"], d.claims.ports["routerHTTPS"]) == (80, 443)
    # ... and when another cluster holds them, the unprivileged defaults come next.
    taken = other("/a", "127.10.0.0/16", "127.30.0.0/16", routerHTTP=80, routerHTTPS=443)
    d = resolve(Request(root=True), [taken], [], free)
    assert (d.claims.ports["routerHTTP"], d.claims.ports["routerHTTPS"]) == (10080, 10443)


def test_second_cluster_gets_the_next_free_networks_and_ports() -> None:
    d = resolve(Request(), [FIRST], [], free)
    assert d.claims.networks == {
        "clusterNetwork": "127.11.0.0/16",
        "serviceNetwork": "127.31.0.0/16",
    }
    assert d.claims.ports["routerHTTP"] == 10081
    assert d.claims.ports["routerHTTPS"] == 10444
    assert d.claims.ports["dns"] == 8054
    assert d.claims.ports["routerStats"] == 1936  # the first cluster has no stats claim


def test_bound_addresses_make_a_range_not_free() -> None:
    # Something outside any registry (another user's cluster, a test server) binds there.
    d = resolve(Request(), [], [A("127.10.3.4"), A("127.30.0.9"), A("127.31.200.1")], free)
    assert d.claims.networks == {
        "clusterNetwork": "127.11.0.0/16",
        "serviceNetwork": "127.32.0.0/16",
    }


def test_busy_ports_are_skipped_for_new_picks_with_the_strict_probe() -> None:
    user = busy_ports(10080, 8053, 8054)
    d = resolve(Request(), [], [], user)
    assert d.claims.ports["routerHTTP"] == 10081
    assert d.claims.ports["dns"] == 8055
    assert all(new for _, _, new in user.seen)  # type: ignore[attr-defined]


def test_ranges_claimed_with_other_sizes_are_avoided() -> None:
    wide = other("/w", "127.10.0.0/15", "127.28.0.0/14")  # 127.10-11 and 127.28-31
    d = resolve(Request(), [wide], [], free)
    assert d.claims.networks == {
        "clusterNetwork": "127.12.0.0/16",
        "serviceNetwork": "127.32.0.0/16",
    }


def test_a_restart_keeps_the_store_s_networks_and_the_record_s_ports() -> None:
    kept = Claims(
        {"clusterNetwork": "127.12.0.0/16", "serviceNetwork": "127.33.0.0/16"},
        {"routerHTTP": 10085, "routerHTTPS": 10450, "routerStats": 1940, "dns": 8060, "api": 6450},
    )
    stored = {"clusterNetwork": "127.12.0.0/16", "serviceNetwork": "127.33.0.0/16"}
    # Its own pods still bind addresses in its ranges (adopted after a crash): not a conflict.
    busy = [A("127.12.0.2"), A("127.33.0.1")]
    user = busy_ports()
    d = resolve(Request(stored_networks=stored, kept=kept), [FIRST], busy, user)
    assert d.claims == kept
    assert set(d.origins.values()) == {"kept"}
    assert all(not new for _, _, new in user.seen)  # type: ignore[attr-defined]


def test_the_store_wins_over_the_record_for_networks() -> None:
    kept = Claims({"clusterNetwork": "127.12.0.0/16", "serviceNetwork": "127.33.0.0/16"}, {})
    stored = {"clusterNetwork": "127.14.0.0/16", "serviceNetwork": "127.35.0.0/16"}
    d = resolve(Request(stored_networks=stored, kept=kept), [], [], free)
    assert d.claims.networks == stored


def test_a_kept_port_someone_else_now_holds_is_an_error_naming_the_flag() -> None:
    kept = Claims({}, {"routerHTTP": 10085})
    with pytest.raises(ConfigError) as err:
        resolve(Request(kept=kept), [], [], busy_ports(10085))
    assert str(err.value) == (
        "router HTTP port 10085 of this cluster is in use by pid 7 (nginx): choose another "
        "with --http-port (ROUTER_SERVICE_HTTP_PORT)"
    )


def test_flags_win_over_kept_ports() -> None:
    kept = Claims({}, {"routerHTTP": 10085, "dns": 8060})
    d = resolve(Request(kept=kept, given_ports={"routerHTTP": 20000}), [], [], free)
    assert d.claims.ports["routerHTTP"] == 20000 and d.origins["routerHTTP"] == "given"
    assert d.claims.ports["dns"] == 8060 and d.origins["dns"] == "kept"


def test_a_new_pick_never_takes_a_port_a_flag_gave_another_role() -> None:
    d = resolve(Request(given_ports={"routerStats": 10080}), [], [], free)
    assert d.claims.ports["routerStats"] == 10080
    assert d.claims.ports["routerHTTP"] == 10081


def test_a_given_network_another_cluster_claims_is_an_error() -> None:
    with pytest.raises(ConfigError) as err:
        resolve(Request(given_networks={"serviceNetwork": "127.30.0.0/24"}), [FIRST], [], free)
    assert str(err.value) == (
        "service network 127.30.0.0/24 (--service-network) overlaps 127.30.0.0/16, the service "
        "network of the shiftnet cluster in /a: choose another --service-network"
    )


def test_a_given_network_with_bound_addresses_is_an_error() -> None:
    with pytest.raises(
        ConfigError,
        match=r"127\.50\.0\.0/16 \(--cluster-network\) has "
        r"addresses in use on this machine \(127\.50\.0\.7\)",
    ):
        resolve(
            Request(given_networks={"clusterNetwork": "127.50.0.0/16"}), [], [A("127.50.0.7")], free
        )


def test_a_given_network_that_differs_from_the_stored_one_is_an_error() -> None:
    req = Request(
        given_networks={"serviceNetwork": "127.40.0.0/16"},
        stored_networks={"serviceNetwork": "127.31.0.0/16"},
    )
    with pytest.raises(
        ConfigError,
        match=r"differs from 127\.31\.0\.0/16, the service network "
        "this cluster keeps in its store: leave out --service-network",
    ):
        resolve(req, [], [], free)


def test_the_same_given_network_as_stored_is_fine_even_with_its_pods_bound() -> None:
    req = Request(
        given_networks={"clusterNetwork": "127.15.0.0/16"},
        stored_networks={"clusterNetwork": "127.15.0.0/16"},
    )
    d = resolve(req, [], [A("127.15.0.2")], free)
    assert d.claims.networks["clusterNetwork"] == "127.15.0.0/16"


def test_a_given_port_another_cluster_claims_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError) as err:
        resolve(Request(given_ports={"routerHTTPS": 8053}), [FIRST], [], free)
    assert str(err.value) == (
        "router HTTPS port 8053 (--https-port (ROUTER_SERVICE_HTTPS_PORT)) is claimed by the "
        "shiftnet cluster in /a (its cluster DNS port): choose another with --https-port "
        "(ROUTER_SERVICE_HTTPS_PORT)"
    )


def test_two_roles_given_the_same_port_is_an_error() -> None:
    with pytest.raises(ConfigError, match="is also this cluster's router HTTP port"):
        resolve(Request(given_ports={"routerHTTP": 9000, "dns": 9000}), [], [], free)


def test_a_kept_network_another_cluster_claims_too_is_an_error() -> None:
    # Two clusters of an older version, both on the old fixed defaults.
    stored = {"clusterNetwork": "127.10.0.0/16", "serviceNetwork": "127.30.0.0/16"}
    with pytest.raises(
        ConfigError,
        match=r"of this cluster overlaps 127\.10\.0\.0/16, the cluster "
        "network of the shiftnet cluster in /a: the two cannot run side by side",
    ):
        resolve(Request(stored_networks=stored), [FIRST], [], free)


def test_a_full_pool_is_an_error_naming_the_flag() -> None:
    others = [other(f"/c{i}", f"127.{10 + i}.0.0/16", f"127.{30 + i}.0.0/16") for i in range(20)]
    with pytest.raises(
        ConfigError,
        match=r"no free cluster network is left for a new cluster: "
        r"127\.10\.0\.0/16 to 127\.29\.0\.0/16 .*pass --cluster-network CIDR",
    ):
        resolve(Request(), others, [], free)


def test_stats_off_is_kept_off_only_while_asked() -> None:
    d = resolve(Request(given_ports={"routerStats": 0}), [], [], free)
    assert d.claims.ports["routerStats"] == 0
    assert "stats" not in describe(d)
    again = resolve(Request(kept=d.claims), [], [], free)
    assert again.claims.ports["routerStats"] == 1936


def test_invalid_given_network_is_one_sentence() -> None:
    with pytest.raises(
        ConfigError,
        match=r'service network "127.30.0.1/16" \(--service-network\)'
        " is not a valid CIDR",
    ):
        resolve(Request(given_networks={"serviceNetwork": "127.30.0.1/16"}), [], [], free)


def test_records_round_trip_and_bad_ones_are_refused() -> None:
    c = resolve(Request(), [FIRST], [], free).claims
    assert Claims.from_json(c.to_json()) == c
    for bad in ([], {"networks": {"a": 1}}, {"ports": {"dns": 70000}}, {"ports": {"dns": "x"}}):
        with pytest.raises(ConfigError):
            Claims.from_json(bad)


def test_the_result_depends_only_on_the_input() -> None:
    others = [FIRST, other("/b", "127.11.0.0/16", "127.31.0.0/16", dns=8054)]
    one = resolve(Request(), others, [A("127.12.0.1")], free)
    two = resolve(Request(), list(reversed(others)), [A("127.12.0.1")], free)
    assert one == two
    assert describe(one) == (
        "cluster network 127.13.0.0/16 (new), service network 127.32.0.0/16 (new), "
        "router HTTP port 10081 (new), router HTTPS port 10444 (new), router stats port 1936 "
        "(new), cluster DNS port 8055 (new), Kubernetes API port 6443 (new)"
    )


def test_every_port_role_has_a_flag_and_a_distinct_name() -> None:
    assert len({r.name for r in PORT_ROLES}) == len(PORT_ROLES)
    assert all(r.flag.startswith("--") for r in PORT_ROLES)
