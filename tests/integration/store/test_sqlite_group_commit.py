"""The SQLite store's group commit, on real SQLite files: writes handed in together
share one transaction, each failing alone; another connection's lock sends a batch to
the worker thread without stalling the event loop; a crash mid-batch stores nothing."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.integration.store.objects import RESOURCE, renumbered, thing

from shiftnet.errors import AlreadyExists, Conflict, NotFound, StoreUnavailable
from shiftnet.store.sqlite import SqliteStore

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def store(tmp_path: Path):
    st = SqliteStore(f"sqlite://{tmp_path}/state.db")
    await st.create(RESOURCE, thing("first"))  # opens both connections
    yield st
    await st.close()


def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def test_one_transaction_and_each_failure_to_its_own_caller(store: SqliteStore) -> None:
    b = await store.create(RESOURCE, thing("b", n=1))
    await store.update(RESOURCE, renumbered(b, 2))  # b's rv is now stale
    batches = store._writes.batches

    results = await asyncio.gather(
        store.create(RESOURCE, thing("c")),
        store.update(RESOURCE, renumbered(b, 3)),  # stale: Conflict
        store.create(RESOURCE, thing("first")),  # taken: AlreadyExists
        store.create(RESOURCE, thing("d")),
        store.delete(RESOURCE, "ns", "missing"),  # NotFound
        return_exceptions=True,
    )

    c, stale, taken, d, missing = results
    assert isinstance(stale, Conflict) and stale.name == "b"
    assert isinstance(taken, AlreadyExists) and taken.name == "first"
    assert isinstance(missing, NotFound) and missing.name == "missing"
    assert isinstance(c, dict) and isinstance(d, dict)
    assert store._writes.batches == batches + 1  # five writes, one transaction
    # the failed writes left no trace: not even a revision number between c and d
    assert rv(d) == rv(c) + 1
    assert await store.get(RESOURCE, "ns", "c") == c
    assert await store.get(RESOURCE, "ns", "d") == d
    assert (await store.get(RESOURCE, "ns", "b"))["spec"]["path"] == "/n/2"
    assert await store.revision() == rv(d)


async def test_a_write_failing_halfway_is_undone_alone(store: SqliteStore) -> None:
    """The first write's event row is written, then its object row is refused (SQLite's
    authorizer): its savepoint takes the event back; the others commit around it."""
    before = await store.revision()
    refused: list[str] = []

    def refuse_first_object_insert(action: int, table: str | None, *_: object) -> int:
        if action == sqlite3.SQLITE_INSERT and table == "objects" and not refused:
            refused.append(table)
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    fast = store._writes._fast
    assert fast is not None
    fast.set_authorizer(refuse_first_object_insert)  # expires the prepared statements
    batches = store._writes.batches
    try:
        bad, c, d = await asyncio.gather(
            store.create(RESOURCE, thing("bad")),
            store.create(RESOURCE, thing("c")),
            store.create(RESOURCE, thing("d")),
            return_exceptions=True,
        )
    finally:
        fast.set_authorizer(None)
    assert refused == ["objects"]
    assert store._writes.batches == batches + 1  # the three in one transaction
    assert isinstance(bad, StoreUnavailable) and "not authorized" in str(bad)
    assert isinstance(c, dict) and isinstance(d, dict)
    assert (rv(c), rv(d)) == (before + 1, before + 2)  # the refused write's revision undone
    with pytest.raises(NotFound):
        await store.get(RESOURCE, "ns", "bad")
    events = [ev async for ev in _events(store, before, rv(d))]
    assert [(ev.revision, ev.object["metadata"]["name"]) for ev in events] == [
        (before + 1, "c"),
        (before + 2, "d"),
    ]


async def _events(store: SqliteStore, after: int, last: int):  # type: ignore[no-untyped-def]
    async for ev in store.watch(RESOURCE, after):
        yield ev
        if ev.revision >= last:
            return


async def test_watch_sees_every_batch_in_order(store: SqliteStore) -> None:
    start = await store.revision()
    done: list[tuple[int, str, str]] = []
    for round_ in range(5):
        made = await asyncio.gather(
            *(store.create(RESOURCE, thing(f"r{round_}-{i}")) for i in range(7))
        )
        changed = await asyncio.gather(*(store.update(RESOURCE, renumbered(o, 1)) for o in made))
        gone = await asyncio.gather(
            *(store.delete(RESOURCE, "ns", o["metadata"]["name"]) for o in made[:3])
        )
        for kind, objs in (("ADDED", made), ("MODIFIED", changed), ("DELETED", gone)):
            done += [(rv(o), kind, o["metadata"]["name"]) for o in objs]
    done.sort()
    # one revision per write, none skipped, in the order the writes were handed in
    assert [r for r, _, _ in done] == list(range(start + 1, start + 1 + len(done)))

    seen: list[tuple[int, str, str]] = []

    async def watch() -> None:
        async for ev in store.watch(RESOURCE, start):
            seen.append((ev.revision, ev.type, ev.object["metadata"]["name"]))
            if ev.revision == done[-1][0]:
                return

    await asyncio.wait_for(watch(), 10)
    assert seen == done


async def test_another_connections_lock_sends_the_batch_to_the_worker(
    store: SqliteStore, tmp_path: Path
) -> None:
    """The event loop keeps running while the write waits for the lock on the worker."""
    fast = store._writes.fast_batches
    holder = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        write = asyncio.ensure_future(store.create(RESOURCE, thing("waits")))
        late = 0.0
        for _ in range(10):  # the loop's timers keep their time while the write waits
            t0 = time.monotonic()
            await asyncio.sleep(0.02)
            late = max(late, time.monotonic() - t0 - 0.02)
        assert not write.done()
        assert late < 0.5
    finally:
        holder.execute("COMMIT")
        holder.close()
    created = await asyncio.wait_for(write, 10)
    assert created["metadata"]["name"] == "waits"
    assert store._writes.fast_batches == fast  # it went to the worker thread
    # once the lock is free, the next batch is back on the event loop's thread
    await store.create(RESOURCE, thing("after"))
    assert store._writes.fast_batches == fast + 1


async def test_close_commits_the_writes_already_handed_in(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/state.db"
    st = SqliteStore(url)
    writes = [asyncio.ensure_future(st.create(RESOURCE, thing(f"w{i}"))) for i in range(20)]
    await asyncio.sleep(0)  # handed in
    await st.close()
    assert len({rv(await w) for w in writes}) == 20
    again = SqliteStore(url)
    try:
        assert len((await again.list(RESOURCE)).items) == 20
    finally:
        await again.close()


CRASH = """
import asyncio, os, sys
from tests.integration.store.objects import RESOURCE, thing
from shiftnet.store.sqlite import SqliteStore

