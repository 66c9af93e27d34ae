"""One JSON-over-HTTP client for every decision backend: auth, retries (tenacity), safe errors."""

from __future__ import annotations

import asyncio
import math
import os
import random
import time
import zlib
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import attrs
import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_base

from tracetrim._errors import TracetrimError
from tracetrim._json import compact_bytes, strict_loads
from tracetrim._logging import REDACTED, get_logger, hide_in_logs, redact_url, redact_urls, url_secrets
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
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024
"""The largest reply body a decision client reads (8 MiB): a reply of thousands of answers is a few
hundred kilobytes, so anything near this is a broken or hostile server, not a big plan."""
# An error answer is read only as far as its excerpt needs: its body is never parsed.
_ERROR_BODY_BYTES = 64 * 1024


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
    """The base URL without a trailing slash or ``/v1``, so either spelling of a base works.

    A query (``?api-version=...``) is kept at the end, where every request path goes before it;
    a fragment is dropped, as HTTP never sends one.
    """
    base, _, query = base_url.strip().partition("#")[0].partition("?")
    root = base.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    if not root.startswith(("http://", "https://")):
        raise FieldValueError(f"base URL must start with http:// or https://, got {redact_url(base_url)!r}")
    return f"{root}?{query}" if query else root


def _with_path(root: str, path: str) -> str:
    base, question_mark, query = root.partition("?")
    return base + path + question_mark + query


@attrs.frozen
class JsonReply:
    """A parsed 2xx JSON body and how many retries it took to get it."""

    data: Any
    retries: int
    requests: int


class ReplyTooLargeError(DecisionModelError):
    """A reply body over the client's ``max_reply_bytes``: the client stopped reading it and hung up."""


