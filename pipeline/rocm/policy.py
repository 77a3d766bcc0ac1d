"""Which build a run takes: weekly-stable, weekly, latest, stable or an explicit version (pure).

``now`` is always a parameter. Builds the index says were published after
``now`` did not exist for that run and are ignored, so replaying a past date
answers what that run saw.

The weekly cutoff is the Saturday before the most recent Sunday in San
Francisco time: every day from Sunday to Saturday maps to one cutoff, so one
toolchain (and one warm ccache) serves a whole week.

``weekly`` (the original release job's rule) looks at the builds published by
the run's moment, so a Saturday build published after Sunday's run but before
Monday's splits the week. ``weekly-stable`` also requires the build to have
been published before the week began (Sunday 00:00 in San Francisco): every
run of the week comes after that moment, so all of them see one set of builds
and pick the same one, whatever the publish times.

``stable`` is not a rule on nightly builds: it takes the newest stable release
(``7.14.0``, ``10.0.0``) published by the run's moment, from TheRock's stable
stream (the caller reads that stream's index: ``names.rocm_stream``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from pipeline.errors import ResolutionError, UsageError
from pipeline.names import DEFAULT_POLICY as DEFAULT_POLICY
from pipeline.names import POLICIES as POLICIES
from pipeline.names import (
    POLICY_EXPECTED,
    STABLE,
    is_explicit,
    is_rocm_version,
    parse_policy,
    rocm_release_parts,
)
from pipeline.names import WEEKLY_STABLE as WEEKLY_STABLE

__all__ = ["DEFAULT_POLICY", "POLICIES", "WEEKLY_STABLE", "is_explicit", "parse_policy"]
from pipeline.rocm.versions import RocmBuild, version_line, version_sort_key

# The week turns over when Sunday begins in San Francisco (DST included).
WEEK_ZONE = ZoneInfo("America/Los_Angeles")
NEAREST_SHOWN = 5


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be an aware datetime, got naive {now.isoformat()}")


def local_week_start(now: datetime) -> date:
    """The most recent Sunday (today if it is Sunday) in San Francisco at the moment ``now``."""
    _require_aware(now)
    local = now.astimezone(WEEK_ZONE).date()
    # weekday(): Monday 0 ... Sunday 6 -> days since Sunday.
    return local - timedelta(days=(local.weekday() + 1) % 7)


def week_start_moment(now: datetime) -> datetime:
    """The instant the week of ``now`` began: its Sunday's 00:00 in San Francisco (aware)."""
    # DST changes at 02:00, so midnight exists exactly once on every Sunday.
    return datetime.combine(local_week_start(now), time(0), tzinfo=WEEK_ZONE)


# The policies whose build holds for a window of days (a week): only these have a next window whose
# build is known before it begins, so only these can be warmed ahead (pipeline/commands/warm_up.py).
WINDOWED_POLICIES = ("weekly", WEEKLY_STABLE)


def next_window_start(policy: str, now: datetime) -> datetime | None:
    """When the window after the one holding ``now`` begins: the next Sunday 00:00 in San Francisco, for a
    weekly policy; None for a policy without windows (latest, stable, an explicit version)."""
    if policy not in WINDOWED_POLICIES:
        return None
    # Date arithmetic, then midnight in the zone: seven days of 24 h would be an hour off across a DST change.
    return datetime.combine(local_week_start(now) + timedelta(days=7), time(0), tzinfo=WEEK_ZONE)


def weekly_cutoff(now: datetime) -> date:
    """The Saturday before the most recent Sunday in America/Los_Angeles."""
    return local_week_start(now) - timedelta(days=1)


def sunday_cutoff(now: datetime) -> date:
    """The most recent Sunday itself: a rejected variant, kept for the simulator only.

    It is not a user policy: a run on Sunday would take that very day's build,
    which may not be published yet when the run starts.
    """
    return local_week_start(now)


def cutoff_for(policy: str, now: datetime) -> date | None:
    """The newest build date ``policy`` accepts at ``now``; None when it has no cutoff."""
    if policy in ("weekly", WEEKLY_STABLE):
        return weekly_cutoff(now)
    if policy in ("latest", STABLE):
        return None
    if is_rocm_version(policy):
        return None
    raise UsageError(f"unknown ROCm policy {policy!r}: expected {POLICY_EXPECTED}")


def published_before(policy: str, now: datetime) -> datetime | None:
    """The moment a build must have been published before for ``policy`` at ``now``; None: any time."""
    return week_start_moment(now) if policy == WEEKLY_STABLE else None


def published_by(builds: Iterable[RocmBuild], bound: datetime) -> list[RocmBuild]:
    """The builds published strictly before ``bound``.

    A build without a publish time is kept: the cutoff alone (a date before the
    week began) decides for it, the same way for every run of the week.
    """
    return [b for b in builds if b.published is None or b.published < bound]


