"""Reading and writing take time in step with the history: shapes a file (or a history from elsewhere)
can take, each of which made a reader or a writer quadratic, finish in a fresh interpreter within the
hang guard's minute (they take a second or two; the quadratic code took minutes at these sizes)."""

from __future__ import annotations

import pytest

from tests._hang_guard import finishes

_NEUTRAL = (
    "import json\n"
    "from tracetrim.formats import HISTORY_FORMATS\n"
    "from tracetrim._marker import tombstone_block\n"
    "def text(t): return {'type': 'text', 'text': t}\n"
    "def message(k, role, blocks): return {'id': f'm{k}', 'role': role, 'content': blocks}\n"
    "def assistants(n): return [message(0, 'user', [text('hi')])] + "
    "[message(k, 'assistant', [text(f'a{k}')]) for k in range(1, n)]\n"
)
"""What every neutral-history snippet starts with."""

SHAPES = {
    "gemini: a turn of calls answered by id": (
        "from tracetrim.formats._gemini import from_gemini\n"
        "n = 64_000\n"
        "calls = [{'functionCall': {'name': 'f', 'args': {}, 'id': f'c{k}'}} for k in range(n)]\n"
        "answers = [{'functionResponse': {'name': 'f', 'response': {}, 'id': f'c{k}'}} for k in range(n)]\n"
        "turns = [{'role': 'user', 'parts': [{'text': 'hi'}]}, {'role': 'model', 'parts': calls},\n"
        "         {'role': 'user', 'parts': answers}]\n"
        "assert len(from_gemini(turns)) == 3\n"
    ),
    "gemini: calls without ids, answers of another name": (
        "from tracetrim.formats._gemini import from_gemini\n"
        "n = 32_000\n"
        "calls = [{'functionCall': {'name': 'a', 'args': {}}} for k in range(n)]\n"
        "answers = [{'functionResponse': {'name': 'b', 'response': {}}} for k in range(n)]\n"
        "turns = [{'role': 'user', 'parts': [{'text': 'hi'}]}, {'role': 'model', 'parts': calls},\n"
        "         {'role': 'user', 'parts': answers}]\n"
        "from_gemini(turns)\n"
    ),
    "ollama: a turn's calls answered in reverse": (
        "from tracetrim.formats import HISTORY_FORMATS\n"
        "n = 64_000\n"
        "calls = [{'function': {'name': 'f', 'arguments': {}}, 'id': f'c{k}'} for k in range(n)]\n"
        "tools = [{'role': 'tool', 'tool_call_id': f'c{k}', 'content': 'ok'} for k in reversed(range(n))]\n"
        "history = [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': '', "
        "'tool_calls': calls}, *tools]\n"
        "HISTORY_FORMATS['ollama'].read(history, {})\n"
    ),
    "tau2: a turn of thousands of calls": (
        "from tracetrim.formats import HISTORY_FORMATS\n"
        "n = 24_000\n"
        "calls = [{'id': f'c{k}', 'name': 'f', 'arguments': {}} for k in range(n)]\n"
        "tools = [{'role': 'tool', 'id': f'c{k}', 'content': 'ok', 'requestor': 'assistant'}\n"
        "         for k in range(n)]\n"
        "history = [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': None, "
        "'tool_calls': calls}, *tools]\n"
        "HISTORY_FORMATS['tau2'].read(history, {})\n"
    ),
    "langchain: assistant turns in a row from elsewhere": (
        _NEUTRAL + "HISTORY_FORMATS['langchain'].write(assistants(40_000))\n"
    ),
    "gemini: assistant turns in a row from elsewhere": (
        _NEUTRAL + "HISTORY_FORMATS['gemini'].write(assistants(160_000))\n"
    ),
    "gemini-cli: a history from elsewhere": (
        _NEUTRAL + "HISTORY_FORMATS['gemini-cli'].write(assistants(64_000))\n"
    ),
    "openai: a run of tombstoned assistant turns": (
        _NEUTRAL + "n = 80_000\n"
        "history = [message(0, 'user', [text('hi')])]\n"
        "for k in range(1, n):\n"
        "    stone = tombstone_block('read', f'c{k}', '{}', '')\n"
        "    history.append(message(k, 'assistant', [text('x' * 200), stone]))\n"
        "written = HISTORY_FORMATS['openai'].write(history)['messages']\n"
        "assert len(written) == 2, len(written)\n"
    ),
    "copilot-cli: thousands of calls, each started and completed, every one dropped": (
        "from tracetrim.formats import HISTORY_FORMATS\n"
        "n = 40_000\n"
        "def event(k, kind, data):\n"
        "    return {'type': kind, 'data': data, 'id': f'e{k}', 'parentId': f'e{k - 1}'}\n"
        "events = [event(0, 'user.message', {'content': 'go'})]\n"
        "for k in range(n):\n"
        "    call = {'toolCallId': f'c{k}', 'name': 'view', 'arguments': {}}\n"
        "    said = {'content': '', 'toolRequests': [call]}\n"
        "    events.append(event(len(events), 'assistant.message', said))\n"
        "    events.append(event(len(events), 'tool.execution_start', {'toolCallId': f'c{k}'}))\n"
        "    done = {'toolCallId': f'c{k}', 'success': True, 'result': {'content': 'x'}}\n"
        "    events.append(event(len(events), 'tool.execution_complete', done))\n"
        "shape = HISTORY_FORMATS['copilot-cli']\n"
        "neutral = shape.read(events, {})\n"
        "kept = [m for m in neutral if not any(b['type'].startswith('tool_') for b in m['content'])]\n"
        "assert len(shape.write(kept)['messages']) == 1\n"
    ),
    "cline: a call of many unclosed tags, and thousands of text-protocol calls": (
        "from tracetrim.formats import HISTORY_FORMATS\n"
        "env = {'type': 'text', 'text': '<environment_details>\\n</environment_details>'}\n"
        "def turn(call, result):\n"
        "    header = {'type': 'text', 'text': '[read_file for ' + result}\n"
        "    return [{'role': 'assistant', 'content': [{'type': 'text', 'text': call}]},\n"
        "            {'role': 'user', 'content': [header, env]}]\n"
        "history = [{'role': 'user', 'content': [{'type': 'text', 'text': 'task'}, env]}]\n"
        "history += turn('<read_file>' + '<path>' * 400_000 + '</read_file>', \"'a'] Result:\\nx\")\n"
        "for k in range(20_000):\n"
        "    history += turn(f'<read_file>\\n<path>f{k}</path>\\n</read_file>', f\"'f{k}'] Result:\\ny\")\n"
        "shape = HISTORY_FORMATS['cline']\n"
        "neutral = shape.read(history, {})\n"
        "assert sum(b['type'] == 'tool_call' for m in neutral for b in m['content']) == 20_001\n"
        "assert shape.write(neutral)['messages'] == history\n"
    ),
}


@pytest.mark.parametrize("code", SHAPES.values(), ids=SHAPES.keys())
def test_each_shape_reads_and_writes_in_time_with_its_size(code: str) -> None:
    finishes(code)
