"""The agent: `Agent` (configuration, reusable, and what it learns across runs), one
run's steps (`steps`, private to the package), and the result (`run`).

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
