"""`PlanningPool`: plans run in bounded worker threads; their network I/O stays on the server's loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from tracetrim.archive import Archive, ArchiveEntry, EncodedSnapshot, EncodedSnapshotArchive
from tracetrim.decision import (
    BinaryQuestion,
    DecisionModel,
    DecisionResponse,
    LearnedDecisionModel,
    ScriptedDecisionModel,
)
from tracetrim.decision._remote import ModelOrJudge

_T = TypeVar("_T")

LOOP_FREE_MODELS: tuple[type, ...] = (LearnedDecisionModel, ScriptedDecisionModel)
"""In-process models holding no connection: they run in the worker thread itself."""


class _OnLoop:
    """Runs coroutines on the server's loop and awaits them from a worker thread's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    async def run(self, make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
        # Cancelling the worker's await (a plan's deadline) cancels the task on the server's loop too.
        future = asyncio.run_coroutine_threadsafe(make(), self._loop)
        return await asyncio.wrap_future(future)


class _BridgedModel:
    """A `DecisionModel` whose calls run on the server's loop, where its HTTP client lives."""

    def __init__(self, model: DecisionModel, on_loop: _OnLoop) -> None:
        self._model = model
        self._on_loop = on_loop

    async def __call__(
        self, state: Mapping[str, Any], questions: Mapping[str, BinaryQuestion]
    ) -> DecisionResponse:
        return await self._on_loop.run(lambda: self._model(state, questions))


class _BridgedArchive:
    """An `Archive` whose operations run on the server's loop, where its store's connections live."""

    def __init__(self, archive: Archive, on_loop: _OnLoop) -> None:
        self._archive = archive
        self._on_loop = on_loop

    async def save(self, scope: Any, messages: Sequence[Any]) -> str:
        return await self._on_loop.run(lambda: self._archive.save(scope, messages))

    async def restore(self, scope: Any, ref: str) -> list[Any]:
        return await self._on_loop.run(lambda: self._archive.restore(scope, ref))

    async def list(self, scope: Any) -> list[ArchiveEntry]:
        return await self._on_loop.run(lambda: self._archive.list(scope))

    async def delete(self, scope: Any, ref: str) -> bool:
        return await self._on_loop.run(lambda: self._archive.delete(scope, ref))


class _BridgedEncodedArchive(_BridgedArchive):
    """A bridged `EncodedSnapshotArchive`: the runner hands it the bytes it encoded while copying the
    history, so a service compaction encodes the history no more often than a library one."""

    def __init__(self, archive: EncodedSnapshotArchive, on_loop: _OnLoop) -> None:
        super().__init__(archive, on_loop)
        self._encoded = archive

    async def save_encoded(self, scope: Any, snapshot: EncodedSnapshot) -> str:
        return await self._on_loop.run(lambda: self._encoded.save_encoded(scope, snapshot))


def _bridged(archive: Archive, on_loop: _OnLoop) -> Archive:
    """``archive`` bridged to the server's loop, keeping `EncodedSnapshotArchive` when it is one."""
    if isinstance(archive, EncodedSnapshotArchive):
        return _BridgedEncodedArchive(archive, on_loop)
    return _BridgedArchive(archive, on_loop)


def loop_free(model: object) -> bool:
    """True when ``model`` may be called from any thread's event loop (an in-process judge)."""
    return isinstance(model, LOOP_FREE_MODELS)


class PlanningPool:
    """At most ``threads`` plans at once, each on its own event loop in a worker thread.

    The CPU-bound parts of a plan (validating and copying the history, judging, rebuilding, canonical
    JSON) then never block the server's loop. A model or archive holding connections (an HTTP client,
    a Redis or PostgreSQL pool) is bound to the loop that opened it, so its calls are sent back to the
    server's loop; in-process judges (`LOOP_FREE_MODELS`) run in the worker thread.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.threads, thread_name_prefix="tracetrim-plan"
            )
        return self._executor

    def adapt(self, model: ModelOrJudge, archive: Archive | None) -> tuple[ModelOrJudge, Archive | None]:
        """``model`` and ``archive`` as a worker thread must see them (bridged where loop-bound).

        Only a `DecisionModel` talks to anything (a judge of whole histories runs in the thread), so
        only one that is not `loop_free` is bridged."""
        on_loop = _OnLoop(asyncio.get_running_loop())
        if isinstance(model, DecisionModel) and not loop_free(model):
            model = _BridgedModel(model, on_loop)
        bridged = _bridged(archive, on_loop) if archive is not None else None
        return model, bridged

    async def run(self, work: Callable[[], Awaitable[_T]]) -> _T:
        """``work()`` awaited on a fresh event loop in a worker thread; its result or its exception."""

        def in_thread() -> _T:
            async def main() -> _T:
                return await work()

            return asyncio.run(main())

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), in_thread)

    async def run_sync(self, work: Callable[[], _T]) -> _T:
        """``work()`` called in a worker thread (parsing a large body): its result or its exception."""
        return await asyncio.get_running_loop().run_in_executor(self._pool(), work)

    def close(self) -> None:
        """Stop the worker threads once the plans running finish."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
