"""Everything a run needs, resolved once: today, the ROCm build of every ROCm leg.

``resolve_run`` resolves every ROCm leg against one index fetch and one
``now``; the result is written to a resolution file (default
``out/resolved.json``) that leg jobs read through ``PIPELINE_RESOLVED`` (a path
or inline JSON), so every leg of a run uses the same toolchain even when the
index gains a newer build meanwhile. A standalone leg with no resolution given
resolves on its own; it never picks up a resolution file left by an earlier run.

Overrides, strongest first: CLI flag, environment (``PIPELINE_ROCM_VERSION``,
``PIPELINE_ROCM_INDEX_URL``, ``PIPELINE_NOW``), matrix.toml.

When the index lists ``<tarball>.sha256sum`` beside the chosen tarball, its URL
is recorded (``sha256_url``); resolving never fetches it (the install does).
"""

from __future__ import annotations

import difflib
import json
import logging
import os
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field
from datetime import date, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pipeline.config import Leg, Matrix
from pipeline.errors import NetworkError, ResolutionError, UsageError
from pipeline.fsutil import atomic_write_json
from pipeline.options import LegOptions
from pipeline.rocm.index import IndexEntry, builds_for, families_in, fetch_index, tarball_base, tarball_url
from pipeline.rocm.policy import DEFAULT_POLICY, cutoff_for, is_explicit, parse_policy, select_build
from pipeline.rocm.versions import OSES, RocmBuild, is_family, tarball_name, version_date
from pipeline.timeutil import effective_now, format_utc, parse_now

log = logging.getLogger(__name__)

POLICY_ENV = "PIPELINE_ROCM_VERSION"
INDEX_URL_ENV = "PIPELINE_ROCM_INDEX_URL"
RESOLVED_ENV = "PIPELINE_RESOLVED"
DEFAULT_RESOLVED_PATH = Path("out") / "resolved.json"
FORMAT = 1
# TheRock's checksum beside a tarball: ``<tarball>.sha256sum`` (sha256sum's output).
CHECKSUM_SUFFIX = ".sha256sum"

Fetch = Callable[[str], Sequence[IndexEntry]]


def _date_text(value: date | None) -> str | None:
    return None if value is None else value.strftime("%Y%m%d")


def _parse_date(value: Any, where: str) -> date | None:
    if value is None:
        return None
    try:
        if not (isinstance(value, str) and len(value) == 8 and value.isdigit()):
            raise ValueError
        return date(int(value[:4]), int(value[4:6]), int(value[6:]))
    except ValueError:
        raise UsageError(f"{where}: expected a YYYYMMDD date or null, got {value!r}") from None


@dataclass(frozen=True, kw_only=True)
class ResolvedRocm:
    """The ROCm build one leg of a run uses."""

    # The rule that chose the build ("weekly-stable", "weekly", "latest") or the
    # explicit version asked for: replay answers an old run with that run's rule.
    policy: str
    # The newest build date the policy accepted; None for latest/explicit.
    cutoff: date | None
    version: str
    # Tarball file name.
    file: str
    url: str
    # When the index says it was published; None when unknown (or the index was unreachable).
    published: datetime | None
    os: str
    family: str
    # The index's ``<file>.sha256sum`` beside the tarball; None when it lists none.
    sha256_url: str | None = None

    @property
    def identity(self) -> str:
        """The toolchain's cache-key component, e.g. ``rocm-10.1.0a20260807``."""
        return f"rocm-{self.version}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "policy": self.policy,
            "cutoff": _date_text(self.cutoff),
            "version": self.version,
            "file": self.file,
            "url": self.url,
            "published": None if self.published is None else format_utc(self.published),
            "os": self.os,
            "family": self.family,
        }
        # Only when known: the JSON of a build without a checksum stays what it always was.
        if self.sha256_url is not None:
            data["sha256_url"] = self.sha256_url
        return data

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> ResolvedRocm:
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected an object, got {type(data).__name__}")

        def text(key: str) -> str:
            value = data.get(key)
            if not isinstance(value, str) or not value:
                raise UsageError(f"{where}.{key}: expected a non-empty string, got {value!r}")
            return value

        published = data.get("published")
        if published is not None and not isinstance(published, str):
            raise UsageError(f"{where}.published: expected an ISO-8601 string or null, got {published!r}")
        # Absent from resolutions written before checksums were recorded.
        sha256_url = data.get("sha256_url")
        if sha256_url is not None and not (
            isinstance(sha256_url, str) and sha256_url.startswith(("http://", "https://", "file://"))
        ):
            raise UsageError(f"{where}.sha256_url: expected an http(s):// or file:// URL or null, got {sha256_url!r}")
        version = text("version")
        try:
            version_date(version)
        except ValueError:
            raise UsageError(f"{where}.version: not a TheRock version: {version!r}") from None
        return cls(
            policy=text("policy"),
            cutoff=_parse_date(data.get("cutoff"), f"{where}.cutoff"),
            version=version,
            file=text("file"),
            url=text("url"),
            published=None if published is None else parse_now(published, where=f"{where}.published"),
            os=text("os"),
            family=text("family"),
            sha256_url=sha256_url,
        )


