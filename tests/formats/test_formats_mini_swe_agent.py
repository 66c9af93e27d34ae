"""The mini-swe-agent converters: exact round trips and pairing on real runs, errors, the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._provider_rules import check_openai_chat
from tests.conftest import DATA, require_data
from tracetrim import formats
from tracetrim._snapshot import SnapshotError, validate_messages
from tracetrim.archive import KeyValueArchive, MemoryStore
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel
from tracetrim.formats._common import format_meta

MINI = DATA / "mini-swe-agent"
SMALL_RUN = "pydata__xarray-4629.traj.json"
THOUGHT = "THOUGHT: list the files.\n\n"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"


def _fence(command: str) -> str:
    return f"```bash\n{command}\n```"


def _run() -> list[dict[str, Any]]:
    """A short run in mini-swe-agent's shape: system, task, commands, a format error, the submission."""
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>\nfix it\n</pr_description>"},
        {"role": "assistant", "content": THOUGHT + _fence("ls -a"), "extra": {"response": {"id": "r1"}}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nREADME.md\n</output>"},
        {"role": "assistant", "content": "two\n" + _fence("ls") + "\nand\n" + _fence("pwd")},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2."},
        {
            "role": "assistant",
            "content": "THOUGHT: done.\n\n" + _fence(SUBMIT) + "\nbye",
            "extra": {"cost": 1},
        },
        {"role": "user", "content": "diff --git a/x b/x\n"},
    ]


@pytest.fixture(scope="module")
def real_runs() -> list[tuple[str, list[dict[str, Any]]]]:
    paths = sorted(MINI.glob("*.traj.json"))
    if not paths:
        require_data(MINI / SMALL_RUN)
    return [(p.name, json.loads(p.read_text(encoding="utf-8"))["messages"]) for p in paths]


# --- real data -------------------------------------------------------------------------------------


@pytest.mark.data
def test_every_real_run_round_trips_exactly(real_runs: list[tuple[str, list[dict[str, Any]]]]) -> None:
    assert len(real_runs) == 196
    for name, messages in real_runs:
        neutral = formats.from_mini_swe_agent(messages)
        assert validate_messages(neutral) == neutral, name
        assert [m["id"] for m in neutral] == [f"m{i}" for i in range(len(messages))], name
        assert formats.to_mini_swe_agent(neutral) == messages, name


@pytest.mark.data
def test_every_real_call_has_exactly_one_result_right_after_it(
    real_runs: list[tuple[str, list[dict[str, Any]]]],
) -> None:
    pairs = 0
    for name, messages in real_runs:
        neutral = formats.from_mini_swe_agent(messages)
        calls = [(i, b) for i, m in enumerate(neutral) for b in m["content"] if b["type"] == "tool_call"]
        results = [b for m in neutral for b in m["content"] if b["type"] == "tool_result"]
        assert len(calls) == len(results) > 0, name
        for i, call in calls:
            assert call["id"] == f"mswe-{i}" and call["name"] == "bash" and call["state"] == "finished", name
            command = json.loads(call["input"])["command"]
            assert command and f"\n{command}\n```" in messages[i]["content"], name
            (result,) = neutral[i + 1]["content"]
            assert result["type"] == "tool_result" and result["id"] == call["id"], name
            assert result["output"] == messages[i + 1]["content"] and result["state"] == "success", name
            assert format_meta(neutral[i + 1], "mini_swe_agent")["observation_of"] == call["id"], name
        pairs += len(calls)
        # The run ends by submitting: the diff it printed is the last command's result.
        assert neutral[-1]["content"][0]["type"] == "tool_result", name
        assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in neutral[-2]["content"][1]["input"], name
    assert pairs > 7000


@pytest.mark.data
def test_load_a_real_trajectory_file() -> None:
    path = require_data(MINI / SMALL_RUN)
    messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
    assert formats.load_mini_swe_agent_traj(path) == formats.from_mini_swe_agent(messages)
    assert formats.load_mini_swe_agent_traj(str(path)) == formats.from_mini_swe_agent(messages)


# --- the mapping -----------------------------------------------------------------------------------


