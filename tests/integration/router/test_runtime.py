"""HAProxy's runtime API against a real HAProxy: servers, maps, stats, state."""

from __future__ import annotations

import asyncio

import pytest
from tests.support.backends import backends
from tests.support.router import (
    aget,
    port,
    write_minimal,
)

from shiftnet.router.haproxy.process import HAProxyProcess
from shiftnet.router.haproxy.runtime import (
    RuntimeAPI,
    RuntimeAPIError,
    parse_servers_state,
    parse_show_stat,
)

pytestmark = pytest.mark.integration


async def _start(proc: HAProxyProcess, **kw: object) -> tuple[int, RuntimeAPI]:
    p = port()
    write_minimal(proc.work_dir, port=p, **kw)  # type: ignore[arg-type]
    await proc.ensure_running()
    return p, RuntimeAPI(proc.run_dir / "admin.sock")


async def test_spare_slot_filled_and_emptied_at_runtime(haproxy_process: HAProxyProcess) -> None:
    with backends("pod-a", "pod-b") as (a, b):
        p, api = await _start(haproxy_process, servers=[("s0", a.ip, a.port)], spare_slots=2)
        seen = {(await aget(p, "/", "x"))[1].strip() for _ in range(6)}
        assert seen == {"pod-a"}
        reloads = (await haproxy_process.status()).reloads
        await api.batch(
            [
                api.set_server_addr_cmd("be_pods", "_spare0", b.ip, b.port),
                api.set_server_state_cmd("be_pods", "_spare0", "ready"),
            ]
        )
        seen = {(await aget(p, "/", "x"))[1].strip() for _ in range(6)}
        assert seen == {"pod-a", "pod-b"}
        await api.set_server_state("be_pods", "s0", "maint")
        seen = {(await aget(p, "/", "x"))[1].strip() for _ in range(6)}
        assert seen == {"pod-b"}
        state = {s.server: s for s in await api.show_servers_state() if s.backend == "be_pods"}
        assert state["_spare0"].address == b.ip and state["_spare0"].port == b.port
        assert state["s0"].in_maintenance and not state["_spare1"].up
        assert (await haproxy_process.status()).reloads == reloads  # no reload happened


async def test_weights_at_runtime(haproxy_process: HAProxyProcess) -> None:
    with backends("pod-a", "pod-b") as (a, b):
        p, api = await _start(haproxy_process, servers=[("s0", a.ip, a.port), ("s1", b.ip, b.port)])
        await api.set_server_weight("be_pods", "s0", 0)
        seen = {(await aget(p, "/", "x"))[1].strip() for _ in range(6)}
        assert seen == {"pod-b"}
        await api.set_server_weight("be_pods", "s0", 3)
        await api.set_server_weight("be_pods", "s1", 1)
        names = [(await aget(p, "/", "x"))[1].strip() for _ in range(40)]
        assert names.count("pod-a") == 30


async def test_maps_at_runtime(haproxy_process: HAProxyProcess) -> None:
    with backends("pod-a") as (a,):
        p, api = await _start(haproxy_process, servers=[("s0", a.ip, a.port)])
        assert (await aget(p, "/", "other.example"))[1].strip() == "pod-a"
        refs = await api.show_maps()
        ref = next(r for r in refs if r.endswith("hosts.map"))
        await api.add_map(ref, "other.example", "be_other")
        assert (await aget(p, "/", "other.example"))[1] == "other"
        assert await api.show_map(ref) == {"other.example": "be_other"}
        await api.set_map(ref, "other.example", "be_pods")
        assert (await aget(p, "/", "other.example"))[1].strip() == "pod-a"
        await api.del_map(ref, "other.example")
        assert await api.show_map(ref) == {}
        with pytest.raises(RuntimeAPIError):
            await api.del_map(ref, "not-there.example")


async def test_refusals_and_injection_are_errors(haproxy_process: HAProxyProcess) -> None:
    _p, api = await _start(haproxy_process, servers=[("s0", "127.0.0.1", 1)])
    with pytest.raises(RuntimeAPIError):
        await api.set_server_weight("be_pods", "nosuch", 1)
    with pytest.raises(RuntimeAPIError):
        await api.set_server_state("be_nosuch", "s0", "ready")
    with pytest.raises(RuntimeAPIError):
        await api.add_map("hosts.map", "a;shutdown sessions", "x")
    with pytest.raises(RuntimeAPIError):
        await api.set_server_addr("be_pods", "s0", "1.2.3.4; disable frontend public", 80)
    with pytest.raises(RuntimeAPIError):
        await api.raw("show info\nshow stat")


async def test_show_stat_counts_requests_and_errors(haproxy_process: HAProxyProcess) -> None:
    with backends("pod-a") as (a,):
        p, api = await _start(
            haproxy_process, servers=[("s0", a.ip, a.port), ("s1", "127.0.0.1", 1)]
        )
        await api.set_server_state("be_pods", "s1", "maint")
        for _ in range(5):
            assert (await aget(p, "/", "x"))[0] == 200
        counts = await api.backend_counts()
        assert counts["be_pods"][0] == 5 and counts["be_pods"][1] == 0
        await api.set_server_state("be_pods", "s0", "maint")
        assert (await aget(p, "/", "x"))[0] == 503
        await asyncio.sleep(0)
        counts = await api.backend_counts()
        assert counts["be_pods"] == (6, 1)
        rows = [r for r in await api.show_stat() if r.proxy == "be_pods" and r.is_server]
        assert {r.name for r in rows} == {"s0", "s1"}


def test_parsers_on_fixed_text() -> None:
    stat = (
        "# pxname,svname,status,weight,stot,req_tot,econ,eresp,hrsp_5xx,check_status,addr,mode,\n"
        "be,BACKEND,UP,2,7,9,1,2,3,,,http,\n"
        "be,s0,UP,1,7,,0,0,0,L7OK,127.0.0.1:80,http,\n"
    )
    rows = parse_show_stat(stat)
    assert rows[0].is_backend and rows[0].requests_total == 9 and rows[0].errors == 3
    assert rows[1].is_server and rows[1].check_status == "L7OK"
    state = (
        "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
        "srv_iweight srv_time_since_last_change srv_check_status srv_check_result "
        "srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "
        "srv_fqdn srv_port\n"
        "3 be 1 s0 127.0.0.9 2 0 1 1 5 1 0 0 0 0 0 0 - 8080\n"
    )
    (s,) = parse_servers_state(state)
    assert (s.backend, s.server, s.address, s.port, s.up) == ("be", "s0", "127.0.0.9", 8080, True)
