"""Weekly cutoff properties (across both DST changes), build selection, and weekly-stable's
one-build-per-week property over any publishing history."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline.errors import ResolutionError, UsageError
from pipeline.names import rocm_version_date as version_date
from pipeline.rocm.policy import (
    DEFAULT_POLICY,
    POLICIES,
    cutoff_for,
    nearest_versions,
    parse_policy,
    published_before,
    select_build,
    sunday_cutoff,
    visible_builds,
    week_start_moment,
    weekly_cutoff,
)
from pipeline.rocm.versions import RocmBuild, tarball_name

SF = ZoneInfo("America/Los_Angeles")
SATURDAY, SUNDAY = 5, 6


def sf_midnight(day: date) -> datetime:
    """The instant San Francisco's ``day`` begins, in UTC."""
    return datetime.combine(day, time(0), SF).astimezone(UTC)


def _nth_sunday(year: int, month: int, n: int) -> date:
    first = date(year, month, 1)
    return first + timedelta(days=(6 - first.weekday()) % 7 + 7 * (n - 1))


# The Sundays DST starts (second in March) and ends (first in November), since 2007.
DST_SUNDAYS = [d for y in range(2007, 2100) for d in (_nth_sunday(y, 3, 2), _nth_sunday(y, 11, 1))]


def _sunday_of(day: date) -> date:
    return day - timedelta(days=(day.weekday() + 1) % 7)


sundays = st.one_of(
    st.dates(min_value=date(2000, 1, 2), max_value=date(2099, 12, 27)).map(_sunday_of),
    st.sampled_from(DST_SUNDAYS),
    # The week whose Sunday follows a DST change: that Sunday's midnight moved by an hour.
    st.sampled_from(DST_SUNDAYS).map(lambda d: d + timedelta(days=7)),
    # The week before: it ends at the change.
    st.sampled_from(DST_SUNDAYS).map(lambda d: d - timedelta(days=7)),
)
moments = st.datetimes(
    min_value=datetime(2000, 1, 3), max_value=datetime(2099, 12, 1), timezones=st.just(UTC)
)


@given(moments)
@example(datetime(2026, 3, 8, 10, 0, tzinfo=UTC))  # the day DST starts
@example(datetime(2026, 11, 1, 9, 30, tzinfo=UTC))  # the day DST ends (the repeated hour)
def test_every_day_maps_to_a_saturday_strictly_before_its_weeks_sunday(now: datetime) -> None:
    cutoff = weekly_cutoff(now)
    local = now.astimezone(SF).date()
    week_sunday = _sunday_of(local)
    assert cutoff.weekday() == SATURDAY
    assert cutoff < week_sunday <= local
    assert week_sunday - cutoff == timedelta(days=1)


@given(sundays, st.floats(min_value=0, max_value=1, exclude_max=True))
def test_all_moments_of_a_sf_week_share_one_cutoff(sunday: date, fraction: float) -> None:
    # Real elapsed time between two SF midnights: 167 or 169 hours in DST weeks.
    start, end = sf_midnight(sunday), sf_midnight(sunday + timedelta(days=7))
    span = (end - start) // timedelta(microseconds=1)
    now = start + timedelta(microseconds=min(int(span * fraction), span - 1))
    assert start <= now < end
    assert weekly_cutoff(now) == sunday - timedelta(days=1)


@given(sundays, st.integers(min_value=0, max_value=6), st.times())
def test_each_local_day_of_the_week_maps_to_the_saturday_before(sunday: date, day: int, clock: time) -> None:
    local = datetime.combine(sunday + timedelta(days=day), clock, SF)
    assert weekly_cutoff(local.astimezone(UTC)) == sunday - timedelta(days=1)
    # The time zone the moment is expressed in does not matter, only the instant.
    assert weekly_cutoff(local) == weekly_cutoff(local.astimezone(ZoneInfo("Asia/Tokyo")))


@given(sundays)
def test_cutoff_changes_exactly_when_sf_sunday_begins(sunday: date) -> None:
    boundary = sf_midnight(sunday)
    tick = timedelta(microseconds=1)
    assert weekly_cutoff(boundary) == sunday - timedelta(days=1)
    assert weekly_cutoff(boundary - tick) == sunday - timedelta(days=8)
    # An hour either side of the boundary is not a boundary (a fixed UTC offset would make it one).
    assert weekly_cutoff(boundary + timedelta(hours=1)) == weekly_cutoff(boundary)
    assert weekly_cutoff(boundary - timedelta(hours=1)) == weekly_cutoff(boundary - tick)


