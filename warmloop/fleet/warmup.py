"""A batch's warm-up as a prewarm: where the model prepares its cache without generating
(`CacheProfile.prewarm`: OpenAI's `prompt_cache_options.prewarm`, GPT-5.6 and later) and the
wire format carries it (`WireFormat.prewarm`: Responses), a warm batch writes each agent's
opening with the request its first task would send, marked `prewarm`: no answer, no output
tokens billed, nothing appended to any conversation; its usage says whether the opening was
written (`keepalive.leader_first.written`), and every task of the agent goes at once.
Elsewhere the agent's first task goes alone (`client.Fleet.submit_batch`).

The request is the first one a run of the task renders (`agent/steps.py`: the instructions,
then the task), with the task's routing key, so it lands where the tasks sharing that key
will be sent. The SDK's reference (openai 3.57, `PromptCacheOptions.prewarm`): "Prepares
the prompt cache without generating output."
"""

from __future__ import annotations

from collections.abc import Mapping

from warmloop.agent.agent import Agent
from warmloop.agent.task import task_text
from warmloop.facts.usage import Usage
from warmloop.keepalive.ping import keepalive_request, prewarms
from warmloop.messages import Message, SystemText, UserText
from warmloop.transcript import Transcript


async def prewarm_opening(
    agent: Agent, task: str | Mapping[str, object], routing_key: str
) -> Usage | None:
    """Send the first request of `task` as a prewarm where `agent`'s model takes one: its
    usage; None, sending nothing, where it does not."""
    settings = agent.settings()
    model = settings.model
    opening: list[Message] = [SystemText(settings.instructions), UserText(task_text(task))]
    transcript = Transcript(opening, conversation=routing_key)
    rendered = model.render(transcript, settings.tool_specs)
    profile = model.facts.profile
    request = keepalive_request(rendered, profile) if prewarms(rendered, profile) else None
    if request is None:
        return None
    response = await model.send(request, session_id=routing_key)
    return response.usage
