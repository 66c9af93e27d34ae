"""What the `ai-sdk` writer gives back is a history the Vercel AI SDK itself sends: its message schema
takes every message and ``generateText`` (driven by the SDK's own scripted model, ``MockLanguageModelV4``)
raises neither ``InvalidPromptError`` nor ``MissingToolResultsError``, and every call it sends is one
the agent sent, with its result.

The SDK is JavaScript: ``tests/js`` pins it and ``.ci/run`` installs it (``npm ci --prefix tests/js``);
without it (or Node.js) the test skips outside CI and fails in CI.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import _provider_histories as histories
from tests._compact_plans import plans, write_back
from tests.conftest import service_unavailable

JS = Path(__file__).parents[1] / "js"


def _send(batch: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each history of ``batch`` sent through the AI SDK: the prompt its model got, or its error."""
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "ai").is_dir():
        service_unavailable("the Vercel AI SDK is not installed (npm ci --prefix tests/js)")
    done = subprocess.run(
        [str(node), str(JS / "ai_sdk_send.mjs")],
        input=json.dumps(batch),
        capture_output=True,
        text=True,
        cwd=JS,
        timeout=120,
        check=True,
    )
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def _calls(prompt: list[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    return {
        p["toolCallId"]: (p["toolName"], p["input"])
        for m in prompt
        if m["role"] == "assistant"
        for p in m["content"]
        if p["type"] == "tool-call"
    }


def _v5(messages: list[dict[str, Any]]) -> bool:
    return not any(
        "args" in p or "result" in p for m in messages if isinstance(m["content"], list) for p in m["content"]
    )


@settings(max_examples=12, deadline=None)
@given(batch=st.lists(st.tuples(histories.ai_sdk_messages(), plans), min_size=4, max_size=4))
def test_written_histories_are_sent_by_the_sdk(
    batch: list[tuple[list[dict[str, Any]], dict[str, Any]]],
) -> None:
    sent = [copy.deepcopy(m) for m, _ in batch if _v5(m)]  # v4's CoreMessage is an older SDK's
    written = [write_back("ai-sdk", {"messages": m}, plan)["messages"] for m, plan in batch if _v5(m)]
    for before, after in zip(_send(sent), _send(written), strict=True):
        assert before["ok"], before["error"]  # the generator draws what the SDK sends
        assert after["ok"], after["error"]
        calls = _calls(after["prompt"])
        assert calls.items() <= _calls(before["prompt"]).items(), "a call not as the agent sent it"
        answered = {p["toolCallId"] for m in after["prompt"] if m["role"] == "tool" for p in m["content"]}
        assert answered == set(calls)


def test_the_sdk_refuses_a_call_without_its_result() -> None:
    """The check can fail: a history whose call lost its result is refused by the SDK."""
    call = {"type": "tool-call", "toolCallId": "call_1", "toolName": "readFile", "input": {"path": "a"}}
    history = [
        {"role": "user", "content": "read a"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": "go on"},
    ]
    (result,) = _send([history])
    assert not result["ok"] and "MissingToolResultsError" in result["error"]
