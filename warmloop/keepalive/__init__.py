"""Keeping the cache warm: the priced rule (ping, go cold or a longer TTL), the
pinger, a request as its keep-alive, what an agent learns of its pauses, and a run's
pauses beside its tools."""
