"""The service on a real server for tests: the app of `ServiceSettings` (the learned judge unless
given) behind `tests._asgi.ThreadedServer`, and the check that the service extra is installed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from tests.conftest import service_unavailable


def require_service_extra() -> None:
    """Skip (fail in CI) when starlette or uvicorn is not installed."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        service_unavailable("starlette/uvicorn are not installed (pip install tracetrim[service])")


@contextlib.contextmanager
def serving(limits: Mapping[str, Any] | None = None, **settings: Any) -> Iterator[Any]:
    """``create_app(ServiceSettings(**settings))`` on a free loopback port (with ``limits``, under the
    uvicorn configuration of `tracetrim serve`); yields the running `ThreadedServer`."""
    from tests._asgi import ThreadedServer
    from tracetrim.decision import LearnedDecisionModel
    from tracetrim.service import ServerLimits, ServiceSettings, create_app

    settings.setdefault("model", LearnedDecisionModel())
    app = create_app(ServiceSettings(**settings))
    server_limits = ServerLimits(**limits) if limits is not None else None
    with ThreadedServer(app, lifespan="on", limits=server_limits) as server:
        yield server
