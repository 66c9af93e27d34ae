"""Request bodies: a provider request's fields besides its messages kept in place through a round trip.

Shapes: OpenAI chat-completions (``{"model", "messages", "tools", "tool_choice", ...}``, openai-python's
``CompletionCreateParams``), Anthropic Messages (``{"model", "max_tokens", "system", "messages",
"tools", ...}``, anthropic-python's ``MessageCreateParams``) and OpenAI Responses (``{"model", "input",
"tools", ...}``, ``ResponseCreateParams``). The messages go through that provider's own converter; every
other field rides in a carrier (`tracetrim.formats._carrier`) and is written back unchanged, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Message, SnapshotError
from tracetrim.formats._carrier import carrier, document_fields, fill_document, split_carriers
from tracetrim.formats._common import ValidatedHistory

FORMAT = "request_body"

Read = Callable[[Sequence[Any], Mapping[str, Any]], list[Message]]
Write = Callable[[Sequence[Any]], dict[str, Any]]


def read_request(
    messages: Sequence[Any],
    fields: Mapping[str, Any],
    read: Read,
    *,
    key: str = "messages",
    own: Sequence[str] = (),
    after: Sequence[str] = (),
) -> list[Message]:
    """``messages`` read with ``read``, preceded by a carrier of the body's other ``fields`` when it has
    any the format does not map itself (``own``: Anthropic's ``system``). ``key`` names the list in the
    body; when ``fields`` holds it too (the whole body), its place is kept exactly, else it goes after the
    last of ``after`` there is, or last."""
    neutral = read(messages, fields)
    if not set(fields) - set(own) - {key}:
        return neutral
    return [carrier(FORMAT, document_fields(fields, key, after), {}), *neutral]


def write_request(messages: Sequence[Any], write: Write) -> dict[str, Any]:
    """Neutral ``messages`` written with ``write``; with a carried body, the whole body with the written
    list (and fields the writer gives, such as ``system``) in their places."""
    documents, rest = split_carriers(messages, FORMAT)
    # a runner's validated history stays one without its carrier, so the writer does not validate it again
    written = write(ValidatedHistory(rest) if type(messages) is ValidatedHistory else rest)
    if not documents:
        return written
    if len(documents) > 1:
        raise SnapshotError("a history holds more than one request body")
    extra = {k: v for k, v in written.items() if k != "messages"}
    return fill_document(documents[0], written["messages"], extra)
