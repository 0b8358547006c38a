"""Benchmarks of the course (`make bench` = `python -m bench`), not timed tests.

Each ``bench/p*.py`` module defines ``run() -> list[tuple[str, str, str]]`` returning
(metric, measured, target) rows. The runner (``bench/__main__.py``) runs them all, prints
one table and writes ``docs/benchmarks.md`` with the machine stated.
"""
