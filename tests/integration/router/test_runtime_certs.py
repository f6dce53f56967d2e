"""The certificate commands of HAProxy's runtime API against a real HAProxy: replace, add and
remove a crt-list certificate with no reload, and every refusal (including a payload HAProxy
drops without a word) raised, never taken for success."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.router import port, request, sha256_of_pem
from tests.support.tls import KeyPair, TestCA

from shiftnet.router.haproxy import commands
from shiftnet.router.haproxy.process import HAProxyProcess, socket_dir
from shiftnet.router.haproxy.runtime import RuntimeAPI, RuntimeAPIError

pytestmark = pytest.mark.integration

CA = TestCA()
A = "certs/a.pem"
B = "certs/b.pem"
CRT_LIST = "crt-list.txt"


def pem(pair: KeyPair) -> bytes:
    return (pair.cert_pem + pair.key_pem).encode()


async def start(proc: HAProxyProcess, a: KeyPair) -> tuple[int, RuntimeAPI]:
    p = port()
    conf = proc.work_dir / "conf"
    (conf / "certs").mkdir(parents=True, exist_ok=True)
    (conf / "default.pem").write_bytes(pem(CA.issue("default.example.com")))
    (conf / A).write_bytes(pem(a))
    (conf / CRT_LIST).write_text(f"{A} a.example.com\n")
    (conf / "haproxy.cfg").write_text(
        "global\n"
        f"  stats socket {socket_dir(proc.work_dir)}/admin.sock mode 600 level admin\n"
        "defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n"
        "  timeout server 10s\n"
        "frontend tls\n"
        f"  bind 127.0.0.1:{p} ssl crt {conf}/default.pem crt-list {CRT_LIST}\n"
        "  http-request return status 200 content-type text/plain string ok\n"
    )
    await proc.ensure_running()
    return p, RuntimeAPI(proc.run_dir / "admin.sock")


async def presented(p: int, host: str) -> bytes | None:
    return (await asyncio.to_thread(request, p, host, tls=True)).cert_sha256


async def test_replace_add_and_remove_certificates_without_a_reload(
    haproxy_process: HAProxyProcess,
) -> None:
    first, second, b = (
        CA.issue("a.example.com"),
        CA.issue("a.example.com"),
        CA.issue("b.example.com"),
    )
    p, api = await start(haproxy_process, first)
    assert await presented(p, "a.example.com") == sha256_of_pem(first.cert_pem)
    reloads = (await haproxy_process.status()).reloads

    await api.batch([commands.set_ssl_cert(A, pem(second)), commands.commit_ssl_cert(A)])
    assert await presented(p, "a.example.com") == sha256_of_pem(second.cert_pem)

    await api.batch(
        [
            commands.new_ssl_cert(B),
            commands.set_ssl_cert(B, pem(b)),
            commands.commit_ssl_cert(B),
            commands.add_ssl_crt_list(CRT_LIST, f"{B} b.example.com"),
        ]
    )
    assert await presented(p, "b.example.com") == sha256_of_pem(b.cert_pem)

    await api.batch([commands.del_ssl_crt_list(CRT_LIST, B), commands.del_ssl_cert(B)])
    assert await presented(p, "b.example.com") != sha256_of_pem(b.cert_pem)
    assert await presented(p, "a.example.com") == sha256_of_pem(second.cert_pem)
    assert (await haproxy_process.status()).reloads == reloads


async def test_refusals_and_dropped_payloads_raise_and_change_nothing(
    haproxy_process: HAProxyProcess, tmp_path: Path
) -> None:
    a, other = CA.issue("a.example.com"), CA.issue("a.example.com")
    p, api = await start(haproxy_process, a)
    # A key that is not the certificate's: HAProxy refuses the commit.
    mixed = (other.cert_pem + a.key_pem).encode()
    with pytest.raises(RuntimeAPIError, match="commit ssl cert"):
        await api.batch([commands.set_ssl_cert(A, mixed), commands.commit_ssl_cert(A)])
    # A payload larger than HAProxy's CLI buffer gets no answer at all: still a refusal.
    chain = other.cert_pem * 40
    dropped = f"set ssl cert {A} <<\n{chain}{a.key_pem}"
    with pytest.raises(RuntimeAPIError, match="no answer"):
        await api.ssl(dropped)
    # ... and the planner never builds one: it goes by reload instead.
    with pytest.raises(RuntimeAPIError, match="longer than"):
        commands.set_ssl_cert(A, (chain + a.key_pem).encode())
    assert await presented(p, "a.example.com") == sha256_of_pem(a.cert_pem)
