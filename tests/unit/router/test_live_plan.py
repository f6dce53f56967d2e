"""live.plan: which changes the runtime API can apply (spares, maps, slots), and which not."""

from __future__ import annotations

import dataclasses

from tests.support import routes as f

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.description import Description
from shiftnet.router.haproxy.live import Fallback, LiveState, Plan, plan
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.haproxy.writer import backend_text
from shiftnet.router.model import build_model

CONFIG = RouterConfig(
    http_port=8080,
    https_port=8443,
    max_connections=2000,
    threads=2,
    spare_backends=2,
    share_backends=False,
)  # a backend per route
PATHS = RenderPaths(run_dir="/run/x", default_certificate="/etc/default.pem")
EPS = [f.endpoints("svc", ["10.0.0.1"]), f.endpoints("other", ["10.0.0.9", "10.0.0.8"])]


def files(routes: list, eps: list | None = None, config: RouterConfig = CONFIG) -> Description:
    """The description the renderer writes the files from (what the planner compares)."""
    return render(
        build_model(admit(routes, [], config), EPS if eps is None else eps), config, PATHS
    ).description


def ok(outcome: Plan | Fallback) -> Plan:
    assert isinstance(outcome, Plan), outcome
    return outcome


def test_new_route_takes_a_spare_and_its_map_entries_point_there() -> None:
    live = LiveState.of(files([f.route("a")]))
    p = ok(plan(live, files([f.route("a"), f.route("b", service="other", path="/x")])))
    assert p.state.aliases == {"be_http:ns:b": "be_spare_http:0"}
    assert not p.state.clean and p.deferred == {}
    joined = "\n".join(p.commands)
    assert "add map os_http_prefix.map b.example.com/x/ be_spare_http:0" in joined
    assert "set server be_spare_http:0/" in joined and "10.0.0.9" in joined
    assert "be_http:ns:b" not in joined
    # Servers are filled before the map sends traffic there.
    first_map = next(i for i, c in enumerate(p.commands) if "map" in c)
    assert all("map" not in c for c in p.commands[:first_map])
    # Asking again for the same files changes nothing more.
    again = ok(plan(p.state, files([f.route("a"), f.route("b", service="other", path="/x")])))
    assert again.commands == [] and again.state.aliases == p.state.aliases


def test_second_new_route_takes_the_next_spare_and_runs_out() -> None:
    live = LiveState.of(files([]))
    routes = [f.route(n) for n in ("a", "b", "c")]
    p = ok(plan(live, files(routes)))
    assert sorted(p.state.aliases.values()) == ["be_spare_http:0", "be_spare_http:1"]
    # Two spares per kind here: the third route waits for the reload, the others go now.
    assert list(p.deferred.values()) == ["no-spare"]
    (late,) = p.deferred
    assert late not in "\n".join(p.commands)


def test_deleted_alias_frees_its_spare_and_deleted_loaded_route_goes_to_maintenance() -> None:
    live = LiveState.of(files([f.route("a")]))
    p = ok(plan(live, files([f.route("a"), f.route("b")])))
    p2 = ok(plan(p.state, files([])))
    joined = "\n".join(p2.commands)
    assert p2.state.aliases == {}
    assert "del map os_http_prefix.map a.example.com/" in joined
    assert "del map os_http_prefix.map b.example.com/" in joined
    assert "set server be_http:ns:a/" in joined and "state maint" in joined
    assert "set server be_spare_http:0/" in joined
    assert not p2.state.clean  # be_http:ns:a is still loaded until the reload
    assert p2.state.backends["be_spare_http:0"] == files([]).backends["be_spare_http:0"]


def test_a_spare_freed_in_a_change_serves_a_route_of_that_change_in_a_second_step() -> None:
    live = LiveState.of(files([f.route("a")]))
    both = ok(plan(live, files([f.route("a"), f.route("b"), f.route("c", service="other")])))
    spares = {"be_http:ns:b": "be_spare_http:0", "be_http:ns:c": "be_spare_http:1"}
    assert both.state.aliases == spares
    # b leaves its spare as d and e arrive: d takes b's spare in the same change, e waits.
    wanted = files([f.route(n, service="other") for n in ("a", "c", "d", "e")])
    p = ok(plan(both.state, wanted))
    spares = {"be_http:ns:c": "be_spare_http:1", "be_http:ns:d": "be_spare_http:0"}
    assert p.state.aliases == spares
    assert p.deferred == {"be_http:ns:e": "no-spare"}
    # Spare 0 is emptied and b's entry gone before the spare gets d's pods and entry.
    spare0 = [(i, c) for i, c in enumerate(p.commands) if "be_spare_http:0/" in c]
    emptied = next(i for i, c in spare0 if c.endswith("state maint"))
    b_gone = p.commands.index("del map os_http_prefix.map b.example.com/")
    refilled = next(i for i, c in spare0 if "addr 10.0.0." in c)
    d_added = p.commands.index("add map os_http_prefix.map d.example.com/ be_spare_http:0")
    assert max(emptied, b_gone) < refilled < d_added
    # Nothing is freed when nothing leaves a spare: the change is one step.
    more = files([f.route(n, service="other") for n in ("a", "c", "d", "e", "g")])
    again = ok(plan(p.state, more))
    assert again.state.aliases == p.state.aliases
    assert again.deferred == {"be_http:ns:e": "no-spare", "be_http:ns:g": "no-spare"}


