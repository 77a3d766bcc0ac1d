"""The one retry policy: waits, server-requested waits, exhaustion, what is not retried."""

from __future__ import annotations

import os

import pytest

from pipeline import settings as S
from pipeline.errors import UsageError
from pipeline.retry import DEFAULT_BACKOFF, RetriesExhausted, Retryable, call_with_retries, retry_after


def _failing(outcomes: list[BaseException | str]):
    calls: list[int] = []

    def attempt() -> str:
        calls.append(1)
        item = outcomes.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    return attempt, calls


def test_exponential_waits_capped_then_success() -> None:
    slept: list[float] = []
    attempt, calls = _failing([Retryable("503"), Retryable("503"), Retryable("503"), "ok"])
    assert call_with_retries(attempt, attempts=5, backoff=2.0, max_wait=5.0, sleep=slept.append) == "ok"
    assert slept == [2.0, 4.0, 5.0]
    assert len(calls) == 4


def test_server_wait_wins_but_is_capped() -> None:
    slept: list[float] = []
    attempt, _ = _failing([Retryable("429", wait=3.0), Retryable("429", wait=99.0), "ok"])
    call_with_retries(attempt, attempts=3, backoff=1.0, max_wait=10.0, sleep=slept.append)
    assert slept == [3.0, 10.0]


def test_jitter_stays_within_half_and_full_step() -> None:
    slept: list[float] = []
    attempt, _ = _failing([Retryable("x")] * 3 + ["ok"])
    call_with_retries(attempt, attempts=4, backoff=4.0, max_wait=100.0, jitter=True, sleep=slept.append)
    for wait, step in zip(slept, (4.0, 8.0, 16.0), strict=True):
        assert step / 2 <= wait <= step


def test_exhaustion_reports_the_last_reason_and_the_attempts() -> None:
    attempt, calls = _failing([Retryable("first"), Retryable("last")])
    with pytest.raises(RetriesExhausted) as info:
        call_with_retries(attempt, attempts=2, backoff=0.0, max_wait=0.0, sleep=lambda _: None)
    assert info.value.last.reason == "last"
    assert info.value.attempts_text == "2 attempts"
    assert len(calls) == 2


def test_other_errors_are_not_retried() -> None:
    attempt, calls = _failing([ValueError("404 is final")])
    with pytest.raises(ValueError, match="404 is final"):
        call_with_retries(attempt, attempts=5, backoff=0.0, max_wait=0.0, sleep=lambda _: None)
    assert len(calls) == 1


def test_retry_after_forms() -> None:
    assert retry_after("7", 0.0) == 7.0
    assert retry_after("-3", 0.0) == 0.0
    assert retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 40.0) == 60.0
    assert retry_after("soon", 0.0) is None
    assert retry_after(None, 0.0) is None


def default_backoff() -> float:
    """The run's backoff setting, read from this process's environment as the CLI reads it."""
    return float(S.pick(S.HTTP_BACKOFF, environ=os.environ, default=DEFAULT_BACKOFF).value)


def test_backoff_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIPELINE_HTTP_BACKOFF", raising=False)
    assert default_backoff() == 1.0
    monkeypatch.setenv("PIPELINE_HTTP_BACKOFF", "0.25")
    assert default_backoff() == 0.25
    monkeypatch.setenv("PIPELINE_HTTP_BACKOFF", "fast")
    with pytest.raises(UsageError, match="PIPELINE_HTTP_BACKOFF"):
        default_backoff()
