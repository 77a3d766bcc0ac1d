"""One retry policy for every HTTP client of the pipeline (index, downloads, GitHub API).

A client's single attempt raises :class:`Retryable` for what is worth another
try (a connection error, 5xx, 429, a truncated body) and anything else for
what is not; :func:`call_with_retries` waits exponentially between attempts
(or what the server asked for) and raises :class:`RetriesExhausted` with the
last reason, which the client turns into its own one-line error.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC
from typing import TypeVar

DEFAULT_BACKOFF = 1.0

_T = TypeVar("_T")


class Retryable(Exception):
    """A failure worth another attempt; ``wait``: what the server asked for (seconds), if anything."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait


class RetriesExhausted(Exception):
    """Every attempt failed with a Retryable; ``last`` is the final one."""

    def __init__(self, last: Retryable, attempts: int) -> None:
        super().__init__(last.reason)
        self.last = last
        self.attempts = attempts

    @property
    def attempts_text(self) -> str:
        return f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` header asks for (a number or an HTTP date), from ``now`` (epoch)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime  # rare; keeps start-up light

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def call_with_retries(
    attempt: Callable[..., _T],
    *args: object,
    attempts: int,
    backoff: float,
    max_wait: float,
    jitter: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> _T:
    """``attempt(*args)`` until it returns, raises a non-Retryable, or ``attempts`` are spent.

    Waits ``backoff * 2**(n-1)`` seconds after the n-th failure (with
    ``jitter``, a random 50-100% of it, so parallel legs do not retry in
    lockstep), or the failure's own ``wait``; never more than ``max_wait``.
    """
    from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_after_attempt

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, Retryable) and exc.wait is not None:
            return min(exc.wait, max_wait)
        step = backoff * 2 ** (state.attempt_number - 1)
        if jitter:
            step *= random.uniform(0.5, 1.0)
        return float(min(step, max_wait))

    retrying = Retrying(
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait,
        retry=retry_if_exception_type(Retryable),
        sleep=sleep,
    )
    try:
        return retrying(attempt, *args)
    except RetryError as err:
        last = err.last_attempt.exception()
        assert isinstance(last, Retryable)  # only Retryable failures are retried
        raise RetriesExhausted(last, err.last_attempt.attempt_number) from None
