"""``shiftnet diagnose``: check, in order, what must hold for a Route or a Service to work.

Why a package of its own: the checks are pure functions of gathered facts
(``route_checks.py``, ``service_checks.py``), so every verdict and every fix
can be tested without a cluster; the gatherers (``gather_route.py``,
``gather_service.py``, ``probes.py``, ``router_view.py``) are the only code
that asks the live system: the resolver, the store, HAProxy's runtime API,
the kernel's sockets and a real request.
"""
