"""The addresses a router's HAProxy was told to listen on, from its rendered ``haproxy.cfg``.

Why the file: it is what the running HAProxy read (check 6 compares the two),
and ``diagnose`` may run in a shell whose environment differs from the
router's. Only ``bind`` lines of the ``public`` (HTTP) and ``public_ssl``
(HTTPS) frontends are read. Pure: parses text given to it.
"""

from __future__ import annotations

HTTP_FRONTEND = "public"
HTTPS_FRONTEND = "public_ssl"


def parse_bind(word: str) -> tuple[str, int] | None:
    """``127.0.0.1:80``, ``*:80``, ``:80``, ``[::1]:443`` -> (address, port)."""
    word = word.strip('"')
    host, sep, port = word.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def frontend_binds(config: str) -> dict[str, tuple[str, int]]:
    """Frontend name -> its first TCP ``bind`` address."""
    binds: dict[str, tuple[str, int]] = {}
    section = ""
    for raw in config.splitlines():
        line = raw.strip()
        if not raw.startswith((" ", "\t")) and line:
            words = line.split()
            section = words[1] if words[0] in ("frontend", "listen") and len(words) > 1 else ""
            continue
        if section and section not in binds and line.startswith("bind "):
            bind = parse_bind(line.split()[1])
            if bind is not None and not line.split()[1].strip('"').startswith("unix@"):
                binds[section] = bind
    return binds
