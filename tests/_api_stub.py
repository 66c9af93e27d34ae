"""A stand-in for Anthropic's Messages API, OpenAI's Responses and chat-completions APIs and Gemini's
generateContent on 127.0.0.1, for running the real Claude Code, Codex, Gemini, OpenCode and Qwen Code CLIs
offline.

The real APIs cannot be reached from the test machines, so this stub takes their place: it records every
request body it is sent and answers each with one short text reply (streamed as server-sent events
when the request asks for a stream; ``/responses`` in the Responses API's events, ``/chat/completions``
as chat-completion chunks, ``:generateContent`` and ``:streamGenerateContent`` as Gemini's
candidates). What the tests check is what the real client sent.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_REPLY = "All done."


def _events(model: str, blocks: list[dict[str, Any]], n: int) -> list[tuple[str, dict[str, Any]]]:
    """A streamed Messages reply of ``blocks`` (text and ``tool_use``), as the API streams one."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": f"msg_stub{n}", "type": "message", "role": "assistant", "model": model, "content": []}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {"type": "message_start", "message": {**message, "stop_reason": None, "usage": usage}},
        )
    ]
    for k, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": k, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": k, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": k}),
        ]
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    end = {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 3}}
    return [*events, ("message_delta", end), ("message_stop", {"type": "message_stop"})]


