"""A retention or TTL parameter the provider refused, learned for the conversation.

warmloop asks OpenAI for a longer cache retention itself where the table says it is free
(`prompt_cache_retention: "24h"` on GPT-5 and GPT-4.1) or where it pays
(`prompt_cache_options.ttl`, GPT-5.6). An organisation or a model that cannot use it gets
the API's 400 (the error object's `param` names the parameter: "Error codes", the
`invalid_request_error` shape). Rather than fail the run, the request is sent again once
without it, with a warning, and the conversation's later requests leave it out.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from openai import BadRequestError

logger = logging.getLogger(__name__)

T = TypeVar("T")
PARAMS = ("prompt_cache_retention", "prompt_cache_options.ttl")
"""The retention parameters warmloop may add on its own, as `key` or `key.nested`."""
CONVERSATIONS_REMEMBERED = 1024
"""Conversations whose refusals a model keeps (the most recent)."""


def _carries(kwargs: Mapping[str, Any], name: str) -> bool:
    top, _, nested = name.partition(".")
    value = kwargs.get(top)
    return value is not None and (not nested or (isinstance(value, Mapping) and nested in value))


def without(kwargs: Mapping[str, Any], name: str) -> dict[str, Any]:
    """`kwargs` without the parameter `name` (an object left empty goes too)."""
    top, _, nested = name.partition(".")
    out = dict(kwargs)
    if not nested:
        out.pop(top, None)
        return out
    inner = {k: v for k, v in dict(out.get(top) or {}).items() if k != nested}
    if inner:
        out[top] = inner
    else:
        out.pop(top, None)
    return out


def refused(exc: BadRequestError, kwargs: Mapping[str, Any]) -> str | None:
    """The retention parameter a 400 refused, where the request carried it and the error
    names it (its `param`, else its message)."""
    said = f"{exc.param or ''} {exc.message}"
    for name in PARAMS:
        if _carries(kwargs, name) and (name in said or name.rpartition(".")[2] == exc.param):
            return name
    return None


class RetentionRefusals:
    """The retention parameters refused per conversation, for one model (`name`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._refused: OrderedDict[str, set[str]] = OrderedDict()

    async def send(
        self,
        create: Callable[[dict[str, Any]], Awaitable[T]],
        kwargs: dict[str, Any],
        conversation: str,
    ) -> T:
        """`create(kwargs)` without what this conversation had refused; on a 400 that refuses
        a retention parameter the request carried, once more without it (warned)."""
        for known in self._refused.get(conversation, ()):
            kwargs = without(kwargs, known)
        try:
            return await create(kwargs)
        except BadRequestError as exc:
            name = refused(exc, kwargs)
            if name is None:
                raise
            self._refused.setdefault(conversation, set()).add(name)
            self._refused.move_to_end(conversation)
            while len(self._refused) > CONVERSATIONS_REMEMBERED:
                self._refused.popitem(last=False)
            logger.warning(
                "%s refused %s (%s); sent again without it, and this conversation's later "
                "requests leave it out: its cache keeps the provider's default retention",
                self.name,
                name,
                exc.message,
            )
            return await create(without(kwargs, name))
