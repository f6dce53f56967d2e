"""Check 8 names who answered: the line of diagnose's own request in the router's access log,
its server slot translated to the pod, or why that is not known."""

from __future__ import annotations

import dataclasses

from tests.unit.diagnose.test_route_checks import healthy

from shiftnet.diagnose.access_entry import (
    MARKER_PARAM,
    AccessEntry,
    find_entry,
    marked_path,
    not_known,
    parse_line,
    served_by,
)
from shiftnet.diagnose.route_checks import diagnose_route
from shiftnet.diagnose.route_facts import Member, RequestResult


def line(server: str, client: str, request: str) -> str:
    return (
        f"2026-11-25T00:00:00.000Z route=ns:web backend=be_http:ns:web server={server} "
        f"status=200 bytes=120 timings=0/0/0/1/1 client={client} termination=---- "
        f"host=app.example.com - - {request}"
    )


LINES = [
    line("s1", "127.0.0.1:40000", '"GET /?shiftnet-diagnose=aaaa HTTP/1.1"'),
    line("s0", "127.0.0.1:40001", f'"GET /x?a=1&{MARKER_PARAM}=bbbb HTTP/1.1"'),
    "2026-11-25T00:00:00.000Z a message in another format",
    line("s2", "127.0.0.1:40002", "-"),
]


def test_marked_path_adds_one_query_parameter() -> None:
    assert marked_path("/", "t") == f"/?{MARKER_PARAM}=t"
    assert marked_path("", "t") == f"/?{MARKER_PARAM}=t"
    assert marked_path("/a?b=1", "t") == f"/a?b=1&{MARKER_PARAM}=t"


def test_the_request_is_found_by_its_token_else_by_its_client_port() -> None:
    assert find_entry(LINES, "bbbb", "") == AccessEntry(
        "ns:web", "be_http:ns:web", "s0", "200", "127.0.0.1:40001"
    )
    by_client = find_entry(LINES, "cccc", "127.0.0.1:40002")  # a TCP line has no request line
    assert by_client is not None and by_client.server == "s2"
    assert find_entry(LINES, "cccc", "127.0.0.1:4000") is None  # no prefix match of a port
    assert find_entry(LINES, "cccc", "") is None
    assert parse_line(LINES[2]) is None


def test_the_slot_is_translated_to_its_pod_through_the_running_servers() -> None:
    entry = AccessEntry("ns:web", "be_spare_http:3", "s0", "200", "")
    members = [Member("web-1", "127.10.0.2", 8080, True, None)]
    slots = {("be_spare_http:3", "s0"): "127.10.0.2:8080"}
    assert served_by(entry, slots, members) == (
        "backend be_spare_http:3 server s0 (pod `web-1` at 127.10.0.2:8080)"
    )
    assert "no pod of the route" in served_by(entry, {("be_spare_http:3", "s0"): "1.2.3.4:1"}, [])
    assert "no longer in HAProxy's servers" in served_by(entry, {}, members)
    nosrv = dataclasses.replace(entry, server="<NOSRV>")
    assert served_by(nosrv, slots, members).endswith("no server (HAProxy answered itself)")


def test_not_known_says_where_the_access_log_goes() -> None:
    syslog = {"to": "syslog", "where": "udp@127.0.0.1:5140", "format": "own"}
    assert not_known(syslog).endswith("not known: the access log goes to syslog udp@127.0.0.1:5140")
    off = {"to": "off", "where": "ROUTER_ACCESS_LOG_MAX_BYTES=0", "format": "own"}
    assert not_known(off).endswith("the access log is off (ROUTER_ACCESS_LOG_MAX_BYTES=0)")
    custom = {"to": "file", "where": "/x/access.log", "format": "ROUTER_SYSLOG_FORMAT"}
    assert "ROUTER_SYSLOG_FORMAT's format" in not_known(custom)
    assert "records no access log destination" in not_known(None)


def test_check_8_names_who_answered() -> None:
    who = "backend be_http:ns:web server s0 (pod `web-1` at 127.10.0.2:8080)"
    report = diagnose_route(healthy(request=RequestResult(200, "", who)))
    assert report.ok and report.checks[7].found.endswith(f"answered 200 ({who})")
