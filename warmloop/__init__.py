"""warmloop: tool-using LLM agents whose every request extends the previous one.

The public API: every name a user constructs, passes or catches is importable from here
(docs/reference/api.md lists them); everything else lives in the one module that defines it."""

from warmloop.agent.agent import Agent
from warmloop.agent.event_stream import EventStream
from warmloop.agent.events import (
    CacheBust,
    CacheMiss,
    Event,
    FinalOutput,
    KeptAlive,
    Maintained,
    MessageAppended,
    RequestAnswered,
    RequestSent,
    ToolFinished,
    ToolStarted,
)
from warmloop.agent.run import (
    ExtractFailed,
    RequestFailed,
    Run,
    RunAborted,
    RunError,
    SyntaxBudgetExceeded,
)
from warmloop.agent.trajectory import TrajectoryStep
from warmloop.errors import (
    ConfigurationError,
    ContextWindowExceeded,
    PairingError,
    ProviderError,
    ProviderUnavailable,
    SessionBusy,
    SessionError,
    ToolFailed,
    TranscriptError,
    WarmloopError,
    WorkspaceError,
)
from warmloop.facts.model_facts import ModelFacts
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

__all__ = [
    "Agent",
    "AssistantTurn",
    "CacheBust",
    "CacheMiss",
    "CodeMode",
    "ConfigurationError",
    "ContextWindowExceeded",
    "Event",
    "EventStream",
    "ExtractFailed",
    "FinalOutput",
    "KeepAlivePolicy",
    "KeptAlive",
    "Maintained",
    "MaintenanceEvent",
    "MaintenancePolicy",
    "McpServer",
    "MessageAppended",
    "Meta",
    "Model",
    "ModelFacts",
    "ModelSettings",
    "Notice",
    "PairingError",
    "ProviderError",
    "ProviderUnavailable",
    "PrunePolicy",
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
    "ToolFailed",
    "ToolFinished",
    "ToolResult",
    "ToolSpec",
    "ToolStarted",
    "Toolbox",
    "TrajectoryStep",
    "Transcript",
    "TranscriptError",
    "Usage",
    "UserText",
    "WarmloopError",
    "Workspace",
    "WorkspaceError",
    "call",
    "check_pairing",
    "instrument",
    "open_store",
    "raw_call",
    "resolve_model",
    "tool",
    "workspace_tools",
]
