"""Rewrites only where they pay: prune (placeholders), fold (a summary), and the planner
that decides when, from the provider's cache rules and costs (DESIGN idea 5).

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
