"""Converters between neutral messages and ATIF trajectories (Harbor's Agent Trajectory Interchange Format).

Shape, from the ``atif`` package on PyPI (its Pydantic models ``Trajectory``, ``Step``, ``ToolCall``,
``Observation``, ``ObservationResult``): ``{"schema_version": "ATIF-v1.x", "session_id", "agent",
"steps": [...], "final_metrics", ...}``; a step has ``step_id`` (1, 2, ... in order), ``source``
(system / user / agent), ``message`` (text or content parts), ``reasoning_content``, ``tool_calls``
(``tool_call_id``, ``function_name``, ``arguments``) and ``observation.results`` (``source_call_id``,
``content``). The trajectory's other fields ride in a carrier and come back unchanged, in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracetrim._snapshot import Block, Message
from tracetrim.formats import _common as common
from tracetrim.formats._carrier import carrier, document_fields, fill_document, split_carriers
from tracetrim.formats._layout import results_beside

FORMAT = "atif"
_ROLES = {"system": "system", "user": "user", "agent": "assistant"}
_BEFORE_STEPS = ("schema_version", "session_id", "trajectory_id", "agent")
_MAPPED = ("message", "reasoning_content", "tool_calls", "observation")


def is_atif_step(step: Any) -> bool:
    """Whether ``step`` has an ATIF step's shape (``step_id``, ``source``, ``message``)."""
    return (
        isinstance(step, dict)
        and "step_id" in step
        and common.tag(step.get("source")) in _ROLES
        and "message" in step
    )


def _blocks(step: dict[str, Any], i: int) -> list[Block]:
    blocks: list[Block] = []
    if isinstance(step.get("reasoning_content"), str):
        blocks.append({"type": "thinking", "thinking": step["reasoning_content"]})
    message = step.get("message")
    if isinstance(message, str):
        if message:
            blocks.append({"type": "text", "text": message})
    else:
        blocks.append(common.raw_block(FORMAT, common.copied(message)))
    calls = step.get("tool_calls")
    names: dict[str, str] = {}
    for j, call in enumerate(calls if isinstance(calls, list) else []):
        call = common.require_dict(call, "a tool call", message=i, block=j, field="tool_calls")
        call_id = common.require_str(call.get("tool_call_id"), "tool_call_id", message=i, field="tool_calls")
        name = common.require_str(call.get("function_name"), "function_name", message=i, field="tool_calls")
        names[call_id] = name
        arguments = common.dump_input(
            common.require_dict(
                call.get("arguments", {}), "arguments", message=i, block=j, field="tool_calls"
            )
        )
        blocks.append(
            {"type": "tool_call", "id": call_id, "name": name, "input": arguments, "state": "finished"}
        )
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    for result in results if isinstance(results, list) else []:
        source = result.get("source_call_id") if isinstance(result, dict) else None
        content = result.get("content") if isinstance(result, dict) else None
        if isinstance(source, str) and source in names and isinstance(content, str):
            call_id = source
            blocks.append(
                {
                    "type": "tool_result",
                    "id": call_id,
                    "name": names[call_id],
                    "output": content,
                    "state": "success",
                }
            )
        else:
            blocks.append(common.raw_block(FORMAT, common.copied(result)))
    return blocks


