"""The real coding agents through `warmloop proxy` (issue 46): the `clients` tier.

Claude Code, Codex CLI and opencode, installed from the npm registry by
`scripts/clients.sh` (into `.clients/`), each run headless with a scripted task through
the in-process proxy (every fix, the guard and keep-alive on, on a faked clock) to the
loopback upstream of `tests/support/client_upstream` (Anthropic Messages and OpenAI
Responses, streamed, with a prefix cache). The proxy believes its upstream is the
provider's own host (`Loopback`), so the rules of api.anthropic.com and api.openai.com
apply. In front of it a `warmloop record` proxy (every fix off) logs each body as the
client sent it, so a test compares what the client sent with what the upstream received.

What each shows: the model-visible content the upstream received is what the client sent
(only cache markers, the routing key and the GPT-5.6 breakpoint set aside); the client's
tool really ran (its output came back in the next request); the proxy's status counts no
bust; Claude Code's sub-agent is filed under its parent, in one lineage; a `--continue`
after a pause stays in its session's lineage; GPT-5.6's opening gets its breakpoint.

The tier skips, saying how to install the clients, when they are not installed, but under
CI (`CI=true`, or `WARMLOOP_REQUIRE_CLIENTS=1` as `.ci/run` sets), where a missing client
fails. Each wait on a client has a generous limit
(`CLIENT_SECONDS`) only as a guard against a hang. The clients' update checks, telemetry
and other traffic are switched off; the loopback upstream is the only server they reach.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.test_proxy_fixes import Loopback
from tests.support.client_upstream import ANSWER, ScriptedModel, scripted_upstream
from tests.support.fake_api import Clock
from tests.support.proxy_upstream import Upstream
from tests.support.proxy_wire import model_visible
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import Caps
from warmloop.proxy.server import Proxy

pytestmark = [pytest.mark.clients, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".clients" / "node_modules" / ".bin"
CLIENT_SECONDS = 300
"""A guard against a client that hangs, far above what a run needs: not a timing assertion."""
DEAD_END = "http://127.0.0.1:9"
"""A loopback port nothing listens on: every client's proxy and npm registry, so any
traffic but the model's fails at once instead of reaching the internet."""
QUIET = {
    # no update check, telemetry, error reporting, plugin install or other traffic
    "HTTP_PROXY": DEAD_END,
    "HTTPS_PROXY": DEAD_END,
    "ALL_PROXY": DEAD_END,
    "NO_PROXY": "127.0.0.1,localhost",
    "npm_config_registry": DEAD_END + "/",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "NO_UPDATE_NOTIFIER": "1",
}


