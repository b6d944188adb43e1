"""Acme's cache rules and prices, in the formats of warmloop's tables
(`profiles.json`, `prices.json`): registered by the application, as a third party would."""

from __future__ import annotations

PROFILES = {
    "providers": {
        "acme": {
            "mode": "automatic",
            "matching": "common_prefix",
            "persists_common_prefix": False,
            "context_window": 64000,
            "min_cacheable_tokens": 1024,
            "increment_tokens": 128,
            "max_breakpoints": None,
            "lookback_blocks": None,
            "writes_billed": False,
            "read_multiplier": 0.1,
            "default_ttl": "5m",
            "ttls": {"5m": {"seconds": 300, "cold_after": 3600, "write_multiplier": 1.0}},
            "source": "https://acme.example/docs/caching",
            "as_of": "2026-01-01",
        }
    },
    "models": {},
}
PRICES = {
    "models": {
        "acme:acme-1": {
            "input": 1.0,
            "cache_read": 0.1,
            "cache_write": {"5m": 1.0},
            "output": 4.0,
            "source": "https://acme.example/pricing",
            "as_of": "2026-01-01",
        }
    }
}
