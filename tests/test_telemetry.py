"""`SpanObserver`: one OpenTelemetry span per plan, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tracetrim._examples import load_example
from tracetrim.archive import KeyValueArchive, MemoryStore

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

SCOPE = tt.Scope("u", "a", "s")


def _tracer() -> tuple[Any, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


def _compactor(observer: Any, mode: tt.Mode = tt.Mode.ENFORCE) -> tuple[tt.Compactor, dict[str, Any]]:
    example = load_example("payment_retry")
    compactor = tt.Compactor(
        config=tt.CompactorConfig(eligible_tools=set(example["eligible_tool_names"]), minimum_reduction=0.0),
        execution=tt.ExecutionOptions(mode=mode, observer=observer),
        archive=KeyValueArchive(MemoryStore()),
    )
    return compactor, example


async def test_a_plan_is_one_span_under_the_hosts_span(tmp_path: Path) -> None:
    tracer, exporter = _tracer()
    records = tt.JsonLinesObserver(tmp_path / "records.jsonl", pairs=True)
    observer = tt.SpanObserver(tracer, then=records)
    compactor, example = _compactor(observer)
    with tracer.start_as_current_span("agent step") as step:
        outcome = await compactor.plan(tt.CompactionRequest(example["messages"], scope=SCOPE))
    assert outcome.adopted, outcome.detail
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"agent step", "tracetrim.compact"}
    span = spans["tracetrim.compact"]
    assert span.parent is not None and span.parent.span_id == step.get_span_context().span_id
    attributes = dict(span.attributes or {})
    stats = outcome.plan.stats
    assert attributes["tracetrim.mode"] == "enforce" and attributes["tracetrim.status"] == "DECIDED"
    assert attributes["tracetrim.reason"] == "ARCHIVED_PROPOSAL"
    assert (attributes["tracetrim.tokens_before"], attributes["tracetrim.tokens_after"]) == (
        stats.tokens_before,
        stats.tokens_after,
    )
    touched = sum(d.action is not tt.Action.KEEP for d in outcome.plan.decisions)
    assert touched > 0 and attributes["tracetrim.pairs_touched"] == touched
    assert attributes["tracetrim.archive_ref"] == outcome.plan.archive_ref
    assert attributes["tracetrim.scope.user_id"] == "u"
    assert span.end_time - span.start_time == pytest.approx(stats.elapsed_ms * 1e6, rel=0.01)
    # nothing of the history's text goes into telemetry
    text = json.dumps(attributes)
    said = [b["text"][:40] for m in example["messages"] for b in m["content"] if b.get("text")]
    assert said and not any(piece in text for piece in said)
    (line,) = (tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["pairs"], "the next observer got the record with the detail it asked for"


async def test_an_error_outcome_marks_the_span() -> None:
    tracer, exporter = _tracer()
    compactor, example = _compactor(tt.SpanObserver(tracer))
    outcome = await compactor.plan(tt.CompactionRequest(example["messages"]))  # ENFORCE without a scope
    assert outcome.status is tt.Status.ERROR
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and span.status.description == outcome.detail
    assert span.attributes is not None and span.attributes["tracetrim.reason"] == "SCOPE_REQUIRED"


async def test_nothing_is_traced_without_the_observer() -> None:
    tracer, exporter = _tracer()
    compactor, example = _compactor(None, tt.Mode.SHADOW)
    with tracer.start_as_current_span("agent step"):
        await compactor.plan(tt.CompactionRequest(example["messages"], scope=SCOPE))
    assert [s.name for s in exporter.get_finished_spans()] == ["agent step"]