def test_a_short_run_maps_to_calls_results_and_text() -> None:
    run = _run()
    neutral = formats.from_mini_swe_agent(run)
    assert neutral[0] == {
        "id": "m0",
        "role": "system",
        "content": [{"type": "text", "text": run[0]["content"]}],
    }
    assert neutral[1]["role"] == "user" and "metadata" not in neutral[1]
    assert neutral[2] == {
        "id": "m2",
        "role": "assistant",
        "content": [
            {"type": "text", "text": THOUGHT},
            {
                "type": "tool_call",
                "id": "mswe-2",
                "name": "bash",
                "input": json.dumps({"command": "ls -a"}),
                "state": "finished",
                # the command is in the assistant's prose: a drop keeps the call, with a stub result
                "metadata": {"tracetrim.prose_action": True},
            },
        ],
        # The message's own keys besides role and content (here mini-swe-agent's "extra").
        "metadata": {"tracetrim.mini_swe_agent": {"extra": {"extra": {"response": {"id": "r1"}}}}},
    }
    assert neutral[3] == {
        "id": "m3",
        "role": "assistant",
        "content": [
            {
                "type": "tool_result",
                "id": "mswe-2",
                "name": "bash",
                "output": run[3]["content"],
                "state": "success",
            }
        ],
        "metadata": {"tracetrim.mini_swe_agent": {"observation_of": "mswe-2"}},
    }
    # Two bash blocks are a format error in mini-swe-agent: plain text, and so is the reply to it.
    assert [b["type"] for m in neutral[4:6] for b in m["content"]] == ["text", "text"]
    assert neutral[5]["role"] == "user"
    # Text after the fence is its own block; the submission's output is the last call's result.
    assert [b["type"] for b in neutral[6]["content"]] == ["text", "tool_call", "text"]
    assert neutral[6]["content"][2]["text"] == "\nbye"
    assert neutral[7]["content"][0]["id"] == "mswe-6"
    assert formats.to_mini_swe_agent(neutral) == run


def test_observations_follow_the_swe_agent_convention() -> None:
    """Both readers give a synthesized observation the same role, block shape and metadata key."""
    swe = formats.from_swe_agent_history(
        [
            {"role": "assistant", "content": "look\n```\nls -a\n```", "thought": "look", "action": "ls -a"},
            {"role": "user", "content": "README.md"},
        ]
    )
    mini = formats.from_mini_swe_agent(
        [
            {"role": "assistant", "content": "look\n" + _fence("ls -a")},
            {"role": "user", "content": "README.md"},
        ]
    )
    assert swe[1]["role"] == mini[1]["role"] == "assistant"
    swe_result, mini_result = swe[1]["content"][0], mini[1]["content"][0]
    assert set(swe_result) == set(mini_result) and swe_result["state"] == mini_result["state"] == "success"
    assert swe_result["output"] == mini_result["output"] == "README.md"
    assert format_meta(swe[1], "swe_agent")["observation_of"] == swe[0]["content"][-1]["id"] == "swe-0"
    assert (
        format_meta(mini[1], "mini_swe_agent")["observation_of"] == mini[0]["content"][-1]["id"] == "mswe-0"
    )


@pytest.mark.parametrize(
    "content",
    [
        "```bash   \n  ls -a  \n```",
        "```bash\n\n```",
        "```bash\n   \n```",
        "x```bash\ncat a\n\n```\n\n",
        "```bash\r\nls\r\n```",
        "THOUGHT: unicode \u00e9\u4e2d\n```bash\necho '\u00e9' \\\n  && ls\n```",
    ],
)
def test_unusual_fences_round_trip(content: str) -> None:
    run = [
        {"role": "assistant", "content": content},
        {"role": "user", "content": "<returncode>0</returncode>"},
    ]
    neutral = formats.from_mini_swe_agent(run)
    call = next(b for b in neutral[0]["content"] if b["type"] == "tool_call")
    command = json.loads(call["input"])["command"]
    assert command == command.strip()
    assert formats.to_mini_swe_agent(neutral) == run


def test_edge_shapes_round_trip() -> None:
    run = [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},  # no call before it
        {"role": "assistant", "content": _fence("ls")},
        {"role": "assistant", "content": "no observation for the call above"},
        {"role": "assistant", "content": _fence("sleep 1"), "name": "agent", "id": "x"},
    ]
    neutral = formats.from_mini_swe_agent(run)
    assert neutral[0]["content"] == [] and neutral[2]["content"][0]["type"] == "text"
    assert neutral[3]["content"][0]["state"] == "pending" and neutral[5]["content"][0]["state"] == "pending"
    assert neutral[5]["id"] == "m5"
    assert formats.to_mini_swe_agent(neutral) == run
    assert formats.from_mini_swe_agent([]) == [] and formats.to_mini_swe_agent([]) == []


def test_writing_other_neutral_histories() -> None:
    """Calls and results in one neutral message are split into turns; thinking and ids are dropped."""
    neutral = [
        {"id": "a", "role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "id": "b",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "run it\n"},
                {"type": "tool_call", "id": "c1", "name": "bash", "input": '{"command": "ls"}'},
                {
                    "type": "tool_result",
                    "id": "c1",
                    "name": "bash",
                    "output": [{"type": "text", "text": "a"}],
                },
                {"type": "text", "text": "done"},
            ],
        },
    ]
    assert formats.to_mini_swe_agent(neutral) == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "run it\n" + _fence("ls")},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "done"},
    ]


