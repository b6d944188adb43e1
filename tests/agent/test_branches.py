"""Follow-ups are branches: concurrent follow-ups from one history never see each other."""

from __future__ import annotations

import asyncio

from warmloop import Agent, ScriptedModel, call, check_pairing, tool
from warmloop.providers.base import Rendered
from warmloop.providers.scripted import Reply

QUESTIONS = ("And Berlin?", "And Rome?")


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return {"Paris": "France", "Berlin": "Germany", "Rome": "Italy"}.get(city, "unknown")


def answer(rendered: Rendered) -> Reply:
    """Reply by what this request asks: look the city up once, then submit."""
    messages = rendered.payload["messages"]
    asked = next(q for q in reversed([m.get("content") for m in messages]) if q in QUESTIONS)
    city = asked.removeprefix("And ").removesuffix("?")
    if messages[-1]["role"] == "tool":
        return call("submit", answer=messages[-1]["content"])
    return call("lookup", city=city)


async def test_two_concurrent_follow_ups_from_one_history_never_mix_on_the_wire() -> None:
    model = ScriptedModel([call("lookup", city="Paris"), call("submit", answer="France")])
    agent = Agent(model, [lookup])
    first = await agent.run("Which country is Paris in?")
    model.enqueue(*[answer] * 4)
    berlin, rome = await asyncio.gather(
        *(agent.run(q, history=first.transcript) for q in QUESTIONS)
    )
    assert berlin.outputs.model_dump() == {"answer": "Germany"}
    assert rome.outputs.model_dump() == {"answer": "Italy"}
    follow_ups = model.requests[2:]
    assert len(follow_ups) == 4
    for rendered in follow_ups:
        texts = [m.get("content") or "" for m in rendered.payload["messages"]]
        asked = [q for q in QUESTIONS if q in texts]
        assert len(asked) == 1, texts  # one branch's question, never both
        other = "Italy" if asked[0] == QUESTIONS[0] else "Germany"
        assert other not in "".join(texts)
    # the two requests of each branch were interleaved on one model
    assert [b for b, _, _ in model.branches[2:]] == [
        berlin.transcript.id,
        rome.transcript.id,
        berlin.transcript.id,
        rome.transcript.id,
    ]
    for run in (berlin, rome):
        check_pairing(run.transcript.messages)
        assert run.transcript.messages[: len(first.transcript)] == first.transcript.messages
        assert run.transcript.conversation == first.transcript.conversation
    assert len(first.transcript) == 6  # the shared history is untouched
