"""Fixtures of the DNS integration tests (see tests/support/dns_cluster.py)."""

from __future__ import annotations

import pytest
from tests.support.dns_cluster import make_cluster_fixture

cluster = pytest.fixture(make_cluster_fixture())
