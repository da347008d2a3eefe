"""Speed and memory measurements, side by side with transformers (RESULTS.md has the commands).

A package so that its shared modules are imported by their full names (``benchmarks.measure``,
``benchmarks.workloads``) from the repository root, never as bare top-level names. Each driver still
runs as a script from the root: ``python benchmarks/bench_bert.py --help``.
"""
