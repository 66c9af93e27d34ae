"""The ``--model-*`` options every model-using command shares, and the model they build."""

from __future__ import annotations

import argparse
import os

from tracetrim.cli._errors import CliError
from tracetrim.decision._env import BACKENDS, from_env, load_environment
from tracetrim.decision._remote import ModelOrJudge


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --model-backend, --model-name, --model-base-url and --model-api-key-env to ``parser``."""
    group = parser.add_argument_group(
        "decision model",
        "Defaults come from DECISION_MODEL_* in the environment or ./.env; the embedded learned judge "
        "if nothing is set.",
    )
    group.add_argument(
        "--model-backend",
        choices=BACKENDS,
        default=None,
        help="which decision model to use (default: $DECISION_MODEL_BACKEND or learned)",
    )
    group.add_argument(
        "--model-file",
        default=None,
        metavar="FILE",
        help="judge weights written by `tracetrim fit` (learned backend; default: $DECISION_MODEL_FILE "
        "or the shipped weights)",
    )
    group.add_argument(
        "--model-name",
        default=None,
        metavar="NAME",
        help="model name the server knows (default: $DECISION_MODEL_NAME or the backend's)",
    )
    group.add_argument(
        "--model-base-url",
        default=None,
        metavar="URL",
        help="server base URL, with or without /v1 (default: $DECISION_MODEL_BASE_URL)",
    )
    group.add_argument(
        "--model-api-key-env",
        default=None,
        metavar="NAME",
        help="name of the environment variable holding the API key; keys are never "
        "taken on the command line (default: DECISION_MODEL_API_KEY)",
    )


def model_from_args(args: argparse.Namespace) -> ModelOrJudge:
    """The decision model the options ask for, over the environment's defaults; CliError if unusable."""
    env = load_environment()
    overrides = {
        "DECISION_MODEL_BACKEND": getattr(args, "model_backend", None),
        "DECISION_MODEL_NAME": getattr(args, "model_name", None),
        "DECISION_MODEL_BASE_URL": getattr(args, "model_base_url", None),
        "DECISION_MODEL_FILE": getattr(args, "model_file", None),
    }
    env.update({name: value for name, value in overrides.items() if value})
    key_env = getattr(args, "model_api_key_env", None)
    if key_env:
        key = env.get(key_env) or os.environ.get(key_env)
        if not key:
            raise CliError(f"--model-api-key-env: environment variable {key_env} is not set or empty")
        env["DECISION_MODEL_API_KEY"] = key
    try:
        return from_env(env)
    except ImportError as exc:
        raise CliError(f"decision model unavailable: {exc}") from None
    except ValueError as exc:
        raise CliError(f"decision model: {exc}") from None
