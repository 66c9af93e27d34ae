"""`from_env()` and the ``.env`` reader: which backend, which settings, nothing overridden."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from tracetrim.decision._chat_logprobs import ChatLogprobsModel
from tracetrim.decision._env import from_env, load_environment, read_dotenv
from tracetrim.decision._openai_decisions import OpenAIDecisionsModel
from tracetrim.decision._systemone import SystemOneModel


def test_learned_is_the_default_and_the_retired_lexical_name_says_so() -> None:
    from tracetrim.decision import LearnedDecisionModel

    assert isinstance(from_env({}), LearnedDecisionModel)
    assert isinstance(from_env({"DECISION_MODEL_BACKEND": "LEARNED"}), LearnedDecisionModel)
    with pytest.raises(
        ValueError, match=r"'lexical' was removed; the learned judge \(the default\) replaced it"
    ):
        from_env({"DECISION_MODEL_BACKEND": "LEXICAL"})


def test_model_file_selects_fitted_weights(tmp_path: Path) -> None:
    from tracetrim.decision import LearnedDecisionModel, WeightsError
    from tracetrim.decision._learned import default_weights

    path = tmp_path / "mine.json"
    path.write_text(attrs.evolve(default_weights(), version="mine").to_json(), encoding="utf-8")
    model = from_env({"DECISION_MODEL_FILE": str(path)})
    assert isinstance(model, LearnedDecisionModel) and model.name == "learned:mine"
    with pytest.raises(ValueError, match=r"DECISION_MODEL_FILE is for the learned backend"):
        from_env({"DECISION_MODEL_BACKEND": "systemone", "DECISION_MODEL_FILE": str(path)})
    path.write_text('{"features": []}', encoding="utf-8")
    with pytest.raises(WeightsError, match=r"mine.json: not a judge weights file"):
        from_env({"DECISION_MODEL_FILE": str(path)})


def test_systemone_from_generic_and_backend_variables() -> None:
    model = from_env(
        {
            "DECISION_MODEL_BACKEND": "systemone",
            "DECISION_MODEL_API_KEY": "k1",
            "DECISION_MODEL_BASE_URL": "http://127.0.0.1:9/v1",
            "DECISION_MODEL_NAME": "mock",
        }
    )
    assert isinstance(model, SystemOneModel) and model.model == "mock"
    assert model._http.root == "http://127.0.0.1:9" and model._http._headers()["Authorization"] == "Bearer k1"
    fallback = from_env({"DECISION_MODEL_BACKEND": "systemone", "TYPESAFE_API_KEY": "k2"})
    assert isinstance(fallback, SystemOneModel) and fallback.model == "jev-latest"
    assert fallback._http.root == "https://api.typesafe.ai"
    assert fallback._http._headers()["Authorization"] == "Bearer k2"


def test_openai_and_chat() -> None:
    openai = from_env({"DECISION_MODEL_BACKEND": "openai", "OPENAI_API_KEY": "sk-1"})
    assert isinstance(openai, OpenAIDecisionsModel) and openai._http.root == "https://api.openai.com"
    chat = from_env(
        {
            "DECISION_MODEL_BACKEND": "chat",
            "DECISION_MODEL_BASE_URL": "http://127.0.0.1:8000/v1",
            "DECISION_MODEL_NAME": "llama3",
        }
    )
    assert isinstance(chat, ChatLogprobsModel) and chat.model == "llama3"
    with pytest.raises(ValueError, match="DECISION_MODEL_NAME"):
        from_env({"DECISION_MODEL_BACKEND": "chat", "DECISION_MODEL_BASE_URL": "http://h"})
    with pytest.raises(ValueError, match="DECISION_MODEL_BASE_URL"):
        from_env({"DECISION_MODEL_BACKEND": "chat", "DECISION_MODEL_NAME": "m"})


def test_agentscope_builds_a_wrapped_classifier() -> None:
    pytest.importorskip("agentscope.classifier")
    from tracetrim.decision._agentscope import AgentScopeClassifierModel

    model = from_env({"DECISION_MODEL_BACKEND": "agentscope", "DECISION_MODEL_API_KEY": "secret-as"})
    assert isinstance(model, AgentScopeClassifierModel)
    assert type(model.classifier).__name__ == "JevClassifierModel" and "secret-as" not in repr(model)
    openai = from_env(
        {
            "DECISION_MODEL_BACKEND": "agentscope",
            "DECISION_MODEL_CLASSIFIER": "openai",
            "OPENAI_API_KEY": "sk-x",
        }
    )
    assert type(openai.classifier).__name__ == "OpenAIClassifierModel"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="required"):
        from_env({"DECISION_MODEL_BACKEND": "agentscope"})
    with pytest.raises(ValueError, match="DECISION_MODEL_CLASSIFIER"):
        from_env(
            {
                "DECISION_MODEL_BACKEND": "agentscope",
                "DECISION_MODEL_CLASSIFIER": "x",
                "DECISION_MODEL_API_KEY": "k",
            }
        )


def test_unknown_backend_names_the_choices() -> None:
    with pytest.raises(ValueError, match="learned, systemone, openai, chat, agentscope"):
        from_env({"DECISION_MODEL_BACKEND": "gpt"})


def test_dotenv_is_read_without_overriding_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text(
        "# settings\nexport DECISION_MODEL_BACKEND=systemone\nDECISION_MODEL_NAME='mock'\n"
        'DECISION_MODEL_API_KEY="from-file"\n'
        "DECISION_MODEL_BASE_URL=http://127.0.0.1:9 # local\nnot a line\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DECISION_MODEL_API_KEY", "from-environment")
    monkeypatch.delenv("DECISION_MODEL_BACKEND", raising=False)
    assert read_dotenv(tmp_path / ".env")["DECISION_MODEL_BASE_URL"] == "http://127.0.0.1:9"
    env = load_environment()
    assert env["DECISION_MODEL_API_KEY"] == "from-environment" and env["DECISION_MODEL_NAME"] == "mock"
    model = from_env()
    assert isinstance(model, SystemOneModel) and model.model == "mock"
    assert model._http._headers()["Authorization"] == "Bearer from-environment"
    import os

    assert "DECISION_MODEL_BACKEND" not in os.environ


def test_missing_dotenv_is_fine(tmp_path: Path) -> None:
    assert read_dotenv(tmp_path / "absent.env") == {}


def test_dotenv_keeps_values_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """python-dotenv reads it: no ``${VAR}`` interpolation, bare keys left out, '#' in values kept."""
    monkeypatch.setenv("HOME_FOR_TEST", "/somewhere")
    path = tmp_path / ".env"
    path.write_text(
        'KEY=ab$cd${HOME_FOR_TEST}\nBARE\nHASH=x#y\nQUOTED="a # b"\nMULTI="one\ntwo"\nEMPTY=\n',
        encoding="utf-8",
    )
    assert read_dotenv(path) == {
        "KEY": "ab$cd${HOME_FOR_TEST}",
        "HASH": "x#y",
        "QUOTED": "a # b",
        "MULTI": "one\ntwo",
        "EMPTY": "",
    }
    assert read_dotenv(tmp_path) == {}  # a folder is not a dotenv file
