"""A follow-up question: pass the first run's transcript as `history`, and the second run
continues the same conversation (its request extends the first one's, so the provider's
cache serves what was already sent)."""

from warmloop import Agent, ScriptedModel, call, tool


@tool
def stock(item: str) -> int:
    """Return how many of an item are in stock."""
    return {"bolts": 120, "nuts": 4}.get(item, 0)


model = ScriptedModel(
    [
        call("stock", item="nuts"),
        call("submit", answer="4 nuts are left."),
        # The follow-up: "them" means the nuts, which the model knows from the history.
        call("submit", answer="Yes: 4 is under the reorder level of 10."),
    ]
)
agent = Agent(model, [stock])

first = agent.run_sync("How many nuts are in stock?")
print("first:", first.outputs.answer)

second = agent.run_sync("Should we reorder them?", history=first.transcript)
print("second:", second.outputs.answer)
print("same conversation:", second.transcript.conversation == first.transcript.conversation)
reused = second.requests[0].usage.cache_read_tokens
print("first request of the follow-up read from the cache:", reused > 0)
