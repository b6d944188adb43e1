"""The agents fleet tests run, as a worker loads them (`--agents tests.fleet.agents:registry`):
a model on the loopback fleet host ($WARMLOOP_FLEET_HOST, reached under this worker's name,
$WARMLOOP_FLEET_WORKER) and a `work` tool that calls the host too, so the host sees every
request and every tool call."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import urllib.request
from pathlib import Path

from openai import AsyncOpenAI

from tests.support.trees import explorer, planner
from warmloop import Agent, ScriptedModel, tool
from warmloop.fleet.agent_registry import AgentRegistry
from warmloop.providers.base import Rendered
from warmloop.providers.openai.chat import OpenAICompatibleModel
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.scripted import Reply, call

registry = AgentRegistry()
INSTRUCTIONS = "You work through a task with the work tool, then submit the answer."


def crash_agent(host: str, worker: str) -> Agent:
    """The agent of the crash test and the fleet benchmark, on the host at `host`."""

    @tool
    def work(task: str, step: int, part: int) -> str:
        """Do one part of a step of a task."""
        request = urllib.request.Request(
            f"{host}/w/{worker}/tool",
            data=json.dumps({"task": task, "step": step, "part": part}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=600) as response:
            return str(json.loads(response.read())["result"])

    model = OpenAICompatibleModel(f"{host}/w/{worker}/v1#served-model", max_retries=0)
    return Agent(model, [work], outputs={"answer": str}, instructions=INSTRUCTIONS)


@registry.agent("crash")
def _crash() -> Agent:
    return crash_agent(os.environ["WARMLOOP_FLEET_HOST"], os.environ["WARMLOOP_FLEET_WORKER"])


@registry.agent("tool-bug")
def _tool_bug() -> Agent:
    """A tool that raises what nobody expected, told to the model (`errors_to_model`: the
    default ends the run, issue 45): the model hears it once, then submits."""

    @tool(errors_to_model=True)
    def explode(why: str) -> str:
        """Fail."""
        raise RuntimeError(f"unexpected: {why}")

    model = ScriptedModel([call("explode", why="a bug"), call("submit", answer="told")])
    return Agent(model, [explode], outputs={"answer": str})


@registry.agent("model-bug")
def _model_bug() -> Agent:
    """A model whose request raises what nobody expected: the task fails once with it."""

    def bug(rendered: Rendered) -> Reply:
        raise ValueError("a bug in the model's code")

    return Agent(ScriptedModel([bug]), [], outputs={"answer": str})


@registry.agent("gated")
def _gated() -> Agent:
    """Built only once the test opens its gate ($WARMLOOP_TEST_GATE, a file it holds an
    exclusive lock on; none set: open), so a worker waits between a task's `begin` (its
    session opened and its lease given back) and its run; then it submits at once."""
    gate = os.environ.get("WARMLOOP_TEST_GATE")
    if gate:
        worker = os.environ.get("WARMLOOP_FLEET_WORKER", "")
        print(f"{worker} waits at the gate", file=sys.stderr, flush=True)
        with open(gate) as opened:
            fcntl.flock(opened, fcntl.LOCK_SH)
    return Agent(ScriptedModel([call("submit", answer="through")]), [], outputs={"answer": str})


@registry.agent("prewarm")
def _prewarm() -> Agent:
    """GPT-5.6 on the fleet host's Responses endpoint: a model that takes `prewarm`, so a
    warm batch's warm-up is a prewarm; it submits at once."""
    host, worker = os.environ["WARMLOOP_FLEET_HOST"], os.environ["WARMLOOP_FLEET_WORKER"]
    client = AsyncOpenAI(base_url=f"{host}/w/{worker}/v1", api_key="sk-test", max_retries=0)
    model = OpenAIResponsesModel("gpt-5.6-sol", client=client, cache_key=True)  # as OpenAI
    return Agent(model, [], outputs={"answer": str}, instructions=INSTRUCTIONS * 200)


@registry.agent("tree")
def _tree() -> Agent:
    """A planner fanning out eight explorers (`tests.support.trees`): each `look` logged to
    $WARMLOOP_TEST_LOG, three of them waiting at the gate $WARMLOOP_TEST_GATE (a file the
    test holds an exclusive lock on)."""
    log, gate = os.environ.get("WARMLOOP_TEST_LOG"), os.environ.get("WARMLOOP_TEST_GATE")
    child = explorer(Path(log) if log else None, Path(gate) if gate else None)
    return planner(child)
