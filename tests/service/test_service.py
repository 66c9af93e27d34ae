"""The HTTP service against a real uvicorn server on a loopback port, with httpx as the client."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import load_scenario, service_unavailable
from tracetrim.archive import FileArchive
from tracetrim.archive._protocol import scope_key
from tracetrim.decision import LearnedDecisionModel, ScriptedDecisionModel

try:
    import starlette  # noqa: F401
    import uvicorn
except ImportError:  # the service extra is optional; every test here then skips (fails in CI)
    uvicorn = None  # type: ignore[assignment]

SCOPE = {"user_id": "u1", "agent_id": "a1", "session_id": "s1"}
JSON = {"Content-Type": "application/json"}
OTHER_SCOPE = {"user_id": "u2", "agent_id": "a1", "session_id": "s1"}
REQUEST_FIELDS = (
    "messages",
    "goal",
    "next_action",
    "eligible_tool_names",
    "protected_message_ids",
    "protected_call_ids",
    "options",
)


@pytest.fixture(autouse=True)
def _service_extra() -> None:
    if uvicorn is None:
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")


@contextlib.contextmanager
def running(settings: Any) -> Iterator[str]:
    """Serve ``create_app(settings)`` with uvicorn in a thread on a free loopback port; yield its URL."""
    from tests._asgi import ThreadedServer
    from tracetrim.service import create_app

    with ThreadedServer(create_app(settings), lifespan="on") as server:
        yield server.url


def scripted_model() -> ScriptedDecisionModel:
    """Answers following payment_retry's labels: irrelevant/superseded go, needed ones are shortened."""
    labels = load_scenario("payment_retry")["labels"]
    table = {cid: (0.05, 0.05) for cid in labels["irrelevant"] + labels["superseded"]}
    table |= {cid: (0.9, 0.1) for cid in labels["needed"]}
    return ScriptedDecisionModel.by_call_id(table, default=(0.95, 0.95))


def request_body(**changes: Any) -> dict[str, Any]:
    """The payment_retry scenario as a `POST /v1/compact_context` body."""
    scenario = load_scenario("payment_retry")
    body = {key: scenario[key] for key in REQUEST_FIELDS}
    body["options"] = {**scenario["options"], **FIRST_ROUND_CUTS}
    body.update(changes)
    return body


FIRST_ROUND_CUTS = {"excerpt_chars": 0}
"""These tests check the service's mechanics with the first round's head-only cuts, whose sizes they know;
the excerpt has its own tests (tests/test_excerpt.py)."""


def enforce_body(scope: dict[str, str] = SCOPE, **changes: Any) -> dict[str, Any]:
    options = dict(load_scenario("payment_retry")["options"], mode="enforce", **FIRST_ROUND_CUTS)
    return request_body(options=options, scope=scope, **changes)


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service-archive")


@pytest.fixture(scope="module")
def base_url(archive_dir: Path) -> Iterator[str]:
    """A server with a scripted model and a file archive."""
    from tracetrim.service import ServiceSettings

    with running(ServiceSettings(model=scripted_model(), archive=FileArchive(archive_dir))) as url:
        yield url


@pytest.fixture(scope="module")
def bare_url() -> Iterator[str]:
    """A server with the learned judge and no archive (SHADOW only)."""
    from tracetrim.service import ServiceSettings

    with running(ServiceSettings(model=LearnedDecisionModel())) as url:
        yield url


@pytest.fixture(scope="module")
def small_url(archive_dir: Path) -> Iterator[str]:
    """A server accepting at most 2,000-byte bodies."""
    from tracetrim.service import ServiceSettings

    with running(ServiceSettings(model=LearnedDecisionModel(), max_body_bytes=2000)) as url:
        yield url


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as http:
        yield http


