"""Group commit for the SQLite store: the writes waiting together share one transaction.

A write handed to SQLite's worker thread one at a time costs, besides the
write itself, a wake-up of that thread, its wait for the GIL, a wake-up of
the event loop for the answer (and on a loaded machine the context switches
in between), and one ``BEGIN IMMEDIATE``/``COMMIT`` with its WAL append.
Here the writes handed in during one pass of the event loop are collected
and, at the end of that pass, committed together: one transaction, one WAL
append, one answer per caller.

Where a batch runs: on the event loop's own thread, with a connection that
never waits for a lock (``busy_timeout=0``), when SQLite's write lock is
free, as it nearly always is in one process; the batch's work is a few
indexed statements and a ``write()`` of the WAL into the page cache
(``synchronous=NORMAL`` syncs only at checkpoints, and checkpoints run on
the worker thread, never on that connection). When another connection (most
often another process) holds the lock, the batch goes to the worker thread,
whose connection waits for it up to the store's 30 s timeout, so the event
loop never waits for a lock. A batch also goes there when a write asks to
(a compaction, which deletes many rows) or before the fast connection is
open (the worker opens it: opening may wait for the file's lock).

Each write runs inside its own ``SAVEPOINT`` when the batch holds more than
one, so a write that fails (``AlreadyExists``, ``Conflict``, ``NotFound`` or
any other error of its own) is rolled back alone and its error goes to its
caller only; the others commit. No caller is answered before the ``COMMIT``
that holds its write returns; when that ``COMMIT`` or the ``BEGIN`` fails,
every write of the batch fails with
:class:`~shiftnet.errors.StoreUnavailable` and none is stored. Batches run
one at a time in the order their writes were handed in, so revisions follow
that order; watchers see only committed revisions, so a batch reaches them
at once and in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

from shiftnet.errors import StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BATCH = 256  # writes per transaction: bounds how long one batch holds the file's lock
# Fast-path work between WAL checkpoints, counted as 1 per transaction plus 1 per 4
# writes in it: about the 1,000 pages (4 MB of WAL) of SQLite's own autocheckpoint.
CHECKPOINT_EVERY = 200

WriteOp = Callable[[sqlite3.Connection], Any]


@dataclass(slots=True)
class _Write:
    op: WriteOp | None  # None: a barrier, answered once every write before it is done
    future: asyncio.Future[Any]
    on_thread: bool = False
    value: Any = None
    error: BaseException | None = None


def _answer(writes: list[_Write]) -> None:
    """On the callers' event loop: every outcome of one batch."""
    for w in writes:
        if w.future.done():  # the caller gave up (cancelled) meanwhile
            continue
        if w.error is not None:
            w.future.set_exception(w.error)
        else:
            w.future.set_result(w.value)


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class GroupCommit:
    """The write queue of one SQLite store.

    ``connect`` gives the worker thread's connection (it waits for locks);
    ``open_fast`` opens, on the worker thread, the event loop's connection (one
    that never waits), or returns None when the store cannot have one.
    """

    def __init__(
        self,
        executor: Executor,
        connect: Callable[[], sqlite3.Connection],
        open_fast: Callable[[], sqlite3.Connection | None],
        path: str,
    ) -> None:
        self._executor = executor
        self._connect = connect
        self._open_fast = open_fast
        self._path = path
        self._lock = threading.Lock()  # guards the queue and the flag below
        self._queue: list[_Write] = []
        self._scheduled = False  # a batch is due, or running (on either thread)
        self._fast: sqlite3.Connection | None = None
        self._fast_tried = False
        self._fast_in_use = threading.Lock()  # one event loop at a time on ``_fast``
        self._since_checkpoint = 0
        self._checkpointing = False  # batches wait on the worker, behind the checkpoint
        # counters for tests and measurements: transactions, writes, and how many
        # of those transactions ran on the event loop's thread
        self.batches = 0
        self.writes = 0
        self.fast_batches = 0

    async def write(self, op: Callable[[sqlite3.Connection], T], on_thread: bool = False) -> T:
        """Run ``op`` inside a write transaction shared with the other writes waiting
        with it; its value once that transaction is committed. ``op`` must not begin,
        commit or roll back a transaction itself. ``on_thread``: the batch holding it
        runs on the worker thread (work too long for the event loop)."""
        value: T = await self._submit(op, on_thread)
        return value

    async def barrier(self) -> None:
        """Return once every write handed in before is committed or failed."""
        await self._submit(None, False)

    def _submit(self, op: WriteOp | None, on_thread: bool) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            self._queue.append(_Write(op, future, on_thread))
            if self._scheduled:
                return future
            self._scheduled = True
        # at the end of this pass of the loop: the writes handed in meanwhile join
        loop.call_soon(self._flush)
        return future

    def _take(self) -> list[_Write]:
        with self._lock:
            batch = self._queue[:MAX_BATCH]
            del self._queue[:MAX_BATCH]
        return batch

    def _next(self) -> bool:
        """After a batch: whether another one is due (``_scheduled`` stays set)."""
        with self._lock:
            self._scheduled = bool(self._queue)
            return self._scheduled

    # ------------------------------------------------------------ the event loop's thread

    def _flush(self) -> None:
        batch = self._take()
        try:
            done = self._fast_path(batch)
        except Exception as exc:  # a bug: every caller of the batch hears of it
            conn = self._fast
            if conn is not None and conn.in_transaction:
                conn.execute("ROLLBACK")
            self._fail(batch, self._failed(repr(exc)))
            done = True
        if done:
            if self._next():
                asyncio.get_running_loop().call_soon(self._flush)
            _answer(batch)
            return
        self._executor.submit(self._run_batch, batch)

    def _fast_path(self, batch: list[_Write]) -> bool:
        """Commit ``batch`` on this thread if nothing holds the write lock; False when
        it must go to the worker thread instead."""
        conn = self._fast
        if conn is None:
            return False
        loop = asyncio.get_running_loop()
        if any(w.on_thread or w.future.get_loop() is not loop for w in batch):
            return False
        if self._checkpointing or not self._fast_in_use.acquire(blocking=False):
            return False
        try:
            writes = [w for w in batch if w.op is not None and not w.future.cancelled()]
            if not writes:
                return True
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _busy(exc):
                    return False  # another connection writes: wait for it on the worker
                self._fail(writes, self._failed(exc))
                return True
            self.fast_batches += 1
            self._in_transaction(conn, writes)
            self._since_checkpoint += 1 + len(writes) // 4
            if self._since_checkpoint >= CHECKPOINT_EVERY:
                self._since_checkpoint = 0
                self._checkpointing = True
                self._executor.submit(self._checkpoint)
            return True
        finally:
            self._fast_in_use.release()

    # ------------------------------------------------------------ the worker thread

    def _run_batch(self, batch: list[_Write]) -> None:
        try:
            self._commit_waiting(batch)
        except BaseException as exc:  # a bug, or the thread torn down: nobody is left hanging
            with contextlib.suppress(Exception):
                conn = self._connect()
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            self._fail(batch, f"the store at {self._path} failed: {exc!r}")
            raise
        finally:
            if not self._fast_tried:
                self._open_fast_connection()
            if self._next():
                self._executor.submit(self._run_batch, self._take())
            self._deliver(batch)

    def _open_fast_connection(self) -> None:
        try:
            self._fast = self._open_fast()
        except StoreUnavailable:
            return  # the store cannot be opened now: tried again after the next batch
        except (sqlite3.Error, OSError) as exc:
            log.warning("store fast connection unavailable path=%s error=%s", self._path, exc)
        self._fast_tried = True

    def _commit_waiting(self, batch: list[_Write]) -> None:
        """``batch`` on the worker's connection, which waits for another's lock."""
        writes = [w for w in batch if w.op is not None and not w.future.cancelled()]
        if not writes:
            return
        try:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
        except StoreUnavailable as err:
            self._fail(writes, str(err))
            return
        except sqlite3.Error as exc:
            self._fail(writes, self._failed(exc))
            return
        self._in_transaction(conn, writes)

    def _checkpoint(self) -> None:
        """Copy the WAL into the database. Meanwhile this process's writes wait on this
        thread, behind it: a checkpoint that copies everything lets the next write start
        the WAL over from its beginning, where one overtaken by writes never would, and
        the WAL would grow without end. (PASSIVE: another process's reader or writer is
        not waited for; the next checkpoint copies what this one could not.)"""
        try:
            self._connect().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except (sqlite3.Error, StoreUnavailable) as exc:
            log.warning("store checkpoint failed path=%s error=%s", self._path, exc)
        finally:
            self._checkpointing = False

    @staticmethod
    def _deliver(batch: list[_Write]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[_Write]] = {}
        for w in batch:
            by_loop.setdefault(w.future.get_loop(), []).append(w)
        for loop, writes in by_loop.items():
            try:
                loop.call_soon_threadsafe(_answer, writes)
            except RuntimeError:  # that loop is closed: nobody is waiting any more
                log.debug("store answer dropped writes=%d reason=loop-closed", len(writes))

    # ------------------------------------------------------------ either thread

    def _in_transaction(self, conn: sqlite3.Connection, writes: list[_Write]) -> None:
        """Every write of a begun transaction, each under its own savepoint, then COMMIT."""
        self.batches += 1
        self.writes += len(writes)
        if len(writes) == 1:  # alone: its own failure rolls back the whole transaction
            self._run_op(conn, writes[0])
            if writes[0].error is None:
                self._finish(conn, writes)
            elif conn.in_transaction:
                conn.execute("ROLLBACK")
            return
        for i, w in enumerate(writes):
            conn.execute("SAVEPOINT one_write")
            self._run_op(conn, w)
            if not conn.in_transaction:
                # SQLite rolled the whole transaction back (I/O error, full disk, ...):
                # the writes before this one are gone with it, the rest are not tried.
                lost = self._failed("the transaction was rolled back")
                self._fail([x for x in writes[:i] if x.error is None], lost)
                self._fail(writes[i + 1 :], lost)
                return
            if w.error is not None:
                conn.execute("ROLLBACK TO one_write")
            conn.execute("RELEASE one_write")
        self._finish(conn, writes)

    def _run_op(self, conn: sqlite3.Connection, w: _Write) -> None:
        assert w.op is not None
        try:
            w.value = w.op(conn)
        except sqlite3.Error as exc:
            w.error = StoreUnavailable(self._failed(exc))
        except Exception as exc:  # the op's own error (AlreadyExists, Conflict, ...)
            w.error = exc

    def _finish(self, conn: sqlite3.Connection, writes: list[_Write]) -> None:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._fail([w for w in writes if w.error is None], self._failed(exc))

    def _failed(self, why: object) -> str:
        return f"the store at {self._path} failed: {why}"

    @staticmethod
    def _fail(writes: list[_Write], message: str) -> None:
        """Each write its own error (an exception object is raised in one place only)."""
        for w in writes:
            if w.op is not None:
                w.error = StoreUnavailable(message)
                w.value = None

    def close(self) -> None:
        """On the worker thread, after the last write: the fast connection is closed."""
        with self._fast_in_use:
            if self._fast is not None:
                self._fast.close()
                self._fast = None
            self._fast_tried = True  # no new one
