"""The kubeconfig ``kubectl`` and client libraries use as is: server, CA, admin token."""

from __future__ import annotations

import base64
import ipaddress
from typing import Any

import yaml

CONTEXT = "shiftnet"


def server_url(listen_host: str, port: int) -> str:
    """Where clients on this machine reach the server (loopback for a wildcard listen)."""
    addr = ipaddress.ip_address(listen_host)
    if addr.is_unspecified:
        addr = ipaddress.ip_address("::1" if addr.version == 6 else "127.0.0.1")
    host = f"[{addr}]" if addr.version == 6 else str(addr)
    return f"https://{host}:{port}"


def render_kubeconfig(server: str, ca_pem: bytes, token: str, user: str) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": user, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)
