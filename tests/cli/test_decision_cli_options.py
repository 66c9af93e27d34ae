"""The shared ``--model-*`` CLI options: parsing, precedence over the environment, clear errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tracetrim.cli._errors import CliError
from tracetrim.cli._model_options import add_model_arguments, model_from_args
from tracetrim.decision._chat_logprobs import ChatLogprobsModel
from tracetrim.decision._systemone import SystemOneModel


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    return parser.parse_args(argv)


def test_learned_without_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DECISION_MODEL_BACKEND", raising=False)
    monkeypatch.delenv("DECISION_MODEL_FILE", raising=False)
    from tracetrim.decision import LearnedDecisionModel

    assert isinstance(model_from_args(_parse()), LearnedDecisionModel)


def test_options_override_the_environment_and_the_key_comes_from_a_named_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DECISION_MODEL_BACKEND", "openai")
    monkeypatch.setenv("MY_JEV_KEY", "secret-from-env")
    model = model_from_args(
        _parse(
            "--model-backend",
            "systemone",
            "--model-name",
            "mock",
            "--model-base-url",
            "http://127.0.0.1:9/v1",
            "--model-api-key-env",
            "MY_JEV_KEY",
        )
    )
    assert isinstance(model, SystemOneModel) and model.model == "mock"
    assert model._http._headers()["Authorization"] == "Bearer secret-from-env"


def test_chat_needs_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DECISION_MODEL_NAME", raising=False)
    with pytest.raises(CliError, match="DECISION_MODEL_NAME"):
        model_from_args(_parse("--model-backend", "chat", "--model-base-url", "http://127.0.0.1:9"))
    chat = model_from_args(
        _parse("--model-backend", "chat", "--model-base-url", "http://127.0.0.1:9", "--model-name", "llama")
    )
    assert isinstance(chat, ChatLogprobsModel)


def test_missing_key_variable_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(CliError, match="NOPE_KEY is not set"):
        model_from_args(_parse("--model-backend", "systemone", "--model-api-key-env", "NOPE_KEY"))


def test_bad_backend_is_rejected_by_argparse() -> None:
    with pytest.raises(SystemExit):
        _parse("--model-backend", "gpt")


def test_bad_base_url_is_a_cli_error() -> None:
    with pytest.raises(CliError, match="http"):
        model_from_args(_parse("--model-backend", "systemone", "--model-base-url", "localhost:9"))
