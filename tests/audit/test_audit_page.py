"""The audit's HTML report as a person sees it: rendered in headless Chromium (Debian's
package, installed by scripts/debian.sh), with its text visible, its bars to scale and a
screenshot left in the test's tmp dir."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import chromium, chromium_binary
from warmloop.audit.page import BAR_PIXELS, render_page
from warmloop.audit.report import audit
from warmloop.exchange.identity import shown_key
from warmloop.exchange.log import read_log

pytestmark = pytest.mark.skipif(
    chromium_binary() is None,
    reason="Chromium is not installed and could not be: run `bash scripts/debian.sh` as root",
)

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [
    {"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA},
    {"name": "search", "description": "Search the repository.", "input_schema": SCHEMA},
]
# (cache reads, cache writes, uncached input) per request, as Anthropic reports them
USAGE = [(0, 3000, 200), (3000, 1500, 100), (0, 4800, 100), (4800, 1000, 50)]

VISIBLE = """
(needle) => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.includes(needle)) continue;
    const element = node.parentElement;
    const box = element.getBoundingClientRect();
    const style = getComputedStyle(element);
    if (box.width > 0 && box.height > 0 && box.right > 0 && style.visibility !== "hidden"
        && style.display !== "none" && parseFloat(style.opacity) > 0) return true;
  }
  return false;
}
"""
BARS = """
Array.from(document.querySelectorAll(".request")).map(row => ({
  number: Number(row.dataset.number),
  segments: Array.from(row.querySelectorAll(".seg")).map(seg => ({
    kind: seg.classList[1],
    tokens: Number(seg.dataset.tokens),
    width: seg.getBoundingClientRect().width,
    color: getComputedStyle(seg).backgroundColor,
  })),
}))
"""


def write_log(path: Path) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Why is the total off?"}]
    lines = []
    for k, (read, written, uncached) in enumerate(USAGE, start=1):
        tools = copy.deepcopy(TOOLS)
        if k >= 3:
            tools.reverse()  # an MCP reconnect lists the tools in another order
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": "You fix bugs in a Python repository.",
            "tools": tools,
            "messages": copy.deepcopy(messages),
            "metadata": {"user_id": "page-test"},
            "cache_control": {"type": "ephemeral"},
        }
        usage = {
            "input_tokens": uncached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": 30,
        }
        record: dict[str, Any] = {"at": 1_767_258_000 + 10 * k, "body": body, "usage": usage}
        if k == 3:
            reason = {"type": "tools_changed", "cache_missed_input_tokens": 3100}
            record["diagnostics"] = {"cache_miss_reason": reason}
        lines.append(json.dumps(record))
        call = {"type": "tool_use", "id": f"toolu_{k}", "name": "read_file", "input": {}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": "x" * 400}
        messages.append({"role": "user", "content": [result]})
    path.write_text("\n".join(lines) + "\n")


def test_the_report_page_shows_bars_to_scale_and_each_divergence(tmp_path: Path) -> None:
    log = tmp_path / "page.jsonl"
    write_log(log)
    page_file = tmp_path / "audit.html"
    page_file.write_text(render_page(audit(read_log(log), source=log.name)))
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    with chromium(profile) as page:
        page.open(page_file)
        for text in (
            "warmloop cache audit: page.jsonl",
            f"conversation 1 ({shown_key('metadata.user_id=page-test')})",
            "Request 3 (log line 3) · tools",
            "tools reordered (same tools, another order)",
            "Provider diagnostics: Anthropic: tools_changed, about 3,100 input tokens missed",
            "previous request",
            "lost to tools added, removed or reordered",
            "anthropic:claude-sonnet-4-6",
        ):
            assert page.evaluate(f"({VISIBLE})({json.dumps(text)})"), f"not visible: {text!r}"
        sides = page.evaluate(
            "Array.from(document.querySelectorAll('.divergence mark')).map(m => m.textContent)"
        )
        bars = page.evaluate(BARS)
        shot = page.screenshot(tmp_path / "audit.png")
    assert sides[0].startswith('read_file","description"')  # what request 2 had there
    assert sides[1].startswith('search","description"')  # what request 3 sent instead
    assert [bar["number"] for bar in bars] == [1, 2, 3, 4]
    largest = max(sum(USAGE[k]) for k in range(len(USAGE)))
    colors = {"cached": "rgb(46, 157, 91)", "written": "rgb(224, 161, 38)"}
    colors["uncached"] = "rgb(210, 70, 60)"
    for bar, (read, written, uncached) in zip(bars, USAGE, strict=True):
        expected = {"cached": read, "written": written, "uncached": uncached}
        shown = {s["kind"]: s["tokens"] for s in bar["segments"]}
        assert shown == {kind: n for kind, n in expected.items() if n}
        for segment in bar["segments"]:
            # one scale for every bar: the largest request fills the track
            assert segment["width"] == pytest.approx(
                segment["tokens"] * BAR_PIXELS / largest, abs=1.0
            )
            assert segment["color"] == colors[segment["kind"]]
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert shot.stat().st_size > 10_000