def test_endpoint_change_is_clean_and_one_to_two_members_needs_no_reload() -> None:
    live = LiveState.of(files([f.route("a")]))
    two = [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])]
    p = ok(plan(live, files([f.route("a")], two)))
    assert p.state.aliases == {} and p.deferred == {}
    assert any("10.0.0.2" in c for c in p.commands)
    # Two pods want health checks, which only a reload can add: served now, reload owed.
    assert not p.state.clean
    assert "check" not in backend_text(p.state.backends["be_http:ns:a"])
    # Back to one pod: nothing is owed any more.
    back = ok(plan(p.state, files([f.route("a")])))
    assert back.state.clean
    # A move of one of two pods keeps the loaded checks and owes nothing.
    live2 = LiveState.of(files([f.route("a")], two))
    moved = ok(plan(live2, files([f.route("a")], [f.endpoints("svc", ["10.0.0.1", "10.0.0.3"])])))
    assert moved.state.clean and any("10.0.0.3" in c for c in moved.commands)


def test_changes_that_need_a_reload() -> None:
    live = LiveState.of(files([f.route("a")]))
    annotated = f.route("a", annotations={"haproxy.router.openshift.io/balance": "roundrobin"})
    out = plan(live, files([annotated]))
    assert out == Fallback("backend-changed")
    # A new route with options no spare has: deferred alone.
    new = f.route("n", annotations={"haproxy.router.openshift.io/timeout": "9s"})
    p = ok(plan(live, files([f.route("a"), new])))
    assert p.deferred == {"be_http:ns:n": "backend-shape"} and p.state.aliases == {}
    other = dataclasses.replace(CONFIG, http_port=9090)
    assert plan(live, files([f.route("a")], config=other)) == Fallback("global")


def test_edge_and_passthrough_take_spares_of_their_kind() -> None:
    live = LiveState.of(files([]))
    routes = [
        f.route("e", tls={"termination": "edge"}),
        f.route("p", tls={"termination": "passthrough"}),
    ]
    p = ok(plan(live, files(routes)))
    assert p.state.aliases == {
        "be_edge_http:ns:e": "be_spare_edge:0",
        "be_tcp:ns:p": "be_spare_tcp:0",
    }
    joined = "\n".join(p.commands)
    assert "add map os_sni_passthrough.map p.example.com be_spare_tcp:0" in joined
    assert "add map os_tls_prefix.map e.example.com/ be_spare_edge:0" in joined


def test_slot_commands_drain_first_then_address_and_weight_then_ready() -> None:
    from shiftnet.router.haproxy.description import Member
    from shiftnet.router.haproxy.live import backend_commands

    empty = files([f.route("a")], []).backends["be_http:ns:a"]
    filled = empty.with_slots((Member("127.0.0.9", 80, 3, "127.0.0.9:80"), None, None, None))
    assert backend_commands(empty, filled) == [
        "set server be_http:ns:a/s0 addr 127.0.0.9 port 80",
        "set server be_http:ns:a/s0 weight 3",
        "set server be_http:ns:a/s0 state ready",
    ]
    assert backend_commands(filled, empty)[0] == "set server be_http:ns:a/s0 state maint"


def test_map_commands() -> None:
    from shiftnet.router.haproxy.live import map_commands

    old = {"a.example.com/": "be_a", "b.example.com/": "be_b"}
    new = {"b.example.com/": "be_c", "c.example.com/x": "be_c"}
    assert map_commands("os_http_prefix.map", old, new) == [
        "del map os_http_prefix.map a.example.com/",
        "set map os_http_prefix.map b.example.com/ be_c",
        "add map os_http_prefix.map c.example.com/x be_c",
    ]
    assert map_commands("m.map", old, dict(old)) == []


