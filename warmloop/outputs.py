"""Declared outputs become the reserved `submit` tool: a typed, validated commit that ends a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from warmloop.errors import ConfigurationError
from warmloop.tools import ToolSpec, _clean_schema, describe_validation_error, parse_arguments
from warmloop.transcript import ToolCall, ToolResult

SUBMIT = "submit"
SUBMITTED = "Submitted."
OutputSpec = type[BaseModel] | Mapping[str, Any] | None


class Outputs:
    """The declared output fields of an agent (default: `answer: str`)."""

    def __init__(self, spec: OutputSpec = None) -> None:
        if spec is None:
            spec = {"answer": str}
        if isinstance(spec, type) and issubclass(spec, BaseModel):
            self.model: type[BaseModel] = spec
        elif isinstance(spec, Mapping):
            if not spec:
                raise ConfigurationError("outputs must declare at least one field")
            fields = {name: (kind, ...) for name, kind in spec.items()}
            self.model = create_model(  # type: ignore[call-overload]
                "Outputs", __config__=ConfigDict(extra="forbid"), **fields
            )
        else:
            raise ConfigurationError(
                f"outputs must be a pydantic model or a mapping of name -> type, got {spec!r}"
            )
        self.spec = ToolSpec(
            SUBMIT,
            "Finish the task: call this once with the final outputs as arguments.",
            _clean_schema(self.model.model_json_schema()),
        )

    @property
    def names(self) -> list[str]:
        return list(self.model.model_fields)

    def validate(self, call: ToolCall) -> BaseModel | ToolResult:
        """The validated outputs, or a tool error naming what is wrong and what is expected."""
        try:
            return self.model.model_validate(parse_arguments(call.arguments))
        except ValueError as exc:
            detail = (
                describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            )
            return ToolResult(
                call.id,
                call.name,
                f"submit was rejected:\n{detail}\nExpected: {self.spec.compact()}",
                is_error=True,
            )

    def extract_prompt(self, reason: str) -> str:
        """The one user turn the extract step appends before its final request."""
        return (
            f"{reason} Do not call any other tool. Call {SUBMIT} now with your final "
            f"outputs, based on everything above: {self.spec.compact()}"
        )
