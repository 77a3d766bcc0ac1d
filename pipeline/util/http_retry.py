"""One retry policy for every HTTP client of the pipeline (index, downloads, GitHub API).

:class:`RetryPolicy` says how many attempts and how long the waits; every
client takes one (its defaults are the policy's) and hands it to
:func:`call_with_retries`. A client's single attempt raises :class:`Retryable`
for what is worth another try (a connection error, 5xx, 429, a truncated body)
and anything else for what is not; :func:`call_with_retries` waits
exponentially between attempts (or what the server asked for) and raises
:class:`RetriesExhausted` with the last reason, which the client turns into
its own one-line error.

A long wait says why: before each wait the caller's ``on_wait`` gets one line
(what failed, attempt n of m, how long), and ``budget`` caps the seconds one
request may spend on its retries (``PIPELINE_HTTP_RETRY_BUDGET``): a wait that
would pass it is not started.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from typing import TypeVar

from pipeline.names import DEFAULT_BACKOFF

_T = TypeVar("_T")


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How every HTTP client retries: TheRock's index and wheel pages, downloads, pip's wheel fetches, GitHub.

    ``attempts``: tries in all (5: with the default backoff, 15 s of waits before a host is called down).
    ``backoff``: the first wait, doubled after each failure (PIPELINE_HTTP_BACKOFF).
    ``max_wait``: the longest wait between two attempts, a server's ``Retry-After`` included (GitHub's
    client refuses a rate limit that asks for longer instead of holding a runner idle).
    ``jitter``: each computed wait is a random 50-100% of it, so parallel legs do not retry in lockstep.
    ``budget``: the most seconds one request spends on its retries (PIPELINE_HTTP_RETRY_BUDGET; None: no cap).
    """

    attempts: int = 5
    backoff: float = DEFAULT_BACKOFF
    max_wait: float = 120.0
    jitter: bool = True
    budget: float | None = None


# The policy with its defaults: every client's default (frozen, so one object serves them all).
DEFAULT_RETRY = RetryPolicy()


class Retryable(Exception):
    """A failure worth another attempt; ``wait``: what the server asked for (seconds), if anything."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait


class RetriesExhausted(Exception):
    """Every attempt failed with a Retryable; ``last`` is the final one.

    ``budget``: the retry budget (seconds) when it, not the attempt count, ended the retries.
    """

    def __init__(self, last: Retryable, attempts: int, budget: float | None = None) -> None:
        super().__init__(last.reason)
        self.last = last
        self.attempts = attempts
        self.budget = budget

    @property
    def attempts_text(self) -> str:
        text = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        if self.budget is not None:
            text += f" (the retry budget of {self.budget:g} s is spent; PIPELINE_HTTP_RETRY_BUDGET sets it)"
        return text


def say_on_stderr(line: str) -> None:
    """An ``on_wait`` for commands: the line on stderr, so stdout (JSON, matrices) stays clean."""
    import sys

    print(line, file=sys.stderr, flush=True)


def wait_line(what: str, reason: str, attempt: int, attempts: int, seconds: float) -> str:
    """The line shown before a retry waits: what failed, attempt n of m, how long."""
    return f"{what}: {reason}; attempt {attempt} of {attempts} failed, retrying in {seconds:.1f} s"


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
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[str], None] | None = None,
    what: str = "request",
    clock: Callable[[], float] = time.monotonic,
) -> _T:
    """``attempt(*args)`` until it returns, raises a non-Retryable, or the policy's attempts are spent.

    Waits ``backoff * 2**(n-1)`` seconds after the n-th failure (with
    ``jitter``, a random 50-100% of it), or the failure's own ``wait``; never
    more than ``max_wait``. With a ``budget``, a wait that would take the time
    since the first attempt (``clock``) past ``budget`` seconds ends the
    retries instead. ``on_wait`` receives :func:`wait_line` (naming ``what``)
    before each wait.
    """
    attempts, backoff, max_wait, budget = (
        max(1, policy.attempts),
        policy.backoff,
        policy.max_wait,
        policy.budget,
    )
    from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type

    start = clock()
    over_budget: list[bool] = []

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, Retryable) and exc.wait is not None:
            return min(exc.wait, max_wait)
        step = backoff * 2 ** (state.attempt_number - 1)
        if policy.jitter:
            step *= random.uniform(0.5, 1.0)
        return float(min(step, max_wait))

    def stop(state: RetryCallState) -> bool:
        # tenacity computes the coming wait before asking whether to stop.
        if state.attempt_number >= attempts:
            return True
        if budget is not None and clock() - start + state.upcoming_sleep > budget:
            over_budget.append(True)
            return True
        return False

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if on_wait is not None and isinstance(exc, Retryable):
            on_wait(wait_line(what, exc.reason, state.attempt_number, attempts, state.upcoming_sleep))

    retrying = Retrying(
        stop=stop,
        wait=wait,
        retry=retry_if_exception_type(Retryable),
        sleep=sleep,
        before_sleep=before_sleep,
    )
    try:
        return retrying(attempt, *args)
    except RetryError as err:
        last = err.last_attempt.exception()
        assert isinstance(last, Retryable)  # only Retryable failures are retried
        raise RetriesExhausted(
            last, err.last_attempt.attempt_number, budget if over_budget else None
        ) from None
