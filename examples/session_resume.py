"""A stored session: each step is saved to a SQLite file as it happens, so a later process
(or the CLI, `warmloop resume NAME "..."`) can continue the conversation by its name."""

import tempfile
from pathlib import Path

from warmloop import Agent, ScriptedModel, call, open_store, tool
from warmloop.providers.scripted import Script


@tool
def balance(account: str) -> str:
    """Return an account's balance."""
    return {"savings": "1,200.00 EUR"}.get(account, "no such account")


def make_agent(replies: list[Script]) -> Agent:
    return Agent(ScriptedModel(replies), [balance])


with tempfile.TemporaryDirectory() as folder:
    store = Path(folder) / "sessions.db"

    # Monday: the first run creates the session "alice".
    monday = make_agent([call("balance", account="savings"), call("submit", answer="1,200.00")])
    run = monday.run_sync("What is in savings?", session="alice", store=store)
    print("monday:", run.outputs.answer)

    # Tuesday, another process: the same name continues the stored conversation.
    tuesday = make_agent([call("submit", answer="It was 1,200.00 EUR.")])
    run = tuesday.run_sync("What did you tell me yesterday?", session="alice", store=store)
    print("tuesday:", run.outputs.answer)

    stored = open_store(store).load("alice")
    assert stored is not None
    assert stored.transcript is not None
    print("messages stored:", len(stored.transcript))
