"""The audit keeps of each request what it reads later, never the whole logged body.

Two logs hold the very same conversations (ten of twenty requests, append-only) and differ
only in a field of each body that is no part of the prompt (`metadata`, a routing key the
canonical stream leaves out), a few hundred bytes in one and 50 kB in the other. The peak
memory Python allocates while auditing them (`tracemalloc`, counted, not timed) may differ by
a line or two (the lines being parsed), never by the 10 MB the larger bodies add to the file:
an audit that kept each parsed body would.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from click.testing import CliRunner

from warmloop.audit.report import audit, to_json
from warmloop.cli.audit import CHUNK
from warmloop.cli.main import main
from warmloop.exchange.log import iter_log, read_log

CONVERSATIONS = 10
STEPS = 20
SMALL = 200
LARGE = 50_000


def write_log(path: Path, blob: int) -> Path:
    """Ten interleaved append-only conversations whose bodies carry `blob` characters of
    metadata beside the prompt."""
    threads = [
        [
            {"role": "system", "content": "You are a careful agent. " * 10},
            {"role": "user", "content": f"task {c}: " + "read the parser. " * 10},
        ]
        for c in range(CONVERSATIONS)
    ]
    lines: list[str] = []
    for step in range(STEPS):
        for c, messages in enumerate(threads):
            trace = f"{c}-{step}-" + "x" * blob
            body = {"model": "gpt-5", "metadata": {"trace": trace}, "messages": list(messages)}
            usage = {"prompt_tokens": 200 + 20 * step}
            lines.append(json.dumps({"at": 1000.0 + len(lines), "body": body, "usage": usage}))
            messages.append({"role": "assistant", "content": f"step {step} of {c}. " * 5})
    path.write_text("\n".join(lines) + "\n")
    return path


def peak_while_auditing(path: Path) -> tuple[int, int]:
    """Bytes allocated at the peak of an audit of `path`, and the conversations found."""
    tracemalloc.start()
    try:
        report = audit(iter_log(path))
        return tracemalloc.get_traced_memory()[1], len(report.conversations)
    finally:
        tracemalloc.stop()


def test_peak_memory_does_not_grow_with_what_bodies_carry_outside_the_prompt(
    tmp_path: Path,
) -> None:
    small = write_log(tmp_path / "small.jsonl", SMALL)
    large = write_log(tmp_path / "large.jsonl", LARGE)
    peak_while_auditing(small)  # lazy imports and caches load outside the measurement
    small_peak, small_found = peak_while_auditing(small)
    large_peak, large_found = peak_while_auditing(large)
    assert small_found == large_found == CONVERSATIONS
    added = large.stat().st_size - small.stat().st_size
    assert added > 9_000_000
    # A line or two at a time (the raw line and its decoded body, of the line being read
    # and of the one before, until it is replaced): kept bodies would add the whole 10 MB.
    assert large_peak - small_peak < 8 * LARGE, (small_peak, large_peak, added)


def test_the_json_report_is_written_in_chunks_whole_and_escaped(tmp_path: Path) -> None:
    """`audit --json` writes a large report chunk by chunk: the text is the whole report,
    and a control character the log put in it is escaped in every chunk, not only the last."""
    log = tmp_path / "hostile.jsonl"
    model = "gpt-5\u202e\x7f"
    lines = [
        json.dumps({"body": {"model": model, "messages": [{"role": "user", "content": f"{n}"}]}})
        for n in range(300)
    ]
    log.write_text("\n".join(lines) + "\n")
    printed = CliRunner().invoke(main, ["audit", str(log), "--json"])
    assert printed.exit_code == 0, printed.output
    assert len(printed.stdout) > 3 * CHUNK
    assert "\u202e" not in printed.stdout
    assert "\x7f" not in printed.stdout
    expected = json.loads(json.dumps(to_json(audit(read_log(log), source=log.name))))
    assert json.loads(printed.stdout) == expected
