"""What the nightly's alert does: open, comment, close or nothing. Pure, no I/O.

One issue carries the alert label while the nightly is broken: the first
failure opens it, later failures comment on it (no pile of duplicates), and
the first success closes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pipeline.errors import UsageError

DEFAULT_LABEL = "nightly-failure"
STATUSES = ("success", "failure")

AlertAction = Literal["open", "comment", "close", "none"]
# GitHub's longest label name.
LABEL_MAX = 50


def check_label(label: str) -> str:
    """``label`` when it names exactly one label; UsageError otherwise.

    The open issues are found with ``labels=<label>``: an empty label matches
    every open issue (a success would close an unrelated one), and GitHub
    splits the value on commas (``a,b`` finds no issue with both, so a new
    one is opened every night).
    """
    if not label.strip():
        raise UsageError(
            "--label: empty: the alert needs a label of its own (it would match every open issue)"
        )
    if "," in label:
        raise UsageError(
            f"--label {label!r}: one label, without commas (GitHub reads labels=a,b as two labels)"
        )
    if label != label.strip() or len(label) > LABEL_MAX or any(not ch.isprintable() for ch in label):
        raise UsageError(f"--label {label!r}: expected a label name of 1 to {LABEL_MAX} printable characters, "
                         "no leading or trailing space")  # fmt: skip
    return label


@dataclass(frozen=True, kw_only=True)
class AlertPlan:
    action: AlertAction
    # The open alert issue this acts on (comment, close), if any.
    issue: int | None
    title: str
    body: str


def check_status(value: str) -> str:
    """``success`` or ``failure``, else a UsageError naming the choices."""
    if value not in STATUSES:
        raise UsageError(f"--status: expected one of {', '.join(STATUSES)}, got {value!r}")
    return value


def failure_text(
    tag: str | None, failed: Sequence[tuple[str, str]], run_url: str | None, run_name: str = "nightly"
) -> str:
    """The markdown naming the failed legs (and why) and linking the run."""
    head = f"The {run_name}{f' for `{tag}`' if tag else ''} failed"
    lines = [f"{head}{f' ([run]({run_url}))' if run_url else ''}.", ""]
    if failed:
        lines.append("Failed legs:")
        lines += [f"- `{leg}`: {why}" for leg, why in failed]
    else:
        lines.append("No leg failed: a job around the builds did (see the run).")
    return "\n".join(lines) + "\n"


def plan_alert(
    status: str,
    open_issue: int | None,
    *,
    tag: str | None,
    failed: Sequence[tuple[str, str]],
    run_url: str | None,
    run_name: str = "nightly",
) -> AlertPlan:
    """The one action for this run's ``status`` given the open alert issue (None: none open). ``run_name``:
    the workflow's, in the issue ("nightly", or "warm-up", whose failures never block a night)."""
    check_status(status)
    title = f"{run_name[:1].upper()}{run_name[1:]} build failing"
    if status == "failure":
        body = failure_text(tag, failed, run_url, run_name)
        return AlertPlan(action="comment" if open_issue else "open", issue=open_issue, title=title, body=body)
    if open_issue is None:
        return AlertPlan(action="none", issue=None, title=title, body="")
    fixed = f"The {run_name}{f' for `{tag}`' if tag else ''} succeeded"
    body = f"{fixed}{f' ([run]({run_url}))' if run_url else ''}: closing.\n"
    return AlertPlan(action="close", issue=open_issue, title=title, body=body)
