"""The embedded store: one SQLite file that several processes may share.

Every write appends a row to ``events`` whose autoincrement id is the global
revision (etcd's model), and replaces the row in ``objects``. Writers take
``BEGIN IMMEDIATE`` so concurrent writers in other processes serialize instead
of losing updates. Watchers learn of new revisions by polling ``MAX(revision)``
(one cheap query per store per tick, shared by all watches of the process) and
then read only their own resource's events.

Reads run on one worker thread. Writes are group-committed
(:mod:`shiftnet.store.group_commit`): on the event loop's thread while the
write lock is free, on the worker thread when another connection holds it,
so a writer waiting on another process's lock never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

from shiftnet.api.selectors import parse_selector
from shiftnet.errors import AlreadyExists, Conflict, Expired, NotFound, StoreUnavailable
from shiftnet.private_files import PRIVATE_FILE_MODE, ensure_private_dir, tighten_private_file
from shiftnet.store.base import EventType, ListResult, WatchEvent
from shiftnet.store.group_commit import GroupCommit
from shiftnet.store.meta import key_of, prepare_create, prepare_update, with_revision

log = logging.getLogger(__name__)

T = TypeVar("T")

POLL_INTERVAL = 0.02  # seconds between MAX(revision) checks while anyone watches
HISTORY = 100_000  # events kept for watches; older ones are compacted away
COMPACT_EVERY = 5_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    revision INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS events (
    revision INTEGER PRIMARY KEY AUTOINCREMENT,
    resource TEXT NOT NULL, namespace TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_resource ON events (resource, revision);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def path_from_url(url: str) -> str:
    """``sqlite:///abs/path.db`` → ``/abs/path.db``; ``sqlite://rel.db`` → ``rel.db``."""
    rest = url[len("sqlite://") :]
    return rest if rest else "state.db"