@given(moments, st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=30)))
def test_cutoff_moves_only_across_sunday_boundaries(now: datetime, delta: timedelta) -> None:
    later = now + delta
    first_sunday, last_sunday = _sunday_of(now.astimezone(SF).date()), _sunday_of(later.astimezone(SF).date())
    boundaries = (last_sunday - first_sunday).days // 7
    assert weekly_cutoff(later) - weekly_cutoff(now) == timedelta(days=7 * boundaries)


@pytest.mark.parametrize(
    ("now", "cutoff"),
    [
        # Sunday 00:30 PDT, the week after DST started: a fixed UTC-8 would still say Saturday.
        ("2026-03-15T07:30:00+00:00", date(2026, 3, 14)),
        ("2026-03-15T06:59:59+00:00", date(2026, 3, 7)),
        # Saturday 23:30 PST, the week after DST ended: a fixed UTC-7 would already say Sunday.
        ("2026-11-08T07:30:00+00:00", date(2026, 10, 31)),
        ("2026-11-08T08:00:00+00:00", date(2026, 11, 7)),
        # Sunday in UTC but still Saturday in San Francisco.
        ("2026-08-09T03:00:00+00:00", date(2026, 8, 1)),
    ],
)
def test_known_cutoffs(now: str, cutoff: date) -> None:
    assert weekly_cutoff(datetime.fromisoformat(now)) == cutoff


def test_sunday_cutoff_is_the_sunday_itself() -> None:
    now = datetime(2026, 8, 12, 12, tzinfo=UTC)
    assert sunday_cutoff(now) == date(2026, 8, 9)
    assert weekly_cutoff(now) == date(2026, 8, 8)


def test_naive_now_is_a_bug() -> None:
    with pytest.raises(ValueError, match="aware"):
        weekly_cutoff(datetime(2026, 8, 7))


def test_policies() -> None:
    now = datetime(2026, 8, 12, 12, tzinfo=UTC)
    assert cutoff_for("weekly", now) == date(2026, 8, 8)
    assert cutoff_for("latest", now) is None
    assert cutoff_for("10.1.0a20260807", now) is None
    assert parse_policy(" latest ", where="x") == "latest"
    for bad in ("weekly-sunday", "newest", "10.1", ""):
        with pytest.raises(
            UsageError, match="PIPELINE_ROCM_VERSION: expected 'weekly-stable', 'weekly', 'latest'"
        ):
            parse_policy(bad, where="PIPELINE_ROCM_VERSION")
    with pytest.raises(UsageError):
        cutoff_for("weekly-sunday", now)


# --------------------------------------------------------------------------
# Selection


def build(version: str, published: datetime | None = None, *, family: str = "gfx110X-all") -> RocmBuild:
    day = version_date(version)
    name = tarball_name("linux", family, version)
    return RocmBuild(
        name=name,
        os="linux",
        family=family,
        version=version,
        date=day,
        published=published if published is not None else datetime.combine(day, time(9), UTC),
        url=f"http://127.0.0.1/{name}",
    )


def series(line: str, start: date, days: int, skip: tuple[int, ...] = ()) -> list[RocmBuild]:
    return [build(f"{line}a{start + timedelta(days=k):%Y%m%d}") for k in range(days) if k not in skip]


NOW = datetime(2026, 8, 12, 18, tzinfo=UTC)  # a Wednesday; weekly cutoff 2026-08-08
BUILDS = series("7.15.0", date(2026, 7, 20), 24) + series("10.1.0", date(2026, 7, 28), 16, skip=(11, 12))


def test_weekly_takes_newest_on_or_before_the_cutoff_and_prefers_the_higher_line() -> None:
    # 10.1.0a20260808 and 20260809 are gaps: 10.1.0a20260807 and 7.15.0a20260808 remain;
    # the date comes first, so the 7.x build of the cutoff day wins.
    assert select_build(BUILDS, policy="weekly", now=NOW).version == "7.15.0a20260808"
    same_day = [*BUILDS, build("10.1.0a20260808")]
    assert select_build(same_day, policy="weekly", now=NOW).version == "10.1.0a20260808"


