"""`ExtractFailed` carries and shows why the run's last submit was rejected: what the
model was told (the validation error), so the caller sees it without reading the
transcript."""

from __future__ import annotations

import pytest

from warmloop import Agent, ExtractFailed, ScriptedModel, call


def shown(error: ExtractFailed) -> str:
    """`last_error` as the message shows it: on one line."""
    assert error.last_error is not None
    return " ".join(error.last_error.split())


def failed(model: ScriptedModel, max_steps: int = 2) -> ExtractFailed:
    with pytest.raises(ExtractFailed) as info:
        Agent(model, outputs={"count": int}, max_steps=max_steps).run_sync("Count them.")
    return info.value


def test_a_failed_extract_carries_and_shows_the_last_validation_error() -> None:
    model = ScriptedModel([call("submit", count="many"), call("submit")])
    error = failed(model, max_steps=1)  # the second submit is the extract step's
    assert error.last_error is not None
    assert "submit was rejected" in error.last_error
    assert "count" in error.last_error
    assert "Field required" in error.last_error  # the extract step's own submit
    assert "unable to parse" not in error.last_error  # not the first one
    assert shown(error) in str(error)
    assert "\n" not in str(error)


def test_a_rejection_before_the_extract_step_is_still_the_last_error() -> None:
    error = failed(ScriptedModel([call("submit", count="many"), "no tools", "still none"]))
    assert error.last_error is not None
    assert "unable to parse string as an integer" in error.last_error
    assert shown(error) in str(error)
    assert "\n" not in str(error)


def test_a_model_that_never_submits_has_no_last_error_and_says_so() -> None:
    error = failed(ScriptedModel(["no tools", "still no tools"]))
    assert error.last_error is None
    assert "never called submit" in str(error)
