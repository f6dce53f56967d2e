"""Check 6 and a route served through the runtime API: a spare backend serving the route is what
the router wants (not an older configuration); a reload owed too long fails, and a stopped
HAProxy master is named with its fix."""

from __future__ import annotations

import signal
import subprocess
import time

from tests.unit.diagnose.test_route_checks import BACKEND, first, healthy, router

from shiftnet.diagnose.route_checks import diagnose_route
from shiftnet.diagnose.route_facts import RouterView
from shiftnet.diagnose.router_view import _stopped
from shiftnet.router.haproxy.runtime import parse_servers_state

SPARE = "be_spare_http:0"


def on_spare(**changes: object) -> RouterView:
    base: dict[str, object] = {"running": SPARE, "aliases": {BACKEND: SPARE}}
    base["reload_owed_seconds"] = 3.0
    return router(**{**base, **changes})


def test_a_route_served_by_a_spare_before_the_owed_reload_passes() -> None:
    report = diagnose_route(healthy(routers=(on_spare(),)))
    assert report.ok, report.lines()
    assert report.checks[5].found.endswith(
        f"-> {SPARE} (through the runtime API, the spare serving {BACKEND}; reload owed since 3 s)"
    )
    # A spare that does not stand for this route is an older configuration.
    other = router(running=SPARE, aliases={"be_http:ns:other": SPARE})
    number, found, _ = first(healthy(routers=(other,)))
    assert number == 6 and f"answers {SPARE}, the files say {BACKEND}" in found


def test_the_owed_threshold_is_a_parameter_and_a_stopped_master_is_named() -> None:
    facts = healthy(routers=(on_spare(),))
    assert diagnose_route(facts).ok  # 3 s < the 60 s default
    report = diagnose_route(facts, owed_after=1.0)
    failed = report.first_failure
    assert failed is not None and report.checks.index(failed) == 5
    assert failed.found == "HAProxy serves an older configuration: reload owed since 3 s"
    assert "shiftnet logs router" in failed.fix
    held = on_spare(master_pid=4242, master_stopped=True, reload_owed_seconds=90.0)
    fix = first(healthy(routers=(held,)))[2]
    assert "master (pid 4242) is stopped" in fix and "`kill -CONT 4242`" in fix


def test_a_spare_slot_enabled_at_run_time_is_up_not_in_maintenance() -> None:
    # HAProxy 2.6's answer for a spare whose slot s2 was filled through the runtime API:
    # the slot keeps the "disabled in the configuration" bit (0x04) while it serves.
    text = (
        "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
        "srv_iweight srv_time_since_last_change srv_check_status srv_check_result "
        "srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "
        "srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr "
        "srv_agent_addr srv_agent_port\n"
        "10 be_spare_http:0 1 s0 127.0.0.1 0 5 0 0 4 1 0 0 8 0 0 0 - 1 - 0 0 - - 0\n"
        "10 be_spare_http:0 3 s2 127.167.0.2 2 4 1 0 2 1 0 0 8 0 0 0 - 8080 - 0 0 - - 0\n"
    )
    empty, filled = parse_servers_state(text)
    assert empty.in_maintenance and not empty.up
    assert filled.up and not filled.in_maintenance


def test_a_stopped_process_is_seen_stopped() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        assert not _stopped(proc.pid)
        proc.send_signal(signal.SIGSTOP)
        for _ in range(200):  # the signal is delivered asynchronously: at most 2 s
            if _stopped(proc.pid):
                break
            time.sleep(0.01)
        assert _stopped(proc.pid)
        proc.send_signal(signal.SIGCONT)
    finally:
        proc.kill()
        proc.wait()
    assert not _stopped(proc.pid)
