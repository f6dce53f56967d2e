"""``describe ingress``: kubectl's layout plus the Routes the master keeps for it."""

from __future__ import annotations

import datetime as dt

from shiftnet.api import Ingress, Route, parse_object
from shiftnet.cli.describers import describe_ingress

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_describe_shows_rules_tls_and_the_routes_with_their_admission() -> None:
    ing = parse_object(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "shop", "namespace": "team"},
            "spec": {
                "ingressClassName": "openshift-default",
                "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
                "rules": [
                    {
                        "host": "shop.example.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/cart",
                                    "pathType": "Prefix",
                                    "backend": {
                                        "service": {"name": "web", "port": {"name": "http"}}
                                    },
                                }
                            ]
                        },
                    }
                ],
            },
            "status": {"loadBalancer": {"ingress": [{"hostname": "router.apps.test"}]}},
        }
    )
    route = parse_object(
        {
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": {"name": "shop-x7k2p", "namespace": "team"},
            "spec": {"host": "shop.example.com", "path": "/cart", "to": {"name": "web"}},
            "status": {
                "ingress": [
                    {
                        "routerName": "default",
                        "conditions": [{"type": "Admitted", "status": "True"}],
                    }
                ]
            },
        }
    )
    assert isinstance(ing, Ingress) and isinstance(route, Route)
    text = "\n".join(describe_ingress(ing, [route], NOW))
    for expected in (
        "Address:         router.apps.test",
        "Ingress Class:   openshift-default",
        "Default backend: <default>",
        "TLS:             shop-tls terminates shop.example.com",
        "  shop.example.com",
        "        /cart (Prefix)  web:http",
        "Routes:\n  shop-x7k2p  shop.example.com/cart  admitted by default",
    ):
        assert expected in text, text
    assert "Routes:\n  <none>" in "\n".join(describe_ingress(ing, [], NOW))
