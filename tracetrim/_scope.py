"""`Scope`: who a history belongs to (user, agent, session), validated once."""

from __future__ import annotations

from typing import Any

import attrs

from tracetrim._validators import FieldTypeError, FieldValueError

MAX_SCOPE_PART_CHARS = 512


def _check_part(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    where = {"owner": "Scope", "field": attribute.name}
    if not isinstance(value, str):
        raise FieldTypeError(f"must be a string, got {type(value).__name__}", **where)
    if not value:
        raise FieldValueError("must not be empty", **where)
    if len(value) > MAX_SCOPE_PART_CHARS:
        raise FieldValueError(f"is {len(value)} characters; at most {MAX_SCOPE_PART_CHARS} allowed", **where)
    if "\x00" in value:
        raise FieldValueError("must not contain NUL", **where)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Archives key and store the scope as UTF-8: refused here, not as a confusing save error.
        raise FieldValueError(
            f"cannot be encoded as UTF-8 (a lone surrogate at character {exc.start})", **where
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
