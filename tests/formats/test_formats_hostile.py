"""Any JSON at all, in any format's place: telling the format, reading and writing back either work or
raise tracetrim's own error naming the place, never a ``TypeError`` or ``KeyError`` from inside a reader.

The values are drawn from the keys and tags the formats look at (``role``, ``type``, ``parts``,
``toolUse``, ...), with lists, objects and other types wherever a string is expected."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracetrim._errors import TracetrimError
from tracetrim._snapshot import validate_messages
from tracetrim.formats import HISTORY_FORMATS, detect_format

_KEYS = st.sampled_from(
    "role content parts type text id name args input output result functionCall functionResponse response "
    "toolUse toolResult toolUseId tool_use_id tool_calls tool_call_id function arguments messages contents "
    "toolCalls status thought thoughtSignature cachePoint reasoningContent reasoningText signature system "
    "systemInstruction call_id summary kind source payload uuid history traj steps observation action json "
    "data message model step_id llm_message tool_name".split()
)
_TAGS = st.sampled_from(
    "user model assistant tool system gemini info function_call function_call_output message reasoning "
    "tool_use tool_result text success error cancelled ActionEvent ObservationEvent MessageEvent "
    "response_item agent t1".split()
)
_SCALARS = (
    st.none() | st.booleans() | st.integers(-2, 2) | _TAGS | st.text(max_size=3) | st.just([]) | st.just({})
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=40,
)
_ENTRY = st.dictionaries(_KEYS, _JSON, max_size=6)
# what a file holds: a list of entries, or an object holding one under a format's key
_FILE = st.lists(_ENTRY, max_size=5) | st.builds(
    lambda key, entries, rest: {**rest, key: entries},
    st.sampled_from(["messages", "contents", "history", "steps", "traj", "input"]),
    st.lists(_ENTRY, max_size=5),
    st.dictionaries(_KEYS, _JSON, max_size=3),
)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=_FILE | _JSON, name=st.sampled_from(sorted(HISTORY_FORMATS)))
def test_any_json_reads_or_is_refused_by_name(value: Any, name: str) -> None:
    fmt = HISTORY_FORMATS[name]
    if isinstance(value, dict):
        messages: Any = value.get(fmt.messages_key)
        fields = {k: v for k, v in value.items() if k != fmt.messages_key}
    else:
        messages, fields = value, {}
    with contextlib.suppress(TracetrimError):
        detect_format(value)
    with contextlib.suppress(TracetrimError):
        fmt.write(validate_messages(fmt.read(messages, fields)))
