"""JSON ``options`` (request files, service bodies) to a validated `CompactorConfig`, naming bad fields."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from tracetrim._errors import TracetrimError
from tracetrim.compactor._config import CompactorConfig, name_set

OPTION_FIELDS = frozenset(a.name for a in attrs.fields(CompactorConfig)) - {"eligible_tools", "token_counter"}
"""The `CompactorConfig` fields a JSON ``options`` object may set (everything but the two non-JSON ones)."""

REQUEST_FIELDS = frozenset(
    {"goal", "next_action", "eligible_tool_names", "protected_message_ids", "protected_call_ids", "options"}
)
"""What a request file (``tracetrim compact``) or body (the service) may say beside its ``messages``."""

_CONVERTERS: dict[str, object] = {a.name: a.converter for a in attrs.fields(CompactorConfig)}
_NAMED = re.compile(r"CompactorConfig\.(\w+)")


class OptionsError(TracetrimError, ValueError):
    """An ``options`` object that does not make a valid `CompactorConfig`; ``field`` names the option."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def config_from_options(options: Mapping[str, Any], eligible: Iterable[str]) -> CompactorConfig:
    """A `CompactorConfig` from JSON ``options`` (any field in `OPTION_FIELDS`) and the eligible tools.

    Raises `OptionsError` naming the first unknown or invalid option; used by ``tracetrim compact``
    (request files) and by the HTTP service (request bodies) alike.
    """
    unknown = sorted(set(options) - OPTION_FIELDS)
    if unknown:
        raise OptionsError(
            f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(OPTION_FIELDS))}", unknown[0]
        )
    for name, value in options.items():
        if _CONVERTERS[name] is name_set:  # converter errors do not name the field: add it
            try:
                name_set(value)
            except (TypeError, ValueError) as exc:
                raise OptionsError(f"CompactorConfig.{name}: {exc}", name) from None
    try:
        return CompactorConfig(eligible_tools=eligible, **options)
    except (TypeError, ValueError) as exc:
        named = _NAMED.search(str(exc))
        raise OptionsError(str(exc), named.group(1) if named else None) from None