def test_weekly_skips_a_gap_at_the_cutoff() -> None:
    only_10 = [b for b in BUILDS if b.version.startswith("10.")]
    assert select_build(only_10, policy="weekly", now=NOW).version == "10.1.0a20260807"


def test_latest_ignores_builds_published_after_now() -> None:
    assert select_build(BUILDS, policy="latest", now=NOW).version == "10.1.0a20260812"
    before_publish = datetime(2026, 8, 12, 8, tzinfo=UTC)
    assert select_build(BUILDS, policy="latest", now=before_publish).version == "10.1.0a20260811"


def test_a_build_published_late_is_invisible_to_an_earlier_weekly_run() -> None:
    # The cutoff day's build was only published on Monday: Sunday's run could not see it.
    late = [
        *series("10.1.0", date(2026, 8, 1), 7),
        build("10.1.0a20260808", datetime(2026, 8, 10, 12, tzinfo=UTC)),
    ]
    sunday_run = datetime(2026, 8, 9, 20, tzinfo=UTC)
    assert select_build(late, policy="weekly", now=sunday_run).version == "10.1.0a20260807"
    assert select_build(late, policy="weekly", now=NOW).version == "10.1.0a20260808"


def test_unknown_publish_time_counts_from_the_build_date() -> None:
    dated = [b.__class__(**{**b.__dict__, "published": None}) for b in series("10.1.0", date(2026, 8, 10), 5)]
    assert [b.version for b in visible_builds(dated, NOW)] == [
        "10.1.0a20260810",
        "10.1.0a20260811",
        "10.1.0a20260812",
    ]


def test_explicit_version() -> None:
    assert select_build(BUILDS, policy="7.15.0a20260725", now=NOW).version == "7.15.0a20260725"


def test_missing_explicit_version_lists_the_nearest() -> None:
    with pytest.raises(ResolutionError) as err:
        select_build(BUILDS, policy="10.1.0a20260808", now=NOW)
    message = str(err.value)
    assert "linux gfx110X-all 10.1.0a20260808 is not in the index" in message
    assert "10.1.0a20260807" in message and "10.1.0a20260810" in message
    assert "\n" not in message


def test_nearest_prefers_the_same_line() -> None:
    assert nearest_versions(BUILDS, "10.1.0a20260809", n=2) == ["10.1.0a20260807", "10.1.0a20260810"]
    # 7.15.0a20260812 and 10.1.0a20260812 are one day away: the same line wins.
    assert nearest_versions(BUILDS, "7.15.0a20260813", n=1) == ["7.15.0a20260812"]
    assert nearest_versions(BUILDS, "10.1.0a20260813", n=1) == ["10.1.0a20260812"]


def release(version: str, published: datetime | None) -> RocmBuild:
    name = tarball_name("linux", "gfx110X-all", version)
    return RocmBuild(
        name=name,
        os="linux",
        family="gfx110X-all",
        version=version,
        date=published.date() if published else date.min,
        published=published,
        url=f"http://127.0.0.1/{name}",
    )


# Published 2026-05-14, 2026-07-30, 2026-10-22 and 2026-12-10 (17:00 UTC).
RELEASES = [
    release(v, datetime(2026, m, d, 17, tzinfo=UTC))
    for v, (m, d) in {"7.12.0": (5, 14), "7.13.0": (7, 30), "7.14.0": (10, 22), "10.0.0": (12, 10)}.items()
]


def test_stable_takes_the_newest_release_published_by_the_run_and_no_nightly() -> None:
    assert "stable" in POLICIES and cutoff_for("stable", NOW) is None
    mixed = [*RELEASES, build("10.1.0a20260812")]  # a nightly in the stable index is never a release
    assert select_build(mixed, policy="stable", now=NOW).version == "7.13.0"
    assert (
        select_build(RELEASES, policy="stable", now=datetime(2026, 12, 6, 9, tzinfo=UTC)).version == "7.14.0"
    )
    # Numeric order, not text order: 10.0.0 after 7.14.0.
    assert (
        select_build(RELEASES, policy="stable", now=datetime(2026, 12, 10, 18, tzinfo=UTC)).version
        == "10.0.0"
    )
    with pytest.raises(
        ResolutionError, match=r"no ROCm linux gfx110X-all stable release was published by 2026-05-01"
    ):
        select_build(RELEASES, policy="stable", now=datetime(2026, 5, 1, tzinfo=UTC))
    with pytest.raises(ResolutionError, match="stable release"):
        select_build(series("10.1.0", date(2026, 8, 1), 5), policy="stable", now=NOW)


