"""Header actions in the rendered configuration: per-route lines in the route's backend,
router-wide lines in the frontends, every name and value one escaped word."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.support import routes as f

from shiftnet.api import Route
from shiftnet.api.route_headers import REQUEST, RESPONSE, HeaderAction
from shiftnet.errors import ConfigError
from shiftnet.router.admission import AdmissionResult, Decision, admit, route_key
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy import escape
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model

CONFIG = RouterConfig(http_port=8080, https_port=8443, stats_port=1936, share_backends=True)
PATHS = RenderPaths(run_dir="/var/run/shiftnet", default_certificate="/etc/shiftnet/default.pem")


def with_headers(route: Route, request: list[Any] = (), response: list[Any] = ()) -> Route:  # type: ignore[assignment]
    body = route.to_dict()
    body["spec"]["httpHeaders"] = {
        "actions": {"request": list(request), "response": list(response)}
    }
    return Route.model_validate(body)


def set_(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "action": {"type": "Set", "set": {"value": value}}}


def delete(name: str) -> dict[str, Any]:
    return {"name": name, "action": {"type": "Delete"}}


def cfg(routes: list[Route], config: RouterConfig = CONFIG) -> str:
    result = render(build_model(admit(routes, [], config), []), config, PATHS)
    assert result.skipped == {}
    return result.files["haproxy.cfg"].decode()


def section(text: str, header: str) -> list[str]:
    m = re.search(rf"^{re.escape(header)}\b.*?\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
    assert m, f"{header} not rendered"
    return m.group(1).splitlines()


def header_lines(lines: list[str]) -> list[str]:
    return [ln.strip() for ln in lines if re.search(r"(set|del)-header \"", ln)]


@pytest.mark.parametrize(
    ("tls", "backend"),
    [
        (None, "be_http:ns:a"),
        ({"termination": "edge"}, "be_edge_http:ns:a"),
        ({"termination": "reencrypt"}, "be_secure:ns:a"),
    ],
)
def test_route_actions_in_its_backend_in_order(tls: dict[str, str] | None, backend: str) -> None:
    route = with_headers(
        f.route("a", tls=tls),
        [set_("X-A", "%[req.hdr(Host),lower]"), delete("X-B"), set_("X-C", "1")],
        [delete("Server"), set_("X-Frame-Options", "DENY")],
    )
    lines = header_lines(section(cfg([route]), f"backend {backend}"))
    assert lines == [
        'http-request set-header "X-A" "%[req.hdr(Host),lower]"',
        'http-request del-header "X-B"',
        'http-request set-header "X-C" "1"',
        'http-response del-header "Server"',
        'http-response set-header "X-Frame-Options" "DENY"',
    ]


def test_routes_with_different_actions_never_share_a_backend() -> None:
    plain = f.route("a")
    one = with_headers(f.route("b"), [set_("X-A", "1")])
    other = with_headers(f.route("c"), [set_("X-A", "2")])
    same = with_headers(f.route("d"), [set_("X-A", "2")])
    eps = [f.endpoints("svc", ["10.0.0.1"])]  # equal members: only the sections can differ
    result = render(build_model(admit([plain, one, other, same], [], CONFIG), eps), CONFIG, PATHS)
    names = result.backends
    assert len({names[("ns", n)] for n in "abc"}) == 3
    assert names[("ns", "c")] == names[("ns", "d")]  # equal sections still share


def test_router_wide_actions_in_both_http_frontends_before_the_lookup() -> None:
    config = RouterConfig.from_env(
        {
            "ROUTER_SERVICE_HTTP_PORT": "8080",
            "ROUTER_SERVICE_HTTPS_PORT": "8443",
            "ROUTER_HTTP_REQUEST_HEADERS": "X-Router:%25%5Breq.hdr(Host)%5D:Set,X-Drop:Delete",
            "ROUTER_HTTP_RESPONSE_HEADERS": "X-Frame-Options:SAMEORIGIN:Set",
        }
    )
    text = cfg([f.route("a")], config)
    for frontend in ("frontend public ", "frontend fe_sni "):
        lines = [ln.strip() for ln in section(text, frontend.strip())]
        assert header_lines(lines) == [
            'http-request set-header "X-Router" "%[req.hdr(Host)]"',
            'http-request del-header "X-Drop"',
            'http-response set-header "X-Frame-Options" "SAMEORIGIN"',
        ]
        # After the Host header is made lowercase, before the route lookup reads it.
        assert lines.index('http-request set-header "X-Router" "%[req.hdr(Host)]"') > lines.index(
            "http-request set-header Host %[req.hdr(Host),lower]"
        )
        assert lines.index('http-request del-header "X-Drop"') < next(
            i for i, ln in enumerate(lines) if ln.startswith("http-request set-var(txn.host)")
        )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ROUTER_HTTP_REQUEST_HEADERS", "X-A:%25%5Bsrc%5D:Set"),
        ("ROUTER_HTTP_REQUEST_HEADERS", "Host:x:Set"),
        ("ROUTER_HTTP_RESPONSE_HEADERS", "X-A:%25%5Breq.hdr(a)%5D:Set"),
        ("ROUTER_HTTP_RESPONSE_HEADERS", "X-A:a%0Abackend evil:Set"),
    ],
)
def test_router_wide_actions_refused_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RouterConfig.from_env({variable: value})
    assert str(caught.value).startswith(f"{variable}=")


# ---------------------------------------------------------------- escaping


@pytest.mark.parametrize(
    ("value", "word"),
    [
        ("plain", '"plain"'),
        ('q"x', '"q\\"x"'),
        ("a\\b", '"a\\\\b"'),
        ("$HOME", '"\\$HOME"'),
        ("#x", '"\\#x"'),
        ("'", '"\'"'),
        ("é", '"\\xc3\\xa9"'),
        ("%% %[req.hdr(X),base64]", '"%% %[req.hdr(X),base64]"'),
    ],
)
def test_header_value_words(value: str, word: str) -> None:
    assert escape.header_value(value, REQUEST) == word


@pytest.mark.parametrize(
    "value",
    [
        "x\nbackend evil",
        "a\r\nX-Evil: 1",
        "%[src]",
        "%[env(HOME)]",
        "%[req.hdr(a),url_dec]",
        "100%",
        "nul\x00",
        "",
        "x" * 16385,
        "\ud800",
    ],
)
@pytest.mark.parametrize("direction", [REQUEST, RESPONSE])
def test_header_values_that_cannot_be_written(value: str, direction: str) -> None:
    with pytest.raises(escape.UnsafeValue):
        escape.header_value(value, direction)


@pytest.mark.parametrize("name", ["X Y", 'X"', "X\nY", "Cookie", "", "é", "a" * 256])
def test_header_names_that_cannot_be_written(name: str) -> None:
    with pytest.raises(escape.UnsafeValue):
        escape.header_name(name)


def test_header_name_word_escapes_config_characters() -> None:
    assert escape.header_name("X#$'%") == '"X\\#\\$\'%"'
    with pytest.raises(escape.UnsafeValue):
        escape.header_name("Host", reserved=("host",))


def test_a_route_that_skipped_validation_is_left_out_not_the_configuration() -> None:
    """Admission bypassed: the escaping functions alone refuse the route's hostile values."""
    good = with_headers(f.route("good"), [set_("X-A", "1")])
    hostile = [
        with_headers(f.route("nl"), [set_("X-A", "x\n  server evil 10.0.0.1:80")]),
        with_headers(f.route("fetch"), [set_("X-A", "%[env(SECRET)]")]),
        with_headers(f.route("name"), [delete('X" if TRUE')]),
        with_headers(f.route("resp"), response=[set_("X-A", "%[req.hdr(Host)]")]),
        with_headers(f.route("cookie"), response=[delete("Set-Cookie")]),
    ]
    routes = [good, *hostile]
    admitted = AdmissionResult(
        decisions={route_key(r): Decision(route_key(r), True, r.spec.host) for r in routes},
        admitted=tuple(routes),
    )
    result = render(build_model(admitted, []), CONFIG, PATHS)
    assert set(result.skipped) == {route_key(r) for r in hostile}
    text = result.files["haproxy.cfg"].decode()
    assert "evil" not in text and "SECRET" not in text and "TRUE" not in text
    assert header_lines(section(text, f"backend {result.backends[('ns', 'good')]}")) == [
        'http-request set-header "X-A" "1"'
    ]


def test_admission_refuses_what_validation_refuses() -> None:
    route = with_headers(f.route("r"), [set_("X-A", "%[src]")])
    result = admit([route], [], CONFIG)
    assert result.admitted == ()
    decision = result.decisions[("ns", "r")]
    assert not decision.admitted
    assert "spec.httpHeaders.actions.request[0].action.set.value" in decision.message


def test_router_wide_actions_reach_the_config_parsed() -> None:
    config = RouterConfig.from_env({"ROUTER_HTTP_RESPONSE_HEADERS": "X-A:Delete"})
    assert config.http_response_headers == (HeaderAction("X-A", None),)
