"""Resolving a run: the ROCm build of every ROCm leg and the llama.cpp source, once, from the run's inputs.

``resolve_run`` resolves every ROCm leg against one index fetch and the run's
one ``now`` (and, when asked, the source tag and mix set) into a
:class:`~pipeline.inputs.resolution_file.Resolution`. A leg run's command settles what the leg
needs before the leg's first step (:func:`resolve_leg`): its build and source
from the run's resolution when one is named, else resolved on their own
(:func:`rocm_for_leg`, :func:`source_for_run`). Below this module nothing
resolves: the leg's steps and the backends take the answer as a value (an
import contract in pyproject.toml keeps ``leg`` and ``backends`` away from
the index fetchers).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path

from pipeline.errors import ConfigError, PipelineError, ResolutionError, SourceError, UsageError
from pipeline.inputs.leg import Leg
from pipeline.inputs.matrix import Matrix
from pipeline.inputs.resolution_file import LegResolution, Resolution, ResolvedRocm, SourceSpec
from pipeline.inputs.rocm_hosts import RocmHost, host_for, hosts_text, hosts_upto
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import rocm_release_parts, rocm_stream, rocm_version_date
from pipeline.rocm.index import IndexEntry
from pipeline.rocm.index_fetch import fetch_index
from pipeline.rocm.policy import cutoff_for, is_explicit, parse_policy
from pipeline.rocm.tarball_resolve import (
    Fetch,
    NoBuildInRange,
    check_target,
    entry_names,
    load_entries,
    resolve_from_entries,
)
from pipeline.rocm.wheel_index import families_url, is_per_family
from pipeline.rocm.wheel_resolve import PageFetch, fetch_page, resolve_wheels
from pipeline.util.http_retry import say_on_stderr


def index_fetch(inputs: RunInputs) -> Fetch:
    """Fetch the index with the run's retry backoff and budget; each retry's wait is said on stderr."""
    return lambda url: fetch_index(url, retry=inputs.retry, on_wait=say_on_stderr)


def wheel_page_fetch(inputs: RunInputs) -> PageFetch:
    """Fetch a wheel index page with the run's retry backoff and budget (waits said on stderr)."""
    return lambda url: fetch_page(url, retry=inputs.retry, on_wait=say_on_stderr)


def _resolve_wheels_of(
    inputs: RunInputs,
    os_name: str,
    family: str,
    fetch: PageFetch | None,
    targets: Sequence[str] | None = None,
) -> ResolvedRocm:
    """One os/family from matrix.toml's wheel index (``[rocm] distribution = "wheels"``): a per-family index's pages
    for ``family``, or an index for every GPU's with one device project per GPU target (``targets``: the leg's,
    else those ``[rocm_families]`` gives the family), from the policy's stream (``{stream}``)."""
    matrix = inputs.require_matrix()
    rocm = matrix.rocm
    if is_per_family(rocm.wheel_index_url):
        targets = ()
    elif not targets:
        targets = next((f.targets for f in matrix.rocm_families.values() if f.therock == family), ())
        if not targets:
            raise UsageError(
                f"{family!r}: no [rocm_families] entry of {matrix.path} names it, so its GPU targets "
                f"(one device wheel each on {rocm.wheel_index_url}) are unknown: name a leg (--leg)"
            )
    return resolve_wheels(
        os_name,
        family,
        policy=inputs.rocm_policy,
        now=inputs.now,
        index_url=rocm.wheel_index_for(family, rocm_stream(inputs.rocm_policy)),
        fetch=fetch or wheel_page_fetch(inputs),
        listing_url=families_url(rocm.wheel_index_url),
        targets=targets,
    )


def _rocm_leg(matrix: Matrix, leg: str | Leg) -> Leg:
    obj = matrix.leg(leg) if isinstance(leg, str) else leg
    if not obj.needs_resolution or obj.family is None:
        raise UsageError(f"leg {obj.name!r} is a {obj.backend} leg: only rocm legs resolve a ROCm build")
    return obj