def test_an_explicit_release_and_its_nearest() -> None:
    now = datetime(2026, 12, 6, 9, tzinfo=UTC)
    assert select_build(RELEASES, policy="7.13.0", now=now).version == "7.13.0"
    with pytest.raises(ResolutionError) as err:
        select_build(RELEASES, policy="7.13.1", now=now)
    # 10.0.0 was not out yet; the same line first, then by number.
    assert str(err.value).endswith("7.13.1 is not in the index; nearest available: 7.12.0, 7.13.0, 7.14.0")
    assert nearest_versions(RELEASES, "7.13.1", n=1) == ["7.13.0"]
    assert nearest_versions(RELEASES, "9.0.0", n=2) == ["7.14.0", "10.0.0"]
    # A release without a publish time is visible on every date.
    assert [b.version for b in visible_builds([release("7.12.0", None)], NOW)] == ["7.12.0"]


def test_explicit_version_published_after_now() -> None:
    early = datetime(2026, 8, 12, 8, tzinfo=UTC)
    with pytest.raises(
        ResolutionError, match="published 2026-08-12T09:00:00\\+00:00, after the run's moment"
    ):
        select_build(BUILDS, policy="10.1.0a20260812", now=early)


def test_nothing_on_or_before_the_cutoff() -> None:
    with pytest.raises(
        ResolutionError, match="no ROCm linux gfx110X-all build dated on or before the cutoff 20260808"
    ):
        select_build(series("10.1.0", date(2026, 8, 9), 3), policy="weekly", now=NOW)
    with pytest.raises(ResolutionError, match="was published by"):
        select_build(series("10.1.0", date(2026, 8, 13), 3), policy="latest", now=NOW)


def test_a_simulator_can_choose_the_cutoff() -> None:
    only_10 = [b for b in BUILDS if b.version.startswith("10.")]
    chosen = select_build(only_10, policy="weekly", now=NOW, cutoff=sunday_cutoff(NOW))
    assert chosen.version == "10.1.0a20260807"  # 20260809 (the Sunday) is a gap
    chosen = select_build(only_10, policy="weekly", now=NOW, cutoff=date(2026, 8, 11))
    assert chosen.version == "10.1.0a20260811"


@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from(["7.15.0", "10.1.0", "10.2.0"]), st.integers(0, 72)),
        max_size=40,
    ),
    st.datetimes(min_value=datetime(2026, 7, 1), max_value=datetime(2026, 8, 20), timezones=st.just(UTC)),
    st.sampled_from(["weekly", "latest"]),
)
def test_selection_is_the_newest_eligible(
    spec: list[tuple[int, str, int]], now: datetime, policy: str
) -> None:
    start = date(2026, 7, 1)
    builds = [
        build(
            f"{line}a{start + timedelta(days=day):%Y%m%d}",
            datetime.combine(start + timedelta(days=day), time(0), UTC) + timedelta(hours=delay),
        )
        for day, line, delay in spec
    ]
    cutoff = cutoff_for(policy, now)
    eligible = [
        b
        for b in builds
        if b.published is not None and b.published <= now and (cutoff is None or b.date <= cutoff)
    ]
    if not eligible:
        with pytest.raises(ResolutionError):
            select_build(builds, policy=policy, now=now)
        return
    chosen = select_build(builds, policy=policy, now=now)
    assert chosen in eligible
    assert all(b.sort_key <= chosen.sort_key for b in eligible)


# --------------------------------------------------------------------------
# weekly-stable: one build for every run of a week, whatever the publish times


