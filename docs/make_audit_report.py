"""Regenerate docs/audit-report.png: the `tracetrim audit --html` report of SHADOW records from real runs.

Run from the repository root: ``.venv/bin/python docs/make_audit_report.py`` (needs ../shared/data and
Debian's ``chromium``; nothing is downloaded). It replays the SWE-agent runs, 50 tau-bench runs and 30
mini-swe-agent runs in SHADOW mode with the default judge, cut at three points each, writing records with
per-pair detail plus a "used" follow-up for every earlier result the agent quoted after the cut; then
it renders the HTML report and screenshots it. ``--keep DIR`` keeps the records and the HTML there.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tracetrim.audit._shadow_run import record_shadow_run
from tracetrim.cli import main as tracetrim
from tracetrim.learn._sources import mini_swe_agent, swe_agent, tau_bench

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
PNG = REPO / "docs" / "audit-report.png"


def screenshot(page: Path, png: Path, profile: Path, size: str = "1280,2300") -> None:
    """Save a PNG of ``page`` as headless Chromium draws it, offline."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--proxy-server=http://127.0.0.1:9",
            f"--user-data-dir={profile}",
            f"--window-size={size}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )


def run(folder: Path, png: Path) -> None:
    """Replay, audit, render and screenshot into ``folder`` and ``png``."""
    runs = (
        swe_agent(DATA / "swe-agent")
        + tau_bench(DATA / "tau-bench" / "gpt-4o-airline.json", 50)
        + mini_swe_agent(DATA / "mini-swe-agent", 30)
    )
    records = folder / "records.jsonl"
    records.unlink(missing_ok=True)
    written = asyncio.run(record_shadow_run(runs, records))
    print(f"{written.plans} plans and {written.followups} follow-ups from {len(runs)} runs -> {records}")
    page = folder / "audit-report.html"
    if tracetrim(["audit", str(records), "--html", str(page), "--price-per-mtok", "3"]) != 0:
        sys.exit("tracetrim audit failed")
    screenshot(page, png, folder / "chromium-profile")
    print(f"screenshot -> {png}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the records and the HTML report in this folder")
    parser.add_argument("--png", type=Path, default=PNG, help=f"where the screenshot goes (default {PNG})")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        run(args.keep, args.png)
    else:
        with tempfile.TemporaryDirectory() as folder:
            run(Path(folder), args.png)
