"""The audit shows a conversation's routing key as the proxy's status page does: the field
and a short SHA-256 of its value, never the value (Claude Code's `metadata.user_id` holds
a device and a session id) (issue 46)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tests.audit.test_audit_page import write_log
from warmloop.cli.main import main
from warmloop.exchange.identity import shown_key


def test_the_audit_shows_a_routing_key_hashed_in_every_output(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    write_log(log)  # every request under metadata.user_id "page-test"
    page = tmp_path / "audit.html"
    table = CliRunner().invoke(main, ["audit", str(log)])
    data = CliRunner().invoke(main, ["audit", str(log), "--json", "--html", str(page)])
    shown = shown_key("metadata.user_id=page-test")
    assert shown is not None
    for printed in (table.output, data.output, page.read_text()):
        assert shown in printed
        assert "page-test" not in printed
