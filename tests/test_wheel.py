"""The built wheel carries the bundled examples, so `tracetrim demo` works from an installed package."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


def test_demo_runs_from_the_built_wheel(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling (the test extra has it)")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    wheel = next(tmp_path.glob("tracetrim-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "tracetrim/_examples/payment_retry.json" in names
    assert "tracetrim/_examples/replication_incident.json" in names
    # Import tracetrim from the wheel itself (a zip), far from the source tree.
    env = {**os.environ, "PYTHONPATH": str(wheel)}
    demo = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tracetrim.cli; print(tracetrim.__file__);"
            " sys.exit(tracetrim.cli.main(['demo', '--example', 'replication_incident']))",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert demo.returncode == 0, demo.stderr
    assert str(wheel) in demo.stdout.splitlines()[0]
    assert "replication_incident: DECIDED SHADOW_PROPOSAL" in demo.stdout
