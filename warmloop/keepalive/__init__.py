"""Keeping the cache warm: the priced rule (ping, go cold or a longer TTL), the
pinger, a request as its keep-alive, what an agent learns of its pauses, and a run's
pauses beside its tools.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
