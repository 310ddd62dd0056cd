"""Benchmark harness for ``langchain_vaultsearch`` (speed, ranking quality, synthetic vaults).

A package so that ``python -m benchmarks.speed`` works and so the test suite can import the
ranking metrics; the scripts also run as ``python benchmarks/speed.py`` from the repo root.
"""
