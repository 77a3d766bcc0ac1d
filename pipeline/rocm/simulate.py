"""Replay TheRock's publishing history under toolchain policies (pure).

One run per day at the cron time (UTC) from ``start`` to ``end``. Each run
sees only the builds the index says were published by then (the resolver's
own rule, :func:`pipeline.rocm.policy.select_build`), so late publishes and
gaps play out as they did.

Per policy the simulation tells:

* ``runs``: the build each run resolved (None when nothing resolved);
* ``cold_runs``: runs whose toolchain differs from the one the previous
  resolved run used: their ccache was filled by another compiler, so they
  build cold. The first run of the window has no predecessor and is not
  counted (its cache state before the window is unknown);
* ``weeks``: the distinct toolchains of each week, a week being Sunday to
  Saturday in San Francisco time, the weekly policy's own week;
* ``split_weeks``: the weeks (named by their Sunday) that used more than one
  toolchain: a week that pays for two cold builds;
* with a warm-up time (``warm_cron``), for the weekly policies: the warm-ups,
  one each Saturday (UTC) at that time, each resolving the next window's build
  from what was published by then (:func:`warm_up_build`, the rule of
  ``python -m pipeline warm-up``), and ``cold_runs(warmed=True)``: the cold runs
  whose toolchain no earlier warm-up compiled, the nights that still compile
  cold on the publish path; ``late_saturdays``: the windows whose Saturday
  build was published after that window's warm-up.

Besides the user policies (``weekly-stable``, ``weekly``, ``latest``, an
explicit version) it knows ``weekly-sunday``: the rejected variant whose cutoff is the most recent
Sunday itself. It takes a build that may not be published yet at Sunday's
run and switches on Monday; the simulation shows those split weeks. ``weekly``
splits a week the same way when the Saturday build is published after
Sunday's run; ``weekly-stable`` never does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from pipeline.errors import ResolutionError, UsageError
from pipeline.names import POLICIES, ROCM_VERSION_EXPECTED, STABLE, WEEKLY_STABLE, policy_problem, rocm_stream
from pipeline.rocm.policy import (
    WEEK_ZONE,
    WINDOWED_POLICIES,
    cutoff_for,
    local_week_start,
    next_window_start,
    select_build,
    sunday_cutoff,
    visible_builds,
)
from pipeline.rocm.versions import RocmBuild
from pipeline.util.timeutil import format_utc

SUNDAY_VARIANT = "weekly-sunday"
DEFAULT_POLICIES = (WEEKLY_STABLE, "weekly", SUNDAY_VARIANT, "latest")
# The warm-up workflow's schedule (.github/workflows/warm-up.yml: "17 18 * * 6", Saturdays 18:17 UTC).
DEFAULT_WARM_CRON = "18:17Z"
SATURDAY = 5  # date.weekday()
# Ten years of nightly runs; anything longer is a typo in a date.
MAX_DAYS = 3660

_CRON = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)Z?$")


@dataclass(frozen=True, kw_only=True)
class SimulatedRun:
    """One nightly run of the replay."""

    moment: datetime
    # The Sunday (San Francisco) that starts the run's week.
    week: date
    version: str | None
    # Why nothing resolved, when nothing did.
    error: str | None = None

    @property
    def day(self) -> date:
        return self.moment.date()


@dataclass(frozen=True, kw_only=True)
class WarmUp:
    """One warm-up of the replay: on a window's last day, the next window's build compiled ahead."""

    moment: datetime
    # When the window it warms begins (Sunday 00:00, San Francisco).
    window: datetime
    # The build it compiled; None when nothing resolved.
    version: str | None
    # The window's Saturday build was published after ``moment`` (and before the window began).
    late_saturday: bool = False

    @property
    def saturday(self) -> date:
        return self.window.astimezone(WEEK_ZONE).date() - timedelta(days=1)

    def to_json(self) -> dict[str, Any]:
        return {
            "moment": format_utc(self.moment),
            "window": format_utc(self.window),
            "version": self.version,
            "late_saturday": self.late_saturday,
        }


@dataclass(frozen=True, kw_only=True)
class PolicyResult:
    """What one policy did over the window."""

    policy: str
    runs: tuple[SimulatedRun, ...]
    # The warm-ups, oldest first (none without a warm-up time, or for a policy without windows).
    warm_ups: tuple[WarmUp, ...] = ()

    def cold_runs(self, *, warmed: bool = False) -> list[SimulatedRun]:
        """Runs whose toolchain differs from the previous resolved run's; with ``warmed``, only those whose
        toolchain no warm-up before them compiled (the warm-up's cache is kept until a night uses it)."""
        cold: list[SimulatedRun] = []
        last: str | None = None
        for run in self.runs:
            if run.version is None:
                continue
            if last is not None and run.version != last and not (warmed and self._warmed_before(run)):
                cold.append(run)
            last = run.version
        return cold

    def _warmed_before(self, run: SimulatedRun) -> bool:
        return any(w.version == run.version and w.moment < run.moment for w in self.warm_ups)

    def late_saturdays(self) -> list[WarmUp]:
        """The warm-ups that found no Saturday build yet, though one was published before the window's first run."""
        return [w for w in self.warm_ups if w.late_saturday]

    def weeks(self) -> list[tuple[date, list[str]]]:
        """(Sunday, distinct toolchains in first-use order) for every week with a run."""
        weeks: dict[date, list[str]] = {}
        for run in self.runs:
            used = weeks.setdefault(run.week, [])
            if run.version is not None and run.version not in used:
                used.append(run.version)
        return sorted(weeks.items())

    def split_weeks(self) -> list[date]:
        """The Sundays of the weeks that used more than one toolchain."""
        return [sunday for sunday, versions in self.weeks() if len(versions) > 1]

    def distinct_toolchains(self) -> list[str]:
        seen: list[str] = []
        for run in self.runs:
            if run.version is not None and run.version not in seen:
                seen.append(run.version)
        return seen

    def to_json(self) -> dict[str, Any]:
        cold = self.cold_runs()
        warm = (
            {
                "warm_ups": [w.to_json() for w in self.warm_ups],
                "cold_runs_with_warm_up": len(self.cold_runs(warmed=True)),
                "cold_run_dates_with_warm_up": [r.day.isoformat() for r in self.cold_runs(warmed=True)],
                "late_saturdays": [w.saturday.isoformat() for w in self.late_saturdays()],
            }
            if self.warm_ups
            else {}
        )
        return {
            **warm,
            "runs": [
                {
                    "date": r.day.isoformat(),
                    "moment": r.moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "week": r.week.isoformat(),
                    "version": r.version,
                    **({"error": r.error} if r.error else {}),
                }
                for r in self.runs
            ],
            "cold_runs": len(cold),
            "cold_run_dates": [r.day.isoformat() for r in cold],
            "split_weeks": [d.isoformat() for d in self.split_weeks()],
            "weeks": [
                {"sunday": sunday.isoformat(), "toolchains": versions, "count": len(versions)}
                for sunday, versions in self.weeks()
            ],
            "distinct_toolchains": len(self.distinct_toolchains()),
            "unresolved_runs": sum(1 for r in self.runs if r.version is None),
        }


def parse_cron(text: str, flag: str = "--cron") -> time:
    """``HH:MMZ`` (or ``HH:MM``, also UTC) -> an aware UTC time of day."""
    m = _CRON.match(text.strip())
    if m is None:
        raise UsageError(f"{flag} {text!r}: expected a UTC time of day like '06:00Z'")
    return time(int(m.group(1)), int(m.group(2)), tzinfo=UTC)


def check_policy(policy: str) -> str:
    """A policy the simulator knows: a rule on nightly builds, weekly-sunday or an explicit nightly version.

    It replays one nightly index: ``stable`` and a stable release come from another stream."""
    if rocm_stream(policy) == STABLE:
        raise UsageError(
            f"--policy {policy}: the simulator replays the nightly stream; {policy!r} comes from the "
            "stable one (resolve --rocm-version answers it)"
        )
    if policy == SUNDAY_VARIANT or policy_problem(policy) is None:
        return policy
    known = ", ".join(repr(p) for p in (*POLICIES, SUNDAY_VARIANT) if p != STABLE)
    raise UsageError(f"--policy: expected {known} or {ROCM_VERSION_EXPECTED}, got {policy!r}")


def run_moments(start: date, end: date, cron: time) -> list[datetime]:
    """Every day's run moment from ``start`` to ``end`` inclusive, at ``cron`` (UTC)."""
    if end < start:
        raise UsageError(f"--to {end} is before --from {start}")
    days = (end - start).days + 1
    if days > MAX_DAYS:
        raise UsageError(f"--from {start} --to {end}: {days} days; at most {MAX_DAYS} are replayed")
    tz = cron.tzinfo or UTC
    return [
        datetime.combine(start + timedelta(days=i), cron.replace(tzinfo=None), tzinfo=tz) for i in range(days)
    ]


def resolve_at(builds: Sequence[RocmBuild], policy: str, moment: datetime) -> RocmBuild:
    """The build ``policy`` takes at ``moment`` (ResolutionError when none)."""
    if policy == SUNDAY_VARIANT:
        return select_build(builds, policy="weekly", now=moment, cutoff=sunday_cutoff(moment))
    return select_build(builds, policy=policy, now=moment)


def warm_up_build(
    builds: Sequence[RocmBuild], policy: str, moment: datetime
) -> tuple[datetime, RocmBuild] | None:
    """What a warm-up at ``moment`` compiles: the next window's start and its build by ``policy``, among the
    builds published by ``moment`` (a later one did not exist yet). None: ``policy`` has no windows.

    ResolutionError when nothing resolves."""
    window = next_window_start(policy, moment)
    if window is None:
        return None
    return window, select_build(visible_builds(builds, moment), policy=policy, now=window)


def _warm_up(builds: Sequence[RocmBuild], policy: str, moment: datetime) -> WarmUp | None:
    try:
        found = warm_up_build(builds, policy, moment)
    except ResolutionError:
        window = next_window_start(policy, moment)
        return None if window is None else WarmUp(moment=moment, window=window, version=None)
    if found is None:
        return None
    window, chosen = found
    saturday = window.astimezone(WEEK_ZONE).date() - timedelta(days=1)
    late = any(
        b.date == saturday and b.published is not None and moment < b.published < window for b in builds
    )
    return WarmUp(moment=moment, window=window, version=chosen.version, late_saturday=late)


def warm_up_moments(moments: Sequence[datetime], warm_cron: time) -> list[datetime]:
    """One warm-up each Saturday (UTC) of the days ``moments`` cover, at ``warm_cron``."""
    days = sorted({m.astimezone(UTC).date() for m in moments})
    tz = warm_cron.tzinfo or UTC
    return [
        datetime.combine(d, warm_cron.replace(tzinfo=None), tzinfo=tz)
        for d in days
        if d.weekday() == SATURDAY
    ]


def simulate_policy(
    builds: Sequence[RocmBuild],
    policy: str,
    moments: Sequence[datetime],
    *,
    warm_cron: time | None = None,
) -> PolicyResult:
    """Replay ``policy`` at each of ``moments``, with a warm-up each Saturday at ``warm_cron`` when given and the
    policy has windows."""
    check_policy(policy)
    runs: list[SimulatedRun] = []
    for moment in moments:
        week = local_week_start(moment)
        try:
            build = resolve_at(builds, policy, moment)
        except ResolutionError as exc:
            runs.append(SimulatedRun(moment=moment, week=week, version=None, error=str(exc)))
            continue
        runs.append(SimulatedRun(moment=moment, week=week, version=build.version))
    warm_ups: list[WarmUp] = []
    if warm_cron is not None and policy in WINDOWED_POLICIES:
        for moment in warm_up_moments(moments, warm_cron):
            if (warm := _warm_up(builds, policy, moment)) is not None:
                warm_ups.append(warm)
    return PolicyResult(policy=policy, runs=tuple(runs), warm_ups=tuple(warm_ups))


def simulate(
    builds: Sequence[RocmBuild],
    *,
    policies: Sequence[str] = DEFAULT_POLICIES,
    start: date,
    end: date,
    cron: time,
    warm_cron: time | None = None,
) -> dict[str, PolicyResult]:
    """Every policy replayed over the same daily runs, keyed by policy, in the given order."""
    moments = run_moments(start, end, cron)
    return {p: simulate_policy(builds, p, moments, warm_cron=warm_cron) for p in dict.fromkeys(policies)}


# --------------------------------------------------------------------------
# Replay of the last weeks (``python -m pipeline replay``), on the same day-by-day loop


@dataclass(frozen=True, kw_only=True)
class ReplayRow:
    """One day's run: its moment, the cutoff and each leg's version (None: nothing matched)."""

    moment: datetime
    # The rule (or explicit version) the row was resolved with.
    policy: str
    cutoff: str | None
    versions: dict[str, str | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "moment": format_utc(self.moment),
            "date": self.moment.astimezone(WEEK_ZONE).date().isoformat(),
            "cutoff": self.cutoff,
            "versions": self.versions,
            "errors": self.errors,
        }


def replay_moments(now: datetime, weeks: int) -> list[datetime]:
    """One moment per day of the last ``weeks`` weeks, oldest first, ending at ``now``."""
    return [now - timedelta(days=k) for k in reversed(range(7 * weeks))]


def replay_rows(
    builds: Mapping[str, Sequence[RocmBuild]] | None,
    legs: Sequence[str],
    *,
    policy: str,
    moments: Sequence[datetime],
) -> list[ReplayRow]:
    """What each moment resolves to, leg by leg, with the simulator's day-by-day loop (pure).

    ``builds`` None: the index was unreachable and an explicit version stands for itself.
    """
    runs = (
        {leg: simulate_policy(builds[leg], policy, moments).runs for leg in legs}
        if builds is not None
        else {}
    )
    rows = []
    for k, moment in enumerate(moments):
        cutoff = cutoff_for(policy, moment)
        versions: dict[str, str | None] = {}
        errors: dict[str, str] = {}
        for leg in legs:
            if builds is None:
                versions[leg] = policy
                continue
            run = runs[leg][k]
            versions[leg] = run.version
            if run.error:
                errors[leg] = run.error
        rows.append(
            ReplayRow(
                moment=moment,
                policy=policy,
                cutoff=cutoff.strftime("%Y%m%d") if cutoff else None,
                versions=versions,
                errors=errors,
            )
        )
    return rows
