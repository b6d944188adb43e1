"""Protocols: the text protocol (Thought / Action / Observation), its grammar, the inline
wrapper for mid-conversation notices.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
