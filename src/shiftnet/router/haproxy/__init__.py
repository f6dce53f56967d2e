"""HAProxy: the description (pure: build, writer, planner), then files, process, runtime API
and the driver (I/O). See docs/router.md for the order data flows in."""
