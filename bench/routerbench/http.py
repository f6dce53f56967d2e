"""Tiny async HTTP/1.1 client for probes (one request per connection, no keep-alive)."""

from __future__ import annotations

import asyncio


async def get(
    port: int, host: str, path: str = "/", ip: str = "127.0.0.1", timeout: float = 5.0
) -> tuple[int, str]:
    """(status, body); (0, error text) when the connection fails."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), timeout)
    except (TimeoutError, OSError) as err:
        return 0, str(err)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = await asyncio.wait_for(reader.read(), timeout)
    except (TimeoutError, OSError) as err:
        return 0, str(err)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0, data[:80].decode(errors="replace")
    return status, body.decode(errors="replace").strip()


async def routing_check(port: int, probes: list[tuple[str, str, str]]) -> int:
    """How many of ``(host, path, expected body)`` probes answer otherwise (0 = all right)."""
    wrong = 0
    for host, path, want in probes:
        status, body = await get(port, host, path)
        if status != 200 or body != want:
            wrong += 1
    return wrong
