"""Run a sub-command's async main with clean signal handling, and open the cluster client.

Long-running sub-commands (``up``, ``router``, ``proxy``, ...) call
:func:`run_async`: the first SIGINT or SIGTERM cancels the main task, so its
``finally`` blocks and ``async with`` exits shut everything down; the process
then exits 130 (SIGINT) or 143 (SIGTERM), as a shell reports a signalled
command. A second signal while shutting down cancels again (impatient users
get out; cleanup code should keep its own ``finally`` short).

Short sub-commands use :func:`run_async` too, with :func:`cluster_client` to
reach the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from shiftnet.client import Client

log = logging.getLogger(__name__)

T = TypeVar("T")

SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


def run_async(main: Callable[[], Awaitable[T]]) -> T | int:
    """Run ``main()`` in a fresh event loop until it returns or a signal stops it.

    Returns ``main``'s result, or the signal's exit status (130/143) when a
    signal cancelled it and it shut down cleanly.
    """
    return asyncio.run(_supervise(main))


async def _supervise(main: Callable[[], Awaitable[T]]) -> T | int:
    loop = asyncio.get_running_loop()
    task: asyncio.Task[T] = asyncio.ensure_future(main())
    received: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        received.append(sig)
        if len(received) == 1:
            log.info("signal=%s action=shutdown", sig.name)
        else:
            log.warning("signal=%s action=cancel-again count=%d", sig.name, len(received))
        task.cancel()

    installed: list[signal.Signals] = []
    for sig in SIGNAL_EXIT:
        try:
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread (e.g. tests calling main() in a thread)
    try:
        return await task
    except asyncio.CancelledError:
        if not received:
            raise
        return SIGNAL_EXIT[received[0]]
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


@contextlib.asynccontextmanager
async def cluster_client(store_url: str) -> AsyncIterator[Client]:
    """A :class:`shiftnet.client.Client` on the store ``store_url`` names, closed on exit.

    The SQLite backend creates its file's directory itself, so a fresh machine
    works without set-up, and nothing is created anywhere else.
    """
    from shiftnet.client import Client
    from shiftnet.store import open_store

    store = open_store(store_url)
    try:
        yield Client(store)  # backends report an unreachable store as StoreUnavailable
    finally:
        with contextlib.suppress(Exception):
            await store.close()


def client_from_args(args: Any) -> contextlib.AbstractAsyncContextManager[Client]:
    """:func:`cluster_client` for the global ``--store``/``--state-dir`` flags."""
    return cluster_client(args.store)


def metrics_address(text: str) -> tuple[str, int]:
    """``--metrics-listen ADDR:PORT`` (``:PORT`` means 127.0.0.1), or one clear error."""
    from shiftnet.metrics_endpoint import metrics_address as parse

    return parse(text)


def serve_metrics(listen: str | None, *collectors: Any) -> Any:
    """Start the Prometheus endpoint of a long-running sub-command when asked for.

    Returns the :class:`shiftnet.metrics_endpoint.MetricsEndpoint` (None when
    not asked for); the command prints its ``url`` once it is ready."""
    if not listen:
        return None
    from shiftnet.metrics_endpoint import MetricsEndpoint

    return MetricsEndpoint(listen, collectors)
