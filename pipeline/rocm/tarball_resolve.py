"""Which TheRock build an OS and GPU family take, from the index's entries.

The policy (weekly-stable, weekly, latest, stable, an explicit version) picks among the builds of the
index that match the os and family; the build's ``.sha256sum`` beside it is
recorded when the index lists one (resolving never fetches it: the install
does).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence, Set
from datetime import date, datetime
from operator import attrgetter
from urllib.parse import unquote

from pipeline.errors import NetworkError, ResolutionError, UsageError
from pipeline.inputs.resolution_file import ResolvedRocm
from pipeline.names import ROCM_OSES, family_suggestion, is_family
from pipeline.rocm.index import IndexEntry, builds_for, families_in, tarball_base, tarball_url
from pipeline.rocm.index_fetch import fetch_index
from pipeline.rocm.policy import cutoff_for, is_explicit, parse_policy, select_build
from pipeline.rocm.versions import RocmBuild, tarball_name

log = logging.getLogger(__name__)

# TheRock's checksum beside a tarball: ``<tarball>.sha256sum`` (sha256sum's output).
CHECKSUM_SUFFIX = ".sha256sum"

Fetch = Callable[[str], Sequence[IndexEntry]]


class NoBuildInRange(ResolutionError):
    """An index that lists the family has no build of it in the dates it publishes (an older host holds them)."""


def load_entries(index_url: str, policy: str, fetch: Fetch | None = None) -> Sequence[IndexEntry] | None:
    """The index's entries; None only when an explicit version may do without them.

    An explicit version names its tarball, so an unreachable index is not fatal
    for it; for weekly and latest it is.
    """
    try:
        return (fetch or fetch_index)(index_url)
    except NetworkError as err:
        if not is_explicit(policy):
            raise
        log.warning("warning: %s; using the tarball URL of %s without checking the index", err, policy)
        return None


def check_target(os_name: str, family: str) -> None:
    """A UsageError unless ``os_name`` is one TheRock publishes for and ``family`` is shaped like a family."""
    if os_name not in ROCM_OSES:
        raise UsageError(f"unknown os {os_name!r}: expected one of {', '.join(ROCM_OSES)}")
    if not is_family(family):
        raise UsageError(f"{family!r} is not a TheRock family name (e.g. 'gfx110X-all', 'gfx1151')")


def entry_names(entries: Sequence[IndexEntry]) -> frozenset[str]:
    """Every name of the index, for constant-time look-ups (one pass, shared by every leg)."""
    return frozenset(map(attrgetter("name"), entries))


def checksum_url(build: RocmBuild, names: Set[str], index_url: str) -> str | None:
    """The URL of ``build``'s ``.sha256sum`` when the index (``names``) lists one, else None."""
    base = tarball_base(index_url)
    # The index's own name for the tarball: an S3 key may carry a folder (quoted in the URL).
    key = unquote(build.url[len(base) :]) if build.url.startswith(base) else build.name
    if key + CHECKSUM_SUFFIX not in names:
        return None
    return build.url + CHECKSUM_SUFFIX


def resolve_from_entries(
    entries: Sequence[IndexEntry] | None,
    os_name: str,
    family: str,
    *,
    policy: str,
    now: datetime,
    index_url: str,
    names: Set[str] | None = None,
    holds: Callable[[date], bool] | None = None,
) -> ResolvedRocm:
    """Pick the build for one os/family among already-fetched ``entries``.

    ``entries`` None (an unreachable index) is accepted for an explicit version
    only; the build then has no checksum URL. ``names``: :func:`entry_names` of
    ``entries``, computed once when several legs resolve against one index.
    ``holds``: the build dates this index published (a host's range), the others ignored; a family it lists
    but with no build in that range is a ResolutionError (NoBuildInRange), not an unknown family.
    """
    check_target(os_name, family)
    cutoff = cutoff_for(policy, now)
    if entries is None:
        if not is_explicit(policy):
            raise NetworkError(f"{index_url}: the index is needed for the {policy!r} policy")
        name = tarball_name(os_name, family, policy)
        return ResolvedRocm(
            policy=policy,
            cutoff=None,
            version=policy,
            file=name,
            url=tarball_url(index_url, name),
            published=None,
            os=os_name,
            family=family,
            index_url=index_url,
        )
    builds = builds_for(entries, index_url, os_name, family)
    if builds and holds is not None:
        builds = [b for b in builds if holds(b.date)]
        if not builds:
            raise NoBuildInRange(f"{index_url}: no {os_name} {family} build in the dates it publishes")
    if not builds:
        families = families_in(entries, os_name)
        if not families:
            raise ResolutionError(
                f"{index_url}: no {os_name} TheRock tarballs among its {len(entries)} entries"
            )
        hint = family_suggestion(family, families)
        raise ResolutionError(
            f"unknown ROCm family {family!r} for {os_name} in {index_url}{hint}; "
            f"the index has: {', '.join(families)}"
        )
    try:
        build = select_build(builds, policy=policy, now=now, cutoff=cutoff)
    except ResolutionError as err:
        # With a host's range, an older host may have the build the policy takes.
        raise (NoBuildInRange if holds is not None else ResolutionError)(
            err.message, hint=f"index {index_url}"
        ) from None
    if names is None:
        names = entry_names(entries)
    return ResolvedRocm(
        policy=policy,
        cutoff=cutoff,
        version=build.version,
        file=build.name,
        url=build.url,
        published=build.published,
        os=os_name,
        family=family,
        sha256_url=checksum_url(build, names, index_url),
        index_url=index_url,
    )


def resolve_build(
    os_name: str,
    family: str,
    *,
    policy: str,
    now: datetime,
    index_url: str,
    fetch: Fetch | None = None,
) -> ResolvedRocm:
    """Fetch the index and pick the build of one os/family (``resolve --os --family``)."""
    check_target(os_name, family)
    parse_policy(policy, where="policy")
    entries = load_entries(index_url, policy, fetch)
    return resolve_from_entries(entries, os_name, family, policy=policy, now=now, index_url=index_url)
