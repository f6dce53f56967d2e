"""Scrape a ``/metrics`` endpoint over real HTTP and look series up by name and labels."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """One parsed scrape: ``value(name, **labels)`` finds the one matching sample."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [s for f in text_string_to_metric_families(text) for s in f.samples]

    def matching(self, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
        return [
            (s.labels, s.value)
            for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        ]

    def value(self, name: str, **labels: str) -> float | None:
        found = self.matching(name, **labels)
        assert len(found) <= 1, f"{name} {labels}: {len(found)} series match: {found}"
        return found[0][1] if found else None


def scrape(url: str, timeout: float = 10.0) -> Scrape:
    """GET ``url`` (a loopback ``/metrics``) and parse Prometheus' text format."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:  # loopback only
        return Scrape(answer.read().decode())
