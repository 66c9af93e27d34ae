"""`create_app`: the Starlette app serving compaction, restore and archive listing over HTTP."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from tracetrim._contract import answer
from tracetrim._convert import to_json_object
from tracetrim._json import compact_json
from tracetrim._snapshot import SnapshotError
from tracetrim.archive import (
    Archive,
    ArchiveCorruptedError,
    ArchiveError,
    ArchiveLimitError,
    ArchiveNotFoundError,
    CallNotFoundError,
    InvalidReferenceError,
    ScopeMismatchError,
    restore_calls,
    restore_sent,
)
from tracetrim.compactor import Compactor, ExecutionOptions, Mode, Outcome, Reason, Status
from tracetrim.decision import DecisionModel, DecisionModelError, from_env
from tracetrim.decision._remote import ModelOrJudge, model_name
from tracetrim.formats import history_format
from tracetrim.service._body import (
    OFF_LOOP_BYTES,
    check_history_size,
    decode_content,
    parse_json,
    read_limited,
)
from tracetrim.service._errors import ApiError
from tracetrim.service._guard import JEV_PREFIXES, RequestGuard, error_body
from tracetrim.service._jev import (
    JevValidationError,
    answers_document,
    binary_questions,
    models_document,
    parse_systemone,
)
from tracetrim.service._planning import PlanningPool, loop_free
from tracetrim.service._reme import parse_reme, previews_only, reme_envelope, reme_failure, written
from tracetrim.service._requests import SENT_FORMAT, CompactCall, parse_compact, parse_list, parse_restore
from tracetrim.service._settings import ServiceSettings

SCHEMA_VERSION = 1
"""Version of every response document's shape; bumped only for incompatible changes."""

_log = logging.getLogger("tracetrim.service")
_T = TypeVar("_T")
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


