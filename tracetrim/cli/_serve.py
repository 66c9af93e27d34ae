"""`tracetrim serve`: run the HTTP service (needs the ``service`` extra: starlette and uvicorn)."""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import os
from typing import Any

from tracetrim._json import compact_json, strict_loads
from tracetrim.cli._arg_types import port, positive_float, positive_int
from tracetrim.cli._errors import CliError
from tracetrim.cli._model_options import add_model_arguments, model_from_args

ARGS_ENV = "TRACETRIM_SERVE_ARGS"
"""How ``--workers`` processes receive the flags of the ``serve`` that started them (JSON)."""

TOKEN_ENV = "TRACETRIM_API_TOKEN"
"""The bearer token, when ``--token`` is not given (also how ``--workers`` processes receive it)."""

_WILDCARDS = ("0.0.0.0", "::", "")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` sub-command."""
    parser = subparsers.add_parser(
        "serve",
        help="run the HTTP service: /v1/compact_context, ReMe's /compact_context, /v1/systemone, ...",
        description="Serve compaction over HTTP (needs: pip install 'tracetrim[service]'). Without an "
        "archive only SHADOW compaction is available; ENFORCE and restores answer 409.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port, default=8080, help="port to listen on (default 8080)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--archive",
        metavar="URL",
        help="where originals are archived: a folder, file:DIR, sqlite:PATH, redis://..., postgresql://...",
    )
    where.add_argument("--redis-url", metavar="URL", help="the same as --archive redis://...")
    parser.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=None,
        metavar="N",
        help="larger request bodies are refused with 413 (default 8 MiB)",
    )
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=30.0,
        metavar="S",
        help="decision deadline per plan, seconds",
    )
    security = parser.add_argument_group("security")
    security.add_argument(
        "--token",
        default=None,
        help=f"require Authorization: Bearer TOKEN (default: ${TOKEN_ENV}); needed off loopback",
    )
    security.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="NAME",
        help="a Host name clients use (repeatable; *.example.com, or * for any); default: loopback names",
    )
    limits = parser.add_argument_group("limits")
    limits.add_argument(
        "--workers", type=positive_int, default=1, metavar="N", help="server processes (default 1)"
    )
    limits.add_argument(
        "--planning-threads",
        type=positive_int,
        default=4,
        metavar="N",
        help="plans run at once per process, off the event loop (default 4)",
    )
    limits.add_argument(
        "--max-connections",
        type=positive_int,
        default=256,
        metavar="N",
        help="more open connections get 503 (default 256 per process)",
    )
    limits.add_argument(
        "--max-messages",
        type=positive_int,
        default=None,
        metavar="N",
        help="a history of more messages is refused with 413 before any conversion (default 50,000)",
    )
    limits.add_argument(
        "--max-blocks",
        type=positive_int,
        default=None,
        metavar="N",
        help="... or of more content blocks and tool calls in all (default 250,000)",
    )
    limits.add_argument(
        "--max-idle-per-client",
        type=positive_int,
        default=None,
        metavar="N",
        help="idle connections one client address may hold; its longest-idle close first (default 16)",
    )
    limits.add_argument(
        "--max-connections-per-client",
        type=positive_int,
        default=None,
        metavar="N",
        help="connections one client address may open (default 64; raise both behind a proxy)",
    )
    limits.add_argument(
        "--header-timeout",
        type=positive_float,
        default=10.0,
        metavar="S",
        help="close a connection without a complete request head after S seconds (default 10)",
    )
    limits.add_argument(
        "--read-timeout",
        type=positive_float,
        default=30.0,
        metavar="S",
        help="answer 408 to a request body not received within S seconds (default 30)",
    )
    limits.add_argument(
        "--keep-alive",
        type=positive_int,
        default=5,
        metavar="S",
        help="close an idle kept-alive connection after S seconds (default 5)",
    )
    parser.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="info",
        help="server log level (default info)",
    )
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _allowed_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    from tracetrim.service import LOOPBACK_HOSTS

    if args.allowed_host:
        return (*LOOPBACK_HOSTS, *args.allowed_host)
    if _loopback(args.host):
        return LOOPBACK_HOSTS
    if args.host in _WILDCARDS:
        raise CliError(
            f"--host {args.host} listens on every interface: name the Host clients will use with "
            "--allowed-host NAME (repeatable; '*' accepts any)"
        )
    return (*LOOPBACK_HOSTS, args.host)


def _token(args: argparse.Namespace) -> str | None:
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    if token is None and not _loopback(args.host):
        raise CliError(
            f"--host {args.host} is reachable from other machines: set a bearer token with "
            f"--token or {TOKEN_ENV} (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def _settings(args: argparse.Namespace) -> Any:
    """The `ServiceSettings` the flags describe (the model and archive built here)."""
    from tracetrim.archive import ArchiveError
    from tracetrim.service import ServiceSettings, make_archive

    token = _token(args)  # first: an unauthenticated server off loopback is the worse mistake
    allowed = _allowed_hosts(args)
    model = model_from_args(args)
    try:
        archive = make_archive(url=args.archive, redis_url=args.redis_url)
    except (ValueError, ArchiveError) as exc:
        raise CliError(f"--archive: {exc}") from None
    if args.workers > 1 and (args.archive or "").lower().startswith("memory:"):
        raise CliError("--workers N needs an archive every process shares; memory: is per process")
    options: dict[str, Any] = {}
    for name in ("max_body_bytes", "max_messages", "max_blocks"):
        if getattr(args, name, None) is not None:
            options[name] = getattr(args, name)
    try:
        return ServiceSettings(
            model=model,
            archive=archive,
            budget_s=args.budget,
            allowed_hosts=allowed,
            token=token,
            planning_threads=args.planning_threads,
            read_timeout_s=args.read_timeout,
            close_on_shutdown=True,
            **options,
        )
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc).replace("ServiceSettings.", "")) from None


def _limits(args: argparse.Namespace) -> Any:
    from tracetrim.service import ServerLimits

    per_client = {
        name: getattr(args, name)
        for name in ("max_idle_per_client", "max_connections_per_client")
        if getattr(args, name, None) is not None
    }
    return ServerLimits(
        max_connections=args.max_connections,
        header_timeout_s=args.header_timeout,
        keep_alive_s=args.keep_alive,
        **per_client,
    )


def worker_app() -> Any:
    """The app of one ``--workers`` process, from the flags its parent left in `ARGS_ENV`."""
    from tracetrim.service import create_app

    values = strict_loads(os.environ[ARGS_ENV])
    return create_app(_settings(argparse.Namespace(**values)))


def run(args: argparse.Namespace) -> int:
    """Build the app from the flags and serve it until interrupted."""
    try:
        for module in ("starlette", "uvicorn"):
            importlib.import_module(module)
    except ImportError:
        raise CliError("serve needs the service extra: install tracetrim[service]") from None
    from tracetrim.service import create_app, serve, server_config

    settings = _settings(args)  # refuses bad flags here, before any process starts
    limits = _limits(args)
    if args.workers > 1:
        # The token travels in the environment, not in the flags every process can list.
        values = {k: v for k, v in vars(args).items() if k != "handler"} | {"token": None}
        os.environ[ARGS_ENV] = compact_json(values)
        if settings.token is not None:
            os.environ[TOKEN_ENV] = settings.token
        app: Any = f"{__name__}:worker_app"
    else:
        app = create_app(settings)
    config = server_config(
        app,
        host=args.host,
        port=args.port,
        limits=limits,
        workers=args.workers,
        log_level=args.log_level,
        factory=args.workers > 1,
    )
    if not serve(config):
        raise CliError(f"the server could not start on {args.host}:{args.port} (see the log above)")
    return 0
