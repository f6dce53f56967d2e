"""limit_heap_growth fixes glibc's thresholds where glibc is the C library."""

from __future__ import annotations

import platform

import pytest

from shiftnet.heap import limit_heap_growth


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_thresholds_are_set_on_glibc() -> None:
    assert limit_heap_growth() is True
    assert limit_heap_growth() is True  # idempotent