class JsonClient:
    """POSTs JSON to one API root with Bearer auth, retrying what is worth retrying.

    Holds one ``httpx.AsyncClient`` per event loop so concurrent batches of a plan share connections;
    pass ``client`` to bring your own (its lifetime is then yours).

    Replies are streamed and read to at most ``max_reply_bytes`` (default `DEFAULT_MAX_REPLY_BYTES`,
    8 MiB, counted after any content decoding, so a compressed bomb is stopped too). A longer one,
    announced by its Content-Length or found while reading, is a `ReplyTooLargeError`, never retried:
    the connection is closed, no more of it is read, and the plan fails like any other model failure.

    A key in the base URL itself (``https://user:KEY@host`` or ``?api_key=KEY``) is sent as written
    but never shown: reprs and errors show the URL through `tracetrim._logging.redact_url`, and
    httpx's own request log lines have it blanked (`tracetrim._logging.hide_in_logs`).
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
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self.root = api_root(base_url)
        self.max_reply_bytes = _positive_bytes(max_reply_bytes)
        self._key = Secret(api_key) if api_key else None
        self._url_secrets = url_secrets(self.root)
        hide_in_logs(self.root)
        self._timeout = httpx.Timeout(timeout_s)
        self.retry = retry or RetryPolicy()
        self._given_client = client
        self._owned: httpx.AsyncClient | None = None
        self._owned_loop: asyncio.AbstractEventLoop | None = None
        self.service = service

    def __repr__(self) -> str:
        key = "***" if self._key else "None"
        return f"JsonClient(root={self.shown_root!r}, api_key={key}, service={self.service!r})"

    @property
    def shown_root(self) -> str:
        """The API root as it may be shown: any key in it blanked (`tracetrim._logging.redact_url`)."""
        return redact_url(self.root)

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
        # identity: a compressed reply would be inflated before it could be counted (see `_body`).
        headers = {
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "Content-Type": "application/json",
        }
        if self._key:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return headers

    def redact(self, text: str) -> str:
        """``text`` with the API key and the base URL's secrets blanked, for anything that leaves this
        object (a server may echo them; an httpx error may quote the URL)."""
        if self._key:
            text = text.replace(self._key.reveal(), REDACTED)
        text = redact_urls(text)
        for secret in self._url_secrets:
            text = text.replace(secret, REDACTED)
        return text

    async def post(
        self, path: str, payload: Mapping[str, Any], *, budget: RetryBudget | None = None
    ) -> JsonReply:
        """POST ``payload`` to ``root + path``; the parsed JSON of the first 2xx answer.

        Connection errors, 408, 429 and 5xx are retried by tenacity under this client's `RetryPolicy`
        (the server's Retry-After first, capped; else backoff), each retry logged. With a ``budget``
        the number of retries is what that shared pool allows, not ``max_retries``. Raises
        ``DecisionModelError`` for authentication failures, other 4xx answers (never retried),
        non-JSON bodies, replies over ``max_reply_bytes`` (`ReplyTooLargeError`, never retried) and
        exhausted retries. Cancellation propagates untouched, mid-request or
        mid-backoff.
        """
        url = _with_path(self.root, path)
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
        """One request: the parsed 2xx body, `_RetryableError` for what is worth retrying, else an error.

        The body is streamed in and read no further than it may go (`_read_capped`); leaving the
        stream early closes the connection rather than draining it.
        """
        try:
            async with self._client().stream(
                "POST", url, content=body, headers=self._headers(), timeout=self._timeout
            ) as response:
                status = response.status_code
                if response.is_success:
                    content = await self._read_capped(response, path)
                else:
                    content = await _error_body(response)
        except httpx.TransportError as exc:
            raise _RetryableError(f"{type(exc).__name__}: {self.redact(str(exc)) or 'no detail'}") from None
        if 200 <= status < 300:
            return self._parse(status, content, path)
        if status not in RETRY_STATUSES:
            raise DecisionModelError(self._refusal_message(status, content, path))
        raise _RetryableError(f"HTTP {status}{self._excerpt(content)}", retry_after_s(response.headers))

    async def _read_capped(self, response: httpx.Response, path: str) -> bytes:
        """The whole body if it is at most ``max_reply_bytes``; `ReplyTooLargeError` as soon as it is not."""
        cap = self.max_reply_bytes
        declared = _content_length(response.headers)
        if declared is not None and declared > cap:
            raise ReplyTooLargeError(self._too_large(path, f"announced {declared} bytes"))
        try:
            content, complete = await _body(response, cap)
        except _EncodingError as exc:
            raise DecisionModelError(f"{self.service} at {path}: {exc}") from None
        if not complete:
            raise ReplyTooLargeError(self._too_large(path, f"sent more than {cap} bytes"))
        return content

    def _too_large(self, path: str, what: str) -> str:
        return (
            f"{self.service} at {path}: reply too large: it {what}, over the client's limit of "
            f"max_reply_bytes={self.max_reply_bytes}; reading stopped"
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

    def _parse(self, status: int, content: bytes, path: str) -> Any:
        try:
            return strict_loads(content.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise DecisionModelError(
                f"{self.service} at {path} answered HTTP {status} with a body that is not "
                f"valid JSON ({type(exc).__name__}){self._excerpt(content)}"
            ) from None

    def _refusal_message(self, status: int, content: bytes, path: str) -> str:
        if status in (401, 403):
            hint = "authentication failed: check the API key"
        elif status == 404:
            hint = "not found: check the base URL and the model name"
        else:
            hint = "request rejected"
        return f"{self.service} at {path}: {hint} (HTTP {status}){self._excerpt(content)}"

    def _excerpt(self, content: bytes) -> str:
        text = content[: _EXCERPT_CHARS * 4].decode("utf-8", errors="replace").strip()
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
        return f"{type(self).__name__}(model={self.model!r}, base_url={self._http.shown_root!r})"

    async def aclose(self) -> None:
        """Close pooled connections."""
        await self._http.aclose()


class HostedModel(JsonClientModel):
    """A decision model behind a hosted API: a key and a base URL, each from the environment when
    not given (`API_KEY_ENV`, `BASE_URL_ENV`, then `DEFAULT_BASE_URL`), and a default model name.

    ``max_reply_bytes`` caps each reply body (default `DEFAULT_MAX_REPLY_BYTES`, 8 MiB); a longer
    reply fails the request, and so the plan, as ``MODEL_ERROR`` (see `JsonClient`).
    """

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
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self.model = model or self.DEFAULT_MODEL
        self._http = JsonClient(
            base_url or os.environ.get(self.BASE_URL_ENV) or self.DEFAULT_BASE_URL,
            api_key if api_key is not None else os.environ.get(self.API_KEY_ENV),
            timeout_s=timeout_s,
            retry=retry,
            client=client,
            service=self.SERVICE,
            max_reply_bytes=max_reply_bytes,
        )


def _positive_bytes(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise FieldValueError(f"max_reply_bytes must be a positive integer, got {value!r}")
    return value


def _content_length(headers: httpx.Headers) -> int | None:
    raw = headers.get("content-length")
    # Only a plain count is trusted; anything else is read and counted like a chunked reply.
    text = raw.strip() if raw is not None else ""
    return int(text) if text.isascii() and text.isdigit() else None


class _EncodingError(TracetrimError, ValueError):
    """A reply body in a content-encoding this client cannot read within its limit."""


def _inflater(headers: httpx.Headers) -> Any:
    """A zlib decompressor for a gzip or deflate body, None for an identity one."""
    codings = [c.strip().lower() for c in headers.get("content-encoding", "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(32 + zlib.MAX_WBITS)  # a gzip or a zlib header, told apart by zlib
    raise _EncodingError(
        f"reply in content-encoding {', '.join(codings)!r}, which this client did not ask for"
        " (it asks for identity) and does not read"
    )


async def _error_body(response: httpx.Response) -> bytes:
    """The head of an error answer's body, for its excerpt; empty when it cannot be read."""
    try:
        content, _ = await _body(response, _ERROR_BODY_BYTES)
    except _EncodingError:
        return b""
    return content


async def _body(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the (decoded) body, and whether that was all of it.

    Raw bytes are read, never httpx's decoded ones: httpx inflates each network chunk whole, so one
    64 KiB chunk of a compression bomb would become tens of megabytes before it could be counted.
    Here a gzip or deflate body is inflated no further than the limit.
    """
    inflate = _inflater(response.headers)
    body = bytearray()
    async for raw in response.aiter_raw():
        if inflate is None:
            body += raw
        else:
            try:
                body += inflate.decompress(raw, limit + 1 - len(body))
            except zlib.error as exc:
                raise _EncodingError(f"reply body is not valid gzip or deflate ({exc})") from None
        if len(body) > limit:
            return bytes(body[:limit]), False
    return bytes(body), True


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
