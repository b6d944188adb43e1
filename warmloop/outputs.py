"""Declared outputs become the reserved `submit` tool: a typed, validated commit that ends a run.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel
from typing_extensions import TypeVar

from warmloop.errors import ConfigurationError
from warmloop.messages import Message, ToolCall, ToolResult
from warmloop.output_types import WRAPPED, Convert, output_model, same
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.invoke import encodable
from warmloop.tools.schema import ToolSpec, model_schema, typed_model
from warmloop.tools.tool import describe_invalid, parse_arguments

SUBMITTED = "Submitted."

OutputT = TypeVar("OutputT", default=Any)
"""A run's output type: what `outputs=` declares (Any for the named-fields forms)."""
OutputSpec = type | Mapping[str, object] | None
"""What `outputs=` takes: a type (`output_types`), or names mapped to types."""
if TYPE_CHECKING:

    class SubmittedOutputs(BaseModel):
        """The validated arguments of `submit` (a run's `outputs`): a pydantic model whose
        fields the agent declared at run time, so a type checker cannot know them; any
        field read from it is `Any` (`run.outputs.country`). `run.output` is the typed
        view, of the declared output type."""

        def __getattr__(self, name: str) -> Any: ...

else:
    SubmittedOutputs = BaseModel  # at run time: the outputs model itself


def submitted(outputs: BaseModel) -> SubmittedOutputs:
    """`outputs` as a run carries them: the same object, its fields readable by name under
    a type checker."""
    return cast(SubmittedOutputs, outputs)


OutputCheck = Callable[[SubmittedOutputs, Sequence[Message]], str | None]
"""Checks valid outputs against the run's messages (its calls and their results): None to
accept, else why not and what to do first (sent back as submit's error; see `Agent`)."""


class Outputs:
    """The declared outputs of an agent (default: `answer: str`).

    A mapping of name -> type; or a type (a pydantic model, a dataclass, a TypedDict, a
    scalar or a list of them: `warmloop.output_types`). Every field must reach `submit`, so
    names pydantic would drop (`_x`, `model_config`) are refused. `model` validates
    submit's arguments (a run's `outputs`); `output` turns them into the declared type.
    """

    def __init__(self, spec: OutputSpec = None) -> None:
        self.output: Convert = _answer if spec is None else same
        self.text_field = "answer" if spec is None else WRAPPED if spec is str else None
        """The one field a plain-text reply fills where the output is text (the default
        `answer: str`, or `outputs=str`); None where a text reply is no answer."""
        if spec is None:
            spec = {"answer": str}
        if isinstance(spec, Mapping):
            if not spec:
                raise ConfigurationError("outputs must declare at least one field")
            fields = {name: (kind, ...) for name, kind in spec.items()}
            self.model: type[BaseModel] = typed_model("Outputs", fields, "outputs")
        else:
            self.model, self.output = output_model(spec)
        self.spec = ToolSpec(
            SUBMIT,
            "Finish the task: call this once with the final outputs as arguments.",
            model_schema(self.model, "outputs"),
        )

    @property
    def names(self) -> list[str]:
        return list(self.model.model_fields)

    def validate(self, call: ToolCall) -> BaseModel | ToolResult:
        """The validated outputs, or a tool error naming what is wrong and what is expected."""
        try:
            outputs = self.model.model_validate(parse_arguments(call.arguments))
            self.output(outputs)  # a dataclass's own checks (__post_init__) are heard too
            return outputs
        except Exception as exc:  # validators may raise anything; the model must hear why
            return ToolResult(
                call.id,
                call.name,
                encodable(
                    f"submit was rejected:\n{describe_invalid(exc)}\n"
                    f"Expected: {self.spec.compact()}"
                ),
                is_error=True,
            )

    def from_text(self, text: str) -> BaseModel | None:
        """The outputs a plain-text reply stands for where the output is text (as a
        pydantic-ai agent whose output type is `str` takes it); None where it is not, or
        for a reply with no text."""
        if self.text_field is None or not text.strip():
            return None
        return self.model.model_validate({self.text_field: encodable(text)})

    def extract_prompt(self, reason: str) -> str:
        """The one user turn the extract step appends before its final request."""
        return (
            f"{reason} Do not call any other tool. Call {SUBMIT} now with your final "
            f"outputs, based on everything above: {self.spec.compact()}"
        )


def _answer(outputs: BaseModel) -> object:
    return getattr(outputs, "answer")  # noqa: B009 (the default outputs' one field)
