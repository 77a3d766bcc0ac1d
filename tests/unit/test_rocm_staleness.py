"""A months-old ROCm build is never silent: the line, the limit, the failure, the report's row.

Against the old host the night of 2026-12-06 resolved 10.1.0a20260822, 106 days old (issue's measurement).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.errors import StaleToolchainError, exit_codes_markdown
from pipeline.inputs.matrix import parse_matrix
from pipeline.inputs.resolution_file import ResolvedRocm
from pipeline.report.formats import leg_row
from pipeline.results.record import LegRecord
from pipeline.rocm.staleness import build_age_days, check_stale, stale_line
from tests.support.inputs import make_inputs

TONIGHT = datetime(2026, 12, 6, 9, 17, tzinfo=UTC)
OLD_HOST = "https://rocm.nightlies.amd.com/tarball-multi-arch/"
CPU = {"cpu": {"backend": "cpu"}}


def _build(version: str) -> ResolvedRocm:
    return ResolvedRocm(
        policy="weekly-stable",
        cutoff=None,
        version=version,
        file=f"therock-dist-linux-gfx110X-all-{version}.tar.gz",
        url=OLD_HOST + "x",
        published=None,
        os="linux",
        family="gfx110X-all",
        index_url=OLD_HOST,
    )


def test_augusts_build_tonight_is_106_days_old_and_said_so() -> None:
    build = _build("10.1.0a20260822")
    assert build_age_days(build, TONIGHT) == 106
    assert stale_line(build, TONIGHT, 14) == (
        "ROCm linux gfx110X-all: the build weekly-stable takes (10.1.0a20260822, from "
        "https://rocm.nightlies.amd.com/tarball-multi-arch/) is 106 days old (over rocm.max_age_days = 14): has "
        'TheRock renamed the family or moved its host? (docs/rocm.md, "Stale builds")'
    )


@pytest.mark.parametrize(
    ("version", "stale"),
    [
        ("10.1.0a20261122", False),  # 14 days: at the limit, not over it
        ("10.1.0a20261121", True),  # 15 days
        ("10.1.0a20261205", False),
    ],
)
def test_the_limit_is_whole_days_over_max_age(version: str, stale: bool) -> None:
    assert (stale_line(_build(version), TONIGHT, 14) is not None) is stale


def test_fail_raises_its_own_exit_code_and_warn_returns_the_line() -> None:
    build = _build("10.1.0a20260822")
    assert check_stale(build, TONIGHT, max_age_days=14, action="warn") == stale_line(build, TONIGHT, 14)
    with pytest.raises(StaleToolchainError) as err:
        check_stale(build, TONIGHT, max_age_days=14, action="fail")
    assert err.value.exit_code == 14 and "106 days old" in str(err.value)
    assert "| 14 | `StaleToolchainError` |" in exit_codes_markdown()
    # A fresh build passes either way.
    assert check_stale(_build("10.1.0a20261205"), TONIGHT, max_age_days=14, action="fail") is None


def test_the_limit_and_the_action_come_from_matrix_toml_unless_the_environment_says() -> None:
    matrix = parse_matrix({"rocm": {"max_age_days": 30, "stale": "fail"}, "legs": CPU}, Path("m.toml"))
    inputs = make_inputs(matrix, now=TONIGHT)
    assert (inputs.rocm_max_age_days, inputs.rocm_stale) == (30.0, "fail")
    inputs = make_inputs(
        matrix, now=TONIGHT, environ={"PIPELINE_ROCM_STALE": "warn", "PIPELINE_ROCM_MAX_AGE": "7"}
    )
    assert (inputs.rocm_max_age_days, inputs.rocm_stale) == (7.0, "warn")
    plain = make_inputs(parse_matrix({"legs": CPU}, Path("m.toml")), now=TONIGHT)
    assert (plain.rocm_max_age_days, plain.rocm_stale) == (14.0, "warn")


@pytest.mark.parametrize(
    ("rocm", "message"),
    [
        ({"stale": "ignore"}, "rocm.stale"),
        ({"max_age_days": 0}, "rocm.max_age_days"),
    ],
)
def test_a_bad_staleness_setting_names_its_key(rocm: dict[str, object], message: str) -> None:
    from pipeline.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        parse_matrix({"rocm": rocm, "legs": CPU}, Path("m.toml"))


def test_the_reports_row_says_a_stale_toolchain() -> None:
    line = stale_line(_build("10.1.0a20260822"), TONIGHT, 14)
    record = LegRecord(
        leg="rocm-linux-gfx110X",
        backend="rocm",
        os="linux",
        started="2026-12-06T09:17:00Z",
        toolchain={"identity": "rocm-10.1.0a20260822", "stale": line},
        ccache={"hits": 10, "misses": 0, "hit_rate": 1.0},
    )
    row = leg_row(record, None, 0.9)
    assert row.warning == f"rocm-linux-gfx110X: {line}"
