"""Many workers on many machines: tasks queued and recovered by DBOS over PostgreSQL, each
run's conversation kept in warmloop's session store (the one record of it)."""
