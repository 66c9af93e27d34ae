"""`tracetrim serve`: run the HTTP service (needs the ``service`` extra: starlette and uvicorn)."""

from __future__ import annotations

import argparse
import importlib

import attrs

from tracetrim.cli._errors import CliError
from tracetrim.cli._model_options import add_model_arguments, model_from_args


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _port(text: str) -> int:
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be at most 65535, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` sub-command."""
    parser = subparsers.add_parser(
        "serve",
        help="run the HTTP service: POST /compact_context, /restore, /archive/list; GET /healthz",
        description="Serve compaction over HTTP (needs: pip install 'tracetrim[service]'). Without an "
        "archive only SHADOW compaction is available; ENFORCE and restores answer 409.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8080, help="port to listen on (default 8080)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--archive", metavar="DIR", help="archive originals as files in this folder")
    where.add_argument("--redis-url", metavar="URL", help="archive originals in Redis (redis://host:6379/0)")
    parser.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=None,
        metavar="N",
        help="larger request bodies are refused with 413 (default 8 MiB)",
    )
    parser.add_argument(
        "--budget",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="decision deadline per plan, seconds",
    )
    parser.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="info",
        help="server log level (default info)",
    )
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Build the app from the flags and serve it until interrupted."""
    try:
        for module in ("starlette", "uvicorn"):
            importlib.import_module(module)
    except ImportError:
        raise CliError("serve needs the service extra: install tracetrim[service]") from None
    import uvicorn

    from tracetrim.service import ServiceSettings, create_app, make_archive

    model = model_from_args(args)
    try:
        archive = make_archive(args.archive, args.redis_url)
    except ImportError:
        raise CliError("--redis-url needs the redis extra: install tracetrim[redis]") from None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    settings = ServiceSettings(model=model, archive=archive, budget_s=args.budget, close_on_shutdown=True)
    if args.max_body_bytes is not None:
        settings = attrs.evolve(settings, max_body_bytes=args.max_body_bytes)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level)
    return 0