# --- errors and isolation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ("not a list", "messages must be a list"),
        ({"messages": []}, "messages must be a list"),
        ([{"role": "user", "content": "x"}, "text"], "message 1: a message must be an object"),
        ([{"role": "tool", "content": "x"}], "message 0, field 'tool_call_id'"),  # a 2.x tool-calling run
        ([{"content": "x"}], "message 0, field 'role'"),
        ([{"role": "user"}], "message 0, field 'content'"),
        (
            [{"role": "user", "content": "a"}, {"role": "assistant", "content": None}],
            "message 1, field 'content'",
        ),
        ([{"role": "assistant", "content": [{"type": "text", "text": "x"}]}], "message 0, field 'content'"),
    ],
)
def test_bad_input_names_the_message_and_field(messages: Any, match: str) -> None:
    with pytest.raises(SnapshotError, match=match):
        formats.from_mini_swe_agent(messages)


def _call(input_text: str) -> dict[str, Any]:
    return {"type": "tool_call", "id": "c1", "name": "bash", "input": input_text, "state": "finished"}


@pytest.mark.parametrize(
    ("block", "match"),
    [
        (_call("not json"), "message 1, block 0, field 'input': tool call input is not valid JSON"),
        (_call('["ls"]'), "message 1, block 0, field 'input'"),
        (_call('{"cmd": "ls"}'), "message 1, block 0, field 'input': .*'command'"),
        (_call('{"command": 3}'), "message 1, block 0, field 'input'"),
        ({"type": "data", "data": 1}, "message 1, block 0, field 'type'"),
        (
            {"type": "tool_result", "id": "c1", "name": "bash", "output": [{"type": "image"}]},
            "message 1, block 0, field 'output'",
        ),
        ({"type": "text"}, "message 1, block 0, field 'text'"),
    ],
)
def test_bad_neutral_input_names_the_message_block_and_field(block: dict[str, Any], match: str) -> None:
    neutral = [
        {"id": "m0", "role": "user", "content": [{"type": "text", "text": "go"}]},
        {"id": "m1", "role": "assistant", "content": [block]},
    ]
    with pytest.raises(SnapshotError, match=match):
        formats.to_mini_swe_agent(neutral)


def test_bad_files_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    for text in ("{not json", "[]", json.dumps({"history": []}), json.dumps({"messages": {}})):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(SnapshotError, match=r"run\.traj\.json"):
            formats.load_mini_swe_agent_traj(path)
    path.write_text(json.dumps({"messages": [{"role": "robot", "content": ""}]}), encoding="utf-8")
    with pytest.raises(SnapshotError, match="message 0, field 'role'"):
        formats.load_mini_swe_agent_traj(path)


def test_the_callers_objects_are_never_mutated_or_shared() -> None:
    run = _run()
    before = copy.deepcopy(run)
    neutral = formats.from_mini_swe_agent(run)
    assert run == before
    neutral[2]["metadata"]["tracetrim.mini_swe_agent"]["extra"]["extra"]["response"]["id"] = "changed"
    assert run == before, "the neutral form shares objects with the input"
    neutral = formats.from_mini_swe_agent(run)
    neutral_before = copy.deepcopy(neutral)
    back = formats.to_mini_swe_agent(neutral)
    assert neutral == neutral_before
    back[2]["extra"]["response"]["id"] = "changed"
    assert neutral == neutral_before, "the output shares objects with the neutral input"


# --- the CLI -------------------------------------------------------------------------------------


