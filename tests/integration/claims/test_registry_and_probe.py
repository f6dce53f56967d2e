"""The claims registry and probes against the real kernel and real processes.

Clusters starting at the same moment, a holder killed while it has the lock,
a deleted cluster, sockets bound by this and other processes: what
``shiftnet up`` relies on to give each cluster its own ranges and ports.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.support.ports import free_port

from shiftnet.claims import probe
from shiftnet.claims.component import claim, port_user_for
from shiftnet.claims.picking import Claims, Request
from shiftnet.claims.registry import RECORD_NAME, locked_registry
from shiftnet.errors import ConfigError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CLAIM_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from shiftnet.claims.component import claim, port_user_for
    from shiftnet.claims.picking import Request
    registry, state, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    state.mkdir(parents=True)
    deadline = time.monotonic() + 30
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    d = claim(registry, state, Request(), port_user_for(state, {}))
    print(json.dumps(d.claims.to_json()))
    """
)


def _claim(registry: Path, state: Path) -> Claims:
    state.mkdir(parents=True, exist_ok=True)
    return claim(registry, state, Request(), port_user_for(state, {})).claims


def _disjoint(all_claims: list[Claims]) -> None:
    nets = [ipaddress.ip_network(n) for c in all_claims for n in c.networks.values()]
    for i, a in enumerate(nets):
        for b in nets[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    ports = [p for c in all_claims for p in c.ports.values() if p]
    assert len(ports) == len(set(ports)), ports


def test_clusters_starting_at_the_same_moment_never_share_a_range_or_port(
    tmp_path: Path,
) -> None:
    registry, go = tmp_path / "clusters", tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM_SCRIPT, str(registry), str(tmp_path / f"s{i}"), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    time.sleep(1.0)  # every interpreter started and waiting
    go.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        results.append(Claims.from_json(json.loads(out)))
    _disjoint(results)
    assert len(list(registry.glob("*.json"))) == 6


def test_a_restart_keeps_its_claims_and_they_are_private(tmp_path: Path) -> None:
    registry = tmp_path / "clusters"
    first = _claim(registry, tmp_path / "a")
    again = claim(registry, tmp_path / "a", Request(), port_user_for(tmp_path / "a", {}))
    assert again.claims == first
    assert set(again.origins.values()) == {"kept"}
    assert stat.S_IMODE(registry.stat().st_mode) == 0o700
    for f in [tmp_path / "a" / RECORD_NAME, *registry.glob("*.json")]:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_a_deleted_cluster_frees_its_claims_and_a_stopped_one_keeps_them(tmp_path: Path) -> None:
    registry = tmp_path / "clusters"
    _claim(registry, tmp_path / "a")
    b = _claim(registry, tmp_path / "b")
    shutil.rmtree(tmp_path / "a")  # as `kind delete cluster` removes a cluster
    with locked_registry(registry) as reg:
        others = reg.others(tmp_path / "c")
    assert [o.state_dir for o in others] == [str(tmp_path / "b")]
    assert others[0].claims == b
    assert len(list(registry.glob("*.json"))) == 1
    c = _claim(registry, tmp_path / "c")
    _disjoint([b, c])


def test_a_holder_killed_with_the_lock_leaves_it_free(tmp_path: Path) -> None:
    registry = tmp_path / "clusters"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from shiftnet.claims.registry import locked_registry\n"
            "with locked_registry(Path(sys.argv[1])):\n"
            "    print('locked', flush=True)\n"
            "    time.sleep(60)\n",
            str(registry),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(_claim, registry, tmp_path / "a")
            time.sleep(0.5)
            assert not waiting.done(), "the claim did not wait for the lock"
            holder.send_signal(signal.SIGKILL)
            assert waiting.result(timeout=10).networks
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()


def test_bound_loopback_addresses_come_from_the_kernel() -> None:
    base = f"127.{random.randint(200, 250)}.{random.randint(0, 255)}"
    tcp = socket.socket()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        tcp.bind((f"{base}.7", 0))
        tcp.listen()
        udp.bind((f"{base}.8", 0))
        seen = probe.bound_loopback_addresses()
        assert ipaddress.IPv4Address(f"{base}.7") in seen
        assert ipaddress.IPv4Address(f"{base}.8") in seen
        assert ipaddress.IPv4Address("127.0.0.1") not in seen
    finally:
        tcp.close()
        udp.close()
    seen = probe.bound_loopback_addresses()
    assert ipaddress.IPv4Address(f"{base}.7") not in seen
    assert ipaddress.IPv4Address(f"{base}.8") not in seen


def test_a_busy_port_names_its_process_unless_it_is_this_cluster_s_own(tmp_path: Path) -> None:
    port = free_port()
    state = tmp_path / "state"
    # A process whose command line names the state directory, like the router's HAProxy
    # (-f <state>/router-router/haproxy.cfg), adopted after a crash of `shiftnet up`.
    code = (
        "import socket, sys, time\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('up', flush=True)\n"
        "time.sleep(60)\n"
    )
    own = subprocess.Popen(
        [sys.executable, "-c", code, str(port), f"{state}/router-router/haproxy.cfg"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert own.stdout is not None and own.stdout.readline().strip() == "up"
        assert not probe.bindable("127.0.0.1", port)
        assert own.pid in [pid for pid, _ in probe.port_holders(port)]
        mine = port_user_for(state, {}, default_host="127.0.0.1")
        assert mine("routerHTTP", port, False) is None
        other = port_user_for(tmp_path / "another", {}, default_host="127.0.0.1")
        user = other("routerHTTP", port, False)
        assert user is not None and user.startswith(f"pid {own.pid} (")
        assert other("routerHTTP", port, True) == user  # a new pick skips it too
    finally:
        own.kill()
        own.wait()
    assert probe.bindable("127.0.0.1", port)
    assert port_user_for(tmp_path / "another", {})("routerHTTP", port, True) is None


def test_a_dns_port_busy_on_udp_only_is_busy(tmp_path: Path) -> None:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        udp.bind(("127.0.0.1", 0))
        port = udp.getsockname()[1]
        user = port_user_for(tmp_path, {"dns": "127.0.0.1"})("dns", port, False)
        assert user is not None and user.startswith(f"pid {os.getpid()}"), user
    finally:
        udp.close()


def test_a_damaged_record_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / RECORD_NAME).write_text('{"ports": {"dns": "not a port"}}')
    with pytest.raises(ConfigError) as err:
        _claim(tmp_path / "clusters", state)
    assert str(err.value).startswith(f"claims record {state / RECORD_NAME} is not valid")
    assert "delete it to let shiftnet choose again" in str(err.value)
    assert not list((tmp_path / "clusters").glob("*.json"))  # nothing recorded


def test_closing_remnants_of_stopped_pods_do_not_make_a_range_busy() -> None:
    addr = f"127.{random.randint(200, 250)}.{random.randint(0, 255)}.9"
    server = socket.socket()
    server.bind((addr, 0))
    server.listen()
    client = socket.create_connection(server.getsockname(), timeout=5)
    conn, _ = server.accept()
    conn.close()  # the pod's side closes first: its socket stays in TIME_WAIT
    server.close()
    client.close()
    ip = ipaddress.IPv4Address(addr)
    deadline = time.monotonic() + 5
    while not any(a == ip and state == "06" for _, a, _, state, _ in probe._sockets()):
        assert time.monotonic() < deadline, "no TIME_WAIT socket to look at"
        time.sleep(0.05)
    assert ip not in probe.bound_loopback_addresses()
