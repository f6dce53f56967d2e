"""The API server's settings, with the flag and environment names users set."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shiftnet.api.names import is_digits
from shiftnet.errors import ConfigError

# Kubernetes' own port, on loopback only: nothing listens beyond this machine
# unless the user names another address.
DEFAULT_LISTEN = "127.0.0.1:6443"
MAX_BODY_BYTES = 3 * 1024 * 1024  # Kubernetes refuses request bodies over 3 MiB
WATCH_WRITE_TIMEOUT = 30.0  # a watcher that reads nothing for this long is dropped
DEFAULT_WATCH_TIMEOUT = 1800.0  # a watch without timeoutSeconds ends after 30 min
BOOKMARK_INTERVAL = 60.0  # seconds between bookmarks of a quiet watch that asked for them


def parse_listen(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``[v6]:PORT`` for IPv6) as (address, port); port 0 picks a free one."""
    value = text.strip()
    if value.startswith("["):
        host, sep, port_text = value[1:].partition("]:")
    else:
        host, sep, port_text = value.rpartition(":")
    if not sep or not is_digits(port_text) or int(port_text) > 65535:
        raise ConfigError(
            f"API listen address {text!r} must look like ADDR:PORT, e.g. {DEFAULT_LISTEN}"
        )
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(
            f"API listen address {text!r} does not start with an IP address"
        ) from None
    return host, int(port_text)


@dataclass(frozen=True)
class APIServerConfig:
    state_dir: Path
    listen_host: str = "127.0.0.1"
    listen_port: int = 6443
    max_body_bytes: int = MAX_BODY_BYTES
    watch_write_timeout: float = WATCH_WRITE_TIMEOUT
    default_watch_timeout: float = DEFAULT_WATCH_TIMEOUT
    bookmark_interval: float = BOOKMARK_INTERVAL
    audit_log: Path | None = None  # --audit-log: a JSON line per request (audit.py)

    @property
    def pki_dir(self) -> Path:
        """CA, serving certificate and the admin token (all 0600, the directory 0700)."""
        return self.state_dir / "apiserver"

    @property
    def kubeconfig_path(self) -> Path:
        return self.state_dir / "kubeconfig"

    @classmethod
    def build(
        cls,
        state_dir: Path,
        *,
        listen: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> APIServerConfig:
        """The flag wins over ``SHIFTNET_API_LISTEN``, which wins over the default."""
        env = os.environ if env is None else env
        host, port = parse_listen(listen or env.get("SHIFTNET_API_LISTEN") or DEFAULT_LISTEN)
        return cls(state_dir=state_dir, listen_host=host, listen_port=port)