def compact_document(outcome: Outcome, original: CompactCall | Sequence[Any]) -> dict[str, Any]:
    """The `POST /v1/compact_context` answer for one outcome.

    ``messages`` is always safe to continue with: the new history when ``changed`` (ENFORCE,
    archived, adopted), otherwise the request's own messages, as sent. A SHADOW proposal is in
    ``proposal`` (null otherwise), so a client that blindly adopts ``messages`` never loses anything.
    Both are in the request's ``format`` (Anthropic's ``system`` comes back beside them).
    """
    compact_call = original if isinstance(original, CompactCall) else None
    sent = original.original if isinstance(original, CompactCall) else list(original)

    def write(neutral: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
        if compact_call is None:  # a bare list of neutral messages (the library's own callers)
            return list(neutral), {}
        return written(compact_call, neutral)

    plan = outcome.plan
    contract = answer(outcome, sent)  # `messages` stays as sent (its own format) unless changed
    changed = contract.changed
    extra: dict[str, Any] = {}
    messages = list(sent)
    if changed:
        messages, extra = write(contract.messages)
    proposal = None
    if contract.proposal is not None:
        proposal, extra = write(contract.proposal)
    document = {
        "schema_version": SCHEMA_VERSION,
        "messages": messages,
        "changed": changed,
        "status": outcome.status.value,
        "reason": outcome.reason,
        "detail": outcome.detail,
        "decisions": to_json_object(plan.decisions) if plan is not None else [],
        "stats": to_json_object(plan.stats) if plan is not None else None,
        "archive_ref": plan.archive_ref if plan is not None else "",
        "proposal": proposal,
    }
    if compact_call is not None and compact_call.format.name != "neutral":
        document["format"] = compact_call.format.name
    document.update(extra)
    return document


def render_json(document: Any) -> bytes:
    """``document`` as response bytes, as Starlette's ``JSONResponse`` renders it."""
    return compact_json(document).encode()


async def _archived(operation: Awaitable[_T]) -> _T:
    """Await an archive operation, turning each archive failure into its HTTP error."""
    try:
        return await operation
    except ScopeMismatchError as exc:
        raise ApiError(409, "scope_mismatch", str(exc)) from None
    except CallNotFoundError as exc:
        raise ApiError(404, "call_not_found", str(exc), field="call_ids") from None
    except ArchiveNotFoundError as exc:
        raise ApiError(404, "archive_not_found", str(exc), field="archive_ref") from None
    except InvalidReferenceError as exc:
        raise ApiError(422, "invalid_field", str(exc), field="archive_ref") from None
    except (ArchiveCorruptedError, ArchiveLimitError) as exc:
        # The stored snapshot is not what the writer wrote (or too big to read back): a conflict with
        # the request's reference, not a fault of the server, and nothing is given back.
        _log.error("archive refused a snapshot: %s", exc)
        raise ApiError(409, "archive_corrupted", str(exc), field="archive_ref") from None
    except ArchiveError as exc:
        _log.error("archive failed: %s", exc)
        raise ApiError(503, "archive_unavailable", str(exc)) from None
    except Exception as exc:  # e.g. a Redis connection error: the server's problem, named but not detailed
        _log.exception("archive failed")
        raise ApiError(
            503, "archive_unavailable", f"the archive is unavailable ({type(exc).__name__})"
        ) from None


class _Prepared(NamedTuple):
    """A compaction body made ready to plan: the call, how to answer its outcome, whether calls stay."""

    call: CompactCall
    answer: Callable[[Outcome], dict[str, Any]]
    keep_calls: bool = False


class _Service:
    """The handlers, bound to one settings object, one decision model and one planning pool."""

    def __init__(self, settings: ServiceSettings, model: ModelOrJudge, pool: PlanningPool) -> None:
        self.settings = settings
        self.model = model
        self.pool = pool
        self.judge = settings.systemone_model or _question_model(model)
        """What ``POST /v1/systemone`` serves; None when nothing configured answers questions."""

    async def _body(self, request: Request) -> Any:
        """The body's JSON value, parsed in a planning thread when it is large (`OFF_LOOP_BYTES`)."""
        body = await self._read(request)
        if len(body) > OFF_LOOP_BYTES:
            return await self.pool.run_sync(lambda: parse_json(body))
        return parse_json(body)

    async def _read(self, request: Request) -> bytes:
        """The body's bytes, read within the size limit and the read timeout, decompressed."""
        try:
            async with asyncio.timeout(self.settings.read_timeout_s):
                body = await read_limited(
                    request.headers.get("content-length"), request.stream(), self.settings.max_body_bytes
                )
            return decode_content(body, request.headers.get("content-encoding"), self.settings.max_body_bytes)
        except TimeoutError:
            raise ApiError(
                408,
                "read_timeout",
                f"the request body did not arrive within {self.settings.read_timeout_s:g} seconds",
            ) from None

    def _archive(self, purpose: str) -> Archive:
        if self.settings.archive is None:
            raise ApiError(
                409,
                "archive_not_configured",
                f"this server has no archive configured, so {purpose} is unavailable",
            )
        return self.settings.archive

    async def health(self, request: Request) -> Response:
        """``GET /healthz``: liveness plus what this instance is configured with."""
        from tracetrim import __version__

        return JSONResponse(
            {
                "status": "ok",
                "schema_version": SCHEMA_VERSION,
                "version": __version__,
                "model": type(self.model).__name__,
                "systemone_model": model_name(self.judge) if self.judge is not None else None,
                "archive": self.settings.archive is not None,
                "pid": os.getpid(),
            }
        )

    async def _plan(self, request: Request, prepare: Callable[[Any], _Prepared]) -> Response:
        """Answer one compaction request: read its body here, then do everything else in a planning
        thread (see `PlanningPool`) under the request's deadline.

        In that thread, in order: parse the JSON, refuse a history with too many messages or blocks
        (`check_history_size`: counts only, so a body of many tiny messages costs its parse and no
        more), convert and validate the history (``prepare``), plan, render. The deadline runs from
        the moment the body has been read, so the wait for a thread and the conversion come out of the
        plan's budget: a request whose budget is spent before planning answers ``TIMEOUT`` with its
        own messages, and one that waited for a thread past the server's budget is 503 ``server_busy``.
        Converting runs to its end once begun (it is not interruptible), but the counts bound it.
        """
        body = await self._read(request)
        started = time.monotonic()
        settings = self.settings
        model, bridged = self.pool.adapt(self.model, settings.archive)

        async def work() -> bytes:
            waited = time.monotonic() - started
            if waited >= settings.budget_s:
                raise ApiError(
                    503,
                    "server_busy",
                    f"every planning thread was busy for {waited:.1f} s, past this server's "
                    f"{settings.budget_s:g} s deadline; retry later",
                )
            data = parse_json(body)
            check_history_size(data, max_messages=settings.max_messages, max_blocks=settings.max_blocks)
            prepared = prepare(data)
            call = prepared.call
            archive = None
            if call.mode is Mode.ENFORCE:
                self._archive("ENFORCE mode")
                archive = bridged
            spent = time.monotonic() - started
            if spent >= call.budget_s:
                outcome = Outcome(
                    status=Status.ERROR,
                    reason=Reason.TIMEOUT,
                    detail=f"waiting for a planning thread and reading the history took {spent:.2f} s "
                    f"of the {call.budget_s:g} s budget; nothing was planned",
                )
            else:
                execution = ExecutionOptions(
                    mode=call.mode,
                    budget_s=call.budget_s - spent,
                    version=settings.version,
                    observer=settings.observer,
                )
                planner = previews_only(model, call.config) if prepared.keep_calls else model
                compactor = Compactor(planner, config=call.config, execution=execution, archive=archive)
                outcome = await compactor.plan(call.request)
            return render_json(prepared.answer(outcome))

        return Response(await self.pool.run(work), media_type="application/json")

    async def compact(self, request: Request) -> Response:
        """``POST /v1/compact_context``: plan (SHADOW) or archive-then-adopt (ENFORCE) one history."""
        budget = self.settings.budget_s

        def prepare(data: Any) -> _Prepared:
            call = parse_compact(data, max_budget_s=budget)
            return _Prepared(call, lambda outcome: compact_document(outcome, call))

        return await self._plan(request, prepare)

    async def reme_compact(self, request: Request) -> Response:
        """``POST /compact_context``: ReMe's ``compact_context`` contract and response envelope."""
        budget, has_archive = self.settings.budget_s, self.settings.archive is not None

        def prepare(data: Any) -> _Prepared:
            reme = parse_reme(data, max_budget_s=budget, has_archive=has_archive)
            return _Prepared(
                reme.call, lambda outcome: reme_envelope(reme, outcome), keep_calls=not reme.drop_calls
            )

        try:
            return await self._plan(request, prepare)
        except ApiError as exc:
            if exc.status != 422 and exc.status != 409:
                raise
            return JSONResponse(reme_failure(exc))  # ReMe's job wrapper answers 200, success false

    async def restore(self, request: Request) -> Response:
        """``POST /v1/restore``: a whole archived snapshot, or the original blocks of chosen call ids."""
        call = parse_restore(await self._body(request))
        archive = self._archive("restoring")
        document: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "archive_ref": call.ref}
        if call.call_ids:
            blocks = await _archived(restore_calls(archive, call.scope, call.ref, call.call_ids))
            document["calls"] = [item.as_dict() for item in blocks]
            return JSONResponse(document)
        if call.format != "neutral":
            try:
                sent = await restore_sent(archive, call.scope, call.ref)
            except ArchiveNotFoundError:
                if call.format == SENT_FORMAT:
                    raise ApiError(
                        404,
                        "archive_not_found",
                        f"snapshot {call.ref} holds no sent document",
                        field="archive_ref",
                    ) from None
            else:
                if call.format in (SENT_FORMAT, sent.format):
                    # a string, so the client gets exactly the text that was sent
                    document.update(format=sent.format, sent=sent.data.decode("utf-8"))
                    return JSONResponse(document)
        messages = await _archived(archive.restore(call.scope, call.ref))
        if call.format == "neutral":
            document["messages"] = messages
        else:
            try:
                document.update(
                    format=call.format, messages=history_format(call.format).write_messages(messages)
                )
            except SnapshotError as exc:
                raise ApiError(
                    422,
                    "invalid_field",
                    f"the snapshot cannot be written as {call.format}: {exc}",
                    field="format",
                ) from None
        return JSONResponse(document)

    async def list_archive(self, request: Request) -> Response:
        """``POST /v1/archive/list``: the scope's snapshots, oldest first."""
        scope = parse_list(await self._body(request))
        entries = await _archived(self._archive("listing snapshots").list(scope))
        snapshots = [{"ref": e.ref, "size": e.size, "created_at": e.created_at} for e in entries]
        return JSONResponse({"schema_version": SCHEMA_VERSION, "snapshots": snapshots})

    async def systemone(self, request: Request) -> Response:
        """``POST /v1/systemone``: the decision model, for Jev-compatible clients."""
        try:
            _, state, questions = parse_systemone(await self._body(request))
        except JevValidationError as exc:
            return JSONResponse({"detail": exc.errors}, status_code=422)
        except ApiError as exc:
            if exc.code in ("invalid_json", "empty_body"):  # FastAPI's shape, as Jev servers answer
                detail = [
                    {"loc": ["body"], "msg": f"JSON decode error: {exc.message}", "type": "json_invalid"}
                ]
                return JSONResponse({"detail": detail}, status_code=422)
            return _jev_error(exc.status, exc.code, exc.message)
        asked, by_id = binary_questions(questions)
        judge = self.judge
        if judge is None:
            return _jev_error(501, "no_decision_model", _NO_QUESTION_MODEL.format(type(self.model).__name__))
        try:
            if loop_free(judge):
                response = await self.pool.run(lambda: judge(state, asked))
            else:
                response = await judge(state, asked)
            document = answers_document(questions, by_id, response)
        except (DecisionModelError, ValueError) as exc:
            _log.warning("systemone: the decision model failed: %s", exc)
            return _jev_error(502, "model_error", f"the decision model could not answer: {exc}")
        return JSONResponse(document)

    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: the model names ``POST /v1/systemone`` answers to."""
        if self.judge is None:
            return JSONResponse({"models": []})
        return JSONResponse(models_document(model_name(self.judge)))


_NO_QUESTION_MODEL = (
    "no question-answering decision model is configured: this server's model ({}) judges whole "
    "histories and cannot answer questions about a state. Configure one with DECISION_MODEL_BACKEND "
    "(systemone, openai, chat or agentscope; `tracetrim serve --model-backend ...`), or pass "
    "ServiceSettings(systemone_model=...)"
)


def _question_model(model: ModelOrJudge) -> DecisionModel | None:
    """The model that answers questions about a state: ``model`` when it is a `DecisionModel`, None
    for a judge of whole histories (the learned default), which cannot."""
    return model if isinstance(model, DecisionModel) else None


def _jev_error(status: int, kind: str, message: str) -> Response:
    return JSONResponse({"detail": {"error_type": kind, "message": message}}, status_code=status)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(
        error_body(request.url.path, exc.code, exc.message) if _jev_path(request) else exc.body(),
        status_code=exc.status,
    )


def _jev_path(request: Request) -> bool:
    return request.url.path.startswith(JEV_PREFIXES)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    message = exc.detail
    if exc.status_code == 404:
        message = f"no endpoint {request.url.path}"
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
    body = error_body(request.url.path, code, message)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _client_gone(request: Request, exc: Exception) -> Response:
    # One quiet line: a client hanging up is not a server error, and nobody is left to answer.
    client = request.client
    _log.info(
        "client %s disconnected before its %s %s was read",
        f"{client.host}:{client.port}" if client else "?",
        request.method,
        request.url.path,
    )
    return Response(status_code=499)


async def _internal_error(request: Request, exc: Exception) -> Response:
    # Starlette still re-raises the exception afterwards, so the server log keeps the traceback.
    body = {"error": {"code": "internal_error", "message": "internal server error; see the server log"}}
    return JSONResponse(body, status_code=500)


def create_app(settings: ServiceSettings | None = None) -> ASGIApp:
    """The ASGI app of the service; see the README's "HTTP service" section for every endpoint.

    Native API: ``POST /v1/compact_context``, ``/v1/restore``, ``/v1/archive/list`` (``/restore``
    and ``/archive/list`` are kept as aliases); ReMe's ``POST /compact_context``; Jev's ``POST
    /v1/systemone`` and ``GET /v1/models``; ``GET /healthz``. Every request first passes the
    `RequestGuard` (Host allow-list, Origin, bearer token, JSON only).

    ``settings`` defaults to `ServiceSettings()`: the decision model from
    `tracetrim.decision.from_env`, no archive (SHADOW only), 8 MiB bodies, loopback Host names.
    Run it with any ASGI server, or ``tracetrim serve``. Every error is JSON:
    ``{"error": {"code", "message", "field"?}}`` (Jev's ``{"detail": ...}`` under ``/v1/systemone``).
    """
    settings = settings if settings is not None else ServiceSettings()
    owns_model = settings.model is None
    model = settings.model if settings.model is not None else from_env()
    pool = PlanningPool(settings.planning_threads)
    service = _Service(settings, model, pool)

    owned: list[object] = []
    if owns_model or settings.close_on_shutdown:
        owned.append(model)
    if settings.close_on_shutdown and settings.systemone_model is not None:
        owned.append(settings.systemone_model)
    if settings.close_on_shutdown and settings.archive is not None:
        owned.append(getattr(settings.archive, "store", None))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            pool.close()
            for resource in owned:
                close = getattr(resource, "aclose", None)
                if close is not None:
                    await close()

    routes = [
        Route("/healthz", service.health, methods=["GET"]),
        Route("/health", service.health, methods=["GET"]),
        Route("/v1/compact_context", service.compact, methods=["POST"]),
        Route("/v1/restore", service.restore, methods=["POST"]),
        Route("/v1/archive/list", service.list_archive, methods=["POST"]),
        Route("/v1/systemone", service.systemone, methods=["POST"]),
        Route("/v1/models", service.models, methods=["GET"]),
        Route("/compact_context", service.reme_compact, methods=["POST"]),
        Route("/restore", service.restore, methods=["POST"]),
        Route("/archive/list", service.list_archive, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ApiError: _api_error,
            HTTPException: _http_error,
            ClientDisconnect: _client_gone,
            Exception: _internal_error,
        },
    )
    return RequestGuard(app, allowed_hosts=settings.allowed_hosts, token=settings.token)
