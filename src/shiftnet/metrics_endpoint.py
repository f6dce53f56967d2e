"""One component's ``/metrics`` over HTTP, on loopback unless the user names an address.

Why one module: the router, proxy, DNS, master and node agent (standalone or
inside ``shiftnet up``) all serve their series the same way: a private
registry holding the component's collectors, a small threaded HTTP server
(``prometheus_client``'s) that can be stopped, and one rule for the address.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.registry import Collector

from shiftnet.api.names import is_digits
from shiftnet.errors import ConfigError
from shiftnet.free_ports import free_port_avoiding

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"


def metrics_address(text: str) -> tuple[str, int]:
    """``--metrics-listen ADDR:PORT`` (``:PORT`` means 127.0.0.1; port 0: any free one)."""
    host, _, port = text.rpartition(":")
    number = int(port) if is_digits(port) else -1
    if not 0 <= number < 65536:
        raise ConfigError(f"--metrics-listen={text!r} is invalid: must be ADDR:PORT")
    host = host.strip("[]")
    return host or LOOPBACK, number


class MetricsEndpoint:
    """``http://ADDR:PORT/metrics`` serving ``collectors`` until :meth:`stop`."""

    def __init__(
        self, listen: str, collectors: Iterable[Collector], avoid: Collection[int] = ()
    ) -> None:
        """``avoid``: ports a port-0 ``listen`` must not get (the cluster's claimed ones)."""
        self.host, port = metrics_address(listen)
        self.registry = CollectorRegistry(auto_describe=False)  # no scrape at registration
        for collector in collectors:
            self.registry.register(collector)

        try:
            if port == 0 and avoid:  # a free port, chosen first: starting servers is slow
                port = free_port_avoiding(self.host, avoid)
            server, self._thread = start_http_server(port, addr=self.host, registry=self.registry)
        except OSError as err:
            raise ConfigError(
                f"--metrics-listen={listen!r} cannot be served: {err.strerror or err}"
            ) from None
        self._server: Any = server
        self.port = int(server.server_port)
        log.info("metrics endpoint serving url=%s", self.url)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        server = self._server
        if server is None:
            return
        self._server = None
        server.shutdown()
        server.server_close()
        thread: threading.Thread = self._thread
        thread.join(timeout=5)