class HostedIndexes:
    """The run's view of TheRock's tarball indexes: ``--index-url``'s one index, else matrix.toml's
    ``[[rocm.hosts]]``, each host's index fetched once for the whole run (pipeline/inputs/rocm_hosts.py)."""

    def __init__(self, inputs: RunInputs, fetch: Fetch | None = None) -> None:
        self.policy, self.now = inputs.rocm_policy, inputs.now
        self.override = inputs.index_url
        self.hosts = inputs.matrix.rocm.hosts if inputs.matrix is not None else ()
        self.where = f"{inputs.matrix.path} rocm.hosts" if inputs.matrix is not None else "rocm.hosts"
        # The fetch's settings are read when it runs: a bad one is refused here, before anything else.
        _ = inputs.retry
        self._fetch = fetch or index_fetch(inputs)
        self._entries: dict[str, tuple[Sequence[IndexEntry] | None, frozenset[str]]] = {}

    def entries(self, url: str) -> tuple[Sequence[IndexEntry] | None, frozenset[str]]:
        if url not in self._entries:
            entries = load_entries(url, self.policy, self._fetch)
            self._entries[url] = (entries, entry_names(entries) if entries else frozenset())
        return self._entries[url]

    def candidates(self) -> list[RocmHost]:
        """The hosts of the policy's stream a build may come from, newest first: the one that published the
        explicit nightly version's date; else every host up to the newest build date the policy accepts."""
        day = build_day_limit(self.policy, self.now)
        stream = rocm_stream(self.policy)
        if is_explicit(self.policy) and stream == "nightly":
            host = host_for(self.hosts, day, stream)
            found = [host] if host is not None else []
        else:
            # A stable release carries no date: the hosts that had begun publishing by the run's day.
            found = hosts_upto(self.hosts, day, stream)
        if not found:
            raise ConfigError(
                f"{self.where}: no {stream} host publishes builds dated {day} or earlier "
                f"(the hosts: {hosts_text(self.hosts, stream)}); --index-url names one"
            )
        return found

    def resolve(self, os_name: str, family: str) -> ResolvedRocm:
        """One os/family: from the override, else from the newest host that has a build the policy takes.

        A family the newest host does not list is an error there (TheRock renamed families: an old host
        still listing the old name must not hand out a months-old build); only a family listed without a
        build the policy takes (the week of a host's switch) goes on to the host before it."""
        if self.override is not None:
            entries, names = self.entries(self.override)
            return resolve_from_entries(
                entries,
                os_name,
                family,
                policy=self.policy,
                now=self.now,
                index_url=self.override,
                names=names,
            )
        hosts = self.candidates()
        for position, host in enumerate(hosts):
            entries, names = self.entries(host.index_url)
            try:
                return resolve_from_entries(
                    entries,
                    os_name,
                    family,
                    policy=self.policy,
                    now=self.now,
                    index_url=host.index_url,
                    names=names,
                    holds=host.holds,
                )
            except NoBuildInRange:
                if position == len(hosts) - 1:
                    raise
        raise AssertionError("unreachable: the last host's error is raised")


def build_day_limit(policy: str, now: datetime) -> date:
    """The newest build date ``policy`` can take at ``now``: its cutoff, the explicit nightly version's date, or
    today (``stable`` and a stable release: their dates are publish dates)."""
    if is_explicit(policy) and rocm_release_parts(policy) is None:
        return rocm_version_date(policy)
    return cutoff_for(policy, now) or now.date()


def resolve_target(
    inputs: RunInputs,
    os_name: str,
    family: str,
    *,
    fetch: Fetch | None = None,
    targets: Sequence[str] | None = None,
) -> ResolvedRocm:
    """The ROCm build of one os/family at the run's moment, by the run's policy.

    From the wheel index when the run's matrix.toml says ``[rocm] distribution =
    "wheels"``, else from the tarball index (``fetch``): the one choice every
    single answer (``resolve --leg``, ``--os/--family``, a leg run) and the
    whole run make alike.
    """
    if inputs.matrix is not None and inputs.matrix.rocm.distribution == "wheels":
        check_target(os_name, family)
        return _resolve_wheels_of(inputs, os_name, family, None, targets)
    check_target(os_name, family)
    parse_policy(inputs.rocm_policy, where="policy")
    return HostedIndexes(inputs, fetch).resolve(os_name, family)


