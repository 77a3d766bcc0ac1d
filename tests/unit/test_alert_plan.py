"""The alert's one action per nightly, and its text."""

from __future__ import annotations

import pytest

from pipeline.commands.alert import failure_reason
from pipeline.errors import UsageError
from pipeline.release.alert import plan_alert
from pipeline.release.plan import LegResult, leg_result

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


def _result(**record: object) -> LegResult:
    return leg_result({"leg": "cuda", "status": "failed", **record}, where="test")


def test_a_failed_check_is_named_with_its_code_and_first_problem() -> None:
    check = {
        "ok": False,
        "summary": "check-bundle FAILED: 3 binaries",
        "problems": [
            {"file": "LICENSE", "kind": "license", "library": None, "message": "missing"},
            {"file": "bin/llama-cli", "kind": "needed", "library": "libx.so", "message": "needs libx.so"},
        ],
    }
    reason = failure_reason(
        _result(
            bundle_check=check,
            exit_code=13,
            error="cuda: llama-b1-bin-ubuntu-cuda-x64.tar.gz fails check-bundle: LICENSE: missing",
        )
    )
    assert reason == "its bundle fails check-bundle (exit 13): LICENSE: missing"


def test_another_failure_quotes_its_error_line_and_an_old_record_says_what_it_can() -> None:
    reason = failure_reason(_result(error="cuda: Ninja build failed at ggml.o: error: x", exit_code=1))
    assert reason == "the build failed (exit 1): Ninja build failed at ggml.o: error: x"
    assert failure_reason(_result()) == "the build failed"


def test_the_warm_ups_issue_speaks_of_the_warm_up_not_the_nightly() -> None:
    plan = plan_alert(
        "failure",
        None,
        tag="b7",
        failed=[("rocm-linux-gfx110X", "the build failed")],
        run_url=None,
        run_name="warm-up",
    )
    assert plan.title == "Warm-up build failing"
    assert plan.body.startswith("The warm-up for `b7` failed.")
    closed = plan_alert("success", 12, tag="b7", failed=[], run_url=None, run_name="warm-up")
    assert closed.action == "close" and closed.body.startswith("The warm-up for `b7` succeeded")
    assert plan_alert("failure", None, tag=None, failed=[], run_url=None).title == "Nightly build failing"
