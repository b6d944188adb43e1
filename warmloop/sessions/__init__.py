"""Sessions that persist, resume and survive a crash: stores with one contract (`store`;
SQLite embedded in `sqlite`, PostgreSQL for many workers in `postgres`, both on `sql`),
leases with a heartbeat (`lease`), the run's persistence hook (`recorder`), resuming
(`resume`), store calls kept off the event loop (`off_loop`), where a session lives
(`locate`) and how warm its cache still is (`warmth`).

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