@dataclass(kw_only=True)
class Resolution:
    """One run's resolved inputs: written by ``resolve``, read by every leg."""

    now: datetime
    rocm_policy: str
    # The weekly cutoff of ``now`` (None for latest/explicit); ``rocm_policy`` says
    # whether builds published after the week began were also excluded.
    cutoff: date | None
    legs: dict[str, ResolvedRocm] = field(default_factory=dict)
    # The run's llama.cpp source (tag, commit, ...), filled by the source resolver.
    source: dict[str, Any] | None = None
    index_url: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "now": format_utc(self.now),
            "rocm_policy": self.rocm_policy,
            "cutoff": _date_text(self.cutoff),
            "index_url": self.index_url,
            "legs": {name: leg.to_json() for name, leg in sorted(self.legs.items())},
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: Any, *, where: str = "resolution") -> Resolution:
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected a JSON object, got {type(data).__name__}")
        if data.get("format", FORMAT) != FORMAT:
            raise UsageError(f"{where}: format {data.get('format')!r} is not {FORMAT}; re-run resolve")
        now = data.get("now")
        if not isinstance(now, str):
            raise UsageError(f"{where}: 'now' must be an ISO-8601 string, got {now!r}")
        policy = data.get("rocm_policy")
        if not isinstance(policy, str):
            raise UsageError(f"{where}: 'rocm_policy' must be a string, got {policy!r}")
        legs = data.get("legs")
        if not isinstance(legs, dict):
            raise UsageError(f"{where}: 'legs' must be an object of leg name -> build, got {legs!r:.60}")
        source = data.get("source")
        if source is not None and not isinstance(source, dict):
            raise UsageError(f"{where}: 'source' must be an object or null, got {source!r:.60}")
        index_url = data.get("index_url")
        return cls(
            now=parse_now(now, where=f"{where}.now"),
            rocm_policy=policy,
            cutoff=_parse_date(data.get("cutoff"), f"{where}.cutoff"),
            legs={str(k): ResolvedRocm.from_json(v, where=f"{where}.legs.{k}") for k, v in legs.items()},
            source=source,
            index_url=index_url if isinstance(index_url, str) else None,
        )


# --------------------------------------------------------------------------
# Overrides: flag > environment > matrix.toml


def effective_policy(matrix: Matrix | None, flag: str | None = None) -> str:
    """The ROCm policy: ``--rocm-version``, else ``PIPELINE_ROCM_VERSION``, else matrix.toml."""
    if flag:
        return parse_policy(flag, where="--rocm-version")
    env = os.environ.get(POLICY_ENV)
    if env:
        return parse_policy(env, where=POLICY_ENV)
    return matrix.rocm.policy if matrix is not None else DEFAULT_POLICY


def _check_url(url: str, where: str) -> str:
    if not url.startswith(("http://", "https://", "file://")):
        raise UsageError(f"{where}: expected an http(s):// or file:// URL, got {url!r}")
    return url


def effective_index_url(matrix: Matrix | None, flag: str | None = None) -> str:
    """The index URL: ``--index-url``, else ``PIPELINE_ROCM_INDEX_URL``, else matrix.toml."""
    if flag:
        return _check_url(flag, "--index-url")
    env = os.environ.get(INDEX_URL_ENV)
    if env:
        return _check_url(env, INDEX_URL_ENV)
    if matrix is not None:
        return matrix.rocm.index_url
    from pipeline.config import DEFAULT_ROCM_INDEX

    return DEFAULT_ROCM_INDEX


