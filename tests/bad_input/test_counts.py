"""The suite's size per category, from its tables: a floor each category must keep (the
terminal summary reports the cases that ran; this pins that none were quietly dropped)."""

from __future__ import annotations

from tests.bad_input import (
    test_api_misuse,
    test_model_output,
    test_providers,
    test_proxy,
    test_security,
    test_tools,
    test_transcripts,
    test_workspace,
)

FLOORS = {
    "model_output": 59,
    "tools": 34,
    "workspace": 36,
    "transcripts": 47,
    "providers": 72,
    "api_misuse": 35,
    "security": 95,
    "proxy": 20,
}
TOTAL_FLOOR = 398


def table_sizes() -> dict[str, int]:
    return {
        "model_output": len(test_model_output.CASES),
        "tools": len(test_tools.CASES) + 2,  # and Ctrl-C, sync and async
        "workspace": len(test_workspace.CASES),
        "transcripts": len(test_transcripts.BAD) + len(test_transcripts.FINE),
        "providers": len(test_providers.PROVIDERS) * len(test_providers.FAULTS),
        "api_misuse": len(test_api_misuse.CASES) + 4,  # and the four scenario tests
        # the workspace table; record's table with its well-formed control; MCP: each
        # hostile tool, each unusable schema refused by a toolbox and by a direct check
        # (with one more there), and the join check
        "security": len(test_security.WORKSPACE_CASES)
        + len(test_security.RECORD_CASES)
        + 1
        + len(test_security.MCP_CASES)
        + 2 * len(test_security.UNUSABLE_SCHEMAS)
        + 2,
        "proxy": len(test_proxy.FINDINGS),  # issue 46's probe, a case or more each
    }


def test_every_category_keeps_its_floor() -> None:
    sizes = table_sizes()
    print("bad-input tables:", sizes, "total", sum(sizes.values()))
    for category, floor in FLOORS.items():
        assert sizes[category] >= floor, f"{category}: {sizes[category]} cases < {floor}"
    assert sum(sizes.values()) >= TOTAL_FLOOR
