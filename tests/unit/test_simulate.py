"""pipeline.rocm.simulate: replaying publishing histories under toolchain policies."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import UsageError
from pipeline.names import rocm_version_date as version_date
from pipeline.rocm.simulate import (
    DEFAULT_POLICIES,
    SUNDAY_VARIANT,
    check_policy,
    parse_cron,
    run_moments,
    simulate,
    simulate_policy,
)
from pipeline.rocm.versions import RocmBuild, tarball_name

FAMILY = "gfx110X-all"
# A Sunday in summer (PDT, UTC-7): the LA week starts at 07:00Z.
SUNDAY = date(2026, 8, 9)
CRON = time(12, 0, tzinfo=UTC)


def build(day: date, published: datetime | None, line: str = "7.10.0") -> RocmBuild:
    version = f"{line}a{day:%Y%m%d}"
    name = tarball_name("linux", FAMILY, version)
    return RocmBuild(
        name=name,
        os="linux",
        family=FAMILY,
        version=version,
        date=version_date(version),
        published=published,
        url=f"http://127.0.0.1/{name}",
    )


def at(day: date, hour: int) -> datetime:
    return datetime.combine(day, time(hour), tzinfo=UTC)


def nightly(first: date, last: date, *, late: dict[date, datetime] | None = None) -> list[RocmBuild]:
    """A build each day, published at 08:00Z that day, except the ``late`` ones."""
    late = late or {}
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    return [build(d, late.get(d, at(d, 8))) for d in days]


def test_the_sunday_build_published_after_the_sunday_run_splits_only_the_sunday_variant() -> None:
    assert SUNDAY.weekday() == 6
    builds = nightly(SUNDAY - timedelta(days=21), SUNDAY + timedelta(days=20), late={SUNDAY: at(SUNDAY, 18)})
    results = simulate(builds, start=SUNDAY - timedelta(days=7), end=SUNDAY + timedelta(days=13), cron=CRON)
    assert list(results) == list(DEFAULT_POLICIES)

    weekly = dict(results["weekly"].weeks())
    assert weekly[SUNDAY] == ["7.10.0a20260808"]
    assert results["weekly"].split_weeks() == []

    sunday = results[SUNDAY_VARIANT]
    assert dict(sunday.weeks())[SUNDAY] == ["7.10.0a20260808", "7.10.0a20260809"]
    assert sunday.split_weeks() == [SUNDAY]
    by_day = {r.day: r.version for r in sunday.runs}
    assert by_day[SUNDAY] == "7.10.0a20260808"  # its own build was not out yet
    assert by_day[SUNDAY + timedelta(days=1)] == "7.10.0a20260809"

    # Cold runs: weekly switches twice (two week turns), the Sunday variant once more.
    assert [r.day for r in results["weekly"].cold_runs()] == [SUNDAY, SUNDAY + timedelta(days=7)]
    assert [r.day for r in sunday.cold_runs()] == [
        SUNDAY,
        SUNDAY + timedelta(days=1),
        SUNDAY + timedelta(days=7),
    ]
    # Latest takes a new build almost every night; it waits for Sunday's late one too.
    latest = results["latest"]
    assert len(latest.cold_runs()) == 19
    assert {r.day: r.version for r in latest.runs}[SUNDAY] == "7.10.0a20260808"


def test_json_shape_per_policy() -> None:
    builds = nightly(SUNDAY - timedelta(days=7), SUNDAY + timedelta(days=6), late={SUNDAY: at(SUNDAY, 18)})
    result = simulate_policy(builds, SUNDAY_VARIANT, run_moments(SUNDAY, SUNDAY + timedelta(days=2), CRON))
    doc = result.to_json()
    assert doc["runs"] == [
        {
            "date": "2026-08-09",
            "moment": "2026-08-09T12:00:00Z",
            "week": "2026-08-09",
            "version": "7.10.0a20260808",
        },
        {
            "date": "2026-08-10",
            "moment": "2026-08-10T12:00:00Z",
            "week": "2026-08-09",
            "version": "7.10.0a20260809",
        },
        {
            "date": "2026-08-11",
            "moment": "2026-08-11T12:00:00Z",
            "week": "2026-08-09",
            "version": "7.10.0a20260809",
        },
    ]
    assert doc["cold_runs"] == 1
    assert doc["cold_run_dates"] == ["2026-08-10"]
    assert doc["split_weeks"] == ["2026-08-09"]
    assert doc["weeks"] == [
        {"sunday": "2026-08-09", "toolchains": ["7.10.0a20260808", "7.10.0a20260809"], "count": 2}
    ]
    assert doc["distinct_toolchains"] == 2
    assert doc["unresolved_runs"] == 0


def test_week_follows_san_francisco_time() -> None:
    # 06:00Z on Sunday is still Saturday evening in San Francisco: the previous week.
    builds = nightly(SUNDAY - timedelta(days=14), SUNDAY)
    result = simulate_policy(builds, "weekly", run_moments(SUNDAY, SUNDAY, time(6, 0, tzinfo=UTC)))
    assert result.runs[0].week == SUNDAY - timedelta(days=7)
    assert result.runs[0].version == "7.10.0a20260801"


def test_runs_before_any_build_are_unresolved_and_not_cold() -> None:
    builds = nightly(SUNDAY + timedelta(days=2), SUNDAY + timedelta(days=4))
    result = simulate_policy(builds, "latest", run_moments(SUNDAY, SUNDAY + timedelta(days=4), CRON))
    assert [r.version for r in result.runs] == [
        None,
        None,
        "7.10.0a20260811",
        "7.10.0a20260812",
        "7.10.0a20260813",
    ]
    assert result.runs[0].error is not None and "no ROCm" in result.runs[0].error
    # The first resolved run has no predecessor with a toolchain: not counted.
    assert [r.day for r in result.cold_runs()] == [SUNDAY + timedelta(days=3), SUNDAY + timedelta(days=4)]
    assert result.to_json()["unresolved_runs"] == 2


def test_a_gap_keeps_the_older_build() -> None:
    builds = [build(SUNDAY - timedelta(days=3), at(SUNDAY - timedelta(days=3), 8))]
    result = simulate_policy(builds, "weekly", run_moments(SUNDAY, SUNDAY + timedelta(days=9), CRON))
    assert {r.version for r in result.runs} == {"7.10.0a20260806"}
    assert result.cold_runs() == []


def test_explicit_version_waits_for_its_publication() -> None:
    builds = nightly(SUNDAY - timedelta(days=2), SUNDAY + timedelta(days=2))
    result = simulate_policy(builds, "7.10.0a20260810", run_moments(SUNDAY, SUNDAY + timedelta(days=2), CRON))
    assert [r.version for r in result.runs] == [None, "7.10.0a20260810", "7.10.0a20260810"]


@pytest.mark.parametrize(
    ("text", "hour", "minute"), [("06:00Z", 6, 0), ("6:30", 6, 30), (" 23:59Z ", 23, 59)]
)
def test_parse_cron(text: str, hour: int, minute: int) -> None:
    assert parse_cron(text) == time(hour, minute, tzinfo=UTC)


@pytest.mark.parametrize("text", ["24:00Z", "06:60Z", "0600", "06:00+02", ""])
def test_parse_cron_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="--cron"):
        parse_cron(text)


def test_check_policy() -> None:
    assert check_policy("weekly-sunday") == "weekly-sunday"
    assert check_policy("weekly-stable") == "weekly-stable"
    assert check_policy("10.1.0a20260807") == "10.1.0a20260807"
    with pytest.raises(UsageError, match=r"^--policy: expected .*, got 'monthly'$"):
        check_policy("monthly")
    # The shape of a version is not enough: the date must be a day (names.rocm_version_parts).
    with pytest.raises(UsageError, match=r"^--policy: expected .*, got '10\.1\.0a20261399'$"):
        check_policy("10.1.0a20261399")


def test_run_moments_bounds() -> None:
    moments = run_moments(date(2026, 3, 7), date(2026, 3, 9), CRON)
    assert moments == [at(date(2026, 3, d), 12) for d in (7, 8, 9)]
    with pytest.raises(UsageError, match="before --from"):
        run_moments(date(2026, 3, 9), date(2026, 3, 7), CRON)
    with pytest.raises(UsageError, match="at most"):
        run_moments(date(2000, 1, 1), date(2026, 1, 1), CRON)


@settings(max_examples=60, deadline=None)
@given(
    present=st.lists(st.booleans(), min_size=60, max_size=60),
    lag_minutes=st.lists(st.integers(0, 30 * 60), min_size=60, max_size=60),
    cron_hour=st.integers(0, 23),
)
def test_weekly_never_splits_a_week_when_builds_are_out_within_30_hours(
    present: list[bool], lag_minutes: list[int], cron_hour: int
) -> None:
    # A Saturday build published within 30 hours of its date's midnight UTC is out before
    # Sunday begins in San Francisco (07:00Z or 08:00Z), whatever the cron, DST or gaps.
    first = date(2026, 1, 4)
    builds = [
        build(first + timedelta(days=i), at(first + timedelta(days=i), 0) + timedelta(minutes=lag))
        for i, (keep, lag) in enumerate(zip(present, lag_minutes, strict=True))
        if keep
    ]
    start = first + timedelta(days=7)
    result = simulate_policy(
        builds, "weekly", run_moments(start, start + timedelta(days=80), time(cron_hour, tzinfo=UTC))
    )
    assert result.split_weeks() == []
    assert all(len(versions) <= 1 for _, versions in result.weeks())


def test_a_late_saturday_publish_splits_weekly_but_never_weekly_stable() -> None:
    # Saturday 08-08's build comes out Sunday 18:00Z, after Sunday's 12:00Z run:
    # the original job's failure. Two weeks before and after it publish on time.
    saturday = SUNDAY - timedelta(days=1)
    builds = nightly(
        SUNDAY - timedelta(days=21), SUNDAY + timedelta(days=20), late={saturday: at(SUNDAY, 18)}
    )
    results = simulate(builds, start=SUNDAY - timedelta(days=7), end=SUNDAY + timedelta(days=13), cron=CRON)
    assert list(results) == ["weekly-stable", "weekly", SUNDAY_VARIANT, "latest"]

    weekly, stable = results["weekly"], results["weekly-stable"]
    assert weekly.split_weeks() == [SUNDAY]
    assert dict(weekly.weeks())[SUNDAY] == ["7.10.0a20260807", "7.10.0a20260808"]
    assert stable.split_weeks() == []
    # Every run of that week takes Friday's build: the price of never splitting.
    assert dict(stable.weeks())[SUNDAY] == ["7.10.0a20260807"]
    assert dict(stable.weeks())[SUNDAY + timedelta(days=7)] == ["7.10.0a20260815"]
    # One cold run per week turn for weekly-stable; weekly pays one more on Monday.
    assert [r.day for r in stable.cold_runs()] == [SUNDAY, SUNDAY + timedelta(days=7)]
    assert [r.day for r in weekly.cold_runs()] == [
        SUNDAY,
        SUNDAY + timedelta(days=1),
        SUNDAY + timedelta(days=7),
    ]


@settings(max_examples=40, deadline=None)
@given(
    present=st.lists(st.booleans(), min_size=70, max_size=70),
    lag_minutes=st.lists(st.integers(0, 10 * 24 * 60), min_size=70, max_size=70),
    cron_hour=st.integers(0, 23),
)
def test_weekly_stable_never_splits_a_week_whatever_the_lateness(
    present: list[bool], lag_minutes: list[int], cron_hour: int
) -> None:
    # Publishes up to ten days late, gaps, a window across the March DST change.
    first = date(2026, 1, 25)
    builds = [
        build(first + timedelta(days=i), at(first + timedelta(days=i), 0) + timedelta(minutes=lag))
        for i, (keep, lag) in enumerate(zip(present, lag_minutes, strict=True))
        if keep
    ]
    start = first + timedelta(days=7)
    result = simulate_policy(
        builds, "weekly-stable", run_moments(start, start + timedelta(days=80), time(cron_hour, tzinfo=UTC))
    )
    assert result.split_weeks() == []
    assert all(len(versions) <= 1 for _, versions in result.weeks())
