"""The one retry policy: waits, server-requested waits, exhaustion, what is not retried."""

from __future__ import annotations

import os

import pytest

from pipeline.errors import UsageError
from pipeline.inputs import settings as S
from pipeline.inputs.settings import DEFAULT_BACKOFF
from pipeline.util.http_retry import (
    DEFAULT_RETRY,
    RetriesExhausted,
    Retryable,
    RetryPolicy,
    call_with_retries,
    retry_after,
)


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
    assert (
        call_with_retries(
            attempt,
            policy=RetryPolicy(attempts=5, backoff=2.0, max_wait=5.0, jitter=False),
            sleep=slept.append,
        )
        == "ok"
    )
    assert slept == [2.0, 4.0, 5.0]
    assert len(calls) == 4


def test_server_wait_wins_but_is_capped() -> None:
    slept: list[float] = []
    attempt, _ = _failing([Retryable("429", wait=3.0), Retryable("429", wait=99.0), "ok"])
    call_with_retries(
        attempt, policy=RetryPolicy(attempts=3, backoff=1.0, max_wait=10.0, jitter=False), sleep=slept.append
    )
    assert slept == [3.0, 10.0]


def test_jitter_stays_within_half_and_full_step() -> None:
    slept: list[float] = []
    attempt, _ = _failing([Retryable("x")] * 3 + ["ok"])
    call_with_retries(
        attempt, policy=RetryPolicy(attempts=4, backoff=4.0, max_wait=100.0, jitter=True), sleep=slept.append
    )
    for wait, step in zip(slept, (4.0, 8.0, 16.0), strict=True):
        assert step / 2 <= wait <= step


def test_exhaustion_reports_the_last_reason_and_the_attempts() -> None:
    attempt, calls = _failing([Retryable("first"), Retryable("last")])
    with pytest.raises(RetriesExhausted) as info:
        call_with_retries(
            attempt,
            policy=RetryPolicy(attempts=2, backoff=0.0, max_wait=0.0, jitter=False),
            sleep=lambda _: None,
        )
    assert info.value.last.reason == "last"
    assert info.value.attempts_text == "2 attempts"
    assert len(calls) == 2


def test_other_errors_are_not_retried() -> None:
    attempt, calls = _failing([ValueError("404 is final")])
    with pytest.raises(ValueError, match="404 is final"):
        call_with_retries(
            attempt,
            policy=RetryPolicy(attempts=5, backoff=0.0, max_wait=0.0, jitter=False),
            sleep=lambda _: None,
        )
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