def test_week_start_moment_is_sunday_midnight_in_san_francisco() -> None:
    # Summer (PDT, UTC-7) and winter (PST, UTC-8); the DST Sundays themselves.
    assert week_start_moment(datetime(2026, 8, 12, 18, tzinfo=UTC)) == datetime(2026, 8, 9, 7, tzinfo=UTC)
    assert week_start_moment(datetime(2026, 12, 2, 3, tzinfo=UTC)) == datetime(2026, 11, 29, 8, tzinfo=UTC)
    assert week_start_moment(datetime(2026, 3, 8, 12, tzinfo=UTC)) == datetime(2026, 3, 8, 8, tzinfo=UTC)
    assert week_start_moment(datetime(2026, 11, 1, 12, tzinfo=UTC)) == datetime(2026, 11, 1, 7, tzinfo=UTC)
    # 07:59Z on Sunday 08-09 is still Saturday evening in San Francisco: the week before.
    assert week_start_moment(datetime(2026, 8, 9, 6, 59, tzinfo=UTC)) == datetime(2026, 8, 2, 7, tzinfo=UTC)


def test_policy_names() -> None:
    assert POLICIES == ("weekly-stable", "weekly", "latest", "stable") and DEFAULT_POLICY == "weekly-stable"
    assert parse_policy("weekly-stable", where="x") == "weekly-stable"
    assert cutoff_for("weekly-stable", NOW) == cutoff_for("weekly", NOW) == date(2026, 8, 8)
    assert published_before("weekly-stable", NOW) == datetime(2026, 8, 9, 7, tzinfo=UTC)
    assert published_before("weekly", NOW) is None and published_before("latest", NOW) is None


# Friday 08-07 on time; Saturday 08-08 published Sunday 20:00Z, after Sunday's 09:17Z run.
LATE_SATURDAY = [
    *series("10.1.0", date(2026, 8, 1), 7),
    build("10.1.0a20260808", datetime(2026, 8, 9, 20, tzinfo=UTC)),
    *series("10.1.0", date(2026, 8, 9), 7),
]
SUNDAY_RUN = datetime(2026, 8, 9, 9, 17, tzinfo=UTC)
MONDAY_RUN = datetime(2026, 8, 10, 9, 17, tzinfo=UTC)


def test_a_late_saturday_build_splits_weekly_but_not_weekly_stable() -> None:
    assert select_build(LATE_SATURDAY, policy="weekly", now=SUNDAY_RUN).version == "10.1.0a20260807"
    assert select_build(LATE_SATURDAY, policy="weekly", now=MONDAY_RUN).version == "10.1.0a20260808"
    for run in (SUNDAY_RUN, MONDAY_RUN, datetime(2026, 8, 16, 6, 59, tzinfo=UTC)):  # ... to Saturday night
        assert select_build(LATE_SATURDAY, policy="weekly-stable", now=run).version == "10.1.0a20260807"
    # The next week began after the late publish: it takes 08-15's build like weekly.
    assert select_build(
        LATE_SATURDAY, policy="weekly-stable", now=datetime(2026, 8, 16, 7, tzinfo=UTC)
    ).version == ("10.1.0a20260815")


def test_published_exactly_when_the_week_began_is_too_late() -> None:
    week_start = datetime(2026, 8, 9, 7, tzinfo=UTC)
    on_the_dot = [*series("10.1.0", date(2026, 8, 1), 7), build("10.1.0a20260808", week_start)]
    assert select_build(on_the_dot, policy="weekly-stable", now=NOW).version == "10.1.0a20260807"
    just_before = [*on_the_dot[:-1], build("10.1.0a20260808", week_start - timedelta(seconds=1))]
    assert select_build(just_before, policy="weekly-stable", now=NOW).version == "10.1.0a20260808"


def test_weekly_stable_keeps_builds_without_a_publish_time_by_their_date() -> None:
    undated = [
        b.__class__(**{**b.__dict__, "published": None}) for b in series("10.1.0", date(2026, 8, 5), 8)
    ]
    assert select_build(undated, policy="weekly-stable", now=NOW).version == "10.1.0a20260808"


def test_weekly_stable_with_nothing_published_before_the_week_says_so() -> None:
    only_late = [build("10.1.0a20260807", datetime(2026, 8, 10, tzinfo=UTC))]
    with pytest.raises(
        ResolutionError,
        match=r"^no ROCm linux gfx110X-all build was published before the "
        r"week began \(2026-08-09T07:00:00Z\)$",
    ):
        select_build(only_late, policy="weekly-stable", now=NOW)
    # weekly would take it on Wednesday: the difference is the publish time alone.
    assert select_build(only_late, policy="weekly", now=NOW).version == "10.1.0a20260807"