def resolve_rocm(inputs: RunInputs, leg: str | Leg, *, fetch: Fetch | None = None) -> ResolvedRocm:
    """The ROCm build of one leg at the run's moment, by the run's policy and index."""
    obj = _rocm_leg(inputs.require_matrix(), leg)
    assert obj.family is not None
    return resolve_target(inputs, obj.os, obj.family, fetch=fetch, targets=obj.targets)


def resolve_run(
    inputs: RunInputs,
    *,
    fetch: Fetch | None = None,
    source: bool = False,
) -> Resolution:
    """Every ROCm leg once, from one index fetch and the run's one ``now``.

    ``source``: also resolve the llama.cpp tag and mix set (``git ls-remote``
    of matrix.toml's repo; the run's tag overrides matrix.toml's). With the
    run's ``rocm_path`` (an installed ROCm the legs build with) no ROCm leg
    is resolved and the index is not fetched: offline, or with the index
    down, such a run still resolves.
    """
    matrix = inputs.require_matrix()
    policy, now = inputs.rocm_policy, inputs.now
    rocm_legs = (
        [leg for leg in matrix.legs.values() if leg.needs_resolution] if inputs.rocm_path is None else []
    )
    if rocm_legs and matrix.rocm.distribution == "wheels":
        return _resolve_run_from_wheels(inputs, rocm_legs, source=source)
    indexes = HostedIndexes(inputs, fetch)
    legs: dict[str, ResolvedRocm] = {}
    for leg in rocm_legs:
        assert leg.family is not None
        try:
            legs[leg.name] = indexes.resolve(leg.os, leg.family)
        except ResolutionError as err:
            raise ResolutionError(f"leg {leg.name}: {err.message}", hint=err.hint) from None
    # The run's one index when it was given one; with hosts by date each leg names its own.
    resolution = Resolution(
        now=now,
        rocm_policy=policy,
        cutoff=cutoff_for(policy, now),
        legs=legs,
        index_url=inputs.index_url,
    )
    if source:
        from pipeline.source.checkout import resolve_source

        resolution.source = resolve_source(
            matrix.source,
            now=now,
            tag=inputs.tag,
            git_url_template=inputs.git_url_template,
            environ=inputs.environ,
        )
    return resolution


def _resolve_run_from_wheels(inputs: RunInputs, rocm_legs: list[Leg], *, source: bool) -> Resolution:
    """Every ROCm leg from its family's wheel index (each family's pages fetched once)."""
    matrix = inputs.require_matrix()
    fetch_once = wheel_page_fetch(inputs)
    pages: dict[str, tuple[str, str]] = {}

    def fetch(url: str) -> tuple[str, str]:
        # Legs of one family share its pages: one fetch each, one view of the index for the run.
        if url not in pages:
            pages[url] = fetch_once(url)
        return pages[url]

    legs: dict[str, ResolvedRocm] = {}
    for leg in rocm_legs:
        try:
            assert leg.family is not None
            legs[leg.name] = _resolve_wheels_of(inputs, leg.os, leg.family, fetch, leg.targets)
        except ResolutionError as err:
            raise ResolutionError(f"leg {leg.name}: {err.message}", hint=err.hint) from None
    resolution = Resolution(
        now=inputs.now,
        rocm_policy=inputs.rocm_policy,
        cutoff=cutoff_for(inputs.rocm_policy, inputs.now),
        legs=legs,
        index_url=matrix.rocm.wheel_index_url,
    )
    if source:
        from pipeline.source.checkout import resolve_source

        resolution.source = resolve_source(
            matrix.source,
            now=inputs.now,
            tag=inputs.tag,
            git_url_template=inputs.git_url_template,
            environ=inputs.environ,
        )
    return resolution


