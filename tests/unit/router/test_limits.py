"""maxconn fitted to the descriptor limit and the checked servers the renderer wrote."""

from __future__ import annotations

import pytest
from tests.support import routes as f

from shiftnet.router.admission import admit
from shiftnet.router.config import RouterConfig
from shiftnet.router.haproxy.limits import (
    CHECK_STEP,
    FD_FIXED,
    FD_PER_THREAD,
    MaxconnFit,
    fit_maxconn,
    reserve,
)
from shiftnet.router.haproxy.process import fit_limits
from shiftnet.router.haproxy.render import RenderPaths, render
from shiftnet.router.model import build_model

PATHS = RenderPaths(run_dir="/var/run/shiftnet", default_certificate="/etc/shiftnet/default.pem")


def descriptors_needed(maxconn: int, checked: int, threads: int = 1) -> int:
    """What HAProxy 2.6 asks for (measured formula, without the fixed listeners).

    The tests' reference: fit_maxconn works from reserves, this is HAProxy's own demand.
    """
    return 2 * maxconn + checked + FD_PER_THREAD * max(1, threads)


def test_without_checks_the_fit_is_the_process_limit() -> None:
    process = fit_limits(50000, nofile=20000, cpus=2)
    fit = fit_maxconn(process.maxconn, 20000, 0, threads=2)
    assert fit.maxconn == process.maxconn == 8750 and fit.strict
    assert fit_maxconn(50000, 20000).lowered
    assert fit_maxconn(2000, 20000, 500).maxconn == 2000  # a small request is kept


def test_unknown_limit_keeps_the_request() -> None:
    fit = fit_maxconn(50000, 0, 100000)
    assert fit.maxconn == 50000 and fit.strict and not fit.lowered


@pytest.mark.parametrize("nofile", [1500, 3000, 20000, 65536])
@pytest.mark.parametrize("threads", [1, 2, 16])
def test_a_strict_fit_always_leaves_room_for_every_check(nofile: int, threads: int) -> None:
    for checked in range(0, 3 * nofile, 97):
        fit = fit_maxconn(50000, nofile, checked, threads)
        assert fit.maxconn >= 1
        if fit.strict:
            assert descriptors_needed(fit.maxconn, checked, threads) + FD_FIXED <= nofile
        else:
            # Only when a strict fit would leave fewer connections than the floor.
            assert (nofile - reserve(nofile, checked, threads)) // 2 < fit.maxconn


def test_maxconn_moves_in_steps_not_with_every_pod() -> None:
    values = {fit_maxconn(8750, 20000, c, 2).maxconn for c in range(3000, 3000 + CHECK_STEP)}
    assert len(values) <= 2
    # The first checked routes fit in the reserve: nothing changes.
    assert fit_maxconn(8750, 20000, 1500, 2).maxconn == 8750
    assert fit_maxconn(8750, 20000, 5000, 2).maxconn < 8750


def test_ten_thousand_routes_with_two_pods_do_not_fit_and_turn_strict_limits_off() -> None:
    fit = fit_maxconn(8750, 20000, 10000 * 4, 2)
    assert not fit.strict and 1000 <= fit.maxconn < 8750


def _config(**kw: object) -> RouterConfig:
    return RouterConfig(http_port=8080, https_port=8443, threads=2, **kw)  # type: ignore[arg-type]


def _render(routes: int, pods: int, config: RouterConfig) -> tuple[str, int, MaxconnFit]:
    rs = [f.route(f"r{i}", f"h{i}.example.com", service=f"s{i}") for i in range(routes)]
    eps = [
        f.endpoints(f"s{i}", [f"10.1.{i // 200}.{i % 200 + j}" for j in range(1, pods + 1)])
        for i in range(routes)
    ]
    result = render(build_model(admit(rs, [], config), eps), config, PATHS)
    text = result.files["haproxy.cfg"].decode()
    checked = sum(
        1 for line in text.splitlines() if line.startswith("  server ") and " check " in line
    )
    assert result.fit is not None
    return text, checked, result.fit


def test_render_counts_checked_lines_and_writes_the_fitted_maxconn() -> None:
    config = _config(max_connections=1500, file_descriptor_limit=4000)
    text, checked, fit = _render(300, 2, config)
    assert checked == 300 * 4  # two pods: four slots, every one checked
    assert fit.checked == checked and fit.strict
    maxconn = fit.maxconn
    assert maxconn < 1500
    assert descriptors_needed(maxconn, checked, 2) + FD_FIXED <= 4000
    assert text.count(f"  maxconn {maxconn}\n") == 2  # global and defaults
    assert "no strict-limits" not in text


def test_render_turns_strict_limits_off_when_checks_alone_do_not_fit() -> None:
    text, _, fit = _render(300, 2, _config(max_connections=1000, file_descriptor_limit=1500))
    assert not fit.strict
    assert "  no strict-limits\n" in text.split("defaults", 1)[0]


def test_single_pod_routes_are_not_checked_and_keep_maxconn() -> None:
    _, checked, fit = _render(50, 1, _config(max_connections=1000, file_descriptor_limit=3000))
    assert checked == 0 and fit.maxconn == 1000


def test_without_a_limit_render_is_unchanged() -> None:
    text, _, fit = _render(20, 2, _config(max_connections=700))
    assert "  maxconn 700\n" in text and fit.maxconn == 700