async def main(url, where):
    st = SqliteStore(url)
    await st.create(RESOURCE, thing("before"))
    conn = st._writes._fast if where == "fast" else st._connect()
    if where == "worker":
        st._writes._fast = None  # every batch on the worker's connection
    inserted = []

    def trace(statement):
        if statement.startswith("INSERT INTO objects"):
            inserted.append(statement)
            if len(inserted) == 3:
                os._exit(3)  # killed with two writes of the batch done, uncommitted

    conn.set_trace_callback(trace)
    await asyncio.gather(*(st.create(RESOURCE, thing(f"batch-{i}")) for i in range(5)))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.mark.parametrize("where", ["fast", "worker"])
async def test_a_crash_mid_batch_stores_none_of_it(tmp_path: Path, where: str) -> None:
    url = f"sqlite://{tmp_path}/state.db"
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, url, where],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    st = SqliteStore(url)
    try:
        names = [o["metadata"]["name"] for o in (await st.list(RESOURCE)).items]
        assert names == ["before"]
        assert await st.revision() == 1
        # the store goes on from there
        after = await st.create(RESOURCE, thing("after"))
        assert rv(after) == 2
    finally:
        await st.close()


async def test_the_wal_stays_bounded_under_a_steady_stream_of_writes(tmp_path: Path) -> None:
    """Checkpoints run on the worker while the loop's connection writes; each must catch
    up with the writes so the WAL starts over, as SQLite's own autocheckpoint keeps it
    (about 4 MB), instead of growing with every write."""
    st = SqliteStore(f"sqlite://{tmp_path}/state.db")
    wal = tmp_path / "state.db-wal"
    largest = 0
    try:
        for i in range(3000):  # one at a time: a transaction each, all on the fast path
            await st.create(RESOURCE, thing(f"o{i}"))
            if i % 250 == 0:
                largest = max(largest, wal.stat().st_size)
        assert st._writes.fast_batches > 2900
        largest = max(largest, wal.stat().st_size)
    finally:
        await st.close()
    assert largest < 12 * 2**20, f"the WAL grew to {largest / 2**20:.0f} MiB"
