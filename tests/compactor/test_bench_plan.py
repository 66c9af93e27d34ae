"""benchmarks/bench_plan.py's stage modes run and report every stage (at sizes small enough for a test;
the figures themselves are the benchmark's, never asserted here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_plan.py"
NUMBER = r"\d+\.\d+"


def _run(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_alone_times_each_stage_by_itself_at_every_size() -> None:
    lines = _run("--alone", "--sizes", "100,400", "--repeat", "1")
    assert "per msg 4x" in lines[0]
    stages = [
        "load",
        "pairing",
        "judge history pass",
        "judge, whole answer",
        "token counts",
        "actions+repeats+excerpts",
        "rebuild",
    ]
    assert [line[:26].strip() for line in lines[1:]] == stages
    for line in lines[1:]:  # two sizes' seconds and the ratio per message
        assert len(re.findall(NUMBER, line[26:])) == 3, line


def test_stages_split_the_plan_by_stage() -> None:
    lines = _run("--stages", "--sizes", "100,400", "--repeat", "1")
    names = [line[:20].strip() for line in lines[1:]]
    assert names[:3] == ["load", "pairing", "judge history pass"] and names[-1] == "plan"
