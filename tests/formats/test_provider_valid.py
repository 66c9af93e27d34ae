"""What goes back is valid for the provider: provider-valid histories in every format, compacted in ENFORCE
with every mix of actions, tombstones on and off, written back and checked by the provider's own rules."""

from __future__ import annotations

import copy
import itertools
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given

from tests import _provider_histories as histories
from tests import _provider_rules as rules
from tests._compact_plans import SETTINGS, compact, plans, write_back, written_with
from tracetrim._marker import is_tombstone
from tracetrim.formats import HISTORY_FORMATS, detect_format, from_langchain, to_langchain
from tracetrim.harness_adapter._turns import join_bared_turns


def _extras_keep_their_blocks(sent: dict[str, Any], written: dict[str, Any]) -> None:
    """Every ``cache_control`` sits on the block it was sent on (by what the block is, not where)."""

    def marked(body: dict[str, Any]) -> set[str]:
        out: set[str] = set()
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else ():
                if "cache_control" in block:
                    ident = block.get("id") or block.get("tool_use_id") or block.get("text")
                    out.add(f"{block['type']}:{ident}")
        return out

    assert marked(written) <= marked(sent), "a cache_control breakpoint moved onto another block"


@SETTINGS
@given(body=histories.anthropic_requests(), plan=plans)
def test_anthropic_requests_stay_valid(body: dict[str, Any], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(body)
    written = write_back("anthropic", body, plan)
    assert body == sent, "the caller's request was mutated"
    rules.check_anthropic(written)
    _extras_keep_their_blocks(sent, written)
    rules.check_calls_as_sent("anthropic", written, sent)
    assert [k for k in written if k != "system"] == [k for k in sent if k != "system"] or set(written) >= set(
        sent
    )
    assert {k: written[k] for k in ("model", "max_tokens", "tools")} == {
        k: sent[k] for k in ("model", "max_tokens", "tools")
    }
    assert detect_format(written) == "anthropic"


@SETTINGS
@given(messages=histories.openai_chat_histories(), plan=plans)
def test_openai_chat_histories_stay_valid(messages: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    written = write_back("openai", {"messages": messages}, plan)["messages"]
    rules.check_openai_chat(written)
    rules.check_calls_as_sent("openai", written, messages)
    # chat templates of OpenAI-compatible servers want user and assistant turns to alternate: a turn a
    # drop left ending in its tombstone joins the assistant turn after it
    for a, b in itertools.pairwise(written):
        content = a.get("content")
        last = content[-1].get("text", "") if isinstance(content, list) and content else str(content)
        bared = "tool_calls" not in a and last.split("\n\n")[-1].startswith("[tracetrim: dropped")
        assert not (bared and a["role"] == b["role"] == "assistant"), "a dropped call's turn beside the next"
    assert detect_format(written) == "openai"


@SETTINGS
@given(items=histories.responses_inputs(), plan=plans)
def test_responses_inputs_stay_valid(items: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    written = write_back("responses", {"messages": items}, plan)["messages"]
    rules.check_responses(written, items)
    rules.check_calls_as_sent("responses", written, items)
    assert detect_format(written) == "responses"


@SETTINGS
@given(messages=histories.langchain_histories(), plan=plans)
def test_langchain_messages_stay_valid_for_both_providers(messages: list[Any], plan: dict[str, Any]) -> None:
    rules.check_langchain_for_anthropic(messages)  # the generator's own histories are valid
    written = to_langchain(compact(from_langchain(messages), plan))
    rules.check_langchain_for_anthropic(written)
    rules.check_langchain_for_openai(written)


@SETTINGS
@given(messages=histories.langchain_histories(), plan=plans)
def test_langchain_turns_the_adapters_join_keep_each_blocks_own_fields(
    messages: list[Any], plan: dict[str, Any]
) -> None:
    """The adapters join a turn a drop left without its calls to the next assistant turn
    (`join_bared_turns`); the blocks moved into it keep their own fields, so a ``cache_control``
    breakpoint neither goes nor moves onto another block."""
    before = from_langchain(messages)
    written = to_langchain(join_bared_turns(before, compact(before, plan)))
    rules.check_langchain_for_anthropic(written)
    rules.check_langchain_for_openai(written)

    def text_parts(history: list[Any]) -> Counter[str]:
        """Each text part of the model's turns (a string content is one) and its fields."""
        return Counter(
            json.dumps(part, sort_keys=True)
            for message in history
            if message.type == "ai"
            for part in (
                message.content
                if isinstance(message.content, list)
                else [{"type": "text", "text": message.content}]
            )
            if isinstance(part, dict)
            and part.get("type") == "text"
            and part["text"]
            and not is_tombstone(part)
        )

    assert not text_parts(written) - text_parts(messages), "a text block lost or gained a field"


@SETTINGS
@given(messages=histories.langchain_histories(), plan=plans)
def test_langchain_json_files_join_a_turn_a_drop_left_without_its_calls(
    messages: list[Any], plan: dict[str, Any]
) -> None:
    """Written back as a file, LangChain messages keep both providers' rules, and no two ``AIMessage``s
    stand side by side that were not sent so (Gemini's LangChain mapping refuses them)."""
    from langchain_core.messages import messages_from_dict, messages_to_dict

    sent = messages_to_dict(messages)
    dumped = write_back("langchain", {"messages": sent}, plan)["messages"]
    written = messages_from_dict(dumped)
    rules.check_langchain_for_anthropic(written)
    rules.check_langchain_for_openai(written)
    rules.check_calls_as_sent("langchain", dumped, sent)
    side_by_side = {(a.id, b.id) for a, b in itertools.pairwise(messages) if a.type == b.type == "ai"}
    for a, b in itertools.pairwise(written):
        assert not (a.type == b.type == "ai") or (a.id, b.id) in side_by_side, (
            f"{a.id} and {b.id} side by side"
        )


@SETTINGS
@given(traj=histories.swe_agent_trajectories(), plan=plans)
def test_swe_agent_actions_keep_an_observation(traj: dict[str, Any], plan: dict[str, Any]) -> None:
    written = write_back("swe-agent", traj, plan)
    rules.check_swe_agent(written["history"])
    assert [m for m in written["history"] if m["role"] == "assistant"] == [
        m for m in traj["history"] if m["role"] == "assistant"
    ], "an assistant turn (its action) changed"
    assert detect_format(written) == "swe-agent"


@SETTINGS
@given(traj=histories.mini_swe_agent_trajectories(), plan=plans)
def test_mini_swe_agent_commands_keep_an_output(traj: dict[str, Any], plan: dict[str, Any]) -> None:
    written = write_back("mini-swe-agent", traj, plan)
    rules.check_mini_swe_agent(written["messages"])
    assert [m for m in written["messages"] if m["role"] == "assistant"] == [
        m for m in traj["messages"] if m["role"] == "assistant"
    ]
    assert detect_format(written) == "mini-swe-agent"


def test_the_rules_catch_what_providers_refuse() -> None:
    """The checks above can fail: each provider's refusal, written by hand, is caught."""
    orphan_use = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
            {"role": "user", "content": "and?"},
        ],
    }
    with pytest.raises(AssertionError, match="without a tool_result"):
        rules.check_anthropic(orphan_use)
    with pytest.raises(AssertionError, match="not answered"):
        rules.check_openai_chat(
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
                    ],
                },
                {"role": "assistant", "content": "tombstone"},
                {"role": "tool", "tool_call_id": "c1", "content": "out"},
            ]
        )
    reasoning = [
        {"type": "message", "role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "x", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "o"},
    ]
    with pytest.raises(AssertionError, match="required following item"):
        rules.check_responses([reasoning[0], reasoning[1]], reasoning)
    turn = [  # one response: reasoning, then two calls (OpenAI knows them by their ids)
        {"type": "message", "role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "x", "arguments": "{}"},
        {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "x", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "o"},
        {"type": "function_call_output", "call_id": "c2", "output": "o"},
    ]
    with pytest.raises(AssertionError, match="without its required 'reasoning' item 'rs_1'"):
        rules.check_responses([turn[0], turn[3], turn[5]], turn)
    moved = copy.deepcopy(reasoning)
    moved[2]["id"] = "fc_of_another_call"  # a field taken from another call
    with pytest.raises(AssertionError, match="not as they were sent"):
        rules.check_calls_as_sent("responses", moved, reasoning)
    with pytest.raises(AssertionError, match="has no observation"):
        rules.check_swe_agent(
            [
                {"role": "assistant", "content": "ls", "action": "ls"},
                {"role": "assistant", "content": "cat x", "action": "cat x"},
            ]
        )


@pytest.mark.parametrize("both", [False, True], ids=["first", "both"])
def test_a_call_its_reasoning_led_to_among_others_keeps_its_place(both: bool) -> None:
    """The field's report ("Item 'fc_...' of type 'function_call' was provided without its required
    'reasoning' item"): reasoning that led to two calls went with the first, leaving the second without
    it. A drop of the first alone now leaves it with a stub result; a drop of both takes the reasoning."""
    items = [
        {"type": "message", "role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ZW5j"},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "read_file", "arguments": "{}"},
        {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "read_file", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a\n" * 400},
        {"type": "function_call_output", "call_id": "c2", "output": "b\n" * 400},
        {"type": "message", "role": "assistant", "content": "both read"},
        {"type": "message", "role": "user", "content": "thanks"},
    ]
    # the scripted judge takes the actions by pair key: t1 (c1) the second, t2 (c2) the first
    plan = {"actions": ["drop_call" if both else "keep", "drop_call"], "tombstones": False, "recent": 2}
    written = write_back("responses", {"messages": items}, plan)["messages"]
    kinds = {(i.get("type"), i.get("id") or i.get("call_id")) for i in written}
    turn = {("reasoning", "rs_1"), ("function_call", "fc_1"), ("function_call", "fc_2")}
    assert (turn & kinds == set()) if both else (turn <= kinds)
    outputs = [i["output"] for i in written if i.get("type") == "function_call_output"]
    assert outputs == [] if both else ("recall it by call id" in outputs[0] and outputs[1] == "b\n" * 400)
    rules.check_responses(written, items)


def test_a_breakpoint_goes_with_its_dropped_block() -> None:
    """The field's report: after a drop, ``cache_control`` moved onto the next block by position."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 512,
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "A", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "B", "name": "read_file", "input": {"path": "b"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "A",
                        "content": "a\n" * 400,
                        "cache_control": {"type": "ephemeral"},
                    },
                    {"type": "tool_result", "tool_use_id": "B", "content": "b\n" * 400},
                ],
            },
            {"role": "assistant", "content": "both read"},
            {"role": "user", "content": "thanks"},
        ],
    }
    written = write_back(
        "anthropic", body, {"actions": ["keep", "drop_call"], "tombstones": False, "recent": 2}
    )
    results = written["messages"][2]["content"]
    assert [r["tool_use_id"] for r in results] == ["B"], "the plan was meant to drop A alone"
    assert "cache_control" not in results[0]
    rules.check_anthropic(written)


def test_a_dropped_command_keeps_its_turn_and_a_stub_that_recalls() -> None:
    """mini-swe-agent's command is in the agent's prose: a drop leaves the call and a short stub that
    names the call id; the stub reads back as already shortened and rehydrates to the original."""
    from tracetrim._marker import keeps_its_place, parse_shortened_note
    from tracetrim.archive import rehydrate
    from tracetrim.harness_adapter import restore_markers

    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>fix the parser</pr_description>"},
        {"role": "assistant", "content": "THOUGHT: look.\n\n```bash\ncat src/parser.py\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n" + "x = 1\n" * 300 + "</output>"},
        {"role": "assistant", "content": "THOUGHT: run.\n\n```bash\npytest -q\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n1 passed\n</output>"},
    ]
    neutral = HISTORY_FORMATS["mini-swe-agent"].read(messages)
    assert keeps_its_place(neutral[2]["content"][1])
    compacted = compact(neutral, {"actions": ["keep", "drop_call"], "tombstones": True, "recent": 2})
    written = HISTORY_FORMATS["mini-swe-agent"].write(compacted)["messages"]
    assert written[2] == messages[2], "the agent's own turn must not change"
    note = parse_shortened_note(written[3]["content"])
    assert note is not None and note.call_id == "mswe-2" and len(written[3]["content"]) < 120
    # read back, the mark is re-derived from the stub's text as for any format without block metadata
    again = restore_markers(HISTORY_FORMATS["mini-swe-agent"].read(written))
    assert rehydrate(again, neutral) == neutral


def _claude_code_session(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Claude Code session JSONL (entries chained by ``parentUuid``) holding ``body``'s turns."""
    entries: list[dict[str, Any]] = [{"type": "summary", "summary": "a session", "leafUuid": "u-0"}]
    parent = None
    for n, message in enumerate(body["messages"]):
        uuid = f"u-{n}"
        entry: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": "s-1",
            "type": message["role"],
            "message": dict(message),
            "uuid": uuid,
            "timestamp": f"2025-10-02T09:{n:02d}:00.000Z",
        }
        entries.append(entry)
        parent = uuid
    return entries


@SETTINGS
@given(body=histories.anthropic_requests(), plan=plans)
def test_claude_code_sessions_stay_valid(body: dict[str, Any], plan: dict[str, Any]) -> None:
    """What Claude Code sends from a session is its entries' messages: they keep Anthropic's rules."""
    entries = _claude_code_session(body)
    shape = HISTORY_FORMATS["claude-code"]
    written = shape.write(compact(shape.read(entries, {}), plan))["messages"]
    sent = [e["message"] for e in written if e.get("type") in ("user", "assistant")]
    rules.check_anthropic({"model": body["model"], "max_tokens": body["max_tokens"], "messages": sent})
    rules.check_calls_as_sent("anthropic", sent, body)
    assert detect_format(written) == "claude-code"


@SETTINGS
@given(items=histories.responses_inputs(), plan=plans)
def test_codex_rollouts_stay_valid(items: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    """What Codex sends from a rollout is its ``response_item`` payloads: they keep the Responses rules."""
    lines = [{"timestamp": "2025-10-02T10:00:00.000Z", "type": "session_meta", "payload": {"id": "s"}}]
    lines += [{"timestamp": "2025-10-02T10:01:00.000Z", "type": "response_item", "payload": i} for i in items]
    shape = HISTORY_FORMATS["codex"]
    written = shape.write(compact(shape.read(lines, {}), plan))["messages"]
    payloads = [line["payload"] for line in written if line["type"] == "response_item"]
    rules.check_responses(payloads, items)
    rules.check_calls_as_sent("responses", payloads, items)
    assert detect_format(written) == "codex"


@SETTINGS
@given(body=histories.gemini_requests(), plan=plans)
def test_gemini_requests_stay_valid(body: dict[str, Any], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(body)
    rules.check_gemini(body, sent)  # the generator's own requests are valid
    written = write_back("gemini", body, plan)
    assert body == sent, "the caller's request was mutated"
    rules.check_gemini(written, sent)
    assert list(written) == list(sent)
    rules.check_calls_as_sent("gemini", written, sent)
    assert {k: written[k] for k in sent if k != "contents"} == {k: sent[k] for k in sent if k != "contents"}
    assert detect_format(written) == "gemini"


@SETTINGS
@given(body=histories.bedrock_requests(), plan=plans)
def test_bedrock_requests_stay_valid(body: dict[str, Any], plan: dict[str, Any]) -> None:
    body = {"modelId": "anthropic.claude-sonnet-4", **body, "inferenceConfig": {"maxTokens": 512}}
    sent = copy.deepcopy(body)
    written = write_back("bedrock", body, plan)
    assert body == sent, "the caller's request was mutated"
    rules.check_bedrock(written["messages"], sent["messages"])
    rules.check_calls_as_sent("bedrock", written, sent)
    assert list(written) == list(sent)
    assert {k: written[k] for k in sent if k != "messages"} == {k: sent[k] for k in sent if k != "messages"}
    assert detect_format(written) == "bedrock"


@SETTINGS
@given(session=histories.gemini_cli_sessions(), plan=plans)
def test_gemini_cli_sessions_stay_valid(session: dict[str, Any], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(session)
    rules.check_gemini_cli(session["messages"], sent["messages"])  # the generator's own sessions are valid
    written = write_back("gemini-cli", session, plan)
    assert session == sent, "the caller's session was mutated"
    rules.check_gemini_cli(written["messages"], sent["messages"])
    rules.check_calls_as_sent("gemini-cli", written, sent)
    assert {k: v for k, v in written.items() if k != "messages"} == {
        k: v for k, v in sent.items() if k != "messages"
    }
    assert detect_format(written) == "gemini-cli"


@SETTINGS
@given(lines=histories.pi_sessions(), plan=plans)
def test_pi_sessions_stay_valid(lines: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    """What pi sends from a compacted session: every call answered, no two assistant turns in a row,
    every call as sent; every entry it does not send is where it was (a label only while its entry is),
    every parent an entry still there."""
    sent = copy.deepcopy(lines)
    rules.check_pi(rules.pi_resumed(sent), rules.pi_resumed(sent))  # the generator's own sessions are valid
    written = written_with("pi", lines, plan)
    assert lines == sent, "the caller's session was mutated"
    rules.check_pi(rules.pi_resumed(written), rules.pi_resumed(sent))
    ids = [e["id"] for e in written]
    # A label goes with the entry it names, as pi's own branching has it.
    others = [
        {k: v for k, v in e.items() if k != "parentId"}
        for e in sent
        if e["type"] != "message" and (e["type"] != "label" or e["targetId"] in ids)
    ]
    assert [
        {k: v for k, v in e.items() if k != "parentId"} for e in written if e["type"] != "message"
    ] == others
    assert all(e.get("parentId") is None or e["parentId"] in ids[:n] for n, e in enumerate(written))
    assert detect_format(written) == "pi"


@pytest.mark.parametrize("tombstones", [False, True])
def test_pi_thinking_goes_with_the_call_it_led_to(tombstones: bool) -> None:
    """A pi turn of thinking and a call whose call went: pi-ai would send the thinking's signature as a
    reasoning item with nothing after it (OpenAI: "without its required following item"), so it goes
    with the call, and the turn with it when nothing else was left."""
    from pathlib import Path

    from tracetrim.formats import parse_history_text

    fixture = Path(__file__).parents[1] / "data" / "agents" / "pi_session.jsonl"
    lines = parse_history_text(fixture.read_text(encoding="utf-8"))
    for entry in lines:  # the fixture's turn of thinking, text and a call, as thinking and a call
        message = entry.get("message") if entry.get("type") == "message" else None
        content = message["content"] if message and message["role"] == "assistant" else None
        if isinstance(content, list) and any(p["type"] == "toolCall" for p in content):
            message["content"] = [p for p in content if p["type"] != "text"]
    sent = rules.pi_resumed(lines)
    parts = [p["type"] for m in sent if m["role"] == "assistant" for p in m["content"]]
    assert parts.count("thinking") == 1 and parts[parts.index("thinking") + 1] == "toolCall"
    written = written_with("pi", lines, {"actions": ["drop_call"], "tombstones": tombstones, "recent": 1})
    resumed = rules.pi_resumed(written)
    rules.check_pi(resumed, sent)
    parts = [p["type"] for m in resumed if m["role"] == "assistant" for p in m["content"]]
    assert "toolCall" not in parts and "thinking" not in parts


@SETTINGS
@given(records=histories.qwen_code_sessions(), plan=plans)
def test_qwen_code_sessions_stay_valid(records: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    """What Qwen Code sends from a compacted session keeps Gemini's rules (its records hold Gemini
    contents), every record it does not send is where it was, and every parent is a record still there."""
    sent = copy.deepcopy(records)
    resumed = rules.qwen_code_resumed(sent)
    rules.check_gemini(resumed, resumed)  # the generator's own sessions are valid
    written = written_with("qwen-code", records, plan)
    assert records == sent, "the caller's session was mutated"
    rules.check_gemini(rules.qwen_code_resumed(written), resumed)
    rules.check_calls_as_sent("qwen-code", written, sent)
    unsent = [{k: v for k, v in r.items() if k != "parentUuid"} for r in sent if r["type"] == "system"]
    assert [
        {k: v for k, v in r.items() if k != "parentUuid"} for r in written if r["type"] == "system"
    ] == unsent
    uuids = [r["uuid"] for r in written]
    assert all(r["parentUuid"] is None or r["parentUuid"] in uuids[:n] for n, r in enumerate(written))
    assert detect_format(written) == "qwen-code"


@SETTINGS
@given(messages=histories.ai_sdk_messages(), plan=plans)
def test_ai_sdk_messages_stay_valid(messages: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(messages)
    rules.check_ai_sdk(messages, sent)  # the generator's own messages are valid
    written = write_back("ai-sdk", {"messages": messages}, plan)["messages"]
    assert messages == sent, "the caller's messages were mutated"
    rules.check_ai_sdk(written, sent)
    rules.check_calls_as_sent("ai-sdk", written, sent)
    assert detect_format(written) == "ai-sdk" or not any(m["role"] == "tool" for m in written)


@SETTINGS
@given(body=histories.ollama_requests(), plan=plans)
def test_ollama_requests_stay_valid(body: dict[str, Any], plan: dict[str, Any]) -> None:
    sent = copy.deepcopy(body)
    rules.check_ollama(body["messages"])  # the generator's own requests are valid
    written = write_back("ollama", body, plan)
    assert body == sent, "the caller's request was mutated"
    rules.check_ollama(written["messages"])
    assert list(written) == list(sent)
    assert {k: written[k] for k in sent if k != "messages"} == {k: sent[k] for k in sent if k != "messages"}
    assert detect_format(written) == "ollama" or not any(m.get("tool_calls") for m in written["messages"])
    # no id tracetrim invented to pair the calls is written, and every call stays as Ollama had it
    rules.check_calls_as_sent("ollama", written, sent)


@SETTINGS
@given(messages=histories.pydantic_ai_messages(), plan=plans)
def test_pydantic_ai_histories_stay_valid(messages: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    rules.check_pydantic_ai(messages)  # the generator's own histories are valid
    sent = copy.deepcopy(messages)
    written = write_back("pydantic-ai", {"messages": messages}, plan)["messages"]
    assert messages == sent, "the caller's messages were mutated"
    rules.check_pydantic_ai(written)
    assert detect_format(written) == "pydantic-ai"
    rules.check_calls_as_sent("pydantic-ai", written, sent)  # its own fields, no other call's


@SETTINGS
@given(messages=histories.inspect_messages(), plan=plans)
def test_inspect_samples_stay_valid(messages: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    rules.check_inspect(messages, messages)  # the generator's own samples are valid
    sample = {"id": "task-1", "epoch": 1, "input": "fix it", "target": "", "messages": messages}
    sent = copy.deepcopy(sample)
    written = write_back("inspect", sample, plan)
    assert sample == sent, "the caller's sample was mutated"
    rules.check_inspect(written["messages"], messages)
    rules.check_calls_as_sent("inspect", written, sent)
    assert detect_format(written) == "inspect"
    before = {m["id"]: m for m in messages}  # a message keeps its id only when it is as it was sent
    assert all(before.get(m["id"], m) == m for m in written["messages"])


def _roo_texts(messages: list[dict[str, Any]], role: str) -> Counter[str]:
    """The texts the turns of ``role`` say (tombstones aside)."""
    texts: Counter[str] = Counter()
    for message in messages:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if message.get("role") == role:
            texts.update(
                p["text"] for p in parts if p.get("type") == "text" and "[tracetrim:" not in p["text"]
            )
    return texts


@SETTINGS
@given(history=histories.roo_code_histories(), plan=plans)
def test_roo_code_histories_stay_valid(history: dict[str, Any], plan: dict[str, Any]) -> None:
    """What Roo Code sends from a compacted task history keeps its providers' rules, and every message
    its own condensing or truncation replaced is written back as it was, where it was."""
    sent = copy.deepcopy(history)
    before = rules.roo_code_sent(history["messages"])
    rules.check_roo_code(before, before)  # the generator's own histories are valid
    written = write_back("roo-code", history, plan)
    assert history == sent, "the caller's history was mutated"
    assert [k for k in written] == [k for k in sent]
    after = rules.roo_code_sent(written["messages"])
    rules.check_roo_code(after, before)
    for role in ("user", "assistant"):  # a turn's words stay in a turn of its role
        assert _roo_texts(after, role) <= _roo_texts(before, role), f"a text moved into an {role} turn"
    fmt = "ai-sdk" if "version" in history else "anthropic"
    rules.check_calls_as_sent(fmt, written["messages"], sent["messages"])

    def unsent(items: list[dict[str, Any]]) -> list[Any]:
        return [m for m in items if "condenseParent" in m or "truncationParent" in m]

    assert unsent(written["messages"]) == unsent(sent["messages"])
    assert detect_format(written) in ("roo-code", "cline", fmt)


@SETTINGS
@given(lines=histories.kimi_cli_contexts(), plan=plans)
def test_kimi_cli_contexts_stay_valid(lines: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    """What Kimi CLI sends from a compacted context keeps the chat-completions rules (no assistant turn
    left with neither content nor calls), its records stay in place, and a ``_usage`` record never
    counts more than it did."""
    sent = copy.deepcopy(lines)
    rules.check_openai_chat(rules.kimi_cli_sent(lines))  # the generator's own contexts are valid
    written = written_with("kimi-cli", lines, plan)
    assert lines == sent, "the caller's context was mutated"
    after = rules.kimi_cli_sent(written)
    rules.check_openai_chat(after)
    rules.check_calls_as_sent("openai", after, rules.kimi_cli_sent(sent))
    assert all(m.get("content") or m.get("tool_calls") for m in after if m["role"] == "assistant")
    records = [line for line in written if line["role"].startswith("_")]
    before = [line for line in sent if line["role"].startswith("_")]
    assert [{k: v for k, v in r.items() if k != "token_count"} for r in records] == [
        {k: v for k, v in r.items() if k != "token_count"} for r in before
    ]
    counts = [
        (r.get("token_count", 0), b.get("token_count", 0)) for r, b in zip(records, before, strict=True)
    ]
    assert all(0 <= count <= was for count, was in counts)
    assert detect_format(written) == "kimi-cli"


def _shape(messages: list[dict[str, Any]]) -> list[Any]:
    """Each turn's role and its blocks' kinds and call ids: what a plan must not move in a Cline file."""
    return [
        (m["role"], [(b["type"], b.get("id") or b.get("tool_use_id")) for b in m["content"]])
        for m in messages
    ]


@SETTINGS
@given(history=histories.cline_histories(), plan=plans)
def test_cline_histories_keep_every_message_and_block_in_its_place(
    history: dict[str, Any], plan: dict[str, Any]
) -> None:
    """Cline names the messages of its file by index (its truncation range, checkpoints, context edits):
    a compacted file holds every message where it stood, with Cline's fields and every block in its
    place, every call as it was sent, and what the range hid as it was; what Cline sends from it under
    the range is the same turns as before, and the whole history is a valid Messages API request."""
    items, deleted = history["messages"], history["deleted"]
    sent = copy.deepcopy(items)
    shape = HISTORY_FORMATS["cline"]
    neutral = shape.read(items, {"conversationHistoryDeletedRange": deleted} if deleted else {})
    written = shape.write(compact(neutral, plan))["messages"]
    assert items == sent, "the caller's history was mutated"
    if deleted:  # read with the task's range, what it hides is not judged
        assert written[2 : deleted[1] + 1] == sent[2 : deleted[1] + 1]
    assert [{k: v for k, v in m.items() if k != "content"} for m in written] == [
        {k: v for k, v in m.items() if k != "content"} for m in sent
    ]
    assert _shape(written) == _shape(sent)
    for old_turn, new_turn in zip(sent, written, strict=True):  # only results change, each marked
        for old, new in zip(old_turn["content"], new_turn["content"], strict=True):
            if new != old:
                assert old["type"] in ("tool_result", "text") and "[tracetrim: the result of" in json.dumps(
                    new
                )
                first = str(old.get("text", "")).partition("\n")[0]
                if first.endswith("] Result:") and first != old.get("text"):  # a header and its result
                    assert new["text"].startswith(first + "\n")
    assert _shape(rules.cline_sent(written, deleted)) == _shape(rules.cline_sent(sent, deleted))
    rules.check_calls_as_sent("anthropic", written, sent)
    rules.check_anthropic({"model": "m", "max_tokens": 1, "messages": rules.cline_sent(written, None)})
    assert detect_format(written) == "cline"


@SETTINGS
@given(session=histories.continue_histories(), plan=plans)
def test_continue_sessions_stay_valid(session: dict[str, Any], plan: dict[str, Any]) -> None:
    """What Continue sends from a compacted session keeps the chat-completions rules, its calls as first
    sent; every state answers a call its item still holds, and the session's own keys stay."""
    sent = copy.deepcopy(session)
    rules.check_openai_chat(rules.continue_sent(session["history"]))  # the generator's sessions are valid
    written = write_back("continue", session, plan)
    assert session == sent, "the caller's session was mutated"
    after = rules.continue_sent(written["history"])
    rules.check_openai_chat(after)
    rules.check_calls_as_sent("openai", after, rules.continue_sent(sent["history"]))
    for item in written["history"]:
        called = [c["id"] for c in item["message"].get("toolCalls") or ()]
        assert [s["toolCallId"] for s in item.get("toolCallStates") or ()] in ([], called)
        single = item.get("toolCallState")
        assert single is None or single["toolCallId"] in called
    assert {k: v for k, v in written.items() if k != "history"} == {
        k: v for k, v in sent.items() if k != "history"
    }
    assert detect_format(written) == "continue"


@SETTINGS
@given(events=histories.copilot_sessions(), plan=plans)
def test_copilot_cli_sessions_stay_valid(events: list[dict[str, Any]], plan: dict[str, Any]) -> None:
    """What GitHub Copilot CLI sends from a compacted session keeps the chat-completions rules, its calls
    as first sent; every event names the one written before it, a dropped call's own events go with it,
    and what Copilot compacted before, and every sub-agent's event, stays as it was."""
    sent = copy.deepcopy(events)
    rules.check_openai_chat(rules.copilot_sent(events))  # the generator's sessions are valid
    written = written_with("copilot-cli", events, plan)
    assert events == sent, "the caller's session was mutated"
    after = rules.copilot_sent(written)
    rules.check_openai_chat(after)
    rules.check_calls_as_sent("openai", after, rules.copilot_sent(sent))
    assert [e["parentId"] for e in written] == [None, *(e["id"] for e in written[:-1])]
    reset = max((n for n, e in enumerate(sent) if e["type"] == "session.compaction_complete"), default=-1)
    assert written[: reset + 1] == sent[: reset + 1]
    kept = set(rules.chat_calls(after))
    for event in written[reset + 1 :]:
        call = event["data"].get("toolCallId")
        assert call is None or call in kept or "agentId" in event, call

    def sub_agents(session: list[dict[str, Any]]) -> list[dict[str, Any]]:  # their parents may have gone
        return [{k: v for k, v in e.items() if k != "parentId"} for e in session if "agentId" in e]

    assert sub_agents(written) == sub_agents(sent)
    assert detect_format(written) == "copilot-cli"
