"""The judge reads a turn of thousands of parallel calls in time with its size: what a result message
holds was counted once for every pair whose result it holds (quadratic), and is now counted once."""

from __future__ import annotations

from tests._hang_guard import finishes


def test_a_turn_of_many_parallel_calls_plans_in_time_with_its_size() -> None:
    """24,000 calls in one assistant message and their results in the next: minutes before, seconds
    now (run in a fresh interpreter under the hang guard's minute)."""
    finishes(
        "import asyncio, json\n"
        "import tracetrim as tt\n"
        "n = 24_000\n"
        "calls = [{'type': 'tool_call', 'id': f'c{k}', 'name': 'read', 'state': 'finished',\n"
        "          'input': json.dumps({'path': f'src/m{k}.py'})} for k in range(n)]\n"
        "results = [{'type': 'tool_result', 'id': f'c{k}', 'name': 'read', 'state': 'success',\n"
        "            'output': f'def f{k}(x):\\n    return x + {k}\\n'} for k in range(n)]\n"
        "text = lambda t: [{'type': 'text', 'text': t}]\n"
        "history = [{'id': 'u', 'role': 'user', 'content': text('read every module')},\n"
        "           {'id': 'a', 'role': 'assistant', 'content': calls},\n"
        "           {'id': 'r', 'role': 'assistant', 'content': results},\n"
        "           {'id': 'u2', 'role': 'user', 'content': text('now fix m3')},\n"
        "           {'id': 'a2', 'role': 'assistant', 'content': text('on it')}]\n"
        "config = tt.CompactorConfig(eligible_tools={'read'}, minimum_reduction=0.0,\n"
        "                            max_transcript_chars=2_000_000_000, preserve_recent_messages=2)\n"
        "outcome = asyncio.run(tt.Compactor(config=config).plan(tt.CompactionRequest(history)))\n"
        "assert outcome.plan is not None and len(outcome.plan.decisions) == n, outcome.detail\n"
    )
