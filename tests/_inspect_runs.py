"""Eval logs written by Inspect AI itself: a tool-using agent on a scripted ``mockllm`` model.

`write_logs` made ``tests/data/agents/inspect_log.json`` and ``inspect_log.eval``; the tests also call
it against the installed Inspect, so a change in what Inspect writes shows up here first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TOOLS = ("read_file", "run")
FILLER = "".join(f"line {n}: def helper_{n}(value): return value * {n}\n" for n in range(60))


def _outputs() -> list[Any]:
    """The model's turns: one call, a reasoning turn with two calls, a failing call, an answer."""
    from inspect_ai.model import (
        ChatMessageAssistant,
        ContentReasoning,
        ContentText,
        ModelOutput,
        ModelUsage,
    )
    from inspect_ai.tool import ToolCall

    def turn(content: Any, *calls: tuple[str, str, dict[str, Any]]) -> Any:
        message = ChatMessageAssistant(
            content=content,
            tool_calls=[ToolCall(id=i, function=f, arguments=a) for i, f, a in calls] or None,
            model="model",
            source="generate",
        )
        output = ModelOutput.from_message(message, stop_reason="tool_calls" if calls else "stop")
        # mockllm counts tokens with tiktoken when usage is missing, which downloads its tables.
        output.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
        return output

    return [
        turn("Let me read the module first.", ("call_1", "read_file", {"path": "src/a.py"})),
        turn(
            [
                ContentReasoning(
                    reasoning="The helper is in b.py; the tests will say which one fails.",
                    signature="rs_0b1c2d3e",
                ),
                ContentText(text="Reading b.py and running the tests."),
            ],
            ("call_2", "read_file", {"path": "src/b.py"}),
            ("call_3", "run", {"command": "pytest -x"}),
        ),
        turn("", ("call_4", "read_file", {"path": "missing.py"})),
        turn("helper_7 multiplies by 7; the failing test expects 8. Fixed by changing the factor."),
    ]


def _task() -> Any:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, system_message, use_tools
    from inspect_ai.tool import ToolError, tool

    @tool
    def read_file() -> Any:
        async def execute(path: str) -> str:
            """Read a file of the repository.

            Args:
                path: The file's path.
            """
            if path == "missing.py":
                raise ToolError(f"{path}: no such file")
            return f"# {path}\n{FILLER}"

        return execute

    @tool
    def run() -> Any:
        async def execute(command: str) -> str:
            """Run a shell command.

            Args:
                command: The command line.
            """
            return f"$ {command}\n{FILLER}FAILED tests/test_b.py::test_helper_7 - assert 49 == 56\n"

        return execute

    return Task(
        dataset=[Sample(input="Why does test_helper_7 fail? Fix it.", target="factor", id="helper-7")],
        solver=[
            system_message("You are a careful software engineer."),
            use_tools(read_file(), run()),
            generate(),
        ],
        scorer=includes(),
        name="fix_helper",
    )


def write_logs(directory: Path) -> dict[str, Path]:
    """Run the task once per log format into ``directory``: ``{"json": path, "eval": path}``."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    paths: dict[str, Path] = {}
    for log_format in ("json", "eval"):
        model = get_model("mockllm/model", custom_outputs=_outputs())
        [log] = inspect_eval(
            _task(),
            model=model,
            log_dir=str(directory / log_format),
            log_format=log_format,
            display="none",
            score_display=False,
        )
        assert log.status == "success", log.error
        paths[log_format] = Path(log.location)
    return paths


if __name__ == "__main__":
    import shutil
    import sys

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/agents")
    work = target / ".inspect-run"
    for fmt, path in write_logs(work).items():
        shutil.copyfile(path, target / f"inspect_log.{fmt}")
    shutil.rmtree(work)
