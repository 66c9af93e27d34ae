"""The README's front page stays true: its library example runs as written, its links resolve, and its
two commands are the ones CI runs."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path
from typing import Any

from tests.conftest import REPO
from tracetrim._examples import load_example

README = (REPO / "README.md").read_text(encoding="utf-8")


def _block(after: str, language: str) -> str:
    found = re.search(rf"## {re.escape(after)}\n.*?```{language}\n(.*?)```", README, re.DOTALL)
    assert found is not None, f"the README's {after!r} example is gone"
    return found.group(1)


def test_the_library_example_runs_as_written(tmp_path: Path, monkeypatch: Any) -> None:
    """With a bundled history under ``messages`` and its tools opted in, ENFORCE archives and adopts."""
    monkeypatch.chdir(tmp_path)
    example = load_example("payment_retry")
    code = _block("In a program", "python").replace(
        '{"read_file", "search_code"}', repr(set(example["eligible_tool_names"]))
    )
    size = sum(len(str(m)) for m in example["messages"]) // 4
    code = code.replace(
        "trigger_tokens=120_000, target_tokens=80_000",
        f"trigger_tokens={size // 2}, target_tokens={size * 2 // 5}",
    )
    assert str(size // 2) in code, "the example no longer sets a token budget"
    body = "async def _main(messages):\n" + textwrap.indent(code, "    ") + "\n    return outcome, messages\n"
    scope: dict[str, Any] = {}
    exec(compile(body, "README.md", "exec"), scope)
    outcome, messages = asyncio.run(scope["_main"](example["messages"]))
    assert outcome.adopted, outcome.detail
    assert messages == outcome.plan.messages and messages != example["messages"]
    assert any((tmp_path / "archive").rglob("*")), "the original was not archived"


def test_every_link_resolves() -> None:
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith("http"):
            assert (REPO / target).exists(), target


def test_the_two_commands_are_the_ones_ci_runs() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert '.venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest' in README
    assert 'pip install --quiet -e ".[test]"' in ci and ci.rstrip().endswith(".venv/bin/python -m pytest")
    assert ".venv/bin/pip install -e . && .venv/bin/tracetrim demo" in README