def installed(name: str) -> Path:
    """The client's executable; skips when it is not installed, fails under CI (where
    `scripts/clients.sh` installed them: a missing one is a broken install)."""
    path = BIN / name
    if not path.exists():
        message = f"{name} is not installed in {BIN}: run `bash scripts/clients.sh` first"
        if os.environ.get("CI") == "true" or os.environ.get("WARMLOOP_REQUIRE_CLIENTS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@dataclass
class Rig:
    """The upstream, the proxy in front of it, the recording tap in front of the proxy,
    and the shared fake clock."""

    clock: Clock
    upstream: Upstream
    model: ScriptedModel
    proxy: Proxy
    tap: Proxy
    log: Path
    home: Path
    work: Path
    pings: set[int] = field(default_factory=set)
    """The upstream's requests that were the proxy's keep-alives (by arrival)."""

    def run(self, command: list[str], env: Mapping[str, str]) -> str:
        """Run a client to its end in the work dir; its stdout (its answer). Fails with
        its output when it exits non-zero."""
        done = subprocess.run(
            command,
            cwd=self.work,
            env={
                "PATH": os.environ["PATH"],
                "LANG": "C.UTF-8",
                "HOME": str(self.home),
                **QUIET,
                **env,
            },
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLIENT_SECONDS,
            check=False,
        )
        assert done.returncode == 0, (
            f"{command[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
        self.settle()
        return done.stdout

    def settle(self) -> None:
        """Wait until both proxies have handled every request the upstream received from
        the client (a client has its answer a moment before the proxy files its usage)."""
        asked = len(self.upstream.received) - len(self.pings)
        assert self.tap.wait_handled(asked, CLIENT_SECONDS)
        assert self.proxy.wait_handled(asked, CLIENT_SECONDS)

    def pause(self, seconds: float) -> None:
        """Let `seconds` pass on the fake clock, running the proxy's keep-alive tick each
        time one is due, as its thread would, and noting the keep-alives the upstream
        receives."""
        keepalives = self.proxy.keepalives
        assert keepalives is not None
        end = self.clock.now + seconds
        while (due := keepalives.due()) is not None and due <= end:
            self.clock.now = max(self.clock.now, due)
            before = len(self.upstream.received)
            keepalives.tick()
            self.pings.update(range(before, len(self.upstream.received)))
            if keepalives.due() == due:
                break  # held, but the rule pays for no keep-alive now
        self.clock.now = end

    def model_requests(self, *, pings: bool) -> list[dict[str, Any]]:
        """The model request bodies the upstream received, with or without the proxy's
        keep-alives."""
        return [
            json.loads(r.body)
            for n, r in enumerate(self.upstream.received)
            if r.method == "POST"
            and r.target.split("?", 1)[0].endswith(("/messages", "/responses"))
            and (pings or n not in self.pings)
        ]

    def client_bodies(self) -> list[dict[str, Any]]:
        """The model request bodies as the client sent them (the tap's log)."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [json.loads(line)["body"] for line in lines]


@pytest.fixture
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    host = request.param
    clock = Clock()
    upstream, model = scripted_upstream(clock)
    proxy = Proxy(
        host,
        None,
        fixes=Fixes(),
        guard=True,
        keepalive=Caps(),
        clock=clock,
        tick_thread=False,
        transport=Loopback(upstream.url),
        name="warmloop proxy",
    ).start()
    log = tmp_path / "sent.jsonl"
    tap = Proxy(proxy.url, log, clock=clock).start()
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    try:
        yield Rig(clock, upstream, model, proxy, tap, log, home, work)
    finally:
        tap.close()
        proxy.close()
        upstream.close()


def visible(body: Any) -> Any:
    """A body as the model reads it: no cache marker, routing key or GPT-5.6 breakpoint,
    and a string content as the one text part it stands for."""
    if isinstance(body, dict):
        body = {k: visible(v) for k, v in body.items() if k != "prompt_cache_breakpoint"}
    elif isinstance(body, list):
        body = [visible(v) for v in body]
    return model_visible(body, blocks=True)


def assert_model_saw_what_was_sent(rig: Rig) -> None:
    """Every request the client sent reached the upstream, and the model-visible content of
    each is the same (as multisets: a client's side requests may overlap its turns)."""
    sent = Counter(json.dumps(visible(b), sort_keys=True) for b in rig.client_bodies())
    got = Counter(json.dumps(visible(b), sort_keys=True) for b in rig.model_requests(pings=False))
    assert sent, "the client sent no model request"
    assert sent == got, "the proxy changed what the model sees"


def assert_no_bust(rig: Rig) -> dict[str, Any]:
    """The proxy's status page, once it shows no bust (each scripted session only appends
    to its requests, so any bust would be a false one)."""
    page = rig.proxy.status()
    assert page["busts"] == 0, json.dumps(page["by_conversation"], indent=1)
    return page


def tool_output_returned(rig: Rig, text: str) -> bool:
    """Whether a request carried `text` back to the model as a tool's output (the client's
    tool ran the scripted command)."""
    for body in rig.client_bodies():
        for item in body.get("messages") or body.get("input") or []:
            if not isinstance(item, dict):
                continue
            content = item.get("content")
            for block in content if isinstance(content, list) else [item]:
                kind = str(block.get("type", "")) if isinstance(block, dict) else ""
                if kind in ("tool_result", "function_call_output") and text in json.dumps(block):
                    return True
    return False


# -- Claude Code -------------------------------------------------------------------------


def claude_env(rig: Rig) -> dict[str, str]:
    """Claude Code pointed at the tap with a test key (it asks for no login with a key)."""
    return {
        "ANTHROPIC_BASE_URL": rig.tap.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
    }


def claude(rig: Rig, model: str | None, prompt: str, *more: str) -> str:
    """`claude -p` with its shell and sub-agent tools allowed (headless, no prompt for
    permission); `model` None: Claude Code's own default."""
    command = [str(installed("claude")), "-p", prompt, *(["--model", model] if model else [])]
    command += ["--allowedTools", "Bash", "Agent", "Task", *more]
    return rig.run(command, claude_env(rig))


@pytest.mark.parametrize("rig", ["https://api.anthropic.com"], indirect=True)
@pytest.mark.parametrize("model", [None, "claude-sonnet-4-6"], ids=["its-default", "sonnet-4-6"])
def test_claude_code_runs_a_sub_agent_and_continues_after_a_pause(
    rig: Rig, model: str | None
) -> None:
    out = claude(rig, model, "DELEGATE: RUN: echo sub-agent-ran")
    assert ANSWER in out
    assert_model_saw_what_was_sent(rig)
    assert tool_output_returned(rig, "sub-agent-ran")
    page = assert_no_bust(rig)
    rows = page["by_conversation"]
    assert len({row["lineage"] for row in rows}) == 1, rows
    children = [row for row in rows if row["parent"] is not None]
    assert children, f"the sub-agent was not filed under its parent: {rows}"
    assert all(row["parent"] == row["lineage"] for row in children)

    # The session pauses past the 5-minute TTL (400 s on the faked clock, the proxy's
    # keep-alives sent when due), then goes on with `--continue`, which reads the cache.
    rig.pause(400)
    assert rig.pings, "no keep-alive went out in the pause"
    assert rig.proxy.status()["keepalives"] == len(rig.pings)
    resumed = len(rig.model.cached)
    out = claude(rig, model, "RUN: echo after-the-pause", "--continue")
    assert ANSWER in out
    assert_model_saw_what_was_sent(rig)
    assert tool_output_returned(rig, "after-the-pause")
    assert rig.model.cached[resumed] > 0, "the resumed session read nothing from the cache"
    page = assert_no_bust(rig)
    assert len({row["lineage"] for row in page["by_conversation"]}) == 1, page


# -- Codex -------------------------------------------------------------------------------


def codex(rig: Rig, model: str, *args: str) -> str:
    """`codex exec` (then any `args` before the prompt, e.g. `resume --last`) with a model
    provider at the tap, configured in its own CODEX_HOME as the guide says."""
    home = rig.home / ".codex"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "warmloop"\n'
        "check_for_update_on_startup = false\n"
        "[analytics]\n"
        "enabled = false\n"
        "[model_providers.warmloop]\n"
        'name = "OpenAI through warmloop proxy"\n'
        f'base_url = "{rig.tap.url}/v1"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
    )
    command = [str(installed("codex")), "exec", *args[:-1], "--skip-git-repo-check"]
    command += ["--dangerously-bypass-approvals-and-sandbox", args[-1]]
    env = {"CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-test-key"}
    return rig.run(command, env)


def opening_end(items: list[Any]) -> int:
    """The index of the opening's last item: the one before the first user item."""
    first_user = next(i for i, item in enumerate(items) if item.get("role") == "user")
    return first_user - 1


@pytest.mark.parametrize("rig", ["https://api.openai.com"], indirect=True)
@pytest.mark.parametrize("model", ["gpt-5.5", "gpt-5.6"])
def test_codex_runs_two_turns_without_a_false_bust(rig: Rig, model: str) -> None:
    installed("codex")
    codex(rig, model, "RUN: echo codex-ran")
    codex(rig, model, "resume", "--last", "RUN: echo codex-again")
    assert_model_saw_what_was_sent(rig)
    assert tool_output_returned(rig, "codex-ran")
    assert tool_output_returned(rig, "codex-again")
    page = assert_no_bust(rig)
    turns = {json.dumps(b.get("client_metadata", {}).get("turn_id")) for b in rig.client_bodies()}
    assert len(turns) >= 2, "the two turns should carry two turn ids"
    assert len({row["lineage"] for row in page["by_conversation"]}) == 1, page
    for sent, got in zip(rig.client_bodies(), rig.model_requests(pings=False), strict=True):
        marked = [
            i
            for i, item in enumerate(got["input"])
            if "prompt_cache_breakpoint" in json.dumps(item)
        ]
        assert "prompt_cache_breakpoint" not in json.dumps(sent["input"])
        if model == "gpt-5.6":
            assert marked == [opening_end(got["input"])], marked
        else:
            assert marked == []


# -- opencode ----------------------------------------------------------------------------


@pytest.mark.parametrize("rig", ["https://api.anthropic.com"], indirect=True)
def test_opencode_runs_a_tool_without_a_false_bust(rig: Rig) -> None:
    installed("opencode")
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"anthropic": {"options": {"baseURL": f"{rig.tap.url}/v1"}}},
        "model": "anthropic/claude-sonnet-4-5",
        "autoupdate": False,
        "share": "disabled",
    }
    (rig.work / "opencode.json").write_text(json.dumps(config))
    command = [str(installed("opencode")), "run", "RUN: echo opencode-ran"]
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-key", "XDG_CONFIG_HOME": str(rig.home / ".config")}
    out = rig.run(command, env)
    assert ANSWER in out
    assert_model_saw_what_was_sent(rig)
    assert tool_output_returned(rig, "opencode-ran")
    assert_no_bust(rig)
