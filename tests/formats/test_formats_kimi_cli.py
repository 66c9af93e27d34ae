"""Kimi CLI context files: Kimi's own records stay where they were, a ``_usage`` record counts what a plan
removed off, a turn left with its thinking alone goes, and a compacted file restores byte for byte.

The fixture follows Kimi CLI 1.52's ``Context`` and kosong 0.56's ``Message`` (see
tests/data/agents/README.md); what Kimi sends is `tests._provider_rules.kimi_cli_sent`, written from their
source (both need Python 3.12 or later, so they do not run here).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import _provider_rules as rules
from tests._compact_plans import compact
from tracetrim.cli import main
from tracetrim.formats import HISTORY_FORMATS, detect_format, parse_history_text

KIMI = HISTORY_FORMATS["kimi-cli"]
CONTEXT = Path(__file__).parents[1] / "data" / "agents" / "kimi_cli_context.jsonl"
DROP_ALL = {"actions": ["drop_call"], "tombstones": False, "recent": 1}


def _lines() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = list(parse_history_text(CONTEXT.read_text(encoding="utf-8")))
    return lines


def _usage(lines: list[dict[str, Any]]) -> list[int]:
    return [line["token_count"] for line in lines if line["role"] == "_usage"]


def test_usage_counts_off_what_went_before_it() -> None:
    """Kimi compacts on its own when the last ``_usage`` count nears its window: a count left as it was
    would have it summarise the history tracetrim just made room in."""
    lines = _lines()
    written = KIMI.write(compact(KIMI.read(lines), DROP_ALL))["messages"]
    before, after = _usage(lines), _usage(written)
    assert 0 < before[0] - after[0] < 30  # before the first count, only a call's arguments went
    assert all(a < b for a, b in zip(after, before, strict=True))
    gone = len(json.dumps(lines)) - len(json.dumps(written))
    assert before[-1] - after[-1] == pytest.approx(gone / 4, rel=0.25)  # about what went, in tokens
    assert [line["id"] for line in written if line["role"] == "_checkpoint"] == list(range(7))


def test_a_turn_left_with_its_thinking_alone_goes() -> None:
    lines = _lines()
    written = KIMI.write(compact(KIMI.read(lines), DROP_ALL))["messages"]
    thoughts = [p.get("think") for line in written for p in line.get("content", []) if isinstance(p, dict)]
    assert "Search where load_config is called." not in thoughts  # its turn held calls alone
    assert "Look at the config loader first." in thoughts  # its turn keeps its text
    sent = rules.kimi_cli_sent(written)
    rules.check_openai_chat(sent)
    assert sent[0]["role"] == "system"


def test_restore_gives_back_the_file_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kimi writes its records with ``json.dumps`` and its messages with pydantic, in two JSON styles:
    the original comes back byte for byte."""
    archive = ["--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s"]
    args = ["compact", str(CONTEXT), "--mode", "enforce", *archive, "--eligible-tools", "*"]
    assert main([*args, "--minimum-reduction", "0", "--keep-threshold", "1", "--emit", "history"]) == 0
    written = capsys.readouterr().out
    assert len(written) < len(CONTEXT.read_text(encoding="utf-8"))
    assert detect_format(parse_history_text(written)) == "kimi-cli"
    assert main(["archive", "list", *archive]) == 0
    [snapshot] = json.loads(capsys.readouterr().out)
    assert main(["restore", *archive, snapshot["ref"], "--format", "sent"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == CONTEXT.read_bytes()


def test_told_by_its_records() -> None:
    lines = _lines()
    assert detect_format(lines) == "kimi-cli"
    chat = [line for line in lines if not line["role"].startswith("_")]
    assert detect_format(chat) == "openai"  # without its records it is a chat history