def from_atif(steps: Sequence[Any], fields: Mapping[str, Any] | None = None) -> list[Message]:
    """Convert an ATIF trajectory's ``steps`` (and its other ``fields``) to neutral messages.

    A step becomes one message: ``reasoning_content`` a thinking block, ``message`` a text block
    (content parts ride raw), each tool call a tool_call block and each result answering one a
    tool_result block in the same message; results of other actions ride raw. The step's other fields
    are kept in ``metadata["tracetrim.atif"]``.
    """
    common.require_sequence(steps, "steps", "step objects")
    seen: dict[str, int] = {}
    out: list[Message] = []
    if fields:
        out.append(carrier(FORMAT, document_fields(fields, "steps", _BEFORE_STEPS), seen))
    for i, step in enumerate(steps):
        step = common.require_dict(step, "a step", message=i)
        source = common.require_choice(step.get("source"), _ROLES, message=i, field="source")
        meta: dict[str, Any] = {"step": common.shape_of(step, *_MAPPED)}
        observation = step.get("observation")
        if isinstance(observation, dict):
            meta["observation"] = {k: v for k, v in common.copied(observation).items() if k != "results"}
            meta["results"] = common.copied(observation.get("results"))
        if isinstance(step.get("tool_calls"), list):
            meta["tool_calls"] = common.copied(step["tool_calls"])
        meta["message"] = common.copied(step.get("message"))
        blocks = _blocks(step, i)
        neutral = {"id": common.message_id("atif-", step, seen, i), "role": _ROLES[source], "content": blocks}
        out.append(common.attach_meta(neutral, FORMAT, meta))
    return common.mark_pending(out)


def _step(message: Message, i: int) -> dict[str, Any]:
    meta = common.format_meta(message, FORMAT)
    source = {"assistant": "agent"}.get(message["role"], message["role"])
    step = common.copied(meta.get("step") or {"step_id": 0, "source": source})
    texts = [b["text"] for b in message["content"] if b["type"] == "text"]
    original = meta.get("message")
    if isinstance(original, list):
        step["message"] = common.copied(original)
    elif texts == ([original] if original else []):
        step["message"] = original if original is not None else ""  # ATIF requires one
    else:
        step["message"] = "\n\n".join(texts)
    thinking = [b["thinking"] for b in message["content"] if b["type"] == "thinking"]
    if thinking:
        step["reasoning_content"] = "\n\n".join(thinking)
    calls_by_id = {
        common.tag(c.get("tool_call_id")): c
        for c in common.listed(meta.get("tool_calls"))
        if isinstance(c, dict)
    }
    results_by_id = {
        common.tag(r.get("source_call_id")): r
        for r in common.listed(meta.get("results"))
        if isinstance(r, dict)
    }
    calls: list[Any] = []
    results: list[Any] = []
    for j, block in enumerate(message["content"]):
        if block["type"] == "tool_call":
            call = common.copied(calls_by_id.get(block["id"], {}))
            call.update(
                {
                    "tool_call_id": block["id"],
                    "function_name": block["name"],
                    "arguments": common.parse_input(block, i, j),
                }
            )
            calls.append(_ordered(call, calls_by_id.get(block["id"])))
        elif block["type"] == "tool_result":
            text = common.output_text(block, "ATIF", i, j)
            result = common.copied(results_by_id.get(block["id"], {"source_call_id": block["id"]}))
            result["content"] = text
            results.append(result)
        elif common.is_raw(block, FORMAT) and isinstance(block["value"], dict):
            results.append(common.copied(block["value"]))
    if calls:
        step["tool_calls"] = calls
    if results or (meta.get("results") == [] and "observation" in meta):
        step["observation"] = {**common.copied(meta.get("observation") or {}), "results": results}
    return {
        k: v for k, v in step.items() if v is not None or (k in (meta.get("step") or {}) and k not in _MAPPED)
    }


def _ordered(value: dict[str, Any], like: Any) -> dict[str, Any]:
    if not isinstance(like, dict):
        return value
    out = {k: value[k] for k in like if k in value}
    out.update({k: v for k, v in value.items() if k not in out})
    return out


def to_atif(messages: Sequence[Any]) -> dict[str, Any]:
    """Convert neutral messages back to an ATIF trajectory's fields (the inverse of `from_atif`):
    ``{"messages": steps}`` with the carried trajectory fields in their places. Steps are numbered
    again from 1, since ATIF wants ``step_id`` in order and compaction may remove a step."""
    # an observation answers the calls of its own step
    documents, rest = split_carriers(results_beside(common.neutral_input(messages)), FORMAT)
    steps = [_step(m, i) for i, m in enumerate(rest)]
    for n, step in enumerate(steps, 1):
        step["step_id"] = n
    if documents:
        return fill_document(documents[0], steps)
    return {"messages": steps}
