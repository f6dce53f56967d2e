"""Label selectors: the ``-l`` / ``ROUTE_LABELS`` syntax, equality- and set-based."""

from __future__ import annotations

import pytest

from shiftnet.api.selectors import Selector, parse_selector
from shiftnet.errors import InvalidInput

MATCH_CASES = [
    # (selector, labels, matches)
    ("a=b", {"a": "b"}, True),
    ("a=b", {"a": "c"}, False),
    ("a=b", {}, False),
    ("a==b", {"a": "b"}, True),
    ("a!=b", {"a": "b"}, False),
    ("a!=b", {"a": "c"}, True),
    ("a!=b", {}, True),  # absent keys satisfy != (Kubernetes)
    ("e in (x,y)", {"e": "x"}, True),
    ("e in (x,y)", {"e": "y"}, True),
    ("e in (x,y)", {"e": "z"}, False),
    ("e in (x,y)", {}, False),
    ("f notin (z)", {"f": "z"}, False),
    ("f notin (z)", {"f": "w"}, True),
    ("f notin (z)", {}, True),
    ("g", {"g": ""}, True),
    ("g", {"h": "1"}, False),
    ("!h", {}, True),
    ("!h", {"h": "x"}, False),
    ("a=", {"a": ""}, True),
    ("a=", {"a": "b"}, False),
    ("app.kubernetes.io/name=web", {"app.kubernetes.io/name": "web"}, True),
    ("a=b,c!=d,e in (x,y),!f", {"a": "b", "c": "x", "e": "y"}, True),
    ("a=b,c!=d,e in (x,y),!f", {"a": "b", "c": "d", "e": "y"}, False),
    ("a=b,c!=d,e in (x,y),!f", {"a": "b", "e": "y", "f": "1"}, False),
    ("a=b,c!=d,e in (x,y),!f", {"a": "b"}, False),
    (" a = b , e in ( x , y ) ", {"a": "b", "e": "x"}, True),
    ("router=public,shard in (a,b)", {"router": "public", "shard": "b", "x": "y"}, True),
]


@pytest.mark.parametrize(("text", "labels", "want"), MATCH_CASES)
def test_matches(text: str, labels: dict[str, str], want: bool) -> None:
    assert parse_selector(text).matches(labels) is want


@pytest.mark.parametrize("text", [None, "", "   "])
def test_empty_selects_everything(text: str | None) -> None:
    sel = parse_selector(text)
    assert sel.empty
    assert sel.matches({}) and sel.matches(None) and sel.matches({"a": "b"})


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("a==b", "a=b"),
        (" a = b ", "a=b"),
        ("e in (y,x,x)", "e in (x,y)"),
        ("f notin (z)", "f notin (z)"),
        ("a=b,c!=d,e in (x,y),!f", "a=b,c!=d,e in (x,y),!f"),
        ("g", "g"),
    ],
)
def test_string_form(text: str, canonical: str) -> None:
    assert str(parse_selector(text)) == canonical
    assert str(parse_selector(canonical)) == canonical  # the string form parses back


def test_from_labels_is_an_equality_selector_in_key_order() -> None:
    sel = Selector.from_labels({"b": "2", "a": "1"})
    assert str(sel) == "a=1,b=2"
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})
    assert Selector.from_labels({}).matches({"anything": "x"})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a=b,", 'trailing ","'),
        ("a in ()", '"in" needs at least one value'),
        ("a in (x", 'expected ")", got "end of input"'),
        ("a in x", 'expected "(", got "x"'),
        ("a b", 'expected ",", got "b"'),
        ("a=b=c", 'expected ",", got "="'),
        ("!", '"!" needs a key'),
        ("-a=b", 'invalid label key "-a"'),
        ("a/b/c=d", 'invalid label key "a/b/c"'),
        ("Bad.Prefix/a=b", 'invalid label key "Bad.Prefix/a"'),
        (f"{'k' * 64}=v", f'invalid label key "{"k" * 64}": name part must be no more than 63'),
        ("a=-b", 'invalid label value "-b"'),
        (f"a={'v' * 64}", "must be no more than 63 characters"),
        ("a notin (x,-y)", 'invalid label value "-y"'),
    ],
)
def test_malformed_selectors_are_errors(text: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as exc:
        parse_selector(text)
    msg = str(exc.value)
    assert msg.startswith(f'label selector "{text}": ')
    assert reason in msg
