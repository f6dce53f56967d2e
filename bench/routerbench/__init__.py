"""Pieces of ``bench/router_scale.py``: workload, baseline config, pods, wrk, processes."""
