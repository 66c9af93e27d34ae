"""`create_app`: the Starlette app serving compaction, restore and archive listing over HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tracetrim._convert import to_json_object
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
)
from tracetrim.compactor import Compactor, ExecutionOptions, Mode, Outcome, Status
from tracetrim.decision import DecisionModel, from_env
from tracetrim.service._body import parse_json_async, read_limited
from tracetrim.service._errors import ApiError
from tracetrim.service._requests import parse_compact, parse_list, parse_restore
from tracetrim.service._settings import ServiceSettings

SCHEMA_VERSION = 1
"""Version of every response document's shape; bumped only for incompatible changes."""

_log = logging.getLogger("tracetrim.service")
_T = TypeVar("_T")
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


def compact_document(outcome: Outcome, original: Sequence[Any]) -> dict[str, Any]:
    """The `POST /compact_context` answer for one outcome.

    ``messages`` is always safe to continue with: the new history when ``changed`` (ENFORCE,
    archived, adopted), otherwise the request's own messages. A SHADOW proposal is in ``proposal``
    (null otherwise), so a client that blindly adopts ``messages`` never loses anything.
    """
    plan = outcome.plan
    changed = outcome.adopted
    proposal = (
        plan.messages if plan is not None and not changed and outcome.status is Status.DECIDED else None
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "messages": plan.messages if changed and plan is not None else list(original),
        "changed": changed,
        "status": outcome.status.value,
        "reason": outcome.reason,
        "detail": outcome.detail,
        "decisions": to_json_object(plan.decisions) if plan is not None else [],
        "stats": to_json_object(plan.stats) if plan is not None else None,
        "archive_ref": plan.archive_ref if plan is not None else "",
        "proposal": proposal,
    }


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
        _log.error("archive refused a snapshot: %s", exc)
        raise ApiError(500, "archive_corrupted", str(exc)) from None
    except ArchiveError as exc:
        _log.error("archive failed: %s", exc)
        raise ApiError(503, "archive_unavailable", str(exc)) from None
    except Exception as exc:  # e.g. a Redis connection error: the server's problem, named but not detailed
        _log.exception("archive failed")
        raise ApiError(
            503, "archive_unavailable", f"the archive is unavailable ({type(exc).__name__})"
        ) from None


class _Service:
    """The handlers, bound to one settings object and one decision model."""

    def __init__(self, settings: ServiceSettings, model: DecisionModel) -> None:
        self.settings = settings
        self.model = model

    async def _body(self, request: Request) -> Any:
        body = await read_limited(
            request.headers.get("content-length"), request.stream(), self.settings.max_body_bytes
        )
        return await parse_json_async(body)

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
                "archive": self.settings.archive is not None,
            }
        )

    async def compact_context(self, request: Request) -> Response:
        """``POST /compact_context``: plan (SHADOW) or archive-then-adopt (ENFORCE) one history."""
        call = parse_compact(await self._body(request), max_budget_s=self.settings.budget_s)
        archive = self._archive("ENFORCE mode") if call.mode is Mode.ENFORCE else None
        execution = ExecutionOptions(
            mode=call.mode,
            budget_s=call.budget_s,
            version=self.settings.version,
            observer=self.settings.observer,
        )
        compactor = Compactor(self.model, config=call.config, execution=execution, archive=archive)
        outcome = await compactor.plan(call.request)
        return JSONResponse(compact_document(outcome, call.request.messages))

    async def restore(self, request: Request) -> Response:
        """``POST /restore``: a whole archived snapshot, or the original blocks of chosen call ids."""
        call = parse_restore(await self._body(request))
        archive = self._archive("restoring")
        document: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "archive_ref": call.ref}
        if call.call_ids:
            blocks = await _archived(restore_calls(archive, call.scope, call.ref, call.call_ids))
            document["calls"] = [item.as_dict() for item in blocks]
        else:
            document["messages"] = await _archived(archive.restore(call.scope, call.ref))
        return JSONResponse(document)

    async def list_archive(self, request: Request) -> Response:
        """``POST /archive/list``: the scope's snapshots, oldest first."""
        scope = parse_list(await self._body(request))
        entries = await _archived(self._archive("listing snapshots").list(scope))
        snapshots = [{"ref": e.ref, "size": e.size, "created_at": e.created_at} for e in entries]
        return JSONResponse({"schema_version": SCHEMA_VERSION, "snapshots": snapshots})


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body(), status_code=exc.status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    message = exc.detail
    if exc.status_code == 404:
        message = f"no endpoint {request.url.path}"
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _internal_error(request: Request, exc: Exception) -> Response:
    # Starlette still re-raises the exception afterwards, so the server log keeps the traceback.
    body = {"error": {"code": "internal_error", "message": "internal server error; see the server log"}}
    return JSONResponse(body, status_code=500)


def create_app(settings: ServiceSettings | None = None) -> Starlette:
    """The ASGI app: ``POST /compact_context``, ``POST /restore``, ``POST /archive/list``, ``GET /healthz``.

    ``settings`` defaults to `ServiceSettings()`: the decision model from
    `tracetrim.decision.from_env` (lexical unless configured), no archive (SHADOW only), 8 MiB
    bodies. Run it with any ASGI server, e.g. ``uvicorn.run(create_app(...))`` or ``tracetrim serve``.
    Every error is JSON: ``{"error": {"code", "message", "field"?}}``.
    """
    settings = settings if settings is not None else ServiceSettings()
    owns_model = settings.model is None
    model = settings.model if settings.model is not None else from_env()
    service = _Service(settings, model)

    owned: list[object] = []
    if owns_model or settings.close_on_shutdown:
        owned.append(model)
    if settings.close_on_shutdown and settings.archive is not None:
        owned.append(getattr(settings.archive, "store", None))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            for resource in owned:
                close = getattr(resource, "aclose", None)
                if close is not None:
                    await close()

    routes = [
        Route("/healthz", service.health, methods=["GET"]),
        Route("/health", service.health, methods=["GET"]),
        Route("/compact_context", service.compact_context, methods=["POST"]),
        Route("/restore", service.restore, methods=["POST"]),
        Route("/archive/list", service.list_archive, methods=["POST"]),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _internal_error},
    )
