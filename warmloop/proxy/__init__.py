"""`warmloop proxy`: the loopback proxy that keeps the cache of agents warmloop did not write.

`server` forwards each request to the one upstream it was started with (`forwarding`: what
goes upstream), `fixes` adds cache markers, routing keys and session headers where the
client's own leave room, and `conversations` files each model request in its conversation
from its own content and keys, with bounded memory. `keepalive` keeps a conversation warm
through its pauses: `returns` learns whether conversations come back, `ping_pool` sends each
keep-alive on a bounded pool within a deadline and a bound on its answer. `status` is the
status page (JSON, and live HTML). `warmloop record` is the same proxy with every fix off,
logging each request for `warmloop audit`.

A documented internal for benchmarks: `benchmarks/proxy_pause.py` drives the proxy's
keep-alive on a faked clock (`Proxy`, `Caps`, `KeepAlives.tick`).
"""
