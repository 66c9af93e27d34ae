"""Local stand-in HTTP servers for the OpenAI Decisions and chat-completions wire formats.

Also `ScriptedServer`, a real local server that plays back given replies, for the shared client's
transport rules (status codes, Retry-After headers, bodies that are not JSON).

These are stand-ins, not the real services: real HTTP servers on 127.0.0.1 (uvicorn serving a small
Starlette app from a background thread, see ``tests/_asgi.py``) that speak each API's request and
response JSON as documented (for Decisions, as the ``openai`` package's
``Decision``/``DecisionCreateParams`` types spell it; for chat completions, the OpenAI
``chat.completion`` object with ``logprobs.content[].top_logprobs`` that vLLM, llama.cpp server and
Ollama also return). Faults can be switched on: no logprobs, malformed JSON, a hang, some 500s before
success, added latency, a required key.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests._asgi import ThreadedServer

_HANG_LIMIT_S = 30.0


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def fake_probability(text: str) -> float:
    """A deterministic probability in [0.05, 0.95] from the text it is about."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return 0.05 + 0.9 * int.from_bytes(digest[:8], "big") / 2**64


def jev_mock(config: Any = None) -> Any:
    """jevcompat's reference mock (``jevcompat.mock.Running``), quiet when a client hangs up first.

    The mock is a third-party ``http.server`` server, kept as the independent reference for the Jev
    wire format. It answers 401/403 without reading the request body, so a client may be gone before
    the answer is written, and ``socketserver`` would print that ``BrokenPipeError`` as a traceback on
    stderr. Connection errors are dropped; any other error is still reported.
    """
    from jevcompat import mock

    running = mock.Running(config)
    report = running.server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipe, ConnectionReset, ...
            report(request, client_address)

    running.server.handle_error = handle_error
    return running