def rocm_for_leg(inputs: RunInputs, leg: str | Leg) -> ResolvedRocm:
    """The ROCm build a leg run uses.

    With a resolution named in the run's inputs the leg takes its entry from
    it, so every leg of a run agrees; otherwise it resolves on its own. A
    resolution file is never read unless it is named.
    """
    matrix = inputs.require_matrix()
    obj = _rocm_leg(matrix, leg)
    if inputs.resolution is None:
        return resolve_rocm(inputs, obj)
    resolution, where = inputs.resolution, inputs.resolution_where
    entry = resolution.legs.get(obj.name)
    if entry is None:
        have = ", ".join(sorted(resolution.legs)) or "none"
        raise ResolutionError(f"{where}: the run's resolution has no leg {obj.name!r} (it has: {have})")
    if (entry.os, entry.family) != (obj.os, obj.family):
        raise ResolutionError(
            f"{where}: leg {obj.name!r} was resolved for {entry.os} {entry.family}, "
            f"but {matrix.path} says {obj.os} {obj.family}"
        )
    if entry.distribution != matrix.rocm.distribution:
        raise ResolutionError(
            f"{where}: leg {obj.name!r} was resolved from {entry.distribution}, "
            f"but {matrix.path} says rocm.distribution = {matrix.rocm.distribution!r}"
        )
    if inputs.rocm_policy_overridden:
        wanted = parse_policy(inputs.rocm_policy, where=inputs.rocm_policy_where)
        agrees = wanted == entry.version if is_explicit(wanted) else wanted == entry.policy
        if not agrees:
            raise UsageError(
                f"{inputs.rocm_policy_where} {wanted} contradicts the run's resolution ({where}): "
                f"leg {obj.name} has {entry.policy} -> {entry.version}"
            )
    return entry


def source_for_run(inputs: RunInputs) -> SourceSpec:
    """The source a leg run builds: the run's resolution's when it has one, else resolved now.

    Like the ROCm build, the source comes from the named resolution so every
    leg of a run builds the same commit.
    """
    from pipeline.source.checkout import resolve_source

    matrix = inputs.require_matrix()
    if inputs.resolution is not None and inputs.resolution.source is not None:
        spec = inputs.resolution.source
        if inputs.tag and inputs.tag not in ("latest", spec.base_tag):
            raise ResolutionError(
                f"--tag {inputs.tag} contradicts the run's resolution ({inputs.resolution_where}): "
                f"it builds {spec.base_tag}"
            )
        return spec
    return resolve_source(
        matrix.source,
        now=inputs.now,
        tag=inputs.tag,
        git_url_template=inputs.git_url_template,
        environ=inputs.environ,
    )


def leg_rocm(inputs: RunInputs, leg: Leg, *, rocm_path: Path | None) -> ResolvedRocm | None:
    """The TheRock build ``leg`` builds with: None for a leg of another backend, or one given an installed ROCm
    (``rocm_path``: ``--rocm-path``, whose version is read from the install)."""
    if not leg.needs_resolution or rocm_path is not None:
        return None
    return rocm_for_leg(inputs, leg)


def resolve_leg(inputs: RunInputs, leg: Leg, *, rocm_path: Path | None, tree_given: bool) -> LegResolution:
    """Everything ``leg``'s run resolves, once, before its first step: its TheRock build and, unless the tree
    is given (``tree_given``: ``--source`` or the run's source archive), the source to check out."""
    rocm = leg_rocm(inputs, leg, rocm_path=rocm_path)
    if tree_given:
        return LegResolution(rocm=rocm)
    try:
        source = source_for_run(inputs)
    except SourceError as err:
        raise SourceError(
            err.message, hint="offline? pass --source DIR to build an existing checkout"
        ) from None
    return LegResolution(rocm=rocm, source=source)


def rocm_archive_urls(inputs: RunInputs) -> dict[str, str | None]:
    """Each ROCm leg's TheRock archive URL in this run; None where it does not resolve (the cache budget
    then counts that archive as unknown instead of failing the key)."""
    urls: dict[str, str | None] = {}
    for name, leg in inputs.require_matrix().legs.items():
        if not leg.needs_resolution:
            continue
        try:
            urls[name] = rocm_for_leg(inputs, leg).url
        except PipelineError:
            urls[name] = None
    return urls