def _responses_events(model: str, blocks: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """A streamed Responses reply: a ``function_call`` item where the script gives a ``tool_use``
    block, else one assistant message."""
    call = next((b for b in blocks if b["type"] == "tool_use"), None)
    item: dict[str, Any] = {"type": "message", "role": "assistant", "id": "msg_stub", "status": "completed"}
    item["content"] = [{"type": "output_text", "text": _REPLY, "annotations": []}]
    if call is not None:
        item = {
            "type": "function_call",
            "id": f"fc_{call['id']}",
            "call_id": call["id"],
            "name": call["name"],
        }
        item.update(arguments=json.dumps(call["input"]), status="completed")
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 13,
    }
    done = {"id": "resp_stub", "object": "response", "status": "completed", "model": model, "output": [item]}
    done["usage"] = usage
    started = {**done, "status": "in_progress", "output": []}
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {**item, "status": "in_progress"},
    }
    delta = {"output_index": 0, "content_index": 0, "item_id": "msg_stub", "delta": _REPLY}
    events = [
        ("response.created", {"type": "response.created", "response": started}),
        ("response.output_item.added", added),
        ("response.output_text.delta", {"type": "response.output_text.delta", **delta}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": done}),
    ]
    return [e for e in events if call is None or e[0] != "response.output_text.delta"]


def _chat_reply(model: str, blocks: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """A chat completion of ``blocks``: text as the content, each ``tool_use`` a function tool call."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    if texts:
        message["content"] = "".join(texts)
    calls = [b for b in blocks if b["type"] == "tool_use"]
    if calls:
        message["tool_calls"] = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
            }
            for b in calls
        ]
    usage = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return {"id": f"chatcmpl-stub{n}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [choice], "usage": usage}  # fmt: skip


def _chat_chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """``reply`` streamed: one chunk with the whole message as its delta, one with the finish and usage."""
    base = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    [choice] = reply["choices"]
    delta = {k: v for k, v in choice["message"].items() if v is not None}
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": k, **call} for k, call in enumerate(delta["tool_calls"])]
    end = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [end], "usage": reply["usage"]},
    ]


def _gemini_reply(blocks: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    """A Gemini response of ``blocks`` (a ``tool_use`` as a ``functionCall``); a request for JSON (the
    CLI's own side questions) gets a JSON answer."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "tool_use":
            parts.append({"functionCall": {"name": block["name"], "args": block["input"]}})
        elif body.get("generationConfig", {}).get("responseMimeType") == "application/json":
            parts.append({"text": json.dumps({"reasoning": "done", "next_speaker": "user"})})
        else:
            parts.append({"text": block["text"]})
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 5, "totalTokenCount": 105}
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": usage}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded bodies, not a log."""

    def _json(self, value: dict[str, Any]) -> None:
        out = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self) -> None:
        """Record the request; answer count_tokens with a count and messages with one text reply."""
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        self.server.requests.append({"path": self.path, "body": body})
        if "count_tokens" in self.path or ":countTokens" in self.path:
            self._json({"input_tokens": 100, "totalTokens": 100})
            return
        model = str(body.get("model", "claude"))
        blocks = [{"type": "text", "text": _REPLY}]
        scripted = body.get("tools") and not (self.server.aside and self.server.aside(body))
        if scripted and self.server.script:  # the agent's own loop follows the script
            blocks = self.server.script.pop(0)
        if ":streamGenerateContent" in self.path:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(f"data: {json.dumps(_gemini_reply(blocks, body))}\n\n".encode())
            return
        if ":generateContent" in self.path:
            self._json(_gemini_reply(blocks, body))
            return
        if self.path.rstrip("/").endswith("/responses"):
            self._stream(_responses_events(model, blocks))
            return
        n = len(self.server.requests)
        if self.path.rstrip("/").endswith("/chat/completions"):
            reply = _chat_reply(model, blocks, n)
            if body.get("stream"):
                self._stream([("", chunk) for chunk in _chat_chunks(reply)] + [("", "[DONE]")])
            else:
                self._json(reply)
            return
        if not body.get("stream"):
            self._json({"id": f"msg_stub{n}", "type": "message", "role": "assistant", "model": model,
                        "content": blocks, "stop_reason": "end_turn",
                        "usage": {"input_tokens": 10, "output_tokens": 3}})  # fmt: skip
            return
        self._stream(_events(model, blocks, n))

    def _stream(self, events: Sequence[tuple[str, dict[str, Any] | str]]) -> None:
        """Server-sent ``events`` (name, data); an unnamed event goes without its ``event:`` line and a
        string as it is (chat completions end with ``data: [DONE]``)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, data in events:
            line = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write((f"event: {name}\n" if name else "").encode() + f"data: {line}\n\n".encode())

    def do_GET(self) -> None:
        """Nothing else is served."""
        self.send_response(404)
        self.end_headers()


class _Server(ThreadingHTTPServer):
    requests: list[dict[str, Any]]
    script: list[list[dict[str, Any]]]
    aside: Callable[[dict[str, Any]], bool] | None


@contextmanager
def api_stub(
    script: list[list[dict[str, Any]]] | None = None, aside: Callable[[dict[str, Any]], bool] | None = None
) -> Iterator[_Server]:
    """A running stub; ``server.requests`` holds what it was sent, ``server.server_address`` where it is.

    ``script``: the Messages replies (lists of text and ``tool_use`` blocks) the agent's requests get in
    turn, a request with ``tools`` taking the next one; every other request gets one line of text, and
    so does a request ``aside`` picks out (an agent's own summarising call, which offers its tools too).
    """
    server = _Server(("127.0.0.1", 0), _Handler)
    server.requests = []
    server.script = list(script or [])
    server.aside = aside
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def chat_messages_with(
    stub: _Server, prompt: str, agent: str, *, tools: bool = False
) -> list[dict[str, Any]]:
    """The messages of the first chat-completions request ``stub`` was sent that carries ``prompt`` (with
    ``tools``, the first that also offers tools: an agent's own loop rather than a side request);
    ``agent`` names who sent none in the assertion's message."""
    bodies = [r["body"] for r in stub.requests if r["path"].endswith("/chat/completions")]
    sent = [b for b in bodies if (b.get("tools") or not tools) and prompt in json.dumps(b["messages"])]
    assert sent, f"{agent} sent no request for the prompt ({len(bodies)} requests)"
    messages: list[dict[str, Any]] = sent[0]["messages"]
    return messages


def run_agent(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> str:
    """Run an agent's CLI to the end (no input, two minutes at most) and return what it printed; a
    failure shows the end of both of its streams."""
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout
