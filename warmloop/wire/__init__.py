"""What reads the wire: the canonical stream of a payload, the prefix guard and why a
prefix moved, the provider's own verdict, a request's record, and which earlier
response a request is compared with.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
