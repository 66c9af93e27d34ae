"""One JSON-over-HTTP client for every decision backend: auth, retries (tenacity), safe errors."""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import attrs
import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_base

from tracetrim._json import compact_bytes
from tracetrim._logging import get_logger
from tracetrim._validators import (
    FieldValueError,
    int_in,
    is_number,
    is_real,
    non_negative_number,
    probability,
)
from tracetrim.decision._protocol import DecisionModelError

_log = get_logger("tracetrim.decision.http")

RETRY_STATUSES = frozenset({408, 429, *range(500, 600)})
_EXCERPT_CHARS = 200


@attrs.frozen(repr=False)
class Secret:
    """An API key that never shows itself in a repr, a str, a log line or an error."""

    _value: str = attrs.field(alias="value", validator=attrs.validators.instance_of(str))

    def reveal(self) -> str:
        """The key itself; call only where it goes into a request header."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


_non_negative = non_negative_number


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How often and how patiently to retry connection errors, 408, 429 and 5xx.

    Delays follow the server's ``retry-after-ms``/``retry-after`` when given (capped at
    ``max_retry_after_s``), else exponential backoff with jitter. There is no time budget of its own:
    every sleep runs inside the caller's deadline, which cancels it.
    """

    max_retries: int = attrs.field(default=4, validator=int_in(0))
    backoff_initial_s: float = attrs.field(default=0.25, validator=_non_negative)
    backoff_max_s: float = attrs.field(default=8.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.25, validator=probability)
    max_retry_after_s: float = attrs.field(default=60.0, validator=_non_negative)

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """The delay before retry number ``retry`` (1-based) when the server gave no hint."""
        exponential = min(self.backoff_max_s, self.backoff_initial_s * 2.0 ** (retry - 1))
        return exponential * (1.0 - (rng or random).random() * self.jitter)


def retry_after_s(headers: httpx.Headers) -> float | None:
    """The server's requested delay in seconds from ``retry-after-ms`` or ``retry-after``, if usable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = math.nan
        if math.isfinite(ms) and ms >= 0:
            return ms / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(raw).timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class RetryBudget:
    """Retries shared by the requests of one plan, rather than a fixed number per request.

    Each request joining the plan adds ``per_request`` retries to the pool (`deposit`); any of them
    may spend them (`take`). Under random throttling (say half of all requests answered 429) a plan
    of many one-question requests then survives as a plan of one many-question request does,
    while a server that keeps failing still ends the plan once the pool is spent. Not thread-safe:
    one event loop only.
    """

    def __init__(self) -> None:
        self.left = 0

    def deposit(self, retries: int) -> None:
        """Add ``retries`` to the pool."""
        self.left += retries

    def take(self) -> bool:
        """Spend one retry; False when none is left."""
        if self.left <= 0:
            return False
        self.left -= 1
        return True


class _RetryableError(DecisionModelError):
    """One attempt's failure that is worth another: what went wrong and the server's delay hint, if any.

    Internal to `JsonClient.post`: the last one becomes a ``DecisionModelError`` naming the attempts.
    """

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after


class RetryAfterWait(wait_base):
    """A tenacity wait: the server's Retry-After (capped at ``max_retry_after_s``), else the backoff.

    The hint comes from the failed attempt's `_RetryableError` (``retry-after-ms`` or ``retry-after``);
    without one, `RetryPolicy.backoff` for that attempt number.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None and outcome.failed else None
        if isinstance(error, _RetryableError) and error.retry_after is not None:
            return min(error.retry_after, self.policy.max_retry_after_s)
        return self.policy.backoff(retry_state.attempt_number)


def api_root(base_url: str) -> str:
    """The base URL without a trailing slash or ``/v1``, so either spelling of a base works."""
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    if not root.startswith(("http://", "https://")):
        raise FieldValueError(f"base URL must start with http:// or https://, got {base_url!r}")
    return root


@attrs.frozen
class JsonReply:
    """A parsed 2xx JSON body and how many retries it took to get it."""

    data: Any
    retries: int
    requests: int


