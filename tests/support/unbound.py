"""A real Unbound (Debian ``unbound``) on a free loopback port, serving a static zone.

``auth_zones`` (apex -> zone file text) are served as Unbound's authoritative
zones, which, unlike local data, follow CNAME chains inside the zone (Unbound
stops after 9 links).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import dns.message
import dns.query


def free_udp_tcp_port() -> int:
    """A loopback port free for UDP and TCP at once."""
    import socket

    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind(("127.0.0.1", 0))
            port = int(u.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
                try:
                    t.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free loopback port")


@contextlib.contextmanager
def unbound(
    zone: str, local_data: Sequence[str], auth_zones: Mapping[str, str] | None = None
) -> Iterator[int]:
    """Run Unbound authoritative for ``zone`` (static) with ``local_data`` RRs, and for
    each of ``auth_zones`` from its zone file text; yields the port."""
    exe = shutil.which("unbound") or "/usr/sbin/unbound"
    tmp = Path(tempfile.mkdtemp(prefix="sn-unbound-"))
    port = free_udp_tcp_port()
    conf = [
        "server:",
        "  interface: 127.0.0.1",
        f"  port: {port}",
        "  do-ip6: no",
        "  num-threads: 1",
        "  do-daemonize: no",
        '  chroot: ""',
        '  username: ""',
        f'  directory: "{tmp}"',
        f'  pidfile: "{tmp}/unbound.pid"',
        "  use-syslog: no",
        f'  logfile: "{tmp}/unbound.log"',
        "  access-control: 127.0.0.0/8 allow",
        '  module-config: "iterator"',
        f'  local-zone: "{zone}" static',
        *(f'  local-data: "{rr}"' for rr in local_data),
    ]
    for i, (apex, text) in enumerate(sorted((auth_zones or {}).items())):
        (tmp / f"auth{i}.zone").write_text(text)
        conf += [
            "auth-zone:",
            f'  name: "{apex}"',
            f'  zonefile: "{tmp}/auth{i}.zone"',
            "  for-downstream: yes",
            "  for-upstream: yes",
        ]
    conf += [
        "remote-control:",
        "  control-enable: no",
    ]
    (tmp / "unbound.conf").write_text("\n".join(conf) + "\n")
    proc = subprocess.Popen(
        [exe, "-d", "-c", str(tmp / "unbound.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        probe = dns.message.make_query(zone, "SOA")
        while True:
            try:
                dns.query.udp(probe, "127.0.0.1", port=port, timeout=0.3)
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (
                        (tmp / "unbound.log").read_text() if (tmp / "unbound.log").exists() else ""
                    )
                    raise RuntimeError(f"unbound did not start: {log}") from None
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
