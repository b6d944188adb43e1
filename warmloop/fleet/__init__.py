"""Many workers on many machines: tasks queued and recovered by DBOS over PostgreSQL, each
run's conversation kept in warmloop's session store (the one record of it).

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
