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
  toolchain: a week that pays for two cold builds.

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
from pipeline.rocm.policy import WEEK_ZONE, cutoff_for, local_week_start, select_build, sunday_cutoff
from pipeline.rocm.versions import RocmBuild
from pipeline.util.timeutil import format_utc

SUNDAY_VARIANT = "weekly-sunday"
DEFAULT_POLICIES = (WEEKLY_STABLE, "weekly", SUNDAY_VARIANT, "latest")
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
class PolicyResult:
    """What one policy did over the window."""

    policy: str
    runs: tuple[SimulatedRun, ...]

    def cold_runs(self) -> list[SimulatedRun]:
        """Runs whose toolchain differs from the previous resolved run's."""
        cold: list[SimulatedRun] = []
        last: str | None = None
        for run in self.runs:
            if run.version is None:
                continue
            if last is not None and run.version != last:
                cold.append(run)
            last = run.version
        return cold

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
        return {
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


def parse_cron(text: str) -> time:
    """``HH:MMZ`` (or ``HH:MM``, also UTC) -> an aware UTC time of day."""
    m = _CRON.match(text.strip())
    if m is None:
        raise UsageError(f"--cron {text!r}: expected a UTC time of day like '06:00Z'")
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


def simulate_policy(builds: Sequence[RocmBuild], policy: str, moments: Sequence[datetime]) -> PolicyResult:
    """Replay ``policy`` at each of ``moments``."""
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
    return PolicyResult(policy=policy, runs=tuple(runs))


def simulate(
    builds: Sequence[RocmBuild],
    *,
    policies: Sequence[str] = DEFAULT_POLICIES,
    start: date,
    end: date,
    cron: time,
) -> dict[str, PolicyResult]:
    """Every policy replayed over the same daily runs, keyed by policy, in the given order."""
    moments = run_moments(start, end, cron)
    return {p: simulate_policy(builds, p, moments) for p in dict.fromkeys(policies)}


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
