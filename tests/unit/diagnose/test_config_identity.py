"""Check 6 compares the configuration HAProxy names (``show info``'s description) with the
digest of the rendered ``haproxy.cfg``; the writer stamps that digest into the file without
moving it when nothing else changes."""

from __future__ import annotations

from tests.support import routes as f
from tests.unit.diagnose.test_route_checks import first, healthy, router
from tests.unit.router.test_render import cfg

from shiftnet.diagnose.route_checks import diagnose_route
from shiftnet.router.haproxy import identity
from shiftnet.router.haproxy.loaded import LoadedRecord, parse_record

OLD = "config-sha256:" + "a" * 64
NEW = "config-sha256:" + "b" * 64


def _cfg(addresses: list[str]) -> bytes:
    return cfg([f.route("a")], [f.endpoints("svc", addresses)]).encode()


def test_the_rendered_file_names_its_own_digest_and_stays_byte_stable() -> None:
    one = _cfg(["10.0.0.1"])
    assert one.startswith(b"global\n  description config-sha256:")
    assert identity.declared(one) == identity.computed(one)
    assert _cfg(["10.0.0.1"]) == one  # nothing changed: the same bytes, the same identity
    two = _cfg(["10.0.0.1", "10.0.0.2"])
    assert identity.declared(two) != identity.declared(one)
    # An edited file no longer has the digest its line names.
    edited = one.replace(b"10.0.0.1", b"10.0.0.9")
    assert identity.declared(edited) == identity.declared(one) != identity.computed(edited)
    assert identity.computed(b"global\n  maxconn 1\n") is None


def test_haproxy_running_another_configuration_is_check_6() -> None:
    held = router(running_config=OLD, rendered_config=NEW)
    number, found, fix = first(healthy(routers=(held,)))
    assert number == 6
    assert found == (
        f"HAProxy runs configuration {'a' * 12} but the rendered one is {'b' * 12}: "
        "not reloaded yet"
    )
    assert "reload interval" in fix
    stopped = router(running_config=OLD, rendered_config=NEW, master_pid=7, master_stopped=True)
    assert "`kill -CONT 7`" in first(healthy(routers=(stopped,)))[2]
    failed = router(
        running_config=OLD,
        rendered_config=NEW,
        loaded=LoadedRecord(loaded=OLD, failed="reload: HAProxy refused it", failed_at=1.0),
        reload_failed_seconds=12.4,
    )
    number, found, fix = first(healthy(routers=(failed,)))
    assert number == 6 and found.endswith(
        ": the last reload failed 12 s ago (reload: HAProxy refused it)"
    )
    assert "shiftnet logs router" in fix
    owed = router(running_config=OLD, rendered_config=NEW, reload_owed_seconds=90.0)
    number, found, _ = first(healthy(routers=(owed,)))
    assert number == 6 and found.endswith(": reload owed since 90 s")


def test_runtime_served_or_owed_briefly_passes() -> None:
    same = router(running_config=OLD, rendered_config=OLD)
    report = diagnose_route(healthy(routers=(same,)))
    assert report.ok and report.checks[5].found.endswith(f"; configuration {'a' * 12}")
    # The runtime API brought the loaded configuration up to the rendered one (server
    # addresses moved without a reload): what HAProxy serves is the rendered file.
    served = router(
        running_config=OLD, rendered_config=NEW, loaded=LoadedRecord(loaded=OLD, served=NEW)
    )
    report = diagnose_route(healthy(routers=(served,)))
    assert report.ok, report.lines()
    assert "runtime changes up to the rendered " + "b" * 12 in report.checks[5].found
    # ... but not when HAProxy was loaded from something else than the record says.
    other = router(
        running_config=OLD, rendered_config=NEW, loaded=LoadedRecord(loaded=NEW, served=NEW)
    )
    assert first(healthy(routers=(other,)))[0] == 6
    # A route served by a spare until the reload it owes passes while the reload is young;
    # another route's change waiting for a reload is a configuration HAProxy does not run.
    spare = "be_spare_http:0"
    waiting = router(
        running=spare,
        aliases={"be_http:ns:web": spare},
        running_config=OLD,
        rendered_config=NEW,
        reload_owed_seconds=3.0,
    )
    assert diagnose_route(healthy(routers=(waiting,))).ok
    elsewhere = router(running_config=OLD, rendered_config=NEW, reload_owed_seconds=3.0)
    number, found, _ = first(healthy(routers=(elsewhere,)))
    assert number == 6 and found.endswith(": reload owed since 3 s")


def test_a_garbled_record_reads_as_empty() -> None:
    assert parse_record("{") == LoadedRecord()
    assert parse_record('{"loaded": 3, "failed": [], "failed_at": "x"}') == LoadedRecord()
    record = parse_record('{"loaded": "x", "served": "y", "failed": "z", "failed_at": 2}')
    assert record == LoadedRecord("x", "y", "z", 2.0)
