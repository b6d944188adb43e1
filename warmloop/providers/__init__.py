"""Providers: the Model contract, one module per wire format, selection and clients.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
