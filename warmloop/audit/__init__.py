"""See the cache: record any agent's requests through a loopback proxy, then audit them.

`warmloop record` (the proxy) appends each body, its time and the response's usage to a
JSONL log (`exchange.log`); `report.audit` groups a log into conversations
and explains, per request, what was reused, where the prefix moved and why, and what each
cause cost under each provider's cache rules; `terminal` and `html` show the result.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
