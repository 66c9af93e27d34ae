"""What the seven framework examples share: the scripted or embedded decision model and the report.

Each example (``python examples/<framework>_agent.py [--embedded]``) runs a real agent of its framework
on a scripted chat model: two log reads, compaction, then a recall of the first log and of an id that
never ran. This module picks the decision model and checks what the chat model was sent.
"""

from __future__ import annotations

import sys

from tracetrim.decision import DecisionModel, ScriptedDecisionModel, from_env

LOG = "\n".join(f"12:00:{i:02d} worker-{i % 4} heartbeat ok" for i in range(60))
"""The log the first call reads: long enough to be shortened, checkable when it comes back."""
EMBEDDED = "--embedded" in sys.argv[1:]
"""Whether tracetrim's embedded default judge decides instead of the scripted decisions."""


def decision_model() -> DecisionModel:
    """Scripted decisions (shorten c1's result, drop c2) so the run is the same every time; with
    ``--embedded``, tracetrim's embedded default judge (no network, no keys) decides instead."""
    if EMBEDDED:
        return from_env({})  # the default backend, ignoring any DECISION_MODEL_* settings
    return ScriptedDecisionModel.by_call_id({"c1": (0.9, 0.1), "c2": (0.1, 0.1)}, default=(0.9, 0.9))


def report(sent: dict[str, str]) -> None:
    """Say what the model saw and recalled; exit 1 unless the full api log reached it.

    Scripted: c1 must be shortened, c2 dropped and the recall must return c1 in full. Embedded: the
    judge may keep, shorten or drop c1; the full api log must reach the model either way, in place
    or through the recall tool. Both: recalling an id that was never archived gets words, not an error.
    """
    c1 = sent.get("c1", "")
    recalled = LOG in sent["c3"]
    print(f"decision model: {'embedded default' if EMBEDDED else 'scripted'}")
    seen_c1 = f"{len(c1)} characters, shortened={'[tracetrim:' in c1}" if "c1" in sent else "dropped"
    print(f"c1 as the model saw it: {seen_c1}")
    print(f"c2 dropped: {'c2' not in sent}")
    print(f"recall tool returned the full api log: {recalled}")
    if not recalled:
        print(f"recall tool answered: {sent['c3'][:200]}")
    # the model asked for c9, which never ran: the tool answers in words and the run goes on
    unknown = "nothing to recall" in sent.get("c4", "")
    print(f"recall of an unknown id answered in words: {unknown}")
    scripted_ok = "c2" not in sent and "[tracetrim:" in c1 and recalled
    ok = unknown and ((LOG in c1 or recalled) if EMBEDDED else scripted_ok)
    print("restored c1: OK" if ok else "restored c1: FAILED")
    if not ok:
        raise SystemExit(1)
