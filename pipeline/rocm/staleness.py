"""Is a resolved ROCm build stale? Pure: the build's date against the run's moment and the limit.

The newest build a policy can take can be months old without any error: a
renamed family, a host that stopped getting builds (TheRock moved on
2026-08-23), a stream that paused. Against the old host the night of
2026-12-06 resolved a build 106 days old with exit 0. A build older than
``rocm.max_age_days`` (default 14) is said where a person looks: the resolve
and build logs, the record's warnings, the report; with ``rocm.stale =
"fail"`` it fails instead (StaleToolchainError, exit 14).
"""

from __future__ import annotations

from datetime import datetime

from pipeline.errors import StaleToolchainError
from pipeline.inputs.resolution_file import ResolvedRocm
from pipeline.names import rocm_version_date


def build_age_days(resolved: ResolvedRocm, now: datetime) -> int | None:
    """Whole days from the build's date (its version's) to the run's moment; None when the version has no date."""
    try:
        built = rocm_version_date(resolved.version)
    except ValueError:
        return None
    return (now.date() - built).days


def stale_line(resolved: ResolvedRocm, now: datetime, max_age_days: float) -> str | None:
    """One line when ``resolved`` is older than ``max_age_days`` at ``now``; None when it is fresh enough."""
    age = build_age_days(resolved, now)
    if age is None or age <= max_age_days:
        return None
    where = f", from {resolved.index_url}" if resolved.index_url else ""
    return (
        f"ROCm {resolved.os} {resolved.family}: the build {resolved.policy} takes ({resolved.version}{where}) is "
        f"{age} days old (over rocm.max_age_days = {max_age_days:g}): has TheRock renamed the family or moved "
        'its host? (docs/rocm.md, "Stale builds")'
    )


def check_stale(resolved: ResolvedRocm, now: datetime, *, max_age_days: float, action: str) -> str | None:
    """:func:`stale_line` for a warning (``action`` "warn"); with "fail", a StaleToolchainError instead."""
    line = stale_line(resolved, now, max_age_days)
    if line is not None and action == "fail":
        raise StaleToolchainError(
            line, hint='rocm.stale = "warn" (or PIPELINE_ROCM_STALE=warn) builds with it'
        )
    return line
