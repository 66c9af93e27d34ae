"""`tracetrim audit --html` on records replayed from the shared real runs, opened in headless Chromium.

The browser is Debian's ``chromium`` (``.ci/run`` installs it), driven directly: ``--dump-dom`` returns
the page after its inline script marked every chart with the size it drew at, ``--enable-logging``
shows console messages, ``--screenshot`` saves a PNG. A proxy that refuses everything stands in for
"no network": a report that fetched anything would log a console error.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import DATA, require_data, service_unavailable
from tracetrim.audit._html import CHARTS
from tracetrim.audit._shadow_run import record_shadow_run
from tracetrim.cli import main
from tracetrim.learn._sources import swe_agent, tau_bench

BROWSER_TIMEOUT_S = 180


def chromium() -> str:
    """The system Chromium, or skip (fail in CI) when it is not installed."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        service_unavailable("chromium is not installed (apt-get install chromium)")
    assert found is not None
    return found


def run_chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Open ``page`` headless, offline, with console messages logged to stderr."""
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--proxy-server=http://127.0.0.1:9",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT_S,
        check=False,
    )


def console_messages(stderr: str) -> list[str]:
    """Chromium's log lines for the page's console (errors, warnings, logs, uncaught exceptions)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class Charts(HTMLParser):
    """Collects each ``svg.chart``'s attributes and counts the shapes drawn inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: list[dict[str, str | None]] = []
        self.shapes: list[int] = []
        self.body: dict[str, str | None] = {}
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "body":
            self.body = found
        if tag == "svg" and "chart" in (found.get("class") or ""):
            self.charts.append(found)
            self.shapes.append(0)
            self._inside = True
        elif self._inside and tag in ("rect", "polyline", "circle", "line"):
            self.shapes[-1] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._inside = False


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of SHADOW records replayed from the SWE-agent and tau-bench runs."""
    require_data(DATA / "swe-agent")
    folder = tmp_path_factory.mktemp("audit")
    records = folder / "records.jsonl"
    runs = swe_agent(DATA / "swe-agent") + tau_bench(
        require_data(DATA / "tau-bench" / "gpt-4o-airline.json"), 20
    )
    written = asyncio.run(record_shadow_run(runs, records))
    assert written.plans > 50 and written.followups > 0
    page = folder / "report.html"
    assert main(["audit", str(records), "--html", str(page), "--price-per-mtok", "3"]) == 0
    return page


@pytest.mark.data
def test_the_report_is_self_contained(report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    # The SVG namespace is a name, not a fetch; nothing else may point outside the file.
    outside = re.findall(r"(?:https?:)?//[\w.-]+", html.replace("http://www.w3.org/2000/svg", ""))
    assert outside == []
    assert not re.search(r"<(?:link|img|iframe)\b|\bsrc=|@import|url\(", html)


@pytest.mark.data
def test_chromium_draws_every_chart_without_console_errors(report: Path, tmp_path: Path) -> None:
    shown = run_chromium(report, tmp_path / "profile", "--dump-dom")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert console_messages(shown.stderr) == []
    parsed = Charts()
    parsed.feed(shown.stdout)
    assert parsed.body.get("data-charts") == str(len(CHARTS))  # the inline script ran to the end
    assert [chart["data-chart"] for chart in parsed.charts] == list(CHARTS)
    for chart, shapes in zip(parsed.charts, parsed.shapes, strict=True):
        name = chart["data-chart"]
        assert chart.get("data-empty") is None, f"{name} has nothing to draw"
        width, height = (int(n) for n in (chart.get("data-drawn") or "0x0").split("x"))
        assert width > 100 and height > 50 and shapes >= 3, (name, chart.get("data-drawn"), shapes)
    # The verdict sentence starts with whichever group comes first, capitalised.
    assert re.search(r"Ready for ENFORCE|[Kk]eep SHADOW", shown.stdout)

    screenshot = tmp_path / "report.png"
    shot = run_chromium(report, tmp_path / "profile", "--window-size=1280,2400", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    data = screenshot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2400) and len(data) > 50_000  # a blank page compresses to a few KB


def test_the_console_check_catches_errors(tmp_path: Path) -> None:
    """The control for the check above: a page that logs an error and fetches from the network is caught."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<html><body><img src="https://example.com/x.png"><script>console.error("boom")</script></body></html>'
    )
    shown = run_chromium(page, tmp_path / "profile", "--dump-dom")
    messages = console_messages(shown.stderr)
    assert any('"boom"' in line for line in messages), shown.stderr[-2000:]
