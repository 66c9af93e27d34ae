"""A stand-in for Anthropic's Messages API and OpenAI's Responses API on 127.0.0.1, for running the real
Claude Code and Codex CLIs offline.

The real APIs cannot be reached from the test machines, so this stub takes their place: it records every
request body it is sent and answers each with one short text reply (streamed as server-sent events
when the request asks for a stream; ``/responses`` in the Responses API's events). What the tests
check is what the real client sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_REPLY = "All done."


def _events(model: str) -> list[tuple[str, dict[str, Any]]]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": "msg_stub", "type": "message", "role": "assistant", "model": model, "content": []}
    start = {**message, "stop_reason": None, "usage": usage}
    block = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": _REPLY}
    end = {"stop_reason": "end_turn"}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": end, "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def _responses_events(model: str) -> list[tuple[str, dict[str, Any]]]:
    text = {"type": "output_text", "text": _REPLY, "annotations": []}
    item = {
        "type": "message",
        "role": "assistant",
        "id": "msg_stub",
        "status": "completed",
        "content": [text],
    }
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
    added = {**item, "status": "in_progress", "content": []}
    delta = {"output_index": 0, "content_index": 0, "item_id": "msg_stub", "delta": _REPLY}
    return [
        ("response.created", {"type": "response.created", "response": started}),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": added},
        ),
        ("response.output_text.delta", {"type": "response.output_text.delta", **delta}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": done}),
    ]


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
        if "count_tokens" in self.path:
            self._json({"input_tokens": 100})
            return
        model = str(body.get("model", "claude"))
        if self.path.rstrip("/").endswith("/responses"):
            self._stream(_responses_events(model))
            return
        if not body.get("stream"):
            reply = {"type": "text", "text": _REPLY}
            self._json({"id": "msg_stub", "type": "message", "role": "assistant", "model": model,
                        "content": [reply], "stop_reason": "end_turn",
                        "usage": {"input_tokens": 10, "output_tokens": 3}})  # fmt: skip
            return
        self._stream(_events(model))

    def _stream(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

    def do_GET(self) -> None:
        """Nothing else is served."""
        self.send_response(404)
        self.end_headers()


class _Server(ThreadingHTTPServer):
    requests: list[dict[str, Any]]


@contextmanager
def api_stub() -> Iterator[_Server]:
    """A running stub; ``server.requests`` holds what it was sent, ``server.server_address`` where it is."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
