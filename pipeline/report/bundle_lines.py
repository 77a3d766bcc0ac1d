"""The report's lines on each leg's bundle check (pure; rendered by pipeline.report.formats)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def bundle_check_line(leg: str, check: Mapping[str, Any] | None) -> str | None:
    """``<leg>: check-bundle passed: ...`` or the failure with its first problem; None without a check."""
    if not isinstance(check, Mapping):
        return None
    summary = str(
        check.get("summary") or ("check-bundle passed" if check.get("ok") else "check-bundle failed")
    )
    problems = check.get("problems") or []
    first = problems[0] if problems and isinstance(problems[0], Mapping) else None
    if check.get("ok") or first is None:
        return f"{leg}: {summary}"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{leg}: {summary}: {first.get('file')}: {first.get('message')}{more}"