SHARED = dataclasses.replace(CONFIG, share_backends=True)
TIMEOUT = {"haproxy.router.openshift.io/timeout": "9s"}


def _served(p: Plan, key: str, map_name: str = "os_http_prefix.map") -> str | None:
    return p.state.maps[map_name].get(key)


def test_route_leaving_a_shared_backend_for_new_options_stays_where_it_was_served() -> None:
    live = LiveState.of(files([f.route("a"), f.route("b")], config=SHARED))
    assert live.maps["os_http_prefix.map"]["b.example.com/"] == "be_http:ns:a"
    p = ok(plan(live, files([f.route("a"), f.route("b", annotations=TIMEOUT)], config=SHARED)))
    # Its own backend waits for the reload; its entry keeps naming the shared backend.
    assert p.deferred == {"be_http:ns:b": "backend-shape"} and not p.state.clean
    assert p.commands == [] and _served(p, "b.example.com/") == "be_http:ns:a"
    # The group's pods change meanwhile: the shared backend follows, the entry stays.
    two = [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])]
    changed = [f.route("a"), f.route("b", annotations=TIMEOUT)]
    p2 = ok(plan(p.state, files(changed, two, config=SHARED)))
    assert _served(p2, "b.example.com/") == "be_http:ns:a"
    assert any("10.0.0.2" in c for c in p2.commands)
    # Options and pods changed at once: the shared backend serves other pods now, so
    # the route waits for the reload unserved rather than reach pods no longer its own.
    moved = [f.route("a"), f.route("b", service="other", annotations=TIMEOUT)]
    p3 = ok(plan(live, files(moved, config=SHARED)))
    assert _served(p3, "b.example.com/") is None
    assert "del map os_http_prefix.map b.example.com/" in p3.commands


def test_backend_renamed_for_a_group_keeps_serving_its_route_until_the_reload() -> None:
    # b leaves a's group for d's options: the group [b, d] is named after b, which is not
    # loaded, so both wait for the reload; d's loaded backend stays in use (not emptied).
    before = [f.route("a"), f.route("b"), f.route("d", annotations=TIMEOUT)]
    live = LiveState.of(files(before, config=SHARED))
    after = [f.route("a"), f.route("b", annotations=TIMEOUT), f.route("d", annotations=TIMEOUT)]
    p = ok(plan(live, files(after, config=SHARED)))
    assert p.deferred == {"be_http:ns:b": "backend-shape"}
    assert _served(p, "b.example.com/") == "be_http:ns:a"
    assert _served(p, "d.example.com/") == "be_http:ns:d"
    assert p.state.backends["be_http:ns:d"] is live.backends["be_http:ns:d"]
    assert p.commands == []
    # Deleted meanwhile, d goes at once, and its backend is emptied after all.
    p2 = ok(plan(p.state, files(after[:2], config=SHARED)))
    assert _served(p2, "d.example.com/") is None
    assert any(c.startswith("set server be_http:ns:d/") and "maint" in c for c in p2.commands)
    assert _served(p2, "b.example.com/") == "be_http:ns:a"


def test_route_on_a_spare_keeps_it_when_its_options_change() -> None:
    live = LiveState.of(files([f.route("a")]))
    p = ok(plan(live, files([f.route("a"), f.route("b")])))
    assert p.state.aliases == {"be_http:ns:b": "be_spare_http:0"}
    annotated = [f.route("a"), f.route("b", annotations=TIMEOUT)]
    p2 = ok(plan(p.state, files(annotated)))
    assert p2.deferred == {"be_http:ns:b": "backend-shape"} and p2.commands == []
    assert p2.state.aliases == p.state.aliases
    assert _served(p2, "b.example.com/") == "be_spare_http:0"
    # Its pods change too: the spare's slots follow, with the options it was loaded with.
    two = [f.endpoints("svc", ["10.0.0.1", "10.0.0.2"])]
    p3 = ok(plan(p2.state, files(annotated, [*two, EPS[1]])))
    spare = p3.state.backends["be_spare_http:0"]
    assert spare.options == live.backends["be_spare_http:0"].options
    assert any("be_spare_http:0/" in c and "10.0.0.2" in c for c in p3.commands)
    assert _served(p3, "b.example.com/") == "be_spare_http:0"
    # The spare stays taken: a new route takes the next one.
    p4 = ok(plan(p3.state, files([*annotated, f.route("c")], [*two, EPS[1]])))
    assert p4.state.aliases["be_http:ns:c"] == "be_spare_http:1"
