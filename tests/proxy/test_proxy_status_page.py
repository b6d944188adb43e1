"""The proxy's live status page (issue 46), rendered in headless Chromium (Debian's package,
`scripts/debian.sh`) over loopback: a parent conversation and its sub-agent (one Claude Code
`metadata.user_id`) and another conversation, each a row with its figures, the sub-agent
under its parent, the key hashed; a request that comes later appears on the next refresh
without reloading the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from tests.support.browser import chromium, chromium_binary
from tests.support.proxy_wire import Captured
from tests.support.wire_servers import WireServer
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy
from warmloop.proxy.status import PAGE_PATH

pytestmark = pytest.mark.skipif(
    chromium_binary() is None, reason="Chromium is not installed (scripts/debian.sh)"
)
USER_ID = json.dumps({"device_id": "d" * 64, "session_id": "5e55-10n"})
HANG_GUARD = 300.0


def rows(page: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.evaluate(
        """[...document.querySelectorAll('#rows tr')].map(tr => ({
            id: tr.dataset.id, child: tr.className === 'child',
            cells: [...tr.children].map(td => td.textContent)}))"""
    )
    return found


def test_the_live_page_shows_each_conversation_with_its_sub_agents_under_it(
    wire_server: WireServer, tmp_path: Path
) -> None:
    wire_server.serve(Captured())
    with Proxy(wire_server.url, None, fixes=Fixes(), guard=True).start() as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)

        def ask(system: str, task: str, **extra: Any) -> None:
            client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=64,
                system=system,
                messages=[{"role": "user", "content": task}],
                **extra,
            )

        keyed = {"metadata": {"user_id": USER_ID}}
        ask("You are Claude Code.", "Refactor the parser.", **keyed)
        ask("You are a search sub-agent.", "Find every caller of parse().", **keyed)
        ask("You review code.", "Review the diff.")
        assert proxy.wait_handled(3, HANG_GUARD)
        status = proxy.status()["by_conversation"]
        parent = next(r["id"] for r in status if r["key"] and r["parent"] is None)
        child = next(r["id"] for r in status if r["parent"] == parent)
        with chromium(tmp_path) as page:
            page.visit(f"{proxy.url}{PAGE_PATH}", "document.body?.dataset.loaded === 'yes'")
            shown = rows(page)
            assert [r["id"] for r in shown].index(child) == [r["id"] for r in shown].index(
                parent
            ) + 1
            assert [r["child"] for r in shown if r["id"] == child] == [True]
            text = page.evaluate("document.body.innerText")
            assert "3 conversations, 3 requests, 0 busts" in text
            assert "metadata.user_id#" in text
            assert "5e55-10n" not in text
            ask("You review code.", "Review the diff.")  # a fourth request, on the page soon
            assert proxy.wait_handled(4, HANG_GUARD)
            page.wait_for("document.getElementById('totals').textContent.includes('4 requests')")
            page.screenshot(tmp_path / "status.png")
