"""What a live or logged exchange with a model API is: its wire format and model
(`formats`), the log it is written to and read from (`log`), what its response says about
the cache (`responses`), and the conversations requests group into (`grouping`, with the
`anchors` that offer candidates and the `continuation` measure). The proxy (live) and the
audit (logged) both read it; neither reads the other.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
