"""ReMe's ``compact_context`` contract, copied from reme-ai 0.4.2 (PyPI, Apache-2.0) for the service tests.

The real ``reme.components.client.HttpClient`` does not import here: ``reme`` pulls in psutil,
fastmcp, loguru, mistletoe and its whole application stack at import time, none of which tracetrim
depends on. So this module carries, verbatim but for imports:

- `ReMeHttpClient`: the JSON path of ``reme/components/client/http_client.py`` (``HttpClient.__init__``,
  ``_start``, ``_iter_stream_chunks`` for a JSON answer, ``_close``): ``POST /{action}`` with
  ``json=payload`` on an ``httpx.AsyncClient(base_url=..., timeout=...)``, ``raise_for_status()``,
  and the raw body back;
- ReMe's request and response models, from ``reme/schema/compaction.py`` (``CompactionOptions``,
  ``CompactionRequest``, ``CallDecision``, ``CompactionResult``) and ``reme/schema/response.py``
  (``Response``), so a test validates what it sends and what it gets exactly as ReMe would.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

REME_VERSION = "0.4.2"


class ReMeHttpClient:
    """``reme.components.client.HttpClient``, JSON answers only (the SSE branch is not used here)."""

    def __init__(self, host: str, port: int, timeout: float = 3600.0) -> None:
        self.base_url = f"http://{host}:{port}"
        self.timeout = timeout
        self.client: httpx.AsyncClient | None = None

    async def _start(self) -> None:
        if self.client is None:
            self.client = httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout)

    async def call(self, action: str, **payload: Any) -> str:
        """``_iter_stream_chunks(action, payload)`` for a JSON endpoint: the raw response body."""
        await self._start()
        assert self.client is not None
        async with self.client.stream("POST", f"/{action}", json=payload) as resp:
            resp.raise_for_status()
            body = await resp.aread()
            return body.decode()

    async def _close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None


class Response(BaseModel):
    """Standard response envelope; extra fields allowed for endpoint-specific output."""

    model_config = ConfigDict(extra="allow")

    answer: str | Any = Field(default="")
    success: bool = Field(default=True)
    metadata: dict = Field(default_factory=dict)  # type: ignore[type-arg]


class CompactionOptions(BaseModel):
    """Decision request limits and optional host-counted output budget."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    drop_threshold: float = Field(default=0.1, ge=0, le=1)
    preserve_recent_messages: int = Field(default=6, ge=0, strict=True)
    max_state_tokens: int = Field(default=25000, gt=0, strict=True)
    max_request_tokens: int = Field(default=30000, gt=0, strict=True)
    evidence_chars: int = Field(default=2000, gt=0, strict=True)
    preview_chars: int = Field(default=300, ge=0, strict=True)
    max_output_tokens: int | None = Field(default=None, gt=0, strict=True)
    max_concurrency: int = Field(default=4, ge=1, le=32, strict=True)
    total_timeout_seconds: float = Field(default=30, gt=0)


class CompactionRequest(BaseModel):
    """The host supplies immutable AgentScope snapshots and resolvable archive references."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    messages: list[dict[str, JsonValue]]
    goal: str = ""
    next_action: str = ""
    source_refs: dict[str, str] = Field(default_factory=dict)
    protected_message_ids: list[str] = Field(default_factory=list)
    protected_call_ids: list[str] = Field(default_factory=list)
    eligible_tool_names: list[str] = Field(default_factory=list)
    options: CompactionOptions = Field(default_factory=CompactionOptions)

    @field_validator("source_refs")
    @classmethod
    def validate_refs(cls, refs: dict[str, str]) -> dict[str, str]:
        if any(not key.strip() or not value.strip() for key, value in refs.items()):
            raise ValueError("Source references need non-empty call IDs and values.")
        return refs

    @field_validator("messages")
    @classmethod
    def validate_messages(cls, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for message in messages:
            if message.get("role") not in ("user", "assistant", "system"):
                raise ValueError("Each message needs a user, assistant, or system role.")
            content = message.get("content")
            if not isinstance(content, list) or any(not isinstance(block, dict) for block in content):
                raise ValueError("Each message needs a list of content block objects.")
        return messages


class CallDecision(BaseModel):
    """Every replacement identifies its original tool pair and recoverable source."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str
    call_id: str
    action: Literal["keep", "preview"]
    reason: str
    probability: float | None = Field(default=None, ge=0, le=1)
    source_ref: str | None = None


class CompactionResult(BaseModel):
    """A proposed snapshot; the host owns archiving, recovery, and commit."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    schema_version: Literal[2] = 2
    messages: list[dict[str, JsonValue]]
    decisions: list[CallDecision] = Field(default_factory=list)
    changed: bool
    reason: Literal["compacted", "no_candidates", "no_change", "budget_exceeded"]
    budget_met: bool | None = None
    stats: dict[str, JsonValue] = Field(default_factory=dict)
