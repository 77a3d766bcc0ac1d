"""The run's moment as an aware UTC datetime: parsing, formatting, and the one clock read.

Everything that depends on time takes the moment as a parameter; only
:func:`utc_now` reads the clock, and only :mod:`pipeline.inputs.run_inputs` calls it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from pipeline.errors import UsageError

EXAMPLE = "2026-08-07T12:00:00Z"


def epoch_now() -> float:
    """Seconds since the epoch, now: what a server's ``Retry-After`` date and GitHub's rate-limit reset are
    counted from."""
    return time.time()


def utc_now() -> datetime:
    """The current moment (the only place that reads the clock)."""
    return datetime.now(UTC)


EARLIEST_MOMENT = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_MOMENT = datetime(2200, 1, 1, tzinfo=UTC)


def parse_now(text: str, *, where: str = "--now") -> datetime:
    """ISO-8601 text -> aware UTC datetime. A naive time or a bare date is UTC.

    Raises UsageError naming ``where`` for anything else.
    """
    value = text.strip()
    try:
        if not value or not value[0].isdigit():
            raise ValueError
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{where}: not an ISO-8601 moment: {text!r} (e.g. {EXAMPLE!r})") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        moment = moment.replace(tzinfo=UTC)
    # Cutoffs and ages are computed from the moment; near year 1 or 9999 they overflow.
    if not EARLIEST_MOMENT <= moment < LATEST_MOMENT:
        raise UsageError(
            f"{where}: {text!r} is outside the moments a run can have "
            f"({EARLIEST_MOMENT.year} to {LATEST_MOMENT.year - 1})"
        )
    return moment.astimezone(UTC)


def format_utc(moment: datetime) -> str:
    """``2026-08-07T12:00:00Z`` (microseconds kept when there are any)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def hours_minutes_seconds(total: int) -> tuple[int, int, int]:
    """Whole seconds as (hours, minutes, seconds)."""
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return hours, minutes, secs


def duration_text(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``1h 02m``: a duration as the release notes and the report show it."""
    hours, minutes, secs = hours_minutes_seconds(round(seconds))
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"
