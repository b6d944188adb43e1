"""`warmloop proxy`: the loopback proxy that keeps the cache of agents warmloop did not write.

`server` forwards each request to the one upstream it was started with (`forwarding`: what
goes upstream), `fixes` adds cache markers, routing keys and session headers where the
client sent none, and `conversations` files each model request in its conversation, with
bounded memory. `warmloop record` is the same proxy with every fix off, logging each
request for `warmloop audit`.

A documented internal for benchmarks: `benchmarks/proxy_pause.py` drives the proxy's
keep-alive on a faked clock (`Proxy`, `Caps`, `KeepAlives.tick`).
"""
