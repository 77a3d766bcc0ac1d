"""Values that validation used to let through: non-finite numbers, bad counts, corrupt lines, unsafe tags."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from pipeline.errors import ConfigError, UsageError, describe_os_error
from pipeline.inputs.matrix import parse_matrix
from pipeline.report.formats import hit_rate_of
from pipeline.results.ninjalog import parse_log
from pipeline.source.checkout import CheckoutInfo, folder_tag
from pipeline.util.timeutil import parse_now

LEG = {"legs": {"cpu": {"backend": "cpu", "os": "linux"}}}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_threshold_is_refused_naming_the_key(value: float) -> None:
    with pytest.raises(ConfigError, match=r"m\.toml: report\.hit_rate_warning: expected a finite number"):
        parse_matrix({**LEG, "report": {"hit_rate_warning": value}}, Path("m.toml"))


def test_huge_hours_are_out_of_range() -> None:
    with pytest.raises(ConfigError, match=r"source.min_age_hours: expected a number between 0 and"):
        parse_matrix({**LEG, "source": {"min_age_hours": 1e308}}, Path("m.toml"))


def test_empty_runner_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"legs.cpu.runner: expected a non-empty string"):
        parse_matrix({"legs": {"cpu": {"backend": "cpu", "os": "linux", "runner": " "}}}, Path("m.toml"))


def test_unclosed_ipv6_index_url_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"rocm.index_url: expected a well-formed URL"):
        parse_matrix({**LEG, "rocm": {"index_url": "http://[::1"}}, Path("m.toml"))


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00", "1969-12-31"])
def test_moments_outside_the_runs_range_are_refused(text: str) -> None:
    with pytest.raises(UsageError, match=r"--now: .* is outside"):
        parse_now(text)


def test_moments_at_the_edges_of_the_range_are_taken() -> None:
    assert parse_now("1970-01-01").year == 1970
    assert parse_now("2199-12-31T23:59:59Z").year == 2199


@pytest.mark.parametrize(
    ("cc", "rate"),
    [
        (
            {"hits": -150, "misses": 10, "hit_rate": 0.5},
            0.5,
        ),  # negative count: unknown, the stored rate is used
        ({"hits": 90, "misses": -10}, None),
        ({"hit_rate": float("nan")}, None),
        ({"hit_rate": 250.0}, None),
        ({"hits": 3, "misses": 1}, 0.75),
    ],
)
def test_hit_rate_never_leaves_zero_to_one(cc: dict[str, float], rate: float | None) -> None:
    assert hit_rate_of(cc) == rate


def test_a_step_ending_before_it_starts_is_skipped() -> None:
    log = parse_log("# ninja log v5\n0\t100\t0\ta.o\th1\n500\t200\t0\tb.o\th2\n-5\t10\t0\tc.o\th3\n")
    assert [s.outputs for s in log.steps] == [("a.o",)]
    assert log.skipped_lines == 2
    assert all(s.end_ms >= s.start_ms for s in log.steps)


@pytest.mark.parametrize(
    ("described", "tag"),
    [("rel/v1", "rel_v1"), ("b1234", "b1234"), ("feature/x y", "feature_x_y"), ("///", "g0123456")],
)
def test_a_described_tag_obeys_the_safe_tag_rule(described: str, tag: str) -> None:
    info = CheckoutInfo(commit="0123456789abcdef", tag=described, dirty=False)
    assert folder_tag(info) == tag
    assert "/" not in folder_tag(CheckoutInfo(commit="0123456789abcdef", tag=described, dirty=True))


def test_os_errors_read_as_path_and_reason() -> None:
    assert describe_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory", "/dev/null/x")) == (
        "/dev/null/x: Not a directory"
    )
    assert (
        describe_os_error(FileExistsError(errno.EEXIST, "File exists", "out"))
        == "out: exists and is not a folder"
    )
    moved = OSError(errno.EBUSY, "Device or resource busy", "/t/.x.tmp", None, "/t/dest")
    assert describe_os_error(moved) == "/t/dest: Device or resource busy"


def test_a_record_with_a_negative_count_is_shown_as_unknown_and_says_so() -> None:
    from pipeline.report.formats import leg_row
    from pipeline.results.record import LegRecord

    rec = LegRecord(
        leg="cpu",
        backend="cpu",
        os="linux",
        started="2026-08-09T06:00:00Z",
        ccache={"hits": -150, "misses": 10},
    )
    row = leg_row(rec, None, 0.9)
    assert row.hits is None and row.misses == 10 and row.hit_rate is None
    assert row.warning == "cpu: the record's ccache hits is not a count of 0 or more: shown as unknown"
