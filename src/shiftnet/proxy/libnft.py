"""A libnftables context living in one thread inside one network namespace.

Why not ``nft -f``: each run of the binary costs a process start and (with
``ip netns exec``) a mount namespace, ~10-20 ms, which alone is most of the
50 ms budget for a one-service change. libnftables (the library ``nft`` is
built on) runs the same script language in-process in well under a
millisecond for a small transaction, still as one atomic kernel transaction.

``setns`` switches only the calling thread's network namespace, so the
context is created and always used from one dedicated worker thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

CLONE_NEWNET = 0x40000000


class LibnftUnavailable(OSError):
    """libnftables (or setns) cannot be used here; callers fall back to ``nft -f``."""


class LibnftSession:
    def __init__(self, netns: str | None) -> None:
        self.netns = netns
        self._lib: ctypes.CDLL | None = None
        self._ctx: int | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"nft-{netns or 'host'}")
        self._reaper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nft-free")
        self._ready = self._pool.submit(self._open)

    def _open(self) -> None:
        self._enter_netns()
        self._lib = self._load()
        self._ctx = self._new_ctx()

    def _enter_netns(self) -> None:
        if self.netns:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            try:
                fd = os.open(f"/run/netns/{self.netns}", os.O_RDONLY)
            except OSError as exc:
                raise LibnftUnavailable(
                    f"network namespace {self.netns!r}: {exc.strerror}"
                ) from None
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise LibnftUnavailable(f"setns({self.netns}): {os.strerror(err)}")
            finally:
                os.close(fd)

    @staticmethod
    def _load() -> ctypes.CDLL:
        try:
            lib = ctypes.CDLL("libnftables.so.1")
        except OSError as exc:
            raise LibnftUnavailable(str(exc)) from None
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nft_run_cmd_from_buffer.restype = ctypes.c_int
        lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
        return lib

    def _new_ctx(self) -> int:
        assert self._lib is not None
        ctx = self._lib.nft_ctx_new(0)
        if not ctx:
            raise LibnftUnavailable("nft_ctx_new failed")
        self._lib.nft_ctx_buffer_error(ctx)
        self._lib.nft_ctx_buffer_output(ctx)
        return int(ctx)

    def _run(self, script: str, fresh: bool) -> tuple[int, str]:
        """Small changes reuse the context; a full load gets its own context because the
        context keeps what it parsed, and freeing 100,000 cached elements would otherwise
        be paid by the next small change."""
        assert self._lib is not None and self._ctx is not None
        ctx = self._new_ctx() if fresh else self._ctx
        rc = self._lib.nft_run_cmd_from_buffer(ctx, script.encode())
        err = (self._lib.nft_ctx_get_error_buffer(ctx) or b"").decode(errors="replace")
        if fresh:
            self._reaper.submit(self._lib.nft_ctx_free, ctx)
        return rc, err

    async def run(self, script: str, fresh: bool = False) -> tuple[int, str]:
        """(return code, error text) of one script, applied as one transaction."""
        await asyncio.wrap_future(self._ready)  # raises LibnftUnavailable
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, self._run, script, fresh
        )

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the session's thread (inside its network namespace): how raw
        netlink sockets (``nftnl``) are opened in, and used from, the right namespace."""
        await asyncio.wrap_future(self._ready)
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    def close(self) -> None:
        def free() -> None:
            if self._lib is not None and self._ctx is not None:
                self._lib.nft_ctx_free(self._ctx)
                self._ctx = None

        self._pool.submit(free)
        self._pool.shutdown(wait=False)
        self._reaper.shutdown(wait=False)
