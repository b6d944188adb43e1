"""A fresh PostgreSQL database per fleet test (DBOS's tables and the sessions), on the
server the store tests use; skipped, saying why, without DBOS or a server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from tests.support.stores import _server_url, admin, with_database

pytest.importorskip("dbos", reason="the fleet needs DBOS: pip install 'warmloop[fleet]'")


@pytest.fixture
def fleet_db() -> Iterator[str]:
    server = _server_url()
    name = "warmloop_fleet_" + secrets.token_hex(4)
    admin(server, f"CREATE DATABASE {name}")
    yield with_database(server, name)
    admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
