"""The HTML report shows the provider's verdict beside the audit's, as a person sees it in
headless Chromium (see tests/audit/test_audit_page.py): both readings side by side, whether
they agree, and a miss the provider lost marked as the provider's. A screenshot is left in
the test's tmp dir, and copied to `WARMLOOP_VERDICT_SCREENSHOT` when that is set."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.audit.test_audit_verdict import write_log
from tests.support.browser import chromium, chromium_binary
from warmloop.audit.page import render_page
from warmloop.audit.report import audit
from warmloop.exchange.log import read_log

pytestmark = pytest.mark.skipif(
    chromium_binary() is None,
    reason="Chromium is not installed and could not be: run `bash scripts/chromium.sh` as root",
)

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
PAIRS = """
Array.from(document.querySelectorAll(".divergence")).map(block => {
  const pair = block.querySelector(".verdicts");
  if (!pair) return {number: Number(block.dataset.number), state: null};
  const audit = pair.querySelector(".verdict.audit").getBoundingClientRect();
  const provider = pair.querySelector(".verdict.provider").getBoundingClientRect();
  return {
    number: Number(block.dataset.number),
    state: pair.classList[1],
    audit: pair.querySelector(".verdict.audit").innerText,
    provider: pair.querySelector(".verdict.provider").innerText,
    sideBySide: Math.abs(audit.top - provider.top) < 2 && audit.right <= provider.left,
    background: getComputedStyle(pair.querySelector(".verdict.provider")).backgroundColor,
  };
})
"""


def test_the_page_shows_the_providers_verdict_beside_the_audits(tmp_path: Path) -> None:
    log = write_log(tmp_path / "verdicts.jsonl")
    page_file = tmp_path / "audit.html"
    page_file.write_text(render_page(audit(read_log(log), source=log.name)))
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    with chromium(profile) as page:
        page.open(page_file)
        for text in (
            "warmloop's audit",
            "Anthropic's own diagnostics",
            "OpenAI's own diagnostics",
            "previous_message_not_found",
            "the provider's loss: charged to it, not counted as a client bust",
            "disagrees with the audit's reading: both are shown",
            "agrees with the audit",
            "lost to the provider (it lost the entry)",
        ):
            assert page.evaluate(f"({VISIBLE})({json.dumps(text)})"), f"not visible: {text!r}"
        pairs = page.evaluate(PAIRS)
        shot = page.screenshot(tmp_path / "verdict.png")
    anthropic = {pair["number"]: pair for pair in pairs[:3]}
    assert sorted(anthropic) == [3, 4, 5]  # request 2 (no divergence, agreed) is not listed
    assert anthropic[3]["state"] == "loss"
    assert anthropic[3]["audit"].startswith("warmloop's audit\nthe provider (it lost the entry)")
    assert anthropic[3]["provider"] == "Anthropic's own diagnostics\nprevious_message_not_found"
    assert anthropic[4]["state"] == "agree"
    assert "tools_changed" in anthropic[4]["provider"]
    assert "about 3,000 input tokens missed" in anthropic[4]["provider"]
    assert anthropic[5]["state"] == "disagree"
    assert anthropic[5]["audit"].startswith("warmloop's audit\nno bust")
    assert "system_changed" in anthropic[5]["provider"]
    assert all(pair["sideBySide"] for pair in pairs)
    # each state reads differently: loss, agreement and disagreement have their own colour
    assert [anthropic[n]["background"] for n in (3, 4, 5)] == [
        "rgb(239, 228, 247)",  # the provider's loss: violet
        "rgb(227, 244, 233)",  # agreement: green
        "rgb(251, 227, 224)",  # disagreement: red
    ]
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("WARMLOOP_VERDICT_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
