"""Hostile JSON never makes the service answer 5xx (issue 35, point 3): a property over every POST endpoint.

Bodies start from a valid request for each endpoint and get hostile values put anywhere: lone
surrogates in keys and values (as ``\\uD800`` escapes, or as raw bytes that are not UTF-8), huge keys,
deep and wide values, big integers, NaN, NUL and control characters. They are sent as JSON text to
the real app (Starlette's test client, in process, with a real file archive); whatever the body, the
answer is a 4xx or 200 JSON document, never a 500 with a traceback.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests._service_app import require_service_extra
from tests.conftest import load_scenario
from tracetrim.archive import FileArchive
from tracetrim.decision import ScriptedDecisionModel

SCOPE = {"user_id": "u", "agent_id": "a", "session_id": "s"}
SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff", "\ud83d")
BIG_INT = "\x01big\x01"
"""Written as a 5,000-digit integer (past Python's 4,300-digit parsing limit), which json.dumps cannot."""


@pytest.fixture(autouse=True)
def _service_extra() -> None:
    require_service_extra()


def bases() -> dict[str, dict[str, Any]]:
    """A valid body for each POST endpoint, for hostile values to be put into."""
    scenario = load_scenario("payment_retry")
    history = {k: scenario[k] for k in ("messages", "goal", "next_action", "eligible_tool_names")}
    question = {"type": "noul", "instructions": "Is it?", "criteria_true": "yes"}
    restore = {"scope": dict(SCOPE), "archive_ref": "0" * 64, "call_ids": ["c1"], "format": "neutral"}
    return {
        "/v1/compact_context": history | {"options": {"keep_threshold": 0.5}, "scope": dict(SCOPE)},
        "/compact_context": history | {"source_refs": {"c1": "file://x"}, "options": {"drop_threshold": 0.2}},
        "/v1/restore": restore,
        "/restore": restore | {"call_ids": None, "format": "sent"},
        "/v1/archive/list": {"scope": dict(SCOPE)},
        "/archive/list": {"scope": dict(SCOPE)},
        "/v1/systemone": {"model": "jev-latest", "state": {"goal": "x"}, "questions": {"q": question}},
    }


BASES = bases()

_text = st.lists(
    st.one_of(st.characters(), st.sampled_from(SURROGATES), st.sampled_from(["\x00", "\u202e", "\\", '"'])),
    max_size=12,
).map("".join)
_huge_text = st.integers(10_000, 400_000).map(lambda n: "k" * n)
_keys = st.one_of(
    _text, _huge_text, st.sampled_from(["messages", "scope", "options", "content", "id", "type"])
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.just(BIG_INT),
    st.floats(allow_nan=True, allow_infinity=True),
    _text,
    _huge_text,
)


def _deep(levels: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value] if kind == "list" else {"a": value}
    return value


_values = st.one_of(
    st.recursive(
        _scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
        max_leaves=12,
    ),
    st.tuples(st.integers(1, 1500), st.sampled_from(["list", "dict"])).map(lambda a: _deep(*a)),
    st.integers(1000, 30_000).map(lambda n: list(range(n))),  # wide
    st.integers(1000, 20_000).map(lambda n: {f"k{i}": i for i in range(n)}),
)


def _containers(value: Any) -> Iterator[Any]:
    """Every object and array in ``value``, itself included."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


@st.composite
def hostile_requests(draw: st.DrawFn) -> tuple[str, bytes]:
    """An endpoint and a body for it: its valid body with 1 to 3 hostile values put in anywhere."""
    path = draw(st.sampled_from(sorted(BASES)))
    body = copy.deepcopy(BASES[path])
    places = list(_containers(body))  # taken first: hostile values are not themselves edited
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(places))
        value = draw(_values)
        if isinstance(place, dict):
            key = draw(st.one_of(_keys, st.sampled_from(sorted(place) or ["x"])))
            place[key] = value
        elif place and draw(st.booleans()):
            place[draw(st.integers(0, len(place) - 1))] = value
        else:
            place.append(value)
    escaped = draw(st.booleans())  # surrogates as \\uXXXX escapes: JSON text, if not Unicode
    text = json.dumps(body, ensure_ascii=escaped).replace(json.dumps(BIG_INT), "7" * 5000)
    # as raw characters, a lone surrogate becomes bytes that are not UTF-8
    return path, text.encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from tracetrim.service import ServiceSettings, create_app

    archive = FileArchive(Path(tmp_path_factory.mktemp("hostile")))
    app = create_app(
        ServiceSettings(model=ScriptedDecisionModel({}, default=0.5), archive=archive, budget_s=20)
    )
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as test_client:
        for path, body in BASES.items():  # the property starts from bodies the endpoints accept
            served = test_client.post(path, json=body)
            assert served.status_code in (200, 404), (path, served.text)  # 404: no such snapshot
        yield test_client


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(request=hostile_requests())
def test_hostile_json_is_never_answered_5xx(client: Any, request: tuple[str, bytes]) -> None:
    path, body = request
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code < 500, (path, len(body), response.text[:500])
    assert response.headers["content-type"].startswith("application/json")
    document = response.json()
    if response.status_code >= 400:
        assert "error" in document or "detail" in document


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


_tricky = st.text(st.sampled_from(["\\", "u", "d", "8", "c", "D", "0", '"', *SURROGATES, "\ude00", "é"]))


@settings(max_examples=800, deadline=None)
@example(value="\ud83d\ude00")  # a pair: one character
@example(value=["\\ud800", "\\\ud83d\ude00"])  # escaped backslashes, then letters
@example(value={"\ud800": 1})  # the key
@given(
    value=st.recursive(_tricky, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_tricky, inner)),
)
def test_a_body_is_refused_exactly_when_it_would_hold_a_lone_surrogate(value: Any) -> None:
    """The byte-level check agrees with what Python's JSON reader makes of the text: a high and a
    low escape in a row are one character, an escaped backslash before ``ud800`` is no escape."""
    from tracetrim.service import ApiError
    from tracetrim.service._body import parse_json

    text = json.dumps(value, ensure_ascii=True)
    lone = _has_surrogate(json.loads(text))
    try:
        parse_json(text.encode("ascii"))
    except ApiError as exc:
        assert lone and exc.status == 400 and "surrogate" in exc.message, exc.message
    else:
        assert not lone
