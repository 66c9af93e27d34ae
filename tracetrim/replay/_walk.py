"""The walk: each run's model calls in order, each strategy handing the prompt, the bill and the losses."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, ParamSpec, TypeVar

from tracetrim._snapshot import Message
from tracetrim._validators import FieldValueError
from tracetrim.learn._sources import Trajectory
from tracetrim.replay._book import MessageBook, model_turns
from tracetrim.replay._defaults import DEFAULT_HOST, default_strategies
from tracetrim.replay._host import HostRule
from tracetrim.replay._loss import Missing, missing_kind
from tracetrim.replay._prices import ANTHROPIC, CachePrices
from tracetrim.replay._protocol import ReplayStrategy
from tracetrim.replay._result import Compaction, ReplayReport, StrategyInfo, StrategyRun, report_totals
from tracetrim.replay._uses import Use, step_uses

Progress = Callable[[int, int], None]
"""Called with (runs done, runs in all) after each run."""
P = ParamSpec("P")
T = TypeVar("T")


def _same(a: Message, b: Message) -> bool:
    return a is b or a == b


def _common_prefix(before: Sequence[Message], after: Sequence[Message]) -> int:
    """How many leading messages ``after`` shares with ``before``."""
    n = 0
    for a, b in zip(before, after, strict=False):
        if not _same(a, b):
            break
        n += 1
    return n


async def replay_run(
    run: Trajectory,
    strategy: ReplayStrategy,
    host: HostRule,
    prices: CachePrices = ANTHROPIC,
    *,
    book: MessageBook | None = None,
    uses: dict[int, tuple[Use, ...]] | None = None,
) -> StrategyRun:
    """Walk ``run`` with ``strategy``: at each model call the prompt the strategy hands, what it bills
    (plain and with the cache model), and whether what the call used was still in it.

    A call that used strings of an earlier result its prompt lacks costs one extra turn when something
    points to the result (a recall by call id, or a re-run of a call still shown): the same prompt
    again (cache reads) plus the result (a cache write). The result then stays in the prompt, read
    from the cache, until the strategy next compacts, and is not missed again: each result is brought
    back at most once a run, whatever the strategy. (How long a strategy would keep a recalled result
    is its own affair; charging the same recall again after every later compaction would bill the
    per-request editors, whose prompt changes at nearly every call, for recalls an agent makes once,
    and carrying it to the end would bill them for tokens they would clear.) Nothing is charged for a
    silent loss; it is counted.
    """
    messages = run.messages
    book = book if book is not None else MessageBook()
    uses = uses if uses is not None else step_uses(messages, book.count)
    session = strategy.start(run, host, book)
    previous: Sequence[Message] = ()
    absorbed = 0
    carried = 0
    recalled: set[str] = set()
    context: list[int] = []
    prompt_total = recall_total = read_total = write_total = 0
    cost = planning = 0.0
    compactions = rewrite = saved = plans = 0
    events: list[Compaction] = []
    turns = model_turns(messages)
    counts = dict.fromkeys(Missing, 0)
    used = 0
    reasons: dict[str, int] = {}
    for step, at in enumerate(turns):
        history = messages[:at]
        started = time.perf_counter()
        turn = await session.prompt(history, step)
        planning += time.perf_counter() - started
        prompt = turn.messages
        if turn.planned:
            plans += 1
            reasons[turn.reason] = reasons.get(turn.reason, 0) + 1
        kept = _common_prefix(previous, prompt)
        if kept < len(previous):
            compactions += 1
            carried = 0  # what a recall brought back goes with the next compaction; it is not missed again
            new = book.total(messages[absorbed:at])
            event = Compaction(
                step,
                saved=max(book.total(previous) + new - book.total(prompt), 0),
                rewrite=max(book.total(prompt[kept:]) - new, 0),
                remaining=len(turns) - step - 1,
            )
            events.append(event)
            rewrite += event.rewrite
            saved += event.saved
        read = book.total(prompt[:kept]) + carried
        write = book.total(prompt[kept:])
        size = read + write
        context.append(size)
        prompt_total += size
        read_total += read
        write_total += write
        cost += prices.cost(read, write)
        haystack: str | None = None
        for use in uses.get(at, ()):
            used += 1
            if use.call_id in recalled:
                continue
            if haystack is None:
                haystack = book.haystack(prompt)
            if all(s in haystack for s in use.strings):
                continue
            kind = missing_kind(prompt, use.call_id)
            counts[kind] += 1
            if kind is Missing.SILENT:
                continue
            extra = size + use.result_tokens
            recall_total += extra
            read_total += size
            write_total += use.result_tokens
            cost += prices.cost(size, use.result_tokens)
            carried += use.result_tokens
            size += use.result_tokens
            recalled.add(use.call_id)
        previous = prompt
        absorbed = at
    return StrategyRun(
        strategy=strategy.name,
        run=run.name,
        dataset=run.dataset,
        steps=len(context),
        prompt_tokens=prompt_total,
        recall_tokens=recall_total,
        billed_tokens=prompt_total + recall_total,
        cache_read_tokens=read_total,
        cache_write_tokens=write_total,
        cache_cost=round(cost, 3),
        peak_context=max(context, default=0),
        compactions=compactions,
        rewrite_tokens=rewrite,
        saved_tokens=saved,
        plans=plans,
        planning_ms=round(planning * 1000, 3),
        uses=used,
        recallable=counts[Missing.RECALLABLE],
        rerun=counts[Missing.RERUN],
        silent=counts[Missing.SILENT],
        reasons=dict(sorted(reasons.items())),
        context=tuple(context),
        events=tuple(events),
    )


async def replay_runs_async(
    runs: Iterable[Trajectory],
    strategies: Sequence[ReplayStrategy] | None = None,
    host: HostRule | None = None,
    prices: CachePrices = ANTHROPIC,
    *,
    progress: Progress | None = None,
) -> ReplayReport:
    """`replay_runs` for a caller already inside an event loop."""
    chosen = list(strategies) if strategies is not None else default_strategies()
    names = [s.name for s in chosen]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise FieldValueError(f"strategy names must be unique; repeated: {', '.join(duplicates)}")
    rule = host if host is not None else DEFAULT_HOST
    selected = list(runs)
    started = time.perf_counter()
    results: list[StrategyRun] = []
    for done, run in enumerate(selected, start=1):
        book = MessageBook()
        uses = step_uses(run.messages, book.count)
        for strategy in chosen:
            results.append(await replay_run(run, strategy, rule, prices, book=book, uses=uses))
        if progress is not None:
            progress(done, len(selected))
    return ReplayReport(
        host=rule,
        prices=prices,
        strategies=tuple(StrategyInfo(s.name, s.models) for s in chosen),
        runs=tuple(results),
        totals=report_totals(names, results, prices),
        elapsed_s=round(time.perf_counter() - started, 3),
    )


def _blocking(run: Callable[P, Coroutine[Any, Any, T]], name: str, doc: str) -> Callable[P, T]:
    """``run`` as a function named ``name`` that runs it on an event loop of its own."""

    @functools.wraps(run)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        return asyncio.run(run(*args, **kwargs))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


replay_runs = _blocking(
    replay_runs_async,
    "replay_runs",
    """Walk every run with every strategy as a host would, and total what each billed and lost.

    ``runs`` are `tracetrim.learn.Trajectory` values (``tracetrim.learn.from_file``, the shared
    datasets' readers, or `runs_from_files`); ``strategies`` default to `default_strategies` (no
    compaction, masking, the providers' and frameworks' context editing at their documented
    defaults, tracetrim's threshold, budget and offload); ``host`` is when tracetrim's strategies fire
    (default: `DEFAULT_HOST`); ``prices`` the prompt-cache ratios (default: Anthropic's).
    Runs one event loop; inside a running loop, await `replay_runs_async`.
    """,
)