@pytest.mark.data
def test_cli_compacts_a_real_mini_swe_agent_run(capsys: pytest.CaptureFixture[str]) -> None:
    path = require_data(MINI / SMALL_RUN)
    code = main(["compact", str(path), "--format", "mini-swe-agent", "--goal", "fix the issue"])
    out = capsys.readouterr().out
    document = json.loads(out)
    assert code == 0 and document["status"] in ("DECIDED", "INCONCLUSIVE")
    assert document["decisions"] and {d["tool"] for d in document["decisions"]} == {"bash"}
    assert all(d["call_id"].startswith("mswe-") for d in document["decisions"])
    # What comes back speaks the agent's own text protocol, every command still followed by its output.
    messages = document["messages"]
    assert document["format"] == "mini-swe-agent"
    assert all(set(m) >= {"role", "content"} and isinstance(m["content"], str) for m in messages)
    neutral = validate_messages(formats.from_mini_swe_agent(messages))
    calls = [b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    results = [b["id"] for m in neutral for b in m["content"] if b["type"] == "tool_result"]
    assert calls == results


@pytest.mark.data
def test_cli_reads_a_swe_agent_traj(capsys: pytest.CaptureFixture[str]) -> None:
    path = require_data(DATA / "swe-agent" / "function_calling_simple.traj")
    history = json.loads(path.read_text(encoding="utf-8"))["history"]
    tools = {b["name"] for m in formats.from_swe_agent_history(history) for b in m["content"] if "name" in b}
    code = main(["compact", str(path), "--format", "swe-agent", "--eligible-tools", ",".join(sorted(tools))])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["status"] in ("DECIDED", "INCONCLUSIVE")
    assert document["format"] == "swe-agent"  # written back as a SWE-agent history
    validate_messages(formats.from_swe_agent_history(document["messages"]))


def test_cli_refuses_a_file_that_is_not_a_mini_swe_agent_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.traj.json"
    path.write_text(json.dumps({"messages": [{"role": "tool", "content": "x"}]}))
    code = main(["compact", str(path), "--format", "mini-swe-agent"])
    err = capsys.readouterr().err
    assert code == 2 and "not valid mini-swe-agent messages" in err and "message 0" in err
    path.write_text(json.dumps({"history": []}))
    code = main(["compact", str(path), "--format", "mini-swe-agent"])
    assert code == 2 and "'messages' list" in capsys.readouterr().err


AGENTS = Path(__file__).parents[1] / "data" / "agents"


def _flat(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a Responses model's run sends: each response's output items in its place."""
    return [i for m in messages for i in (m["output"] if m.get("object") == "response" else [m])]


@pytest.mark.parametrize("name", ["text", "toolcall", "response"])
async def test_a_mini_swe_agent_2_run_reads_compacts_and_keeps_its_exit(name: str) -> None:
    """mini-swe-agent 2.4 itself wrote the files (its ``DefaultAgent`` on a ``LocalEnvironment``, driven
    by its own deterministic text-based, tool-calling and Responses test models): fenced
    ``mswea_bash_command`` blocks, chat ``tool_calls`` answered by ``tool`` messages, or whole responses
    answered by ``function_call_output`` items; each run ends in an ``exit`` message."""
    document = json.loads((AGENTS / f"mini_swe_agent_2_{name}.traj.json").read_text(encoding="utf-8"))
    assert formats.detect_format(document) == "mini-swe-agent"
    shape = formats.HISTORY_FORMATS["mini-swe-agent"]
    neutral = shape.read(document["messages"])
    assert shape.write(neutral)["messages"] == document["messages"]
    calls = [b for m in neutral for b in m["content"] if b["type"] == "tool_call"]
    assert len(calls) == 3 and {c["name"] for c in calls} == {"bash"}
    compactor = tt.Compactor(
        ScriptedDecisionModel({}, default=0.0),
        config=tt.CompactorConfig(eligible_tools={"bash"}, preserve_recent_messages=2),
        execution=tt.ExecutionOptions(mode=tt.Mode.ENFORCE),
        archive=KeyValueArchive(MemoryStore()),
    )
    outcome = await compactor.plan(tt.CompactionRequest(neutral, scope=tt.Scope("u", "a", "s")))
    assert outcome.adopted and outcome.plan is not None, outcome.detail
    written = shape.write(outcome.plan.messages)["messages"]
    assert written[-1] == document["messages"][-1] and written[-1]["role"] == "exit"
    assert formats.detect_format({**document, "messages": written}) == "mini-swe-agent"
    if name == "toolcall":
        check_openai_chat([m for m in written if m["role"] != "exit"])
        assert len([m for m in written if m.get("tool_calls")]) < 3  # pairs went
    elif name == "response":
        sent = _flat([m for m in document["messages"] if m.get("role") != "exit"])
        items = _flat([m for m in written if m.get("role") != "exit"])
        # mini-swe-agent's test model writes output items without ids, so the SDK's request types do
        # not apply; the Responses pairing rule does: each call answered later, no output without it
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
        assert calls == outputs and all(i in sent for i in items if i.get("type") == "function_call")
        assert [m["extra"] for m in written if m.get("object") == "response"] == [
            m["extra"] for m in document["messages"] if m.get("object") == "response"
        ]  # each response the model gave is still one, with its own fields
        assert len([i for i in items if i.get("type") == "function_call"]) < 3
    else:
        assert len(written) == len(document["messages"])  # a command stays; its output is a stub
        assert sum("[tracetrim:" in m["content"] for m in written if m["role"] == "user") >= 1