class _Loopback:
    """A real HTTP server on a free 127.0.0.1 port, served from a background thread while entered.

    A Starlette app hands every ``POST`` (any path) to `_respond`, which subclasses implement.
    """

    def __init__(self) -> None:
        app = Starlette(routes=[Route("/{path:path}", self._endpoint, methods=["POST"])])
        self._server = ThreadedServer(app)

    async def _endpoint(self, request: Request) -> Response:
        headers = {name.lower(): value for name, value in request.headers.items()}
        reply = await self._respond(request.url.path, headers, await request.body())
        return Response(reply.body, status_code=reply.status, headers=dict(reply.headers))

    async def _respond(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The base URL, without ``/v1``."""
        return self._server.url

    def __enter__(self) -> Self:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


class StandIn(_Loopback):
    """A stand-in server in a background thread; subclasses answer ``POST`` on one path.

    ``key``: Bearer key required (None: no auth). ``fail_first``: that many requests get 500 first.
    ``busy_first``: that many requests (after those) get 429 with ``Retry-After: 0``.
    ``malformed``: 200 answers carry a body that is not JSON. ``hang``: never answer (until stopped).
    ``latency_s``: sleep before every answer.
    """

    path = "/"

    def __init__(
        self,
        *,
        key: str | None = None,
        fail_first: int = 0,
        busy_first: int = 0,
        malformed: bool = False,
        hang: bool = False,
        latency_s: float = 0.0,
    ) -> None:
        self.key = key
        self.fail_first = fail_first
        self.busy_first = busy_first
        self.malformed = malformed
        self.hang = hang
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        super().__init__()

    def __exit__(self, *exc: object) -> None:
        self.release.set()  # let hanging handlers finish so the server can stop
        super().__exit__(*exc)

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Status and JSON payload for a well-formed, authorised request."""
        raise NotImplementedError

    def auth_error(self, given: str | None) -> tuple[int, Any]:
        """What a wrong or missing key gets."""
        return 401, {
            "error": {
                "message": "Incorrect API key provided.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        }

    async def _respond(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            number = len(self.requests) + 1
            body = json.loads(raw or b"null")
            self.requests.append({"path": path, "headers": headers, "body": body})
        try:
            status, payload, text = await self._decide(path, headers, number)
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
        finally:
            with self.lock:
                self.in_flight -= 1
        data = text.encode() if text is not None else json.dumps(payload).encode()
        extra = {"Retry-After": "0"} if status == 429 else {}
        return Reply(status, data, {"Content-Type": "application/json", **extra})

    async def _decide(self, path: str, headers: dict[str, str], number: int) -> tuple[int, Any, str | None]:
        if path != self.path:
            return 404, _error(f"Unknown path {path}"), None
        if self.key is not None:
            header = headers.get("authorization") or ""
            given = header[7:] if header.startswith("Bearer ") else None
            if given != self.key:
                status, payload = self.auth_error(given)
                return status, payload, None
        if self.hang:
            # A worker thread waits, so the server's loop stays free for other requests.
            await asyncio.to_thread(self.release.wait, _HANG_LIMIT_S)
            return 503, {"error": {"message": "released"}}, None
        if number <= self.fail_first:
            return 500, {"error": {"message": "The server had an error.", "type": "server_error"}}, None
        if number <= self.fail_first + self.busy_first:
            return 429, {"error": {"message": "Rate limit reached.", "type": "rate_limit_error"}}, None
        if self.malformed:
            return 200, None, '{"answers": [ {"name": "broken'
        body = self.requests[number - 1]["body"]
        status, payload = self.answer(body)
        return status, payload, None


class DecisionsStandIn(StandIn):
    """Stand-in for ``POST /v1/decisions`` (OpenAI Decisions): predicate answers keyed by ``name``.

    ``refuse``: question names answered with a ``refusal``. Each probability is
    ``fake_probability(instructions)``.
    """

    path = "/v1/decisions"

    def __init__(self, *, refuse: frozenset[str] = frozenset(), **options: Any) -> None:
        super().__init__(**options)
        self.refuse = refuse

    def auth_error(self, given: str | None) -> tuple[int, Any]:
        """OpenAI echoes (part of) the wrong key; the client must not pass it on."""
        message = f"Incorrect API key provided: {given}."
        return 401, {"error": {**_error(message)["error"], "param": None, "code": "invalid_api_key"}}

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        """Answers in question order, with usage."""
        questions = body.get("questions")
        if not isinstance(body.get("input"), str) or not isinstance(questions, list) or not questions:
            return 400, {"error": {"message": "invalid request", "type": "invalid_request_error"}}
        answers = []
        for question in questions:
            if question.get("type") != "predicate":
                return 400, _error("unsupported question type")
            name = question.get("name")
            if name in self.refuse:
                answers.append({"type": "refusal", "name": name})
            else:
                probability = fake_probability(question["instructions"])
                answers.append({"type": "predicate", "name": name, "probability": probability})
        input_tokens = len(body["input"]) // 4 + 20 * len(questions)
        return 200, {
            "model": body.get("model"),
            "answers": answers,
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
                "output_tokens": len(questions),
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + len(questions),
            },
        }


class ChatStandIn(StandIn):
    """Stand-in for ``POST /v1/chat/completions`` with ``logprobs``/``top_logprobs``.

    With ``logprobs=True`` it answers option ``A`` with probability ``fake_probability(question)``,
    listing ``A``, ``B`` (with a leading-space variant) and a distractor among the top logprobs.
    With ``logprobs=False`` it ignores the logprobs request, like servers without support, and
    answers the JSON-probability prompt with ``{"probability": p}``.
    """

    path = "/v1/chat/completions"

    def __init__(self, *, logprobs: bool = True, **options: Any) -> None:
        super().__init__(**options)
        self.logprobs = logprobs

    @staticmethod
    def question_of(body: dict[str, Any]) -> str:
        """The question part of the last user message (the state precedes it)."""
        content: str = body["messages"][-1]["content"]
        return content[content.index("Question:") :]

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        """A one-token completion with logprobs, or a JSON probability without them."""
        question = self.question_of(body)
        probability = fake_probability(question.split("\nA) ")[0].split("\nYes means")[0])
        wants_logprobs = bool(body.get("logprobs"))
        prompt_tokens = sum(len(m["content"]) for m in body["messages"]) // 4
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length", "logprobs": None}
        if wants_logprobs and self.logprobs:
            top = [
                {"token": "A", "logprob": math.log(0.9 * probability * 0.8), "bytes": [65]},
                {"token": " A", "logprob": math.log(0.9 * probability * 0.2), "bytes": [32, 65]},
                {"token": "B", "logprob": math.log(0.9 * (1 - probability)), "bytes": [66]},
                {"token": "The", "logprob": math.log(0.1), "bytes": [84, 104, 101]},
            ][: max(1, int(body.get("top_logprobs") or 0))]
            top.sort(key=lambda entry: -entry["logprob"])
            best = top[0]
            choice["message"] = {"role": "assistant", "content": best["token"]}
            choice["logprobs"] = {"content": [{**best, "top_logprobs": top}], "refusal": None}
            completion_tokens = 1
        elif wants_logprobs:
            choice["message"] = {"role": "assistant", "content": "A" if probability >= 0.5 else "B"}
            completion_tokens = 1
        else:
            choice["message"] = {"role": "assistant", "content": f'{{"probability": {probability:.4f}}}'}
            choice["finish_reason"] = "stop"
            completion_tokens = 9
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


class SystemOneStandIn(StandIn):
    """Stand-in for ``POST /v1/systemone`` (Jev-compatible): every ``noul`` question gets a probability.

    Each probability is ``fake_probability(instructions)``; answers are keyed by question name.
    """

    path = "/v1/systemone"

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        """A ``noul`` answer per question, with usage."""
        questions = body.get("questions")
        if not isinstance(body.get("state"), dict) or not isinstance(questions, dict) or not questions:
            return 422, _error("state and questions are required")
        answers = {
            name: {"type": "noul", "noul": fake_probability(question["instructions"])}
            for name, question in questions.items()
        }
        input_tokens = len(json.dumps(body["state"])) // 4 + 20 * len(questions)
        return 200, {
            "model": body.get("model"),
            "answers": answers,
            "usage": {"input_tokens": input_tokens, "output_tokens": 2 * len(questions)},
        }


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer: status, raw body and extra headers."""

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of_json(cls, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Reply:
        """An answer whose body is ``payload`` as JSON."""
        return cls(
            status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}
        )

    @classmethod
    def of_text(cls, status: int, text: str = "", headers: Mapping[str, str] | None = None) -> Reply:
        """An answer whose body is ``text`` as it is (JSON or not)."""
        return cls(status, text.encode(), dict(headers or {}))


class ScriptedServer(_Loopback):
    """A real HTTP server on 127.0.0.1 answering each ``POST`` with the next scripted `Reply`.

    Requests past the end of the script get a 599 so a test that asks too often fails visibly.
    ``requests`` records each request's path, lower-cased headers and raw body.
    """

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        super().__init__()

    async def _respond(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": raw})
            return self.replies.pop(0) if self.replies else Reply.of_text(599, "script exhausted")
