"""What describes a model's cache: its facts (window, cache rules, prices, each with
its source), the dated tables and their one key rule, usage and pricing.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
