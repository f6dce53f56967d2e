"""``shiftnet dns`` as a user runs it: resolv-conf output, flags, bad input, serving to dig."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.unbound import free_udp_tcp_port

pytestmark = pytest.mark.integration


def shiftnet(tmp_path: Path, *args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    full_env = dict(os.environ, SHIFTNET_HOME=str(tmp_path), **(env or {}))
    full_env.pop("SHIFTNET_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "shiftnet.cli.main", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )


def test_resolv_conf(tmp_path: Path) -> None:
    r = shiftnet(tmp_path, "dns", "resolv-conf", "shop")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "search shop.svc.cluster.local svc.cluster.local cluster.local",
        "# cluster DNS listens on port 8053: SHIFTNET_DNS_SERVER=127.0.0.1:8053",
        "nameserver 127.0.0.1",
        "options ndots:5",
    ]


def test_resolv_conf_follows_flags_and_env(tmp_path: Path) -> None:
    r = shiftnet(
        tmp_path,
        "dns",
        "resolv-conf",
        "shop",
        "--domain",
        "corp.example",
        env={"SHIFTNET_DNS_LISTEN": "127.0.0.53:53"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        "search shop.svc.corp.example svc.corp.example corp.example\n"
        "nameserver 127.0.0.53\n"
        "options ndots:5\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dns", "resolv-conf", "Bad_NS"], "namespace 'Bad_NS' is invalid"),
        (["dns", "--listen", "nowhere", "resolv-conf", "x"], "listen address 'nowhere'"),
        (["dns", "--upstream", "dns.google", "--listen", "127.0.0.1:0"], "upstream 'dns.google'"),
        (["dns", "--domain", "bad_domain", "resolv-conf", "x"], "cluster domain 'bad_domain'"),
        (["dns", "--tcp-idle-timeout", "0", "--listen", "127.0.0.1:0"], "TCP idle timeout 0"),
        (["dns", "--max-tcp-connections", "0", "--listen", "127.0.0.1:0"], "max TCP connections"),
    ],
)
def test_bad_input_is_one_sentence_and_non_zero(
    tmp_path: Path, args: list[str], message: str
) -> None:
    r = shiftnet(tmp_path, *args)
    assert r.returncode != 0
    assert r.stderr.startswith("error: ") and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_bad_answer_choice_in_the_environment_is_one_sentence(tmp_path: Path) -> None:
    env = {"SHIFTNET_DNS_EXTERNALNAME_OTHER": "srv"}
    r = shiftnet(tmp_path, "dns", "--listen", "127.0.0.1:0", env=env)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: --externalname-other 'srv' must be nodata or cname "
        "(environment SHIFTNET_DNS_EXTERNALNAME_OTHER)"
    ]
    r = shiftnet(tmp_path, "dns", "--empty-non-terminal", "maybe", "--listen", "127.0.0.1:0")
    assert r.returncode != 0 and "invalid choice: 'maybe'" in r.stderr


def test_serves_dig_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    port = free_udp_tcp_port()
    env = dict(os.environ, SHIFTNET_HOME=str(tmp_path), SHIFTNET_DNS_DNS_VERSION_OTHER="nodata")
    env.pop("SHIFTNET_STORE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "shiftnet.cli.main", "-v", "dns", "--listen", f"127.0.0.1:{port}",
         "--ttl", "17", "--domain", "corp.example", "--empty-non-terminal", "nodata",
         "--any-query", "rrsets"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        out = ""
        while time.monotonic() < deadline:
            out = subprocess.run(
                ["dig", "@127.0.0.1", "-p", str(port), "+time=1", "+tries=1",
                 "dns-version.corp.example", "TXT", "+noall", "+answer"],
                capture_output=True, text=True,
            ).stdout  # fmt: skip
            if " IN TXT " in " ".join(out.split()):
                break
            time.sleep(0.2)
        # the flag reached the zone: dns.<zone> (above ns.dns.<zone>) is NODATA, not NXDOMAIN
        ent = subprocess.run(
            ["dig", "@127.0.0.1", "-p", str(port), "+time=1", "+tries=1", "dns.corp.example"],
            capture_output=True, text=True,
        ).stdout  # fmt: skip
        assert "status: NOERROR" in ent, ent
        # the flag and the environment variable reached the zone: ANY gets every RRset,
        # A at dns-version is NODATA
        version = [
            subprocess.run(
                ["dig", "@127.0.0.1", "-p", str(port), "+time=1", "+tries=1",
                 "dns-version.corp.example", qtype],
                capture_output=True, text=True,
            ).stdout
            for qtype in ("ANY", "A")
        ]  # fmt: skip
        assert 'IN TXT "1.1.0"' in " ".join(version[0].split()), version[0]
        assert "status: NOERROR" in version[1] and "ANSWER: 0" in version[1], version[1]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert " ".join(out.split()) == 'dns-version.corp.example. 28800 IN TXT "1.1.0"', err
    assert proc.returncode == 143, err
    assert "Traceback" not in err


def test_port_in_use_is_one_sentence(tmp_path: Path) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        r = shiftnet(tmp_path, "dns", "--listen", f"127.0.0.1:{port}")
    assert r.returncode == 1
    assert r.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_metrics_listen_serves_coredns_series_on_loopback(tmp_path: Path) -> None:
    from tests.support.ports import free_port
    from tests.support.scrape import scrape

    port, prom = free_udp_tcp_port(), free_port()
    env = dict(os.environ, SHIFTNET_HOME=str(tmp_path))
    env.pop("SHIFTNET_STORE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "shiftnet.cli.main", "dns", "--listen", f"127.0.0.1:{port}",
         "--metrics-listen", f":{prom}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert "cluster DNS for" in proc.stdout.readline()
        assert proc.stdout.readline().strip() == f"metrics on http://127.0.0.1:{prom}/metrics"
        for _ in range(3):
            subprocess.run(
                ["dig", "@127.0.0.1", "-p", str(port), "+time=1", "+tries=1",
                 "nothing.default.svc.cluster.local", "MX"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
        found = scrape(f"http://127.0.0.1:{prom}/metrics")
        server = f"dns://127.0.0.1:{port}"
        assert found.value("coredns_dns_requests_total", server=server, type="MX") == 3
        assert found.value("coredns_dns_responses_total", server=server, rcode="NXDOMAIN") == 3
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert "Traceback" not in err


def test_bad_metrics_listen_is_one_sentence(tmp_path: Path) -> None:
    res = shiftnet(tmp_path, "dns", "--metrics-listen", "somewhere")
    assert res.returncode != 0
    assert res.stderr.strip().count("\n") == 0 and "--metrics-listen" in res.stderr, res.stderr
