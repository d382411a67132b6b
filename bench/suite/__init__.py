"""The benchmark suite behind ``bench/run.py``: workloads, timing, one module per implementation."""
