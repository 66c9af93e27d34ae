"""The request fields a request file or service body shares, and JSON ``options`` as a `CompactorConfig`.

Both are structured by `tracetrim._input_convert.input_converter`: a bad value is an `InputError`
naming its path (``options.keep_threshold``, ``eligible_tool_names[1]``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

import attrs

from tracetrim._input_convert import NonEmptyStr, register_object, structure_input
from tracetrim.compactor._config import CompactorConfig

NON_JSON_OPTIONS = frozenset({"eligible_tools", "token_counter"})
"""`CompactorConfig` fields an ``options`` object cannot set (the tools come from ``eligible_tool_names``)."""

OPTION_FIELDS = frozenset(a.name for a in attrs.fields(CompactorConfig)) - NON_JSON_OPTIONS
"""The `CompactorConfig` fields a JSON ``options`` object may set."""


@attrs.frozen(kw_only=True)
class RequestFields:
    """What a request file (``tracetrim compact``) or body (the service) may say beside its messages.

    JSON ``null`` stands for an absent field; ``options`` is structured straight into a
    `CompactorConfig` (without its eligible tools, which ``eligible_tool_names`` gives).
    """

    goal: str | None = None
    next_action: str | None = None
    eligible_tool_names: tuple[NonEmptyStr, ...] | None = None
    protected_message_ids: tuple[str, ...] | None = None
    protected_call_ids: tuple[str, ...] | None = None
    options: CompactorConfig | None = None


REQUEST_FIELDS = frozenset(a.name for a in attrs.fields(RequestFields))
"""The names of `RequestFields`: the keys a request file holds beside its messages."""


def request_keys(provider_fields: Collection[str] = ()) -> frozenset[str]:
    """The keys of a file that are tracetrim's request fields: `REQUEST_FIELDS` less the ones its format
    uses for itself (``provider_fields``: an Ollama body's ``options`` are the model's)."""
    return REQUEST_FIELDS - frozenset(provider_fields)


register_object(CompactorConfig, omit=NON_JSON_OPTIONS, noun="option", known=OPTION_FIELDS)


def config_from_options(
    options: Mapping[str, Any], eligible: Iterable[str], *, path: str = "options"
) -> CompactorConfig:
    """A `CompactorConfig` from JSON ``options`` (any field in `OPTION_FIELDS`) and the eligible tools.

    Raises `InputError` naming the first unknown or invalid option as ``<path>.<option>``.
    """
    config = structure_input(dict(options), CompactorConfig, path=path)
    return attrs.evolve(config, eligible_tools=eligible)
