"""Invisible control characters from tool output reach the audit reports only escaped (issue 35, item 8).

A history whose tool name, call id and session carry bidi overrides, isolates, zero-width characters
and a terminal escape, and a decision model whose failure echoes tool output with more of them, are
planned for real with a `JsonLinesObserver`; ``tracetrim audit`` then writes the text report and the
HTML report. Neither may hold one of those characters raw; each must show as ``\\uXXXX``.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest

import tracetrim as tt
from tests._histories import assistant, call, result, text, user
from tracetrim.audit._observer import read_files
from tracetrim.audit._report import audit
from tracetrim.audit._svg import escape, visible
from tracetrim.cli import main
from tracetrim.decision import ScriptedDecisionModel

RLO, LRI, PDI, ZWSP, RLM, ESC, TAG_A = "\u202e", "\u2066", "\u2069", "\u200b", "\u200f", "\x1b", "\U000e0041"
TOOL = f"read{RLO}elif_daer{ZWSP}"
CALL_ID = f"c{LRI}1{PDI}"
SESSION = f"s{RLO}gnp.exe"
ECHO = f"tool said: {RLO}1 :ecnalab{ESC}[2J{RLM}{TAG_A} done"
OUTPUT = f"{ECHO}\n" + "file line\n" * 300
# A records file whose name spoofs its extension: junk lines name their file in both reports.
RECORDS = f"records{RLO}lmth.jsonl{ESC}]0;pwned{ESC}"
INVISIBLE = {chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x200B, 0x2010))} | {
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
    TAG_A,
    "\ufeff",
}


def _raw_invisible(page: str) -> list[str]:
    """Every character of ``page`` a report must not hold raw (tab and newline allowed)."""
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in page
            if c in INVISIBLE or (unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n")
        }
    )


def _history(pairs: int = 6) -> list[dict[str, Any]]:
    messages = [user("m0", "Please fix the parser.")]
    for n in range(1, pairs + 1):
        call_id = CALL_ID if n == 1 else f"c{n}"
        messages.append(
            assistant(
                f"a{n}",
                text(f"step {n}"),
                call(call_id, TOOL),
                result(call_id, TOOL, f"{ECHO}\n" + "file line\n" * 300),
            )
        )
    messages += [user("r0", "recent"), assistant("r1", text("ok")), user("r2", "go on")]
    return messages


async def _records(path: Path) -> None:
    observer = tt.JsonLinesObserver(path, pairs=True)
    scope = tt.Scope("user-1", "agent-1", SESSION)
    config = tt.CompactorConfig(eligible_tools={TOOL}, minimum_reduction=0.0)
    dropping = ScriptedDecisionModel(lambda name, question, state: 0.0)
    decided = await tt.Compactor(
        dropping, config=config, execution=tt.ExecutionOptions(observer=observer)
    ).plan(tt.CompactionRequest(_history(), scope=scope))
    assert decided.status == tt.Status.DECIDED, decided.detail

    async def echoing(state: object, questions: object) -> tt.decision.DecisionResponse:
        raise tt.decision.DecisionModelError(ECHO)

    failed = await tt.Compactor(
        echoing, config=config, execution=tt.ExecutionOptions(observer=observer)
    ).plan(tt.CompactionRequest(_history(), scope=scope))
    assert failed.reason == "MODEL_ERROR" and RLO in failed.detail
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not a record\n")  # a junk line: both reports list it with its file's name


def test_visible_escapes_exactly_the_invisible_characters() -> None:
    kept = "tab\there\nnewline, é, 漢字, emoji 🙂, <b>"
    assert visible(kept) == kept
    assert visible(f"a{RLO}b{LRI}c{PDI}{ZWSP}{RLM}{ESC}{TAG_A}\x7f\ufeff\u2028") == (
        "a\\u202eb\\u2066c\\u2069\\u200b\\u200f\\u001b\\U000e0041\\u007f\\ufeff\\u2028"
    )
    assert escape(f'<i title="{RLO}">') == "&lt;i title=&quot;\\u202e&quot;&gt;"


async def test_text_and_html_reports_show_control_characters_only_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / RECORDS
    await _records(records)
    assert RLO in records.read_text(encoding="utf-8")  # the records keep the data as it was
    page = tmp_path / "report.html"
    assert main(["audit", str(records), "--html", str(page)]) == 0
    out, err = capsys.readouterr()
    html = page.read_text(encoding="utf-8")
    for report in (out, err, html):
        assert _raw_invisible(report) == []
    # What was there is still there to read, escaped: the tool, the call, the session, the echo.
    assert "read\\u202eelif_daer\\u200b" in out and "read\\u202eelif_daer\\u200b" in html
    assert "c\\u20661\\u2069" in html and "s\\u202egnp.exe" in html
    assert "\\u202e1 :ecnalab\\u001b[2J\\u200f\\U000e0041" in out
    assert "\\u202e1 :ecnalab\\u001b[2J\\u200f\\U000e0041" in html
    shown = "records\\u202elmth.jsonl\\u001b]0;pwned\\u001b, line 3: not JSON"
    assert shown in err and shown in html


async def test_the_library_report_escapes_too(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    await _records(records)
    html = audit(read_files([records])).html(title=f"audit {RLO}txt.exe")
    assert _raw_invisible(html) == []
    assert "audit \\u202etxt.exe" in html and "c\\u20661\\u2069" in html
