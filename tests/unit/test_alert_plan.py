"""The alert's one action per nightly, and its text."""

from __future__ import annotations

import pytest

from pipeline.errors import UsageError
from pipeline.release.alert import plan_alert

RUN = "https://github.com/o/r/actions/runs/42"


def test_first_failure_opens_with_the_failed_legs_and_the_run() -> None:
    plan = plan_alert("failure", None, tag="b7000", failed=[("cuda", "the build failed")], run_url=RUN)
    assert plan.action == "open"
    assert plan.body == (
        "The nightly for `b7000` failed ([run](https://github.com/o/r/actions/runs/42)).\n"
        "\n"
        "Failed legs:\n"
        "- `cuda`: the build failed\n"
    )


def test_a_later_failure_comments_on_the_open_issue() -> None:
    plan = plan_alert("failure", 7, tag=None, failed=[], run_url=None)
    assert (plan.action, plan.issue) == ("comment", 7)
    assert plan.body == "The nightly failed.\n\nNo leg failed: a job around the builds did (see the run).\n"


def test_success_closes_the_open_issue_or_does_nothing() -> None:
    close = plan_alert("success", 7, tag="b7001", failed=[], run_url=RUN)
    assert (close.action, close.issue) == ("close", 7)
    assert close.body == f"The nightly for `b7001` succeeded ([run]({RUN})): closing.\n"
    assert plan_alert("success", None, tag=None, failed=[], run_url=None).action == "none"


def test_unknown_status_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--status"):
        plan_alert("cancelled", None, tag=None, failed=[], run_url=None)
