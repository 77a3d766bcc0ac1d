"""--now / PIPELINE_NOW parsing."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime

import pytest

from pipeline.errors import UsageError
from pipeline.inputs.run_inputs import read_inputs
from pipeline.util.timeutil import format_utc, parse_now

NOON = datetime(2026, 8, 7, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "2026-08-07T12:00:00Z",
        "2026-08-07T12:00:00+00:00",
        "2026-08-07T05:00:00-07:00",
        "2026-08-07T12:00",
        "2026-08-07 12:00:00",
        " 2026-08-07T21:00:00+09:00 ",
    ],
)
def test_parse_now(text: str) -> None:
    moment = parse_now(text)
    assert moment == NOON
    assert moment.tzinfo is UTC


def test_a_bare_date_is_midnight_utc() -> None:
    assert parse_now("2026-08-07") == datetime(2026, 8, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    "text", ["", "now", "yesterday", "2026-13-01", "2026-08-07T25:00", "-2026-08-07", "12:00"]
)
def test_malformed_now(text: str) -> None:
    with pytest.raises(UsageError, match=r"^PIPELINE_NOW: not an ISO-8601 moment: .* \(e\.g\."):
        parse_now(text, where="PIPELINE_NOW")


def test_format_utc() -> None:
    assert format_utc(parse_now("2026-08-07T05:00:00-07:00")) == "2026-08-07T12:00:00Z"


def effective_now(flag: str | datetime | None) -> datetime:
    """The run's moment as the CLI fixes it: --now, else PIPELINE_NOW, else the clock."""
    text = flag.isoformat() if isinstance(flag, datetime) else flag
    return read_inputs(argparse.Namespace(now=text), environ=dict(os.environ), need_matrix=False).now


def test_effective_now_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_NOW", "2026-01-01T00:00:00Z")
    assert effective_now("2026-08-07T12:00:00Z") == NOON
    assert effective_now(NOON) == NOON
    assert effective_now(None) == datetime(2026, 1, 1, tzinfo=UTC)
    monkeypatch.setenv("PIPELINE_NOW", "soon")
    with pytest.raises(UsageError, match=r"^PIPELINE_NOW: not an ISO-8601 moment"):
        effective_now(None)
    monkeypatch.delenv("PIPELINE_NOW")
    before = datetime.now(UTC)
    assert before <= effective_now(None) <= datetime.now(UTC)
