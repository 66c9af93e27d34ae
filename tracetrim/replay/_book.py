"""Per-run caches of each message's tokens and searchable text, and where a run's model calls are."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tracetrim._snapshot import Message
from tracetrim._tokens import TokenCounter, estimate_tokens, message_tokens
from tracetrim.formats._common import sent_by_the_host
from tracetrim.learn._labels import history_text


def model_turns(messages: Sequence[Message]) -> list[int]:
    """Indexes of the messages a model wrote: assistant messages holding anything but tool results,
    not sent as a user turn.

    Each is one model call; its prompt is every message before it. (Readers of text-protocol agents
    put a command's output in an assistant message of tool results only, and readers of Anthropic
    messages a user turn of results and text, Cline's environment details say: neither is a model call.)
    """
    return [
        i
        for i, message in enumerate(messages)
        if message["role"] == "assistant"
        and any(b.get("type") != "tool_result" for b in message["content"])
        and not sent_by_the_host(message)
    ]


class MessageBook:
    """Each message object's tokens (what a model reads of it: `message_tokens`, system messages too)
    and its text (what "still findable" searches: `tracetrim.learn.history_text`), computed once.

    Keyed by object identity and holding the object, so an id is never reused for another message
    while the book lives; a replay keeps one book per run.
    """

    def __init__(self, count: TokenCounter = estimate_tokens) -> None:
        self.count = count
        self._entries: dict[int, tuple[Message, int, str | None]] = {}

    def _entry(self, message: Message) -> tuple[Message, int, str | None]:
        entry = self._entries.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, message_tokens(message, self.count), None)
            self._entries[id(message)] = entry
        return entry

    def tokens(self, message: Message) -> int:
        """Tokens of one message."""
        return self._entry(message)[1]

    def total(self, messages: Iterable[Message]) -> int:
        """Tokens of a prompt: every message, system messages included (they are billed)."""
        return sum(self._entry(m)[1] for m in messages)

    def history(self, messages: Iterable[Message]) -> int:
        """Tokens as the planner's budget counts them: system messages excluded (`history_tokens`)."""
        return sum(self._entry(m)[1] for m in messages if m["role"] != "system")

    def text(self, message: Message) -> str:
        """The searchable text of one message."""
        stored, tokens, text = self._entry(message)
        if text is None:
            text = history_text([message])
            self._entries[id(message)] = (stored, tokens, text)
        return text

    def haystack(self, messages: Iterable[Message]) -> str:
        """The searchable text of a prompt, as `tracetrim.learn.history_text` joins it."""
        return "\n".join(self.text(m) for m in messages)