def _prepare_private_db(path: str) -> None:
    """Create the database file 0600 before SQLite opens it; tighten an older, looser one.

    The store holds every Route's TLS key. SQLite gives the ``-wal`` and
    ``-shm`` files it creates later the mode of the database file, so a 0600
    database keeps them private too. A missing parent directory is created
    0700; an existing one keeps its mode (it may be the user's own choice).
    """
    if path == ":memory:":
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        ensure_private_dir(parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    for name in (path, path + "-wal", path + "-shm", path + "-journal"):
        tighten_private_file(name)


class SqliteStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self.path = path_from_url(url)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-store")
        self._conn: sqlite3.Connection | None = None
        self._head = -1
        self._head_changed: asyncio.Condition | None = None
        self._poller: asyncio.Task[None] | None = None
        self._watchers = 0
        self._closed = False
        self._closing = False
        self._compact_due = 0  # a write passed a compaction point: compact up to here
        self._writes = GroupCommit(self._executor, self._connect, self._open_fast, self.path)

    # ------------------------------------------------------------ plumbing

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                _prepare_private_db(self.path)
                conn = sqlite3.connect(
                    self.path, timeout=30.0, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA busy_timeout=30000")
                conn.executescript(_SCHEMA)
            except (sqlite3.Error, OSError) as exc:
                raise StoreUnavailable(f"cannot open the store at {self.path}: {exc}") from None
            self._conn = conn
        return self._conn

    def _open_fast(self) -> sqlite3.Connection | None:
        """The event loop's connection (see :mod:`shiftnet.store.group_commit`): it never
        waits for a lock and never checkpoints. Opened on the worker thread, after the
        worker's own connection has made the file and its tables."""
        if self.path == ":memory:" or self._closing:  # a second connection: another database
            return None
        self._connect()
        conn = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=0")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        return conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise StoreUnavailable(f"the store at {self.path} is closed")

        def call() -> T:
            conn = self._connect()
            try:
                return fn(conn)
            except sqlite3.OperationalError as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreUnavailable(f"the store at {self.path} failed: {exc}") from None
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    async def _write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """``op`` in a write transaction, committed with the other writes waiting with it
        (:mod:`shiftnet.store.group_commit`) before this returns."""
        if self._closed or self._closing:
            raise StoreUnavailable(f"the store at {self.path} is closed")
        value = await self._writes.write(op)
        if self._compact_due:
            await self._compact_history()
        return value

    async def _compact_history(self) -> None:
        """The history a write passed the compaction point of, forgotten in a transaction of
        its own on the worker thread (it deletes thousands of rows); a failure is logged and
        left to the next compaction point: the write itself is committed."""
        due, self._compact_due = self._compact_due, 0

        def op(conn: sqlite3.Connection) -> None:
            self._compact_locked(conn, due)

        try:
            await self._writes.write(op, on_thread=True)
        except StoreUnavailable as err:
            log.warning("store compaction failed revision=%d error=%s", due, err)

    @staticmethod
    def _compacted(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM settings WHERE key='compacted'").fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _head_rev(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT MAX(revision) FROM events").fetchone()
        return int(row[0] or 0)

    def _append(
        self,
        conn: sqlite3.Connection,
        resource: str,
        ns: str,
        etype: EventType,
        obj: dict[str, Any],
    ) -> tuple[int, dict[str, Any], str]:
        """The event of one write, inside the caller's write transaction: its revision,
        the object stamped with it, and that object's JSON (the objects row holds the same)."""
        # The next AUTOINCREMENT value, known before the insert (the write lock is held),
        # so the row is written once with its stamped object.
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='events'").fetchone()
        rev = (int(row[0]) if row else 0) + 1
        stamped = with_revision(obj, rev)
        text = json.dumps(stamped)
        conn.execute(
            "INSERT INTO events (revision, resource, namespace, type, data) VALUES (?,?,?,?,?)",
            (rev, resource, ns, etype, text),
        )
        if rev % COMPACT_EVERY == 0 and rev > HISTORY:
            self._compact_due = max(self._compact_due, rev - HISTORY)
        return rev, stamped, text

    @staticmethod
    def _compact_locked(conn: sqlite3.Connection, revision: int) -> None:
        conn.execute(
            "DELETE FROM events WHERE revision <= ? AND revision < "
            "(SELECT MAX(revision) FROM events)",
            (revision,),
        )
        conn.execute(
            "INSERT INTO settings (key, value) VALUES ('compacted', ?) "
            "ON CONFLICT(key) DO UPDATE SET value=MAX(value, excluded.value)",
            (revision,),
        )

    # ------------------------------------------------------------ reads

    async def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any]:
        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            row = conn.execute(
                "SELECT data FROM objects WHERE resource=? AND namespace=? AND name=?",
                (resource, namespace or "", name),
            ).fetchone()
            if row is None:
                raise NotFound(resource, namespace, name)
            out: dict[str, Any] = json.loads(row[0])
            return out

        return await self._run(op)

    async def list(
        self, resource: str, namespace: str | None = None, selector: str | None = None
    ) -> ListResult:
        sel = parse_selector(selector)

        def op(conn: sqlite3.Connection) -> ListResult:
            conn.execute("BEGIN")
            try:
                if namespace is None:
                    rows = conn.execute(
                        "SELECT data FROM objects WHERE resource=? ORDER BY namespace, name",
                        (resource,),
                    )
                else:
                    rows = conn.execute(
                        "SELECT data FROM objects WHERE resource=? AND namespace=? ORDER BY name",
                        (resource, namespace),
                    )
                # Decoded row by row: the JSON text of 10,000 objects is never all held.
                items = [json.loads(r[0]) for r in rows]
                rev = self._head_rev(conn)
            finally:
                conn.execute("COMMIT")
            if not sel.empty:
                items = [o for o in items if sel.matches((o.get("metadata") or {}).get("labels"))]
            return ListResult(items=items, revision=rev)

        return await self._run(op)

    async def revision(self) -> int:
        return await self._run(self._head_rev)

    # ------------------------------------------------------------ writes

    async def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        ns, name = key_of(obj)
        fresh = prepare_create(obj)

        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            exists = conn.execute(
                "SELECT 1 FROM objects WHERE resource=? AND namespace=? AND name=?",
                (resource, ns, name),
            ).fetchone()
            if exists:
                raise AlreadyExists(resource, ns or None, name)
            rev, stamped, text = self._append(conn, resource, ns, "ADDED", fresh)
            conn.execute(
                "INSERT INTO objects (resource, namespace, name, revision, data) "
                "VALUES (?,?,?,?,?)",
                (resource, ns, name, rev, text),
            )
            return stamped

        return await self._write(op)

    async def update(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        ns, name = key_of(obj)
        want = (obj.get("metadata") or {}).get("resourceVersion")

        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            row = conn.execute(
                "SELECT revision, data FROM objects WHERE resource=? AND namespace=? AND name=?",
                (resource, ns, name),
            ).fetchone()
            if row is None:
                raise NotFound(resource, ns or None, name)
            if want and str(row[0]) != str(want):
                raise Conflict(resource, ns or None, name)
            new = prepare_update(json.loads(row[1]), obj)
            rev, stamped, text = self._append(conn, resource, ns, "MODIFIED", new)
            conn.execute(
                "UPDATE objects SET revision=?, data=? WHERE resource=? AND namespace=? AND name=?",
                (rev, text, resource, ns, name),
            )
            return stamped

        return await self._write(op)

    async def delete(
        self, resource: str, namespace: str | None, name: str, resource_version: str | None = None
    ) -> dict[str, Any]:
        ns = namespace or ""

        def op(conn: sqlite3.Connection) -> dict[str, Any]:
            row = conn.execute(
                "SELECT revision, data FROM objects WHERE resource=? AND namespace=? AND name=?",
                (resource, ns, name),
            ).fetchone()
            if row is None:
                raise NotFound(resource, namespace, name)
            if resource_version and str(row[0]) != str(resource_version):
                raise Conflict(resource, namespace, name)
            _, stamped, _ = self._append(conn, resource, ns, "DELETED", json.loads(row[1]))
            conn.execute(
                "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?",
                (resource, ns, name),
            )
            return stamped

        return await self._write(op)

    async def compact(self, revision: int) -> None:
        def op(conn: sqlite3.Connection) -> None:
            self._compact_locked(conn, revision)

        await self._write(op)

    # ------------------------------------------------------------ watch

    async def _poll(self) -> None:
        assert self._head_changed is not None
        while True:
            try:
                head = await self._run(self._head_rev)
            except StoreUnavailable as exc:
                log.warning("store poll failed error=%s", exc)
                head = self._head
            if head != self._head:
                self._head = head
                async with self._head_changed:
                    self._head_changed.notify_all()
            await asyncio.sleep(POLL_INTERVAL)

    def _ensure_poller(self) -> asyncio.Condition:
        if self._head_changed is None:
            self._head_changed = asyncio.Condition()
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll(), name="sqlite-poll")
        return self._head_changed

    async def watch(
        self, resource: str, revision: int, namespace: str | None = None
    ) -> AsyncIterator[WatchEvent]:
        cond = self._ensure_poller()
        self._watchers += 1
        cursor = revision

        def fetch(conn: sqlite3.Connection) -> tuple[list[tuple[int, str, str]], int]:
            conn.execute("BEGIN")
            try:
                compacted = self._compacted(conn)
                if cursor < compacted:
                    raise Expired(cursor, compacted)
                if namespace is None:
                    q = (
                        "SELECT revision, type, data FROM events WHERE resource=? AND revision>? "
                        "ORDER BY revision LIMIT 1000"
                    )
                    rows = conn.execute(q, (resource, cursor)).fetchall()
                else:
                    q = (
                        "SELECT revision, type, data FROM events WHERE resource=? AND "
                        "namespace=? AND revision>? ORDER BY revision LIMIT 1000"
                    )
                    rows = conn.execute(q, (resource, namespace, cursor)).fetchall()
                head = self._head_rev(conn)
            finally:
                conn.execute("COMMIT")
            return rows, head

        try:
            while True:
                rows, db_head = await self._run(fetch)
                for rev, etype, data in rows:
                    cursor = int(rev)
                    yield WatchEvent(cast(EventType, etype), resource, json.loads(data), cursor)
                if len(rows) == 1000:
                    continue
                # everything up to db_head is delivered; sleep until the poller sees more
                async with cond:
                    while self._head <= db_head:
                        await cond.wait()
        finally:
            self._watchers -= 1
            if self._watchers == 0 and self._poller is not None:
                self._poller.cancel()
                self._poller = None

    async def close(self) -> None:
        if self._closed or self._closing:
            return
        self._closing = True  # no new writes; those already handed in are committed first
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
        await self._writes.barrier()

        def op(conn: sqlite3.Connection) -> None:
            self._writes.close()
            conn.close()

        if self._conn is not None:
            await self._run(op)
            self._conn = None
        self._closed = True
        self._executor.shutdown(wait=False)
