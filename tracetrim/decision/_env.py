"""`from_env()`: the decision model the environment (and a ``.env`` file) asks for."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from dotenv import dotenv_values

from tracetrim._validators import FieldValueError

if TYPE_CHECKING:
    from tracetrim.decision._agentscope import AgentScopeClassifierModel
    from tracetrim.decision._remote import ModelOrJudge

BACKENDS = ("learned", "systemone", "openai", "chat", "agentscope")
CLASSIFIERS = ("jev", "openai")
MAX_REPLY_BYTES_ENV = "DECISION_MODEL_MAX_REPLY_BYTES"
_MISSING_KEY = "DECISION_MODEL_API_KEY (or {}) is required for the {} classifier"


def read_dotenv(path: str | os.PathLike[str]) -> dict[str, str]:
    """``KEY=VALUE`` lines of a dotenv file, read by python-dotenv; {} if absent.

    ``export``, quotes and ``#`` comments are allowed; ``${VAR}`` is kept as written (no interpolation),
    and a key without ``=`` is left out. python-dotenv reports a line it cannot parse through its own
    `logging` logger and skips it.
    """
    if not Path(path).is_file():
        return {}
    values = dotenv_values(path, interpolate=False, encoding="utf-8")
    return {key: value for key, value in values.items() if value is not None}


def load_environment(dotenv: str | os.PathLike[str] | None = ".env") -> dict[str, str]:
    """The process environment over the ``.env`` file: the file never overrides what is set."""
    merged = read_dotenv(dotenv) if dotenv is not None else {}
    merged.update(os.environ)
    return merged


def from_env(environ: Mapping[str, str] | None = None) -> ModelOrJudge:
    """The decision model named by ``DECISION_MODEL_BACKEND`` (the learned judge by default).

    ``environ`` defaults to the process environment over ``./.env``. Also read:
    ``DECISION_MODEL_API_KEY``, ``DECISION_MODEL_NAME``, ``DECISION_MODEL_BASE_URL`` (each falling
    back to the backend's own variables, e.g. ``TYPESAFE_API_KEY`` or ``OPENAI_BASE_URL``), and for
    ``learned`` ``DECISION_MODEL_FILE`` (weights from ``tracetrim fit``; the shipped ones if unset), for
    ``agentscope`` ``DECISION_MODEL_CLASSIFIER`` = ``jev`` (default) or ``openai``, and for the HTTP
    backends (``systemone``, ``openai``, ``chat``) ``DECISION_MODEL_MAX_REPLY_BYTES``, the largest
    reply body read (default 8 MiB; a longer reply fails the plan as ``MODEL_ERROR``). Raises
    ``ValueError`` naming the variable for a bad or missing setting.
    """
    env = load_environment() if environ is None else dict(environ)
    backend = (env.get("DECISION_MODEL_BACKEND") or "learned").strip().lower()
    key = env.get("DECISION_MODEL_API_KEY") or None
    name = env.get("DECISION_MODEL_NAME") or None
    base = env.get("DECISION_MODEL_BASE_URL") or None
    if backend == "learned":
        from tracetrim.decision._learned import LearnedDecisionModel

        return LearnedDecisionModel(env.get("DECISION_MODEL_FILE") or None)
    if env.get("DECISION_MODEL_FILE"):
        raise FieldValueError(f"DECISION_MODEL_FILE is for the learned backend, not {backend!r}")
    if backend == "lexical":
        raise FieldValueError(
            "DECISION_MODEL_BACKEND 'lexical' was removed; the learned judge (the default) replaced it. "
            f"Use one of {', '.join(BACKENDS)}"
        )
    if backend == "systemone":
        from tracetrim.decision._systemone import DEFAULT_BASE_URL, DEFAULT_MODEL, SystemOneModel

        return SystemOneModel(
            api_key=key or env.get("TYPESAFE_API_KEY"),
            base_url=base or env.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL,
            model=name or DEFAULT_MODEL,
            max_reply_bytes=_max_reply_bytes(env),
        )
    if backend == "openai":
        from tracetrim.decision._openai_decisions import DEFAULT_BASE_URL as OPENAI_BASE
        from tracetrim.decision._openai_decisions import DEFAULT_MODEL as OPENAI_MODEL
        from tracetrim.decision._openai_decisions import OpenAIDecisionsModel

        return OpenAIDecisionsModel(
            api_key=key or env.get("OPENAI_API_KEY"),
            base_url=base or env.get("OPENAI_BASE_URL") or OPENAI_BASE,
            model=name or OPENAI_MODEL,
            max_reply_bytes=_max_reply_bytes(env),
        )
    if backend == "chat":
        from tracetrim.decision._chat_logprobs import ChatLogprobsModel

        chat_base = base or env.get("OPENAI_BASE_URL")
        if not chat_base:
            raise FieldValueError("DECISION_MODEL_BASE_URL must name the chat server for backend 'chat'")
        if not name:
            raise FieldValueError("DECISION_MODEL_NAME must name the served model for backend 'chat'")
        return ChatLogprobsModel(
            base_url=chat_base,
            model=name,
            api_key=key or env.get("OPENAI_API_KEY"),
            max_reply_bytes=_max_reply_bytes(env),
        )
    if backend == "agentscope":
        return _agentscope_model(env, key, name, base)
    raise FieldValueError(f"DECISION_MODEL_BACKEND must be one of {', '.join(BACKENDS)}, got {backend!r}")


def _max_reply_bytes(env: Mapping[str, str]) -> int:
    from tracetrim.decision._http import DEFAULT_MAX_REPLY_BYTES

    raw = (env.get(MAX_REPLY_BYTES_ENV) or "").strip()
    if not raw:
        return DEFAULT_MAX_REPLY_BYTES
    if not (raw.isascii() and raw.isdigit()) or int(raw) <= 0:
        raise FieldValueError(f"{MAX_REPLY_BYTES_ENV} must be a positive whole number of bytes, got {raw!r}")
    return int(raw)


def _agentscope_model(
    env: Mapping[str, str], key: str | None, name: str | None, base: str | None
) -> AgentScopeClassifierModel:
    from pydantic import SecretStr

    from tracetrim.decision._agentscope import AgentScopeClassifierModel, _classifier_base

    _classifier_base()  # a clear ImportError before touching agentscope's submodules
    kind = (env.get("DECISION_MODEL_CLASSIFIER") or "jev").strip().lower()
    if kind == "jev":
        from agentscope.classifier import JevClassifierModel
        from agentscope.credential import TypeSafeCredential

        jev_key = key or env.get("TYPESAFE_API_KEY")
        if not jev_key:
            raise FieldValueError(_MISSING_KEY.format("TYPESAFE_API_KEY", "jev"))
        jev = TypeSafeCredential(api_key=SecretStr(jev_key), base_url=base or env.get("TYPESAFE_BASE_URL"))
        return AgentScopeClassifierModel(JevClassifierModel(jev, model=name or "jev-latest"))
    if kind == "openai":
        from agentscope.classifier import OpenAIClassifierModel
        from agentscope.credential import OpenAICredential

        openai_key = key or env.get("OPENAI_API_KEY")
        if not openai_key:
            raise FieldValueError(_MISSING_KEY.format("OPENAI_API_KEY", "openai"))
        oa = OpenAICredential(api_key=SecretStr(openai_key), base_url=base or env.get("OPENAI_BASE_URL"))
        return AgentScopeClassifierModel(OpenAIClassifierModel(oa, model=name or "gpt-6-luna"))
    raise FieldValueError(f"DECISION_MODEL_CLASSIFIER must be one of {', '.join(CLASSIFIERS)}, got {kind!r}")