class _FakeClock:
    """A clock that moves only when the code under test sleeps: no wall-clock time in the test."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_each_wait_is_announced_with_what_attempt_and_how_long() -> None:
    clock, lines = _FakeClock(), []
    attempt, _ = _failing([Retryable("HTTP 503 Service Unavailable"), Retryable("read timed out"), "ok"])
    call_with_retries(
        attempt,
        policy=RetryPolicy(attempts=4, backoff=2.0, max_wait=60.0, jitter=False),
        sleep=clock.sleep,
        clock=clock,
        on_wait=lines.append,
        what="GET http://127.0.0.1:1/index",
    )
    assert lines == [
        "GET http://127.0.0.1:1/index: HTTP 503 Service Unavailable; attempt 1 of 4 failed, retrying in 2.0 s",
        "GET http://127.0.0.1:1/index: read timed out; attempt 2 of 4 failed, retrying in 4.0 s",
    ]
    assert clock.slept == [2.0, 4.0]


def test_budget_stops_before_a_wait_that_would_pass_it() -> None:
    # Waits 1, 2, 4, 8 ... with a budget of 10 s: 1 + 2 + 4 = 7 s fit, the next 8 s would pass it.
    clock = _FakeClock()
    attempt, calls = _failing([Retryable("HTTP 503")] * 10)
    with pytest.raises(RetriesExhausted) as info:
        call_with_retries(
            attempt,
            policy=RetryPolicy(attempts=10, backoff=1.0, max_wait=100.0, budget=10.0, jitter=False),
            sleep=clock.sleep,
            clock=clock,
        )
    assert clock.slept == [1.0, 2.0, 4.0]
    assert len(calls) == 4
    assert info.value.budget == 10.0
    assert "retry budget of 10 s" in info.value.attempts_text


def test_budget_counts_the_time_spent_in_attempts_too() -> None:
    # Each attempt takes 30 s (a hung server until the timeout): the budget of 60 s
    # allows attempt 1 (30 s) + wait 1 s + attempt 2 (30 s), then no more.
    clock = _FakeClock()

    def slow_attempt() -> str:
        clock.now += 30.0
        raise Retryable("read timed out")

    with pytest.raises(RetriesExhausted) as info:
        call_with_retries(
            slow_attempt,
            policy=RetryPolicy(attempts=6, backoff=1.0, max_wait=30.0, budget=60.0, jitter=False),
            sleep=clock.sleep,
            clock=clock,
        )
    assert info.value.attempts == 2
    assert clock.slept == [1.0]


def test_a_huge_retry_after_within_attempts_is_refused_by_the_budget() -> None:
    clock, lines = _FakeClock(), []
    attempt, calls = _failing([Retryable("HTTP 429 rate limited", wait=300.0), "ok"])
    with pytest.raises(RetriesExhausted):
        call_with_retries(
            attempt,
            policy=RetryPolicy(attempts=3, backoff=1.0, max_wait=300.0, budget=120.0, jitter=False),
            sleep=clock.sleep,
            clock=clock,
            on_wait=lines.append,
        )
    assert clock.slept == [] and lines == [] and len(calls) == 1


def test_without_budget_attempts_alone_end_the_retries() -> None:
    clock = _FakeClock()
    attempt, calls = _failing([Retryable("x")] * 3)
    with pytest.raises(RetriesExhausted) as info:
        call_with_retries(
            attempt,
            policy=RetryPolicy(attempts=3, backoff=100.0, max_wait=1000.0, jitter=False),
            sleep=clock.sleep,
            clock=clock,
        )
    assert info.value.budget is None and len(calls) == 3 and clock.slept == [100.0, 200.0]


def test_retry_budget_setting_refuses_non_finite_and_negative() -> None:
    for bad in ("nan", "inf", "-1", "1e308", "soon"):
        with pytest.raises(UsageError, match="PIPELINE_HTTP_RETRY_BUDGET"):
            S.pick(S.HTTP_RETRY_BUDGET, environ={"PIPELINE_HTTP_RETRY_BUDGET": bad})
    assert S.pick(S.HTTP_RETRY_BUDGET, environ={"PIPELINE_HTTP_RETRY_BUDGET": "45"}).value == 45.0


def test_one_policy_for_every_client() -> None:
    """Five attempts, waits of up to two minutes, jittered, for every HTTP client: the index and wheel pages,
    downloads, pip's wheel fetches and GitHub's API. (The index once made six attempts while the others made
    five, and each client had a longest wait of its own: 30, 60 or 120 s.)"""
    import inspect

    from pipeline.github.rest import RestClient
    from pipeline.rocm.index_fetch import fetch_index
    from pipeline.rocm.wheel_resolve import fetch_page
    from pipeline.toolchain.cuda_wheels import fetch_wheel
    from pipeline.toolchain.installer.download import download
    from pipeline.toolchain.installer.install import install_archive
    from pipeline.toolchain.toolchain import ToolchainRequest

    assert (DEFAULT_RETRY.attempts, DEFAULT_RETRY.backoff, DEFAULT_RETRY.max_wait, DEFAULT_RETRY.jitter) == (
        5, 1.0, 120.0, True)  # fmt: skip
    for client in (RestClient.__init__, fetch_index, fetch_page, fetch_wheel, download, install_archive):
        assert inspect.signature(client).parameters["retry"].default is DEFAULT_RETRY, client
    assert ToolchainRequest.__dataclass_fields__["retry"].default is DEFAULT_RETRY
    # The run's settings change the first wait and the budget, nothing else.
    import argparse

    from pipeline.inputs.run_inputs import read_inputs

    environ = {"PIPELINE_HTTP_BACKOFF": "0.25", "PIPELINE_HTTP_RETRY_BUDGET": "45"}
    inputs = read_inputs(argparse.Namespace(), environ=environ, need_matrix=False)
    assert inputs.retry == RetryPolicy(attempts=5, backoff=0.25, max_wait=120.0, jitter=True, budget=45.0)
