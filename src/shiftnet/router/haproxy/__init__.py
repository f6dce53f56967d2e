"""HAProxy: render (pure), then files, process control, runtime API and the driver (I/O)."""
