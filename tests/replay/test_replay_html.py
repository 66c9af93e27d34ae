"""The replay's HTML page in headless Chromium: self-contained, no console errors, every chart drawn."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from tests._replay_runs import DropEvery, lookup_run
from tests.audit.test_audit_html import Charts, console_messages, run_chromium
from tracetrim.replay import HostRule, KeepLastN, NoCompaction, ReplayReport, replay_runs, tracetrim_threshold
from tracetrim.replay._html import chart_names, render_html, sawtooth_runs

HOST = HostRule(trigger_tokens=1_500, target_tokens=1_000)


@pytest.fixture(scope="module")
def report() -> ReplayReport:
    """Two datasets, so the page has a section for all runs and one per dataset."""
    runs = [lookup_run(), attrs.evolve(lookup_run(12), name="longer", dataset="other")]
    strategies = [NoCompaction(), KeepLastN(2), tracetrim_threshold(DropEvery(), tombstones=True)]
    return replay_runs(runs, strategies, HOST)


@pytest.fixture(scope="module")
def page(report: ReplayReport, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page written to a file."""
    path = tmp_path_factory.mktemp("replay") / "replay.html"
    path.write_text(render_html(report), encoding="utf-8")
    return path


def test_the_page_is_self_contained_and_names_every_strategy(report: ReplayReport, page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    outside = re.findall(r"(?:https?:)?//[\w.-]+", html.replace("http://www.w3.org/2000/svg", ""))
    assert outside == []
    assert not re.search(r"<(?:link|img|iframe)\b|\bsrc=|@import|url\(", html)
    for info in report.strategies:
        assert info.name in html and info.models.replace("'", "&#x27;") in html
    # Totals charts for all runs and for each dataset, then one sawtooth per strategy but "none" per run.
    names = chart_names(report)
    assert names[:12] == [
        f"{kind}{suffix}"
        for suffix in ("", "-1", "-2")
        for kind in ("billed", "cached", "losses", "planning")
    ]
    # The run whose uncompacted context peaks highest is also the one compacted most: one run drawn.
    assert sawtooth_runs(report) == ["longer"]
    assert [n for n in names if n.startswith("sawtooth")] == ["sawtooth-0-1", "sawtooth-0-2"]


def test_chromium_draws_every_chart_without_console_errors(
    report: ReplayReport, page: Path, tmp_path: Path
) -> None:
    shown = run_chromium(page, tmp_path / "profile", "--dump-dom")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert console_messages(shown.stderr) == []
    parsed = Charts()
    parsed.feed(shown.stdout)
    names = chart_names(report)
    assert parsed.body.get("data-charts") == str(len(names))  # the inline script ran to the end
    assert [chart["data-chart"] for chart in parsed.charts] == names
    for chart, shapes in zip(parsed.charts, parsed.shapes, strict=True):
        name = chart["data-chart"]
        assert chart.get("data-empty") is None, f"{name} has nothing to draw"
        width, height = (int(n) for n in (chart.get("data-drawn") or "0x0").split("x"))
        assert width > 100 and height > 50 and shapes >= 3, (name, chart.get("data-drawn"), shapes)

    screenshot = tmp_path / "replay.png"
    shot = run_chromium(page, tmp_path / "profile", "--window-size=1280,2400", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    data = screenshot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a blank page compresses to a few KB


def test_a_report_with_nothing_lost_says_so_instead_of_drawing_empty_bars() -> None:
    report = replay_runs([lookup_run(use_at_end=False)], [NoCompaction()], HOST)
    html = render_html(report)
    assert 'data-chart="losses" data-empty="true"' in html
    assert "nothing used later was missing" in html