# --------------------------------------------------------------------------
# Resolving


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


def _check_target(os_name: str, family: str) -> None:
    if os_name not in OSES:
        raise UsageError(f"unknown os {os_name!r}: expected one of {', '.join(OSES)}")
    if not is_family(family):
        raise UsageError(f"{family!r} is not a TheRock family name (e.g. 'gfx110X-all', 'gfx1151')")


def entry_names(entries: Sequence[IndexEntry]) -> frozenset[str]:
    """Every name of the index, for constant-time look-ups (one pass, shared by every leg)."""
    return frozenset(map(attrgetter("name"), entries))


def checksum_url(build: RocmBuild, names: Set[str], index_url: str) -> str | None:
    """The URL of ``build``'s ``.sha256sum`` when the index (``names``) lists one, else None."""
    base = tarball_base(index_url)
    # The index's own name for the tarball: an S3 key may carry a folder (quoted in the URL).
    key = unquote(build.url[len(base):]) if build.url.startswith(base) else build.name
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
) -> ResolvedRocm:
    """Pick the build for one os/family among already-fetched ``entries``.

    ``entries`` None (an unreachable index) is accepted for an explicit version
    only; the build then has no checksum URL. ``names``: :func:`entry_names` of
    ``entries``, computed once when several legs resolve against one index.
    """
    _check_target(os_name, family)
    cutoff = cutoff_for(policy, now)
    if entries is None:
        if not is_explicit(policy):
            raise NetworkError(f"{index_url}: the index is needed for the {policy!r} policy")
        name = tarball_name(os_name, family, policy)
        return ResolvedRocm(
            policy=policy, cutoff=None, version=policy, file=name,
            url=tarball_url(index_url, name), published=None, os=os_name, family=family,
        )
    builds = builds_for(entries, index_url, os_name, family)
    if not builds:
        families = families_in(entries, os_name)
        if not families:
            raise ResolutionError(
                f"{index_url}: no {os_name} TheRock tarballs among its {len(entries)} entries"
            )
        close = difflib.get_close_matches(family, families, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ResolutionError(
            f"unknown ROCm family {family!r} for {os_name} in {index_url}{hint}; "
            f"the index has: {', '.join(families)}"
        )
    try:
        build = select_build(builds, policy=policy, now=now, cutoff=cutoff)
    except ResolutionError as err:
        raise ResolutionError(err.message, hint=f"index {index_url}") from None
    if names is None:
        names = entry_names(entries)
    return ResolvedRocm(
        policy=policy, cutoff=cutoff, version=build.version, file=build.name,
        url=build.url, published=build.published, os=os_name, family=family,
        sha256_url=checksum_url(build, names, index_url),
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
    _check_target(os_name, family)
    parse_policy(policy, where="policy")
    entries = load_entries(index_url, policy, fetch)
    return resolve_from_entries(entries, os_name, family, policy=policy, now=now, index_url=index_url)


def _rocm_leg(matrix: Matrix, leg: str | Leg) -> Leg:
    obj = matrix.leg(leg) if isinstance(leg, str) else leg
    if not obj.needs_resolution or obj.family is None:
        raise UsageError(f"leg {obj.name!r} is a {obj.backend} leg: only rocm legs resolve a ROCm build")
    return obj


def resolve_rocm(
    matrix: Matrix,
    leg: str | Leg,
    *,
    now: datetime,
    policy: str | None = None,
    index_url: str | None = None,
    fetch: Fetch | None = None,
) -> ResolvedRocm:
    """The ROCm build of one leg; ``policy``/``index_url`` None mean environment, then matrix.toml."""
    obj = _rocm_leg(matrix, leg)
    assert obj.family is not None
    return resolve_build(
        obj.os, obj.family,
        policy=effective_policy(matrix, policy), now=now,
        index_url=effective_index_url(matrix, index_url), fetch=fetch,
    )


def resolve_run(
    matrix: Matrix,
    *,
    now: datetime,
    policy: str | None = None,
    index_url: str | None = None,
    fetch: Fetch | None = None,
    source: bool = False,
    source_tag: str | None = None,
) -> Resolution:
    """Every ROCm leg once, from one index fetch and one ``now``.

    ``source``: also resolve the llama.cpp tag and mix set (``git ls-remote``
    of matrix.toml's repo; ``source_tag`` overrides its tag) into ``source``.
    """
    chosen_policy = effective_policy(matrix, policy)
    url = effective_index_url(matrix, index_url)
    rocm_legs = [leg for leg in matrix.legs.values() if leg.needs_resolution]
    entries = load_entries(url, chosen_policy, fetch) if rocm_legs else []
    names = entry_names(entries) if entries else frozenset()
    legs: dict[str, ResolvedRocm] = {}
    for leg in rocm_legs:
        assert leg.family is not None
        try:
            legs[leg.name] = resolve_from_entries(
                entries, leg.os, leg.family, policy=chosen_policy, now=now, index_url=url, names=names
            )
        except ResolutionError as err:
            raise ResolutionError(f"leg {leg.name}: {err.message}", hint=err.hint) from None
    resolution = Resolution(
        now=now, rocm_policy=chosen_policy, cutoff=cutoff_for(chosen_policy, now),
        legs=legs, index_url=url,
    )
    if source:
        from pipeline.source import resolve_source

        resolution.source = resolve_source(matrix.source, now=now, tag=source_tag).to_json()
    return resolution


# --------------------------------------------------------------------------
# The resolution file


def write_resolution(path: str | os.PathLike[str], resolution: Resolution) -> None:
    """Write the resolution atomically (readers see the old file or the new one)."""
    atomic_write_json(Path(path), resolution.to_json())


def load_resolution(value: str, *, where: str = RESOLVED_ENV) -> Resolution:
    """A resolution from a file path or inline JSON (as ``PIPELINE_RESOLVED`` carries it)."""
    text = value.strip()
    if text.startswith("{"):
        raw, origin = text, f"{where} (inline JSON)"
    else:
        path = Path(text)
        if not text or not path.is_file():
            raise UsageError(f"{where}: neither a resolution file nor inline JSON: {value!r:.120}")
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{where}: cannot read {path}: {exc}") from None
        origin = str(path)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{origin}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    return Resolution.from_json(data, where=origin)


def named_resolution(options: LegOptions) -> tuple[Resolution, str] | None:
    """The run's resolution when one is named (``options.resolved``, else ``PIPELINE_RESOLVED``).

    Returns it with the name of where it came from (for messages); None when
    none is named: a resolution file is never read unless it is named.
    """
    value, where = (options.resolved, "--resolved") if options.resolved else (os.environ.get(RESOLVED_ENV, ""), RESOLVED_ENV)
    if not value.strip():
        return None
    return load_resolution(value, where=where), where


def rocm_for_leg(matrix: Matrix, leg: str | Leg, options: LegOptions) -> ResolvedRocm:
    """The ROCm build a leg run uses.

    With a resolution (``options.resolved``, else ``PIPELINE_RESOLVED``) the
    leg takes its entry from it, so every leg of a run agrees; otherwise it
    resolves on its own. A resolution file is never read unless it is named.
    """
    obj = _rocm_leg(matrix, leg)
    named = named_resolution(options)
    if named is None:
        return resolve_rocm(
            matrix, obj, now=effective_now(options.now),
            policy=options.rocm_version, index_url=options.index_url,
        )
    resolution, where = named
    entry = resolution.legs.get(obj.name)
    if entry is None:
        have = ", ".join(sorted(resolution.legs)) or "none"
        raise ResolutionError(f"{where}: the run's resolution has no leg {obj.name!r} (it has: {have})")
    if (entry.os, entry.family) != (obj.os, obj.family):
        raise ResolutionError(
            f"{where}: leg {obj.name!r} was resolved for {entry.os} {entry.family}, "
            f"but {matrix.path} says {obj.os} {obj.family}"
        )
    if options.rocm_version:
        wanted = parse_policy(options.rocm_version, where="--rocm-version")
        agrees = wanted == entry.version if is_explicit(wanted) else wanted == entry.policy
        if not agrees:
            raise UsageError(
                f"--rocm-version {wanted} contradicts the run's resolution ({where}): "
                f"leg {obj.name} has {entry.policy} -> {entry.version}"
            )
    return entry
