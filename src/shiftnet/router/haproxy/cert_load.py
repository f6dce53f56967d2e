"""Route certificates OpenSSL will not put in a TLS server context, found before any runtime
command is sent.

Why: HAProxy 2.6 refuses ``commit ssl cert`` (and ``add ssl crt-list``) of a
certificate it cannot load into an SSL context (an RSA key under 2048 bits at
OpenSSL's security level 2), and the refused attempt also breaks TLS
connections of other routes that the worker handles at that moment (an empty
answer right after the handshake). Such a change goes by the checked reload
instead, where ``haproxy -c`` refuses it and the route is left out. The check
loads each new or changed certificate file into the same OpenSSL library
through Python's ``ssl`` module, from memory (a memfd: the key never
touches the disk).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping

from shiftnet.router.haproxy.names import CERT_DIR


def unloadable(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    """Route certificate files of ``new``, new or changed since ``old``, that OpenSSL
    refuses to load as a server certificate and key, sorted."""
    if old is new:
        return []
    changed = [
        name
        for name, data in new.items()
        if name.startswith(CERT_DIR + "/") and old.get(name) != data
    ]
    return sorted(name for name in changed if not loads(new[name]))


def loads(pem: bytes) -> bool:
    """True when ``pem`` (certificate, chain and key) loads into a TLS server context."""
    fd = os.memfd_create("route-certificate", os.MFD_CLOEXEC)
    try:
        os.write(fd, pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(f"/proc/self/fd/{fd}", password=_no_password)
    except (ssl.SSLError, OSError, ValueError):
        return False
    finally:
        os.close(fd)
    return True


def _no_password() -> str:
    """An encrypted key is refused here, never asked for on a terminal."""
    raise ValueError("encrypted private key")
