"""Router fixtures: a real HAProxy (and a whole router) cleaned up by pid."""

from tests.support.router import haproxy_process, router_env  # noqa: F401