LINES = ["7.15.0", "10.1.0", "10.2.0rc"]
# Histories start near both DST changes (and anywhere), so weeks cross them.
HISTORY_STARTS = st.one_of(
    st.sampled_from(DST_SUNDAYS[30:50]).map(lambda d: d - timedelta(days=20)),
    st.dates(min_value=date(2020, 1, 1), max_value=date(2040, 1, 1)),
)
# Publish delay after the build date's midnight UTC: on time, late, very late
# (up to three weeks), or unknown (None).
DELAYS = st.one_of(
    st.integers(0, 36 * 60),
    st.integers(36 * 60, 21 * 24 * 60),
    st.none(),
)
HISTORIES = st.lists(st.tuples(st.integers(0, 55), st.sampled_from(LINES), DELAYS), max_size=60)


def _history(start: date, spec: list[tuple[int, str, int | None]]) -> list[RocmBuild]:
    builds: list[RocmBuild] = []
    for day, line, delay in spec:
        when = start + timedelta(days=day)
        version = f"{line}{when:%Y%m%d}" if line.endswith("rc") else f"{line}a{when:%Y%m%d}"
        published = None if delay is None else datetime.combine(when, time(0), UTC) + timedelta(minutes=delay)
        built = build(version, published or datetime.combine(when, time(0), UTC))
        builds.append(
            built if published is not None else built.__class__(**{**built.__dict__, "published": None})
        )
    return builds


def _pick(builds: list[RocmBuild], policy: str, now: datetime) -> RocmBuild | None:
    try:
        return select_build(builds, policy=policy, now=now)
    except ResolutionError:
        return None


def _version(build: RocmBuild | None) -> str | None:
    return None if build is None else build.version


def _week_moment(sunday: date, fraction: float) -> datetime:
    """A moment ``fraction`` of the way through the SF week that begins on ``sunday``."""
    begin, end = sf_midnight(sunday), sf_midnight(sunday + timedelta(days=7))
    span = (end - begin) // timedelta(microseconds=1)  # 167, 168 or 169 hours
    moment = begin + timedelta(microseconds=min(int(span * fraction), span - 1))
    assert begin <= moment < end
    return moment


@settings(max_examples=300, deadline=None)
@given(
    HISTORY_STARTS,
    HISTORIES,
    st.integers(0, 9),
    st.floats(min_value=0, max_value=1, exclude_max=True),
    st.floats(min_value=0, max_value=1, exclude_max=True),
)
@example(date(2026, 7, 27), [(12, "10.1.0", 40 * 60), (11, "10.1.0", 60)], 2, 0.0, 0.2)  # the late Saturday
@example(
    date(2026, 2, 16), [(19, "10.1.0", 33 * 60), (18, "7.15.0", 0)], 3, 0.0, 0.99
)  # DST starts that Sunday
def test_weekly_stable_picks_one_build_for_every_run_of_a_week(
    start: date, spec: list[tuple[int, str, int | None]], week: int, first: float, second: float
) -> None:
    builds = _history(start, spec)
    sunday = _sunday_of(start) + timedelta(days=7 * week)
    a, b = _week_moment(sunday, first), _week_moment(sunday, second)
    assert _version(_pick(builds, "weekly-stable", a)) == _version(_pick(builds, "weekly-stable", b))


@settings(max_examples=300, deadline=None)
@given(HISTORY_STARTS, HISTORIES, st.integers(0, 9), st.floats(min_value=0, max_value=1, exclude_max=True))
def test_weekly_stable_never_picks_an_unpublished_build_and_takes_the_newest_eligible(
    start: date, spec: list[tuple[int, str, int | None]], week: int, fraction: float
) -> None:
    builds = _history(start, spec)
    sunday = _sunday_of(start) + timedelta(days=7 * week)
    now = _week_moment(sunday, fraction)
    saturday = sunday - timedelta(days=1)
    # The rule written out by hand, independently of the policy module.
    eligible = [
        x for x in builds if x.date <= saturday and (x.published is None or x.published < sf_midnight(sunday))
    ]
    picked = _pick(builds, "weekly-stable", now)
    if not eligible:
        assert picked is None
        return
    assert picked is not None and picked in eligible
    if picked.published is not None:
        assert picked.published <= now
    else:
        assert picked.date < now.astimezone(UTC).date()
    assert max(x.sort_key for x in eligible) == picked.sort_key
