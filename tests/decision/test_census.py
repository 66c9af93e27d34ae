"""The judge's one pass also takes the excerpts' census: the same words, the same features, the same plans."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracetrim as tt
import tracetrim.compactor._actions as actions
import tracetrim.compactor._asking as asking
from tracetrim.compactor._excerpt import salience
from tracetrim.decision import LearnedDecisionModel
from tracetrim.decision._census import TermCensus, census_of
from tracetrim.decision._feature_index import (
    HistoryIndex,
    Targets,
    _authored,
    _read,
    authored_text,
    result_text,
)
from tracetrim.decision._history import HistoryView, Judgements, PairJudgement
from tracetrim.decision._text import TEXT_LIMIT, tokens, words

_WORDS = ["parse_frame", "Decoder", "value_7", "the", "error", "ab", "Ünïcode", "K\u212aelvin", "x", "fooBar"]
_ALPHABET = "abcXYZ_019 .,:\n\t-é\u212a"

_text = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.text(alphabet=_ALPHABET, max_size=30)), max_size=30
).map(" ".join)


def _block(kind: str, text: str, *, listed: bool = False) -> dict[str, Any]:
    if kind == "text":
        return {"type": "text", "text": text}
    if kind == "thinking":
        return {"type": "thinking", "text": text}
    if kind == "tool_call":
        return {"type": "tool_call", "id": "c", "name": "t", "input": text, "state": "finished"}
    output: Any = [{"type": "text", "text": part} for part in text.split("\n")] if listed else text
    return {"type": "tool_result", "id": "c", "name": "t", "output": output, "state": "success"}


_blocks = st.lists(
    st.tuples(st.sampled_from(["text", "thinking", "tool_call", "tool_result"]), _text, st.booleans()),
    max_size=4,
)


def _messages(contents: list[list[tuple[str, str, bool]]]) -> list[dict[str, Any]]:
    roles = ["system", "user", "assistant", "assistant"]
    return [
        {
            "id": f"m{n}",
            "role": roles[n % 4],
            "content": [_block(k, t, listed=listed) for k, t, listed in blocks],
        }
        for n, blocks in enumerate(contents)
    ]


def _reference_unique(messages: list[dict[str, Any]]) -> dict[int, set[str]]:
    """The census by its definition: per message, the 3+ character words no other message has."""
    holders: dict[str, set[int]] = {}
    for at, message in enumerate(messages):
        for block in message["content"]:
            for key in ("text", "input", "output"):
                value = block.get(key)
                texts = [value] if isinstance(value, str) else []
                if isinstance(value, list):
                    texts = [str(b.get("text", "")) for b in value if isinstance(b, dict)]
                for text in texts:
                    for word in words(text):
                        if len(word) >= 3:
                            holders.setdefault(word, set()).add(at)
    unique: dict[int, set[str]] = {}
    for word, where in holders.items():
        if len(where) == 1:
            unique.setdefault(next(iter(where)), set()).add(word)
    return unique


@settings(max_examples=200, deadline=None)
@given(st.lists(_blocks, min_size=1, max_size=6))
def test_one_read_gives_the_tokens_the_features_always_read(
    contents: list[list[tuple[str, str, bool]]],
) -> None:
    for message in _messages(contents):
        for census in (True, False):
            read = _read(message["content"], census)
            assert _authored(read) == tokens(authored_text(message))
            expected = [
                (result_text(b), tokens(result_text(b)))
                for b in message["content"]
                if b["type"] == "tool_result"
            ]
            assert read.results == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(_blocks, min_size=1, max_size=6))
def test_the_census_the_judge_fills_is_the_census_by_definition(
    contents: list[list[tuple[str, str, bool]]],
) -> None:
    messages = _messages(contents)
    targets = Targets.of(messages, "parse the frame", "look at Decoder")
    judged = set(range(len(messages)))
    census = TermCensus()
    filled = HistoryIndex(messages, judged, targets, census)
    plain = HistoryIndex(messages, judged, targets)
    assert census.messages == len(messages)
    assert census.unique() == census_of(messages).unique() == _reference_unique(messages)
    assert filled.found == plain.found
    assert [list(f.goal) for f in filled.found.values()] == [list(f.goal) for f in plain.found.values()]
    assert filled.result_lines == plain.result_lines and filled.idf == plain.idf


def test_texts_past_the_clip_are_tokenised_clipped_and_counted_whole() -> None:
    # The judge reads the head and tail of a huge text; the census reads all of it.
    middle = "only_in_the_middle"
    huge = "alpha " * (TEXT_LIMIT // 6) + middle + " omega" * (TEXT_LIMIT // 6)
    messages = [
        {"id": "u", "role": "user", "content": [_block("text", "read it")]},
        {"id": "a", "role": "assistant", "content": [_block("tool_call", huge), _block("tool_result", huge)]},
    ]
    read = _read(messages[1]["content"], True)
    assert middle not in _authored(read) and middle not in read.results[0][1]
    assert _authored(read) == tokens(authored_text(messages[1]))
    census = TermCensus()
    HistoryIndex(messages, {1}, Targets.of(messages, "", ""), census)
    assert middle in census.unique()[1]


def test_a_census_is_used_only_when_it_counted_every_message() -> None:
    history = [{"id": "m", "role": "user", "content": [_block("text", "value_1 fooBar")]}]
    assert salience(history, census_of(history))._census is not None
    assert salience(history, TermCensus())._census is None  # counted no message: read the history
    assert salience(history)._census is None
    assert salience(history).unique_to(0) == {"value_1", "foobar"}
    assert salience(history, census_of(history)).unique_to(0) == {"value_1", "foobar"}


def _history(size: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"id": "m0", "role": "user", "content": [_block("text", "Fix the decoder: frames come out short.")]}
    ]
    for n in range(1, size):
        lines = [f"line {k}: value = helper_{k % 5}(value)" for k in range(60)]
        lines[n % 60] = f"    return decode_frame_v{n}(payload)  # only here"
        call = _block("tool_call", json.dumps({"path": f"src/f{n}.py"})) | {"id": f"c{n}", "name": "read"}
        result = _block("tool_result", "\n".join(lines)) | {"id": f"c{n}", "name": "read"}
        messages.append(
            {"id": f"m{n}", "role": "assistant", "content": [_block("text", f"step {n}"), call, result]}
        )
    return messages


def test_a_plan_is_the_same_whether_the_excerpts_read_the_judges_census_or_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    history = _history(40)
    config = tt.CompactorConfig(eligible_tools={"read"}, minimum_reduction=0.0)

    class Shortening(LearnedDecisionModel):
        """The learned judge's pass (which fills the census), then "keep the call, shorten the result"."""

        def judge(self, view: HistoryView) -> Judgements:
            judged = super().judge(view)  # hands back the census it filled
            shortened = {pair.key: PairJudgement(keep_call=0.9, keep_result=0.1) for pair in view.pairs}
            return attrs.evolve(judged, answers=shortened)

    def plan() -> tt.Plan:
        compactor = tt.Compactor(Shortening(), config=config)
        outcome = asyncio.run(compactor.plan(tt.CompactionRequest(history)))
        assert outcome.plan is not None, outcome
        return outcome.plan

    handed: list[bool] = []
    real_salience = actions.salience

    def salience_spy(messages: Any, census: TermCensus | None = None) -> Any:
        index = real_salience(messages, census)
        handed.append(index._census is not None)
        return index

    monkeypatch.setattr(actions, "salience", salience_spy)
    shared = plan()
    real_view = asking.history_view
    monkeypatch.setattr(asking, "history_view", lambda *a, **k: real_view(*a, **{**k, "census": False}))
    alone = plan()
    assert handed == [True, False]  # the judge's census reached the excerpts, then (no census) did not
    assert any(d.action is tt.Action.DROP_RESULT for d in shared.decisions)  # excerpts were made
    assert shared.messages == alone.messages and shared.decisions == alone.decisions
