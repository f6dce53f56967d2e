"""Pieces of ``bench/router_scale.py``: workload, OpenShift-style config, responder, wrk, processes."""
