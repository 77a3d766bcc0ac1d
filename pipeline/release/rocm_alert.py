"""The issue that names each stale ROCm family: open, comment, close or nothing. Pure, no I/O.

A stale toolchain (pipeline/rocm/staleness.py) warns in the logs, the records
and the report, and a green night still goes by unread. This issue (label
``rocm-stale``, apart from the failure alert's and the dead-man check's) is
opened the first night a family's build is stale, names each stale family
once: a later night comments only for a family the issue does not name yet,
and says nothing when it names them all. The first night with no stale family
closes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

DEFAULT_ROCM_STALE_LABEL = "rocm-stale"
TITLE = "ROCm toolchain stale"

RocmAlertAction = Literal["open", "comment", "close", "none"]


@dataclass(frozen=True, kw_only=True)
class RocmAlertPlan:
    action: RocmAlertAction
    issue: int | None
    body: str
    # The stale families this night's records name, and those not named in the issue yet.
    stale: tuple[str, ...]
    new: tuple[str, ...]


def family_mark(family: str) -> str:
    """How the issue names a family (``linux gfx110X-all``): the text looked for on later nights."""
    return f"`{family}`"


def plan_rocm_alert(
    stale: Mapping[str, str], *, open_issue: int | None, said: Sequence[str], run_url: str | None = None
) -> RocmAlertPlan:
    """``stale``: each stale family (``<os> <family>``) with its line; ``said``: the open issue's body and comments."""
    link = f" ([run]({run_url}))" if run_url else ""
    families = tuple(sorted(stale))
    if not families:
        if open_issue is None:
            return RocmAlertPlan(action="none", issue=None, body="", stale=(), new=())
        return RocmAlertPlan(
            action="close",
            issue=open_issue,
            stale=(),
            new=(),
            body=f"Every ROCm family resolves a build within rocm.max_age_days again{link}. Closing.\n",
        )
    new = tuple(f for f in families if not any(family_mark(f) in text for text in said))
    if open_issue is not None and not new:
        return RocmAlertPlan(action="none", issue=open_issue, body="", stale=families, new=())
    named = families if open_issue is None else new
    lines = [f"- {family_mark(f)}: {stale[f]}" for f in named]
    head = (
        "The newest ROCm build these families can take is older than rocm.max_age_days"
        if open_issue is None
        else "More ROCm families are stale"
    )
    body = f"{head}{link}:\n\n" + "\n".join(lines) + "\n"
    return RocmAlertPlan(
        action="open" if open_issue is None else "comment",
        issue=open_issue,
        body=body,
        stale=families,
        new=named,
    )
