"""The rules of today's agents' own files, checked the way each agent reads them back into a request.

OpenHands V0: how ``ConversationMemory`` builds the chat from an event history. OpenHands: the SDK's
view properties (``openhands/sdk/context/view/properties``: tool-call matching, observation
uniqueness, batch atomicity) and its ``events_to_messages`` projection, which asserts that only a
batch's first action has a thought, then the chat rules on what it sends. ATIF: the ``atif``
package's ``Trajectory`` model and its step rule (each result answers a call of its step). tau2-bench: the
agent's view of a simulation (the user simulator's own calls are not in it) under the chat rules.
Google ADK: the contents its request builder sends from a session's events, under Gemini's rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests._provider_rules import check_openai_chat

_OBSERVATIONS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")


def _texts(parts: Any) -> str:
    return "\n".join(p["text"] for p in parts or [] if p.get("type") == "text")


def openhands_messages(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What the SDK sends for ``events`` (its ``events_to_messages``), in chat-completions form."""
    messages: list[dict[str, Any]] = []
    i = 0
    while i < len(events):
        event = events[i]
        kind = event["kind"]
        if kind == "ActionEvent":
            batch = [event]
            while (
                i + len(batch) < len(events)
                and events[i + len(batch)]["kind"] == "ActionEvent"
                and events[i + len(batch)].get("llm_response_id") == event.get("llm_response_id")
            ):
                batch.append(events[i + len(batch)])
            for later in batch[1:]:
                assert not later["thought"], f"event {later['id']}: a thought on a batch's later action"
            calls = [
                {
                    "id": a["tool_call"]["id"],
                    "type": "function",
                    "function": {"name": a["tool_call"]["name"], "arguments": a["tool_call"]["arguments"]},
                }
                for a in batch
            ]
            messages.append({"role": "assistant", "content": _texts(event["thought"]), "tool_calls": calls})
            i += len(batch)
            continue
        if kind in _OBSERVATIONS:
            field = {"ObservationEvent": "observation", "AgentErrorEvent": "error"}.get(
                kind, "rejection_reason"
            )
            value = event[field]
            text = _texts(value["content"]) if isinstance(value, dict) else value
            messages.append({"role": "tool", "tool_call_id": event["tool_call_id"], "content": text})
        elif kind == "MessageEvent":
            role = event["llm_message"]["role"]
            text = _texts(event["llm_message"]["content"])
            if role == "user" and messages and messages[-1]["role"] == "user":
                messages[-1]["content"] += "\n" + text
            else:
                messages.append({"role": role, "content": text})
        elif kind == "SystemPromptEvent":
            messages.append({"role": "system", "content": event["system_prompt"]["text"]})
        i += 1
    return messages


def check_openhands(events: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]) -> None:
    """Every action observed once, after it and by its id; the SDK's projection valid for chat; and a
    batch that keeps any action keeps the thinking its response began with on its first action."""
    actions: dict[str, Mapping[str, Any]] = {}
    observed: set[str] = set()
    for event in events:
        if event["kind"] == "ActionEvent":
            actions[event["tool_call_id"]] = event
        elif event["kind"] in _OBSERVATIONS:
            call = event["tool_call_id"]
            assert call in actions, f"event {event['id']}: observes {call!r}, no action before it"
            assert call not in observed, f"event {event['id']}: a second observation of {call!r}"
            if "action_id" in event:
                assert event["action_id"] == actions[call]["id"], f"event {event['id']}: wrong action_id"
            observed.add(call)
    assert observed == set(actions), f"actions {sorted(set(actions) - observed)} have no observation"
    check_openai_chat(openhands_messages(events))
    began = {
        e["llm_response_id"]: e["thinking_blocks"]
        for e in sent
        if e["kind"] == "ActionEvent" and e["thinking_blocks"]
    }
    firsts: dict[str, Mapping[str, Any]] = {}
    for event in events:
        if event["kind"] == "ActionEvent":
            firsts.setdefault(event["llm_response_id"], event)
    for batch, first in firsts.items():
        if batch in began:
            assert first["thinking_blocks"] == began[batch], f"{batch}: its thinking left the response"


_V0_TEXT = ("finish", "message", "system", "recall", "condensation", "condensation_request")