def visible_builds(builds: Iterable[RocmBuild], now: datetime) -> list[RocmBuild]:
    """The builds that existed at ``now``.

    A build without a publish time counts from its build date (UTC), so a
    replay never takes a build dated after its moment.
    """
    _require_aware(now)
    today = now.astimezone(UTC).date()
    return [b for b in builds if (b.published <= now if b.published is not None else b.date <= today)]


def newest(builds: Iterable[RocmBuild], cutoff: date | None = None) -> RocmBuild | None:
    """The newest build dated on or before ``cutoff`` (any date when None)."""
    best: RocmBuild | None = None
    best_key: tuple[int, ...] = ()
    for build in builds:
        if cutoff is not None and build.date > cutoff:
            continue
        key = build.sort_key
        if best is None or key > best_key:
            best, best_key = build, key
    return best


def nearest_versions(builds: Iterable[RocmBuild], version: str, n: int = NEAREST_SHOWN) -> list[str]:
    """Up to ``n`` available versions closest to ``version``: same line first, then by date distance."""
    key = version_sort_key(version)
    line = version_line(version)
    unique = {b.version: b for b in builds}
    release = rocm_release_parts(version)
    if release is not None:
        # A stable release's neighbours are the releases nearest in number (they carry no date).
        def number(parts: Sequence[int]) -> int:
            return parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]

        releases = [b for b in unique.values() if rocm_release_parts(b.version) is not None]
        ranked = sorted(
            releases,
            key=lambda b: (
                version_line(b.version) != line,
                abs(number(b.sort_key[1:4]) - number(release)),
                b.sort_key,
            ),
        )
        return sorted((b.version for b in ranked[:n]), key=version_sort_key)
    wanted = date(key[0] // 10000, key[0] // 100 % 100, key[0] % 100)
    ranked = sorted(
        unique.values(),
        key=lambda b: (version_line(b.version) != line, abs((b.date - wanted).days), b.sort_key),
    )
    return sorted((b.version for b in ranked[:n]), key=version_sort_key)


def _what(builds: Sequence[RocmBuild]) -> str:
    return f"{builds[0].os} {builds[0].family} " if builds else ""


def select_build(
    builds: Iterable[RocmBuild],
    *,
    policy: str,
    now: datetime,
    cutoff: date | None = None,
) -> RocmBuild:
    """The build ``policy`` takes at ``now`` among ``builds`` (one os and family).

    ``weekly`` takes the newest build dated on or before the weekly cutoff,
    ``weekly-stable`` the same among builds published before the week began,
    ``latest`` the newest, ``stable`` the newest stable release, a version exactly that build. ``cutoff``, when
    given, replaces the policy's own cutoff for a non-explicit policy (a
    simulator can try other rules with it). Raises ResolutionError when
    nothing matches; a missing explicit version lists the nearest ones.
    """
    every = list(builds)
    seen = visible_builds(every, now)
    when = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if is_explicit(policy):
        if not is_rocm_version(policy):
            raise UsageError(f"unknown ROCm policy {policy!r}: expected {POLICY_EXPECTED}")
        for build in seen:
            if build.version == policy:
                return build
        later = [b for b in every if b.version == policy]
        if later:
            published = later[0].published.isoformat() if later[0].published else "after its date"
            raise ResolutionError(
                f"ROCm {_what(every)}{policy} was published {published}, after the run's moment {when}"
            )
        near = nearest_versions(seen, policy)
        listing = ", ".join(near) if near else "none"
        raise ResolutionError(
            f"ROCm {_what(every)}{policy} is not in the index; nearest available: {listing}"
        )
    if policy == STABLE:
        releases = [b for b in seen if rocm_release_parts(b.version) is not None]
        chosen = newest(releases)
        if chosen is None:
            raise ResolutionError(f"no ROCm {_what(every)}stable release was published by {when}")
        return chosen
    if cutoff is None:
        cutoff = cutoff_for(policy, now)
    bound = published_before(policy, now)
    if bound is not None:
        seen = published_by(seen, bound)
    chosen = newest(seen, cutoff)
    if chosen is not None:
        return chosen
    if not seen:
        by = f"before the week began ({bound.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ})" if bound else f"by {when}"
        raise ResolutionError(f"no ROCm {_what(every)}build was published {by}")
    oldest = min(seen, key=lambda b: b.sort_key)
    assert cutoff is not None  # without a cutoff a non-empty list always has a newest
    raise ResolutionError(
        f"no ROCm {_what(every)}build dated on or before the cutoff {cutoff:%Y%m%d} "
        f"({policy}); the oldest available is {oldest.version}"
    )