class JsonClient:
    """POSTs JSON to one API root with Bearer auth, retrying what is worth retrying.

    Holds one ``httpx.AsyncClient`` per event loop so concurrent batches of a plan share connections;
    pass ``client`` to bring your own (its lifetime is then yours).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        service: str = "decision model",
    ) -> None:
        self.root = api_root(base_url)
        self._key = Secret(api_key) if api_key else None
        self._timeout = httpx.Timeout(timeout_s)
        self.retry = retry or RetryPolicy()
        self._given_client = client
        self._owned: httpx.AsyncClient | None = None
        self._owned_loop: asyncio.AbstractEventLoop | None = None
        self.service = service

    def __repr__(self) -> str:
        key = "***" if self._key else "None"
        return f"JsonClient(root={self.root!r}, api_key={key}, service={self.service!r})"

    def _client(self) -> httpx.AsyncClient:
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        # A client's pooled connections belong to the loop that opened them.
        if self._owned is None or self._owned_loop is not loop or self._owned.is_closed:
            self._owned = httpx.AsyncClient(timeout=self._timeout, follow_redirects=False)
            self._owned_loop = loop
        return self._owned

    async def aclose(self) -> None:
        """Close the client this object opened (not one that was passed in)."""
        if self._owned is not None:
            await self._owned.aclose()
            self._owned = None

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers

    def redact(self, text: str) -> str:
        """``text`` with the API key blanked out, for anything that leaves this object."""
        if self._key:
            text = text.replace(self._key.reveal(), "***")
        return text

    async def post(
        self, path: str, payload: Mapping[str, Any], *, budget: RetryBudget | None = None
    ) -> JsonReply:
        """POST ``payload`` to ``root + path``; the parsed JSON of the first 2xx answer.

        Connection errors, 408, 429 and 5xx are retried by tenacity under this client's `RetryPolicy`
        (the server's Retry-After first, capped; else backoff), each retry logged. With a ``budget``
        the number of retries is what that shared pool allows, not ``max_retries``. Raises
        ``DecisionModelError`` for authentication failures, other 4xx answers (never retried),
        non-JSON bodies and exhausted retries. Cancellation propagates untouched, mid-request or
        mid-backoff.
        """
        url = self.root + path
        body = compact_bytes(payload)
        attempts = 0

        async def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return await self._attempt(url, body, path)

        def spent(state: RetryCallState) -> bool:
            assert budget is not None
            return not budget.take()

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retry.max_retries + 1) if budget is None else spent,
            wait=RetryAfterWait(self.retry),
            retry=retry_if_exception_type(_RetryableError),
            before_sleep=self._log_retry(path),
            sleep=asyncio.sleep,
            reraise=True,
        )
        try:
            data: Any = await retrying(attempt)
        except _RetryableError as last:
            raise DecisionModelError(
                f"{self.service} at {path} failed after {attempts} attempts: {last.problem}"
            ) from None
        return JsonReply(data, attempts - 1, attempts)

    async def _attempt(self, url: str, body: bytes, path: str) -> Any:
        """One request: the parsed 2xx body, `_RetryableError` for what is worth retrying, else an error."""
        try:
            response = await self._client().post(
                url, content=body, headers=self._headers(), timeout=self._timeout
            )
        except httpx.TransportError as exc:
            raise _RetryableError(f"{type(exc).__name__}: {self.redact(str(exc)) or 'no detail'}") from None
        if response.is_success:
            return self._parse(response, path)
        if response.status_code not in RETRY_STATUSES:
            raise DecisionModelError(self._refusal_message(response, path))
        raise _RetryableError(
            f"HTTP {response.status_code}{self._excerpt(response)}", retry_after_s(response.headers)
        )

    def _log_retry(self, path: str) -> Callable[[RetryCallState], None]:
        def log(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            _log.info(
                "decision_request_retry",
                service=self.service,
                path=path,
                attempt=state.attempt_number,
                problem=error.problem if isinstance(error, _RetryableError) else repr(error),
                delay_s=round(state.next_action.sleep if state.next_action is not None else 0.0, 3),
            )

        return log

    def _parse(self, response: httpx.Response, path: str) -> Any:
        try:
            return json.loads(response.content.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise DecisionModelError(
                f"{self.service} at {path} answered HTTP {response.status_code} with a body that is not "
                f"valid JSON ({type(exc).__name__}){self._excerpt(response)}"
            ) from None

    def _refusal_message(self, response: httpx.Response, path: str) -> str:
        status = response.status_code
        if status in (401, 403):
            hint = "authentication failed: check the API key"
        elif status == 404:
            hint = "not found: check the base URL and the model name"
        else:
            hint = "request rejected"
        return f"{self.service} at {path}: {hint} (HTTP {status}){self._excerpt(response)}"

    def _excerpt(self, response: httpx.Response) -> str:
        text = response.content[: _EXCERPT_CHARS * 4].decode("utf-8", errors="replace").strip()
        if not text:
            return ""
        text = " ".join(self.redact(text).split())
        if len(text) > _EXCERPT_CHARS:
            text = text[:_EXCERPT_CHARS] + "..."
        return f": {text}"


class JsonClientModel:
    """What every model behind a `JsonClient` shares: its ``model`` name, the client, a repr, `aclose`."""

    model: str
    _http: JsonClient

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self._http.root!r})"

    async def aclose(self) -> None:
        """Close pooled connections."""
        await self._http.aclose()


class HostedModel(JsonClientModel):
    """A decision model behind a hosted API: a key and a base URL, each from the environment when
    not given (`API_KEY_ENV`, `BASE_URL_ENV`, then `DEFAULT_BASE_URL`), and a default model name."""

    SERVICE: ClassVar[str]
    API_KEY_ENV: ClassVar[str]
    BASE_URL_ENV: ClassVar[str]
    DEFAULT_BASE_URL: ClassVar[str]
    DEFAULT_MODEL: ClassVar[str]

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str | None = None,
        *,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.model = model or self.DEFAULT_MODEL
        self._http = JsonClient(
            base_url or os.environ.get(self.BASE_URL_ENV) or self.DEFAULT_BASE_URL,
            api_key if api_key is not None else os.environ.get(self.API_KEY_ENV),
            timeout_s=timeout_s,
            retry=retry,
            client=client,
            service=self.SERVICE,
        )


def _reject_constant(name: str) -> float:
    raise FieldValueError(f"non-finite JSON constant {name}")


def usage_int(value: Any) -> int:
    """A token count from a reply: a non-negative integral number, else 0 (usage is best effort)."""
    if not is_number(value):
        return 0
    if value < 0 or value != int(value):
        return 0
    return int(value)


def probability_or_none(value: Any) -> float | None:
    """``value`` as a float if it is a number; None (which the planner rejects) otherwise.

    Range and finiteness are the planner's to check, so an out-of-range answer fails visibly there.
    """
    return float(value) if is_real(value) else None
