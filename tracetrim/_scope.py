"""`Scope`: who a history belongs to (user, agent, session), validated once."""

from __future__ import annotations

from typing import Any

import attrs

MAX_SCOPE_PART_CHARS = 512


def _check_part(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"Scope.{attribute.name} must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError(f"Scope.{attribute.name} must not be empty")
    if len(value) > MAX_SCOPE_PART_CHARS:
        raise ValueError(
            f"Scope.{attribute.name} is {len(value)} characters; at most {MAX_SCOPE_PART_CHARS} allowed"
        )
    if "\x00" in value:
        raise ValueError(f"Scope.{attribute.name} must not contain NUL")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Archives key and store the scope as UTF-8: refused here, not as a confusing save error.
        raise ValueError(
            f"Scope.{attribute.name} cannot be encoded as UTF-8 (a lone surrogate at character {exc.start})"
        ) from None


@attrs.frozen
class Scope:
    """The owner of a history: each part non-empty, at most 512 characters, no NUL, valid UTF-8 text."""

    user_id: str = attrs.field(validator=_check_part)
    agent_id: str = attrs.field(validator=_check_part)
    session_id: str = attrs.field(validator=_check_part)

    def as_dict(self) -> dict[str, str]:
        """The scope as a plain JSON object."""
        return {"user_id": self.user_id, "agent_id": self.agent_id, "session_id": self.session_id}