def error_of(response: httpx.Response, status: int, code: str, field: str | None = None) -> str:
    """Check a JSON error answer and return its message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code, error
    assert error.get("field") == field, error
    assert isinstance(error["message"], str) and error["message"] and "Traceback" not in error["message"]
    return str(error["message"])


# --- health -------------------------------------------------------------------------------------------


def test_healthz_reports_the_configuration(client: httpx.Client, base_url: str, bare_url: str) -> None:
    answer = client.get(f"{base_url}/healthz").json()
    assert answer["status"] == "ok" and answer["schema_version"] == 1
    assert answer["model"] == "ScriptedDecisionModel" and answer["archive"] is True
    assert client.get(f"{bare_url}/healthz").json()["archive"] is False


def test_the_default_model_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tracetrim.service import ServiceSettings

    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.delenv("DECISION_MODEL_BACKEND", raising=False)
    with running(ServiceSettings()) as url:
        assert httpx.get(f"{url}/healthz").json()["model"] == "LearnedDecisionModel"


# --- compaction ---------------------------------------------------------------------------------------


def test_shadow_proposes_without_changing_or_archiving(client: httpx.Client, base_url: str) -> None:
    original = load_scenario("payment_retry")["messages"]
    shadow_scope = {"user_id": "shadow", "agent_id": "a", "session_id": "s"}
    response = client.post(f"{base_url}/v1/compact_context", json=request_body(scope=shadow_scope))
    assert response.status_code == 200
    answer = response.json()
    assert answer["schema_version"] == 1
    assert (answer["status"], answer["reason"], answer["changed"]) == ("DECIDED", "SHADOW_PROPOSAL", False)
    assert answer["messages"] == original and answer["archive_ref"] == ""
    assert answer["proposal"] is not None and answer["proposal"] != original
    assert answer["stats"]["reduction"] >= 0.10 and answer["detail"]
    actions = {d["call_id"]: d["action"] for d in answer["decisions"]}
    labels = load_scenario("payment_retry")["labels"]
    assert all(actions[cid] == "drop_call" for cid in labels["irrelevant"] + labels["superseded"])
    assert all(actions[cid] == "drop_result" for cid in labels["needed"])
    assert all(actions[cid] == "keep" for cid in labels["critical"] + labels["protected"])
    listed = client.post(f"{base_url}/v1/archive/list", json={"scope": shadow_scope}).json()
    assert listed == {"schema_version": 1, "snapshots": []}


def test_shadow_with_the_learned_judge_needs_no_archive(client: httpx.Client, bare_url: str) -> None:
    answer = client.post(f"{bare_url}/v1/compact_context", json=request_body()).json()
    assert answer["status"] == "DECIDED" and answer["changed"] is False
    assert answer["stats"]["candidates"] > 0 and len(answer["decisions"]) == 19


def test_enforce_archives_adopts_and_restores(client: httpx.Client, base_url: str) -> None:
    original = load_scenario("payment_retry")["messages"]
    answer = client.post(f"{base_url}/v1/compact_context", json=enforce_body()).json()
    assert (answer["status"], answer["reason"], answer["changed"]) == ("DECIDED", "ARCHIVED_PROPOSAL", True)
    ref = answer["archive_ref"]
    assert len(ref) == 64 and answer["proposal"] is None
    assert answer["messages"] != original
    assert len(json.dumps(answer["messages"])) < len(json.dumps(original))
    assert ref in json.dumps(answer["messages"])  # markers name the reference

    whole = client.post(f"{base_url}/v1/restore", json={"scope": SCOPE, "archive_ref": ref})
    assert whole.status_code == 200
    assert whole.json() == {"schema_version": 1, "archive_ref": ref, "messages": original}

    changed = [d["call_id"] for d in answer["decisions"] if d["action"] != "keep"]
    assert changed
    picked = client.post(
        f"{base_url}/v1/restore", json={"scope": SCOPE, "archive_ref": ref, "call_ids": changed[::-1]}
    ).json()
    assert [c["call_id"] for c in picked["calls"]] == changed[::-1]
    blocks = {
        (b["type"], b["id"]): b
        for m in original
        for b in m["content"]
        if b.get("type") in ("tool_call", "tool_result")
    }
    for item in picked["calls"]:
        assert item["call"] == blocks[("tool_call", item["call_id"])]
        assert item["result"] == blocks[("tool_result", item["call_id"])]

    listed = client.post(f"{base_url}/v1/archive/list", json={"scope": SCOPE}).json()["snapshots"]
    assert ref in [s["ref"] for s in listed]
    assert all(s["size"] > 0 and s["created_at"] > 0 for s in listed)


def test_enforce_twice_is_idempotent_and_a_second_pass_changes_less(
    client: httpx.Client, base_url: str
) -> None:
    first = client.post(f"{base_url}/v1/compact_context", json=enforce_body()).json()
    again = client.post(f"{base_url}/v1/compact_context", json=enforce_body()).json()
    assert first["archive_ref"] == again["archive_ref"] and first["messages"] == again["messages"]
    second = client.post(
        f"{base_url}/v1/compact_context", json=enforce_body(messages=first["messages"])
    ).json()
    assert second["changed"] is False and second["status"] in ("INCONCLUSIVE", "SKIPPED")
    assert second["messages"] == first["messages"]


def test_no_eligible_tools_is_a_skip_not_an_error(client: httpx.Client, base_url: str) -> None:
    answer = client.post(f"{base_url}/v1/compact_context", json=request_body(eligible_tool_names=[])).json()
    assert (answer["status"], answer["reason"], answer["changed"]) == ("SKIPPED", "NO_CANDIDATES", False)
    assert answer["messages"] == load_scenario("payment_retry")["messages"]


def test_options_reach_the_planner(client: httpx.Client, base_url: str) -> None:
    strict = request_body(options={"minimum_reduction": 0.99, "preserve_recent_messages": 6})
    answer = client.post(f"{base_url}/v1/compact_context", json=strict).json()
    assert (answer["status"], answer["reason"]) == ("INCONCLUSIVE", "INSUFFICIENT_REDUCTION")
    everything_protected = request_body(options={"preserve_recent_messages": 1000})
    answer = client.post(f"{base_url}/v1/compact_context", json=everything_protected).json()
    assert answer["reason"] == "NO_CANDIDATES"


def test_a_model_failure_is_an_error_outcome_with_the_original_messages(
    client: httpx.Client, tmp_path: Path
) -> None:
    from tracetrim.service import ServiceSettings

    silent = ScriptedDecisionModel({})  # answers nothing: the planner rejects the plan
    with running(ServiceSettings(model=silent, archive=FileArchive(tmp_path))) as url:
        answer = client.post(f"{url}/v1/compact_context", json=enforce_body()).json()
    assert (answer["status"], answer["reason"], answer["changed"]) == ("ERROR", "INVALID_ANSWER", False)
    assert answer["messages"] == load_scenario("payment_retry")["messages"]
    assert answer["archive_ref"] == ""


def test_enforce_and_restore_through_redis(client: httpx.Client) -> None:
    import redis

    from tracetrim.service import ServiceSettings, make_archive

    try:
        redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=1.0).ping()
    except (redis.exceptions.ConnectionError, OSError) as exc:
        service_unavailable(f"no Redis on 127.0.0.1:6379 ({exc})")
    scope = {"user_id": f"test-{uuid.uuid4().hex}", "agent_id": "a", "session_id": "s"}
    archive = make_archive(redis_url="redis://127.0.0.1:6379/0")
    settings = ServiceSettings(model=scripted_model(), archive=archive, close_on_shutdown=True)
    with running(settings) as url:
        answer = client.post(f"{url}/v1/compact_context", json=enforce_body(scope)).json()
        assert answer["reason"] == "ARCHIVED_PROPOSAL"
        ref = answer["archive_ref"]
        restored = client.post(f"{url}/v1/restore", json={"scope": scope, "archive_ref": ref}).json()
        assert restored["messages"] == load_scenario("payment_retry")["messages"]
        listed = client.post(f"{url}/v1/archive/list", json={"scope": scope}).json()["snapshots"]
        assert [s["ref"] for s in listed] == [ref]
    from tracetrim import Scope

    async def cleanup() -> None:  # the app closed its client on its own loop; this one is new
        fresh = make_archive(redis_url="redis://127.0.0.1:6379/0")
        assert fresh is not None
        assert await fresh.delete(Scope(**scope), ref)
        await fresh.store.aclose()  # type: ignore[attr-defined]

    asyncio.run(cleanup())


def test_an_unreachable_archive_is_503_without_details(client: httpx.Client) -> None:
    from tracetrim.service import ServiceSettings, make_archive

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    archive = make_archive(redis_url=f"redis://127.0.0.1:{port}/0")
    settings = ServiceSettings(model=scripted_model(), archive=archive, close_on_shutdown=True)
    with running(settings) as url:
        response = client.post(f"{url}/v1/archive/list", json={"scope": SCOPE})
        assert "ConnectionError" in error_of(response, 503, "archive_unavailable")
        answer = client.post(f"{url}/v1/compact_context", json=enforce_body()).json()
    assert (answer["status"], answer["reason"], answer["changed"]) == ("ERROR", "ARCHIVE_ERROR", False)
    assert answer["messages"] == load_scenario("payment_retry")["messages"]


async def test_simultaneous_requests_are_served_independently(base_url: str) -> None:
    scopes = [{"user_id": f"user-{i}", "agent_id": "a", "session_id": "s"} for i in range(6)]
    bodies = [enforce_body(scope) for scope in scopes] + [request_body() for _ in range(4)]
    async with httpx.AsyncClient(timeout=60) as http:
        responses = await asyncio.gather(
            *(http.post(f"{base_url}/v1/compact_context", json=b) for b in bodies)
        )
        answers = [r.json() for r in responses]
        assert all(r.status_code == 200 for r in responses)
        enforced, shadowed = answers[:6], answers[6:]
        assert all(a["reason"] == "ARCHIVED_PROPOSAL" for a in enforced)
        # the same plan everywhere; only the archive reference its markers name differs by scope
        plans = {json.dumps(a["messages"], sort_keys=True).replace(a["archive_ref"], "REF") for a in enforced}
        assert len(plans) == 1
        assert len({a["archive_ref"] for a in enforced}) == 6  # the scope is part of the reference
        assert all(a["reason"] == "SHADOW_PROPOSAL" for a in shadowed)
        assert len({json.dumps(a["proposal"], sort_keys=True) for a in shadowed}) == 1
        restores = await asyncio.gather(
            *(
                http.post(f"{base_url}/v1/restore", json={"scope": s, "archive_ref": a["archive_ref"]})
                for s, a in zip(scopes, enforced, strict=True)
            )
        )
    original = load_scenario("payment_retry")["messages"]
    assert all(r.status_code == 200 and r.json()["messages"] == original for r in restores)


# --- client mistakes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        (b'{"messages": [', "invalid_json", "line 1"),
        (b'{"messages": NaN}', "invalid_json", "NaN"),
        (b"", "empty_body", "empty"),
        (b"\xff\xfe{}", "invalid_json", "UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid_json", "nested too deeply"),
    ],
)
def test_bad_json_is_400(client: httpx.Client, base_url: str, body: bytes, code: str, needle: str) -> None:
    response = client.post(f"{base_url}/v1/compact_context", content=body, headers=JSON)
    assert needle in error_of(response, 400, code)


@pytest.mark.parametrize(
    ("changes", "code", "field", "needle"),
    [
        ({"messages": None}, "invalid_field", "messages", "array"),
        ({"messages": {"role": "user"}}, "invalid_field", "messages", "array"),
        ({"goal": 3}, "invalid_field", "goal", "string"),
        ({"next_action": ["x"]}, "invalid_field", "next_action", "string"),
        ({"eligible_tool_names": None}, "missing_field", "eligible_tool_names", "required"),
        ({"eligible_tool_names": "read_file"}, "invalid_field", "eligible_tool_names", "array"),
        ({"eligible_tool_names": ["read_file", ""]}, "invalid_field", "eligible_tool_names[1]", "empty"),
        ({"protected_call_ids": [1]}, "invalid_field", "protected_call_ids[0]", "number"),
        ({"options": []}, "invalid_field", "options", "object"),
        ({"options": {"keep_treshold": 0.4}}, "unknown_field", "options.keep_treshold", "keep_threshold"),
        ({"options": {"keep_threshold": 2}}, "invalid_field", "options.keep_threshold", "[0, 1]"),
        ({"options": {"max_concurrency": 64}}, "invalid_field", "options.max_concurrency", "32"),
        ({"options": {"pinned_message_ids": "m1"}}, "invalid_field", "options.pinned_message_ids", "single"),
        (
            {"options": {"keep_threshold": 0.3, "discard_threshold": 0.6}},
            "invalid_field",
            "options.discard_threshold",
            "must not exceed",
        ),
        ({"options": {"mode": "off"}}, "invalid_field", "options.mode", "'shadow' or 'enforce'"),
        ({"options": {"budget_s": 0}}, "invalid_field", "options.budget_s", "seconds"),
        ({"options": {"budget_s": 3600}}, "invalid_field", "options.budget_s", "seconds"),
        ({"scope": "u1"}, "invalid_field", "scope", "object"),
        ({"scope": {"user_id": "u", "agent_id": "a"}}, "missing_field", "scope.session_id", "required"),
        ({"scope": {**SCOPE, "user_id": ""}}, "invalid_field", "scope.user_id", "empty"),
        ({"scope": {**SCOPE, "agent_id": 7}}, "invalid_field", "scope.agent_id", "string"),
        ({"scope": {**SCOPE, "tenant": "t"}}, "unknown_field", "scope.tenant", "tenant"),
        ({"chat_id": "x"}, "unknown_field", "chat_id", "chat_id"),
        ({"options": {"mode": "enforce"}}, "scope_required", "scope", "ENFORCE"),
    ],
)
def test_invalid_fields_are_422_naming_the_field(
    client: httpx.Client, base_url: str, changes: dict[str, Any], code: str, field: str, needle: str
) -> None:
    response = client.post(f"{base_url}/v1/compact_context", json=request_body(**changes))
    assert needle in error_of(response, 422, code, field)


def test_a_body_that_is_not_an_object_is_422(client: httpx.Client, base_url: str) -> None:
    for path in ("/v1/compact_context", "/v1/restore", "/v1/archive/list", "/restore", "/archive/list"):
        error_of(client.post(f"{base_url}{path}", json=[1, 2]), 422, "invalid_body")


def test_invalid_messages_are_422_with_the_snapshot_error(client: httpx.Client, base_url: str) -> None:
    messages = copy.deepcopy(load_scenario("payment_retry")["messages"])
    messages[1]["content"][1]["input"] = 5
    response = client.post(f"{base_url}/v1/compact_context", json=request_body(messages=messages))
    message = error_of(response, 422, "invalid_messages", "messages[1].content[1].input")
    assert "message 1" in message and "block 1" in message
    body = request_body()
    del body["messages"]
    error_of(client.post(f"{base_url}/v1/compact_context", json=body), 422, "missing_field", "messages")
    response = client.post(f"{base_url}/v1/compact_context", json=request_body(messages=[{"role": "robot"}]))
    error_of(response, 422, "invalid_messages", "messages[0].role")


def test_enforce_and_restore_without_an_archive_are_409(client: httpx.Client, bare_url: str) -> None:
    error_of(
        client.post(f"{bare_url}/v1/compact_context", json=enforce_body()), 409, "archive_not_configured"
    )
    ref = "0" * 64
    error_of(
        client.post(f"{bare_url}/v1/restore", json={"scope": SCOPE, "archive_ref": ref}),
        409,
        "archive_not_configured",
    )
    error_of(client.post(f"{bare_url}/v1/archive/list", json={"scope": SCOPE}), 409, "archive_not_configured")


def test_restore_mistakes(client: httpx.Client, base_url: str) -> None:
    ref = client.post(f"{base_url}/v1/compact_context", json=enforce_body()).json()["archive_ref"]
    url = f"{base_url}/v1/restore"
    error_of(client.post(url, json={"archive_ref": ref}), 422, "missing_field", "scope")
    error_of(client.post(url, json={"scope": SCOPE}), 422, "missing_field", "archive_ref")
    assert "64 lower-case hex" in error_of(
        client.post(url, json={"scope": SCOPE, "archive_ref": "../../etc/passwd"}),
        422,
        "invalid_field",
        "archive_ref",
    )
    error_of(
        client.post(url, json={"scope": SCOPE, "archive_ref": ref.upper()}),
        422,
        "invalid_field",
        "archive_ref",
    )
    error_of(
        client.post(url, json={"scope": SCOPE, "archive_ref": "f" * 64}),
        404,
        "archive_not_found",
        "archive_ref",
    )
    # another scope does not see this scope's snapshot
    error_of(
        client.post(url, json={"scope": OTHER_SCOPE, "archive_ref": ref}),
        404,
        "archive_not_found",
        "archive_ref",
    )
    message = error_of(
        client.post(url, json={"scope": SCOPE, "archive_ref": ref, "call_ids": ["c1", "nope"]}),
        404,
        "call_not_found",
        "call_ids",
    )
    assert "'nope'" in message and "u1" not in message  # names the id, never the scope's ids
    error_of(
        client.post(url, json={"scope": SCOPE, "archive_ref": ref, "call_ids": []}),
        422,
        "invalid_field",
        "call_ids",
    )
    error_of(
        client.post(url, json={"scope": SCOPE, "archive_ref": ref, "call_ids": "c1"}),
        422,
        "invalid_field",
        "call_ids",
    )
    error_of(
        client.post(url, json={"scope": SCOPE, "archive_ref": ref, "extra": 1}), 422, "unknown_field", "extra"
    )
    error_of(client.post(f"{base_url}/v1/archive/list", json={}), 422, "missing_field", "scope")


def test_a_snapshot_planted_in_another_scope_is_409(
    client: httpx.Client, base_url: str, archive_dir: Path
) -> None:
    from tracetrim import Scope

    ref = client.post(f"{base_url}/v1/compact_context", json=enforce_body()).json()["archive_ref"]
    source = archive_dir / scope_key(Scope(**SCOPE)) / f"{ref}.json"
    planted = archive_dir / scope_key(Scope(**OTHER_SCOPE))
    planted.mkdir(mode=0o700, exist_ok=True)
    shutil.copyfile(source, planted / source.name)
    response = client.post(f"{base_url}/v1/restore", json={"scope": OTHER_SCOPE, "archive_ref": ref})
    assert "another scope" in error_of(response, 409, "scope_mismatch")


def test_unknown_paths_and_methods_are_json(client: httpx.Client, base_url: str) -> None:
    assert "/nowhere" in error_of(client.get(f"{base_url}/nowhere"), 404, "not_found")
    response = client.get(f"{base_url}/v1/compact_context")
    assert "POST" in error_of(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"


# --- size limit ---------------------------------------------------------------------------------------


def test_a_declared_length_over_the_limit_is_413(client: httpx.Client, small_url: str) -> None:
    body = json.dumps(request_body()).encode()
    assert len(body) > 2000
    response = client.post(f"{small_url}/v1/compact_context", content=body, headers=JSON)
    message = error_of(response, 413, "body_too_large")
    assert str(len(body)) in message and "2000" in message


def test_a_streamed_body_over_the_limit_is_413(client: httpx.Client, small_url: str) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer encoding
        yield b'{"messages": [], "goal": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}'

    response = client.post(f"{small_url}/v1/compact_context", content=chunks(), headers=JSON)
    error_of(response, 413, "body_too_large")


def test_a_body_under_the_limit_is_read(client: httpx.Client, small_url: str) -> None:
    body = {"messages": [], "eligible_tool_names": ["read_file"], "goal": "x" * 1500}
    assert len(json.dumps(body)) < 2000
    answer = client.post(f"{small_url}/v1/compact_context", json=body).json()
    assert answer["status"] == "SKIPPED" and answer["messages"] == []


async def test_reading_stops_at_the_limit() -> None:
    """At the ASGI level: a streamed body over the limit is not read past the chunk that crosses it."""
    from tracetrim.service import ServiceSettings, create_app

    app = create_app(ServiceSettings(model=LearnedDecisionModel(), max_body_bytes=2500))
    received = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal received
        received += 1
        return {"type": "http.request", "body": b"x" * 1000, "more_body": received < 1000}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/compact_context",
        "raw_path": b"/v1/compact_context",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 413
    assert received == 3  # 3,000 bytes: the first chunk past 2,500


# --- formats, paths --------------------------------------------------------------------------------


def test_openai_messages_in_and_out_of_the_native_api(client: httpx.Client, base_url: str) -> None:
    """``format`` reads the history as OpenAI chat and answers in it; the archive keeps it neutral."""
    from tracetrim.formats import from_openai_chat, to_openai_chat

    neutral = load_scenario("payment_retry")["messages"]
    for message in neutral:  # OpenAI chat carries no image parts in tool outputs
        for block in message["content"]:
            if block.get("type") == "tool_result" and isinstance(block.get("output"), list):
                block["output"] = [p for p in block["output"] if p.get("type") == "text"]
    chat = to_openai_chat(neutral)
    scope = {"user_id": "openai-user", "agent_id": "a", "session_id": "s"}
    for fmt in ("openai", "auto"):
        answer = client.post(
            f"{base_url}/v1/compact_context", json=enforce_body(scope, messages=chat, format=fmt)
        ).json()
        assert answer["reason"] == "ARCHIVED_PROPOSAL" and answer["format"] == "openai", answer
        assert all(m["role"] in ("system", "user", "assistant", "tool") for m in answer["messages"])
        assert len(json.dumps(answer["messages"])) < len(json.dumps(chat))
        restored = client.post(
            f"{base_url}/v1/restore", json={"scope": scope, "archive_ref": answer["archive_ref"]}
        ).json()["messages"]
        assert restored == from_openai_chat(chat)
    shadow = client.post(f"{base_url}/v1/compact_context", json=request_body(messages=chat, format="openai"))
    assert shadow.json()["messages"] == chat and shadow.json()["proposal"][0]["role"] in ("system", "user")
    bad = client.post(f"{base_url}/v1/compact_context", json=request_body(messages=chat, format="klingon"))
    assert "auto" in error_of(bad, 422, "invalid_field", "format")


def test_the_old_paths_still_answer(client: httpx.Client, base_url: str) -> None:
    """``/restore`` and ``/archive/list`` are aliases of ``/v1/...``; ``/compact_context`` is ReMe's now."""
    ref = client.post(f"{base_url}/v1/compact_context", json=enforce_body()).json()["archive_ref"]
    old = client.post(f"{base_url}/restore", json={"scope": SCOPE, "archive_ref": ref}).json()
    assert old == client.post(f"{base_url}/v1/restore", json={"scope": SCOPE, "archive_ref": ref}).json()
    listed = client.post(f"{base_url}/archive/list", json={"scope": SCOPE}).json()
    assert ref in [s["ref"] for s in listed["snapshots"]]
    reme = client.post(f"{base_url}/compact_context", json=request_body()).json()
    assert set(reme) == {"answer", "success", "metadata"}