def _v0_view(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events a V0 agent reads (its ``View``): none a ``condensation`` forgot, nor the condensation."""
    forgotten: set[int] = set()
    for event in events:
        if event.get("action") == "condensation":
            args = event["args"]
            forgotten.update(args.get("forgotten_event_ids") or [])
            if args.get("forgotten_events_start_id") is not None:
                forgotten.update(
                    range(args["forgotten_events_start_id"], args["forgotten_events_end_id"] + 1)
                )
    return [e for e in events if e.get("id") not in forgotten and e.get("action") != "condensation"]


def _v0_finish(event: Mapping[str, Any]) -> str:
    """What V0 sends for a ``finish`` action: its thought, then what its response said."""
    thought = event["args"].get("thought") or ""
    metadata = event.get("tool_call_metadata")
    said = (metadata["model_response"]["choices"][0]["message"].get("content") or "") if metadata else ""
    return f"{thought}\n{said}" if thought and said and thought != said else thought or said


def openhands_v0_messages(events: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
    """What openhands-ai 0.62's ``ConversationMemory.process_events`` sends for ``events``, in
    chat-completions form, and the calls it holds back: a tool action stands for its
    ``model_response``'s assistant message, sent with the observations of every call that message
    lists once all of them are in (checked after each event), never before. (openhands-ai needs Python
    3.12 and its whole dependency tree, so this follows its source; its checks on the fixture and on
    compacted copies of it agreed with this one.)"""
    messages: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    answers: dict[str, dict[str, Any]] = {}
    for event in _v0_view(events):
        add: list[dict[str, Any]] = []
        metadata = event.get("tool_call_metadata")
        if "action" in event and event["action"] not in _V0_TEXT and metadata is not None:
            response = metadata["model_response"]
            said = response["choices"][0]["message"]
            pending[response["id"]] = {
                "role": "assistant",
                "content": said.get("content") or "",
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": c["function"]} for c in said["tool_calls"]
                ],
            }
        elif "action" in event:
            args = event["args"]
            role = {"system": "system", "message": "user" if event["source"] == "user" else "assistant"}
            text = args.get("content") if event["action"] in role else _v0_finish(event)
            add.append({"role": role.get(event["action"], "assistant"), "content": text or ""})
        elif metadata is not None:
            call = metadata["tool_call_id"]
            answers[call] = {"role": "tool", "tool_call_id": call, "content": event["content"]}
        else:
            add.append({"role": "user", "content": event["content"]})
        for rid, message in list(pending.items()):
            if all(c["id"] in answers for c in message["tool_calls"]):
                add.append(message)
                add.extend(answers.pop(c["id"]) for c in message["tool_calls"])
                del pending[rid]
        messages += add
    held = {c["id"] for m in pending.values() for c in m["tool_calls"]}
    return messages, held


def check_openhands_v0(events: Sequence[Mapping[str, Any]]) -> None:
    """Every observed call is sent (none held back by a response that lists a call with no
    observation), each observation answers a call made before it, and what is sent keeps the chat
    rules (every assistant call answered next, by id)."""
    messages, held = openhands_v0_messages(events)
    observed = {
        e["tool_call_metadata"]["tool_call_id"]
        for e in _v0_view(events)
        if "observation" in e and e.get("tool_call_metadata")
    }
    sent = {c["id"] for m in messages for c in m.get("tool_calls", [])}
    assert not observed & held, f"calls {sorted(observed & held)} are observed but never sent"
    assert observed <= sent | held, f"observations of {sorted(observed - sent - held)} answer no call"
    check_openai_chat(messages)


def check_atif(trajectory: Mapping[str, Any], sent: Mapping[str, Any]) -> None:
    """The ``atif`` models accept it, and every call that was answered when sent is answered still."""
    import atif

    atif.Trajectory.model_validate(trajectory)
    answered = {
        r["source_call_id"] for s in sent["steps"] for r in (s.get("observation") or {}).get("results", [])
    }
    for step in trajectory["steps"]:
        results = {r.get("source_call_id") for r in (step.get("observation") or {}).get("results", [])}
        for call in step.get("tool_calls") or []:
            if call["tool_call_id"] in answered:
                assert call["tool_call_id"] in results, (
                    f"step {step['step_id']}: {call['tool_call_id']} lost its result"
                )


def _tau2_side(messages: Sequence[Mapping[str, Any]], requestor: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        tools = message.get("tool_messages") or ([message] if message["role"] == "tool" else [])
        if tools:
            out += [
                {"role": "tool", "tool_call_id": t["id"], "content": t["content"] or ""}
                for t in tools
                if t.get("requestor", "assistant") == requestor
            ]
            continue
        calls = message.get("tool_calls") or []
        if message["role"] == requestor and calls:
            out.append(
                {
                    "role": "assistant",
                    "content": message.get("content"),
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": "{}"},
                        }
                        for c in calls
                    ],
                }
            )
        elif message["role"] in ("user", "assistant") and not calls and message.get("content") is not None:
            out.append(
                {
                    "role": "user" if message["role"] != requestor else "assistant",
                    "content": message["content"],
                }
            )
    return out


def check_tau2(messages: Sequence[Mapping[str, Any]]) -> None:
    """The agent's view (and the user simulator's) of a simulation keep the chat rules."""
    check_openai_chat(_tau2_side(messages, "assistant"))
    check_openai_chat(_tau2_side(messages, "user"))


def adk_contents(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What ADK sends for a session's events: each turn's content in order (its request builder skips
    events without one), after the last compaction."""
    start = max(
        (i + 1 for i, e in enumerate(events) if (e.get("actions") or {}).get("compaction") is not None),
        default=0,
    )
    return [dict(e["content"]) for e in events[start:] if e.get("content") and e["content"].get("parts")]


def check_adk(session: Mapping[str, Any], sent: Mapping[str, Any]) -> None:
    """An ADK session: each event is an ADK event (its own ``id`` and ``invocationId``, ids unique),
    the events without a turn are where they were, and the contents ADK sends from it keep Gemini's
    rules (`check_gemini`: model turns never side by side, each call answered in the next turn, by
    ADK's ids). ADK itself sends a call's response and a user's next message as two user contents, so
    user contents side by side are joined first: that much is ADK's, not the history's."""
    from tests._provider_rules import check_gemini

    events = session["events"]
    ids = [e["id"] for e in events]
    assert len(ids) == len(set(ids)), "an event id twice"
    assert all(isinstance(e.get("invocationId", e.get("invocation_id")), str) for e in events)
    quiet = [e for e in sent["events"] if not (e.get("content") or {}).get("parts")]
    assert [e for e in events if not (e.get("content") or {}).get("parts")] == quiet, "an event moved"

    def joined(contents: list[dict[str, Any]]) -> dict[str, Any]:
        out: list[dict[str, Any]] = []
        for content in contents:
            if out and content.get("role") == out[-1].get("role") == "user":
                out[-1] = {**out[-1], "parts": [*out[-1]["parts"], *content["parts"]]}
            else:
                out.append(content)
        return {"contents": out}

    check_gemini(joined(adk_contents(events)), joined(adk_contents(sent["events"])))
