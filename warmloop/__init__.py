"""warmloop: tool-using LLM agents whose every request extends the previous one.

The public API: every name a user constructs, passes or catches is importable from here
(docs/reference/api.md lists them); everything else lives in the one module that defines it.

Names load on first use (PEP 562 `__getattr__`): `import warmloop` imports none of their
modules, so a script or the CLI that needs one pays for that one only (`warmloop --help`
loads no agent, provider or HTTP client; `python -m benchmarks startup` measures it)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from warmloop.agent.agent import Agent
    from warmloop.agent.approvals import ToolDenied, WaitingForApproval
    from warmloop.agent.delegation import fan_out
    from warmloop.agent.event_stream import EventStream
    from warmloop.agent.events import (
        CacheBust,
        CacheMiss,
        Event,
        FinalOutput,
        KeptAlive,
        Maintained,
        MessageAppended,
        PartialOutput,
        RequestAnswered,
        RequestSent,
        ToolFinished,
        ToolStarted,
    )
    from warmloop.agent.handoff import Handoff, handoff
    from warmloop.agent.limits import UsageLimits
    from warmloop.agent.result import (
        ChildRun,
        ExtractFailed,
        RequestFailed,
        Run,
        RunAborted,
        RunError,
        SyntaxBudgetExceeded,
        UsageLimitExceeded,
    )
    from warmloop.agent.trajectory import TrajectoryStep
    from warmloop.errors import (
        CodeFailed,
        ConfigurationError,
        ContextWindowExceeded,
        FleetUnavailable,
        MissingApiKey,
        MissingExtra,
        ModelRequestsRefused,
        ModelRetry,
        PairingError,
        ProviderError,
        ProviderUnavailable,
        RateLimited,
        SessionBusy,
        SessionError,
        ToolFailed,
        ToolRaised,
        TranscriptError,
        WarmloopError,
        WorkspaceError,
    )
    from warmloop.facts.model_facts import ModelFacts
    from warmloop.facts.pricing import CostReport
    from warmloop.facts.usage import Usage
    from warmloop.keepalive.pinger import KeepAlivePolicy
    from warmloop.maintenance.maintainer import MaintenanceEvent
    from warmloop.maintenance.planner import MaintenancePolicy
    from warmloop.maintenance.prune import PrunePolicy
    from warmloop.messages import (
        AssistantTurn,
        Meta,
        Notice,
        Summary,
        SystemText,
        ToolCall,
        ToolResult,
        UserText,
    )
    from warmloop.providers.base import Model
    from warmloop.providers.deltas import StreamingModel, TextDelta, ToolCallDelta
    from warmloop.providers.model_settings import ModelSettings
    from warmloop.providers.scripted import Reply, ScriptedModel, call, raw_call
    from warmloop.providers.select import resolve_model
    from warmloop.sessions.locate import open_store
    from warmloop.sessions.sqlite import SQLiteStore
    from warmloop.sessions.store import SessionStore
    from warmloop.telemetry import instrument
    from warmloop.tools.code import CodeMode
    from warmloop.tools.context import RunContext
    from warmloop.tools.mcp import McpServer
    from warmloop.tools.schema import ToolSpec
    from warmloop.tools.tool import Tool, tool
    from warmloop.tools.toolbox import Toolbox
    from warmloop.transcript import Transcript, check_pairing
    from warmloop.wire.request_record import RequestRecord
    from warmloop.workspace import Workspace, workspace_tools

_WHERE: dict[str, str] = {
    "Agent": "warmloop.agent.agent",
    "AssistantTurn": "warmloop.messages",
    "CacheBust": "warmloop.agent.events",
    "CacheMiss": "warmloop.agent.events",
    "ChildRun": "warmloop.agent.result",
    "CodeFailed": "warmloop.errors",
    "CodeMode": "warmloop.tools.code",
    "ConfigurationError": "warmloop.errors",
    "ContextWindowExceeded": "warmloop.errors",
    "CostReport": "warmloop.facts.pricing",
    "Event": "warmloop.agent.events",
    "EventStream": "warmloop.agent.event_stream",
    "ExtractFailed": "warmloop.agent.result",
    "FinalOutput": "warmloop.agent.events",
    "FleetUnavailable": "warmloop.errors",
    "Handoff": "warmloop.agent.handoff",
    "KeepAlivePolicy": "warmloop.keepalive.pinger",
    "KeptAlive": "warmloop.agent.events",
    "Maintained": "warmloop.agent.events",
    "MaintenanceEvent": "warmloop.maintenance.maintainer",
    "MaintenancePolicy": "warmloop.maintenance.planner",
    "McpServer": "warmloop.tools.mcp",
    "MessageAppended": "warmloop.agent.events",
    "Meta": "warmloop.messages",
    "MissingApiKey": "warmloop.errors",
    "MissingExtra": "warmloop.errors",
    "Model": "warmloop.providers.base",
    "ModelFacts": "warmloop.facts.model_facts",
    "ModelRequestsRefused": "warmloop.errors",
    "ModelRetry": "warmloop.errors",
    "ModelSettings": "warmloop.providers.model_settings",
    "Notice": "warmloop.messages",
    "PairingError": "warmloop.errors",
    "PartialOutput": "warmloop.agent.events",
    "ProviderError": "warmloop.errors",
    "ProviderUnavailable": "warmloop.errors",
    "PrunePolicy": "warmloop.maintenance.prune",
    "RateLimited": "warmloop.errors",
    "Reply": "warmloop.providers.scripted",
    "RequestAnswered": "warmloop.agent.events",
    "RequestFailed": "warmloop.agent.result",
    "RequestRecord": "warmloop.wire.request_record",
    "RequestSent": "warmloop.agent.events",
    "Run": "warmloop.agent.result",
    "RunAborted": "warmloop.agent.result",
    "RunContext": "warmloop.tools.context",
    "RunError": "warmloop.agent.result",
    "SQLiteStore": "warmloop.sessions.sqlite",
    "ScriptedModel": "warmloop.providers.scripted",
    "SessionBusy": "warmloop.errors",
    "SessionError": "warmloop.errors",
    "SessionStore": "warmloop.sessions.store",
    "StreamingModel": "warmloop.providers.deltas",
    "Summary": "warmloop.messages",
    "SyntaxBudgetExceeded": "warmloop.agent.result",
    "SystemText": "warmloop.messages",
    "TextDelta": "warmloop.providers.deltas",
    "Tool": "warmloop.tools.tool",
    "ToolCall": "warmloop.messages",
    "ToolCallDelta": "warmloop.providers.deltas",
    "ToolDenied": "warmloop.agent.approvals",
    "ToolFailed": "warmloop.errors",
    "ToolFinished": "warmloop.agent.events",
    "ToolRaised": "warmloop.errors",
    "ToolResult": "warmloop.messages",
    "ToolSpec": "warmloop.tools.schema",
    "ToolStarted": "warmloop.agent.events",
    "Toolbox": "warmloop.tools.toolbox",
    "TrajectoryStep": "warmloop.agent.trajectory",
    "Transcript": "warmloop.transcript",
    "TranscriptError": "warmloop.errors",
    "Usage": "warmloop.facts.usage",
    "UsageLimitExceeded": "warmloop.agent.result",
    "UsageLimits": "warmloop.agent.limits",
    "UserText": "warmloop.messages",
    "WaitingForApproval": "warmloop.agent.approvals",
    "WarmloopError": "warmloop.errors",
    "Workspace": "warmloop.workspace",
    "WorkspaceError": "warmloop.errors",
    "call": "warmloop.providers.scripted",
    "check_pairing": "warmloop.transcript",
    "fan_out": "warmloop.agent.delegation",
    "handoff": "warmloop.agent.handoff",
    "instrument": "warmloop.telemetry",
    "open_store": "warmloop.sessions.locate",
    "raw_call": "warmloop.providers.scripted",
    "resolve_model": "warmloop.providers.select",
    "tool": "warmloop.tools.tool",
    "workspace_tools": "warmloop.workspace",
}
"""Each public name and the module that defines it."""

__all__ = [
    "Agent",
    "AssistantTurn",
    "CacheBust",
    "CacheMiss",
    "ChildRun",
    "CodeFailed",
    "CodeMode",
    "ConfigurationError",
    "ContextWindowExceeded",
    "CostReport",
    "Event",
    "EventStream",
    "ExtractFailed",
    "FinalOutput",
    "FleetUnavailable",
    "Handoff",
    "KeepAlivePolicy",
    "KeptAlive",
    "Maintained",
    "MaintenanceEvent",
    "MaintenancePolicy",
    "McpServer",
    "MessageAppended",
    "Meta",
    "MissingApiKey",
    "MissingExtra",
    "Model",
    "ModelFacts",
    "ModelRequestsRefused",
    "ModelRetry",
    "ModelSettings",
    "Notice",
    "PairingError",
    "PartialOutput",
    "ProviderError",
    "ProviderUnavailable",
    "PrunePolicy",
    "RateLimited",
    "Reply",
    "RequestAnswered",
    "RequestFailed",
    "RequestRecord",
    "RequestSent",
    "Run",
    "RunAborted",
    "RunContext",
    "RunError",
    "SQLiteStore",
    "ScriptedModel",
    "SessionBusy",
    "SessionError",
    "SessionStore",
    "StreamingModel",
    "Summary",
    "SyntaxBudgetExceeded",
    "SystemText",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolDenied",
    "ToolFailed",
    "ToolFinished",
    "ToolRaised",
    "ToolResult",
    "ToolSpec",
    "ToolStarted",
    "Toolbox",
    "TrajectoryStep",
    "Transcript",
    "TranscriptError",
    "Usage",
    "UsageLimitExceeded",
    "UsageLimits",
    "UserText",
    "WaitingForApproval",
    "WarmloopError",
    "Workspace",
    "WorkspaceError",
    "call",
    "check_pairing",
    "fan_out",
    "handoff",
    "instrument",
    "open_store",
    "raw_call",
    "resolve_model",
    "tool",
    "workspace_tools",
]


def __getattr__(name: str) -> object:
    """A public name, its defining module imported on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'warmloop' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
