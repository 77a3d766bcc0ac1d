"""Which Actions caches to delete, and deleting them.

The plan is pure. It groups the keys this pipeline minted by (ref, kind, leg),
*whatever their toolchain and tag*: grouping by the full restore prefix made
every toolchain generation a group of one that was kept forever. Each group
keeps its newest ``keep`` caches by ``created_at`` (ties: the higher id), never
relying on the order the server listed them in. A warm-up's cache (next week's
toolchain, compiled ahead) is kept besides those until a night has used it: until
a night's cache of its toolchain is newer than it. A key that is not ours is
never touched; a key that starts like ours but does not parse is left alone
and reported. Shard caches have a rule of their own
(:mod:`pipeline.actions_cache.shard_prune`): a set goes once its leg saved
the ccache it served, or once a newer set replaces it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.actions_cache.budget import CacheBudget, budget_by_kind
from pipeline.actions_cache.cache_keys import CCACHE_KIND, SHARD_KIND, KeyParts, MalformedKeyError, parse_key
from pipeline.actions_cache.entries import PER_PAGE

# Re-exported: the benchmark times the listing's parse and the plan (scripts/bench/__main__.py) through this
# entry module (pipeline.actions_cache.entries is the feature's own).
from pipeline.actions_cache.entries import CacheEntry as CacheEntry
from pipeline.actions_cache.shard_prune import BuildId, build_of, plan_shard_sets
from pipeline.errors import PipelineError, UsageError
from pipeline.util.byte_sizes import human_bytes


@dataclass(frozen=True, kw_only=True)
class GroupPlan:
    """One (ref, kind, leg) group: what stays and what goes, newest first."""

    ref: str
    kind: str
    leg: str
    keep: tuple[CacheEntry, ...]
    delete: tuple[CacheEntry, ...]

    @property
    def bytes_freed(self) -> int:
        return sum(e.size_in_bytes for e in self.delete)

    def to_json(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "kind": self.kind,
            "leg": self.leg,
            "keep": [e.to_json() for e in self.keep],
            "delete": [e.to_json() for e in self.delete],
            "bytes_freed": self.bytes_freed,
        }


@dataclass(frozen=True, kw_only=True)
class PrunePlan:
    groups: tuple[GroupPlan, ...]
    # Keys that start like ours but do not parse: left alone.
    malformed: tuple[CacheEntry, ...] = ()
    foreign_count: int = 0
    # Every listed cache, ours or not: what GitHub counts against the limit.
    total_count: int = 0
    total_bytes: int = 0
    keep: int = 2
    limit_bytes: int = 10 * 1024**3
    warn_fraction: float = 0.8

    @property
    def to_delete(self) -> list[CacheEntry]:
        return [e for g in self.groups for e in g.delete]

    @property
    def bytes_freed(self) -> int:
        return sum(g.bytes_freed for g in self.groups)

    @property
    def bytes_after(self) -> int:
        return self.total_bytes - self.bytes_freed

    @property
    def near_limit(self) -> bool:
        """True when the repository's caches use at least the warn fraction of the limit."""
        return self.total_bytes >= self.warn_fraction * self.limit_bytes

    @property
    def budget(self) -> CacheBudget:
        """The caches by kind (ccache, toolchain, other), now and after this plan."""
        ours = [(g.kind, e.size_in_bytes, deleted) for g in self.groups
                for entries, deleted in ((g.keep, False), (g.delete, True)) for e in entries]  # fmt: skip
        return budget_by_kind(ours, limit_bytes=self.limit_bytes, warn_fraction=self.warn_fraction,
                              other_count=self.total_count - len(ours),
                              other_bytes=self.total_bytes - sum(size for _, size, _ in ours))  # fmt: skip

    def warnings(self) -> list[str]:
        """One line per thing a maintainer should look at."""
        lines = [
            f"cache {e.id} ({e.ref}) {e.key!r} looks like this pipeline's but does not parse; left alone"
            for e in self.malformed
        ]
        if self.near_limit:
            lines.append(
                f"Actions caches use {human_bytes(self.total_bytes)} of {human_bytes(self.limit_bytes)} "
                f"({self.total_bytes / self.limit_bytes:.0%}, warning from {self.warn_fraction:.0%}); "
                f"{human_bytes(self.bytes_after)} after pruning"
            )
        return lines + self.budget.warnings()

    def to_json(self) -> dict[str, Any]:
        return {
            "keep": self.keep,
            "groups": [g.to_json() for g in self.groups],
            "malformed": [e.to_json() for e in self.malformed],
            "foreign_count": self.foreign_count,
            "total_count": self.total_count,
            "total_bytes": self.total_bytes,
            "delete_count": len(self.to_delete),
            "bytes_freed": self.bytes_freed,
            "bytes_after": self.bytes_after,
            "limit_bytes": self.limit_bytes,
            "near_limit": self.near_limit,
            "budget": self.budget.to_json(),
            "warnings": self.warnings(),
        }


def _newest_first(entry: CacheEntry) -> tuple[float, int]:
    return (-entry.created_at.timestamp(), -entry.id)


def _unused_warm_up(entry: CacheEntry, ordered: list[CacheEntry], parts_of: dict[int, KeyParts]) -> bool:
    """The newest warm-up's cache, while no night has used it: no night's cache of its toolchain came after it.

    ``ordered`` is its group, newest first. The night that restores it saves a cache of the same toolchain
    (or, hitting every unit, saves nothing and restores it again the next night: kept until one does). An
    older warm-up's (its week took another build: a late publish) is an ordinary generation: at most one
    cache per leg is kept past ``keep``."""
    parts = parts_of[entry.id]
    if not parts.warm:
        return False
    newer = ordered[: ordered.index(entry)]
    return not any(parts_of[e.id].warm or parts_of[e.id].toolchain == parts.toolchain for e in newer)


def plan_prune(
    entries: Iterable[CacheEntry],
    *,
    keep: int,
    limit_bytes: int = 10 * 1024**3,
    warn_fraction: float = 0.8,
) -> PrunePlan:
    """Decide which caches to delete: O(n log n) in the number of caches."""
    if keep < 1:
        raise UsageError(f"--keep must be at least 1, got {keep}")
    buckets: dict[tuple[str, str, str], list[CacheEntry]] = defaultdict(list)
    parts_of: dict[int, KeyParts] = {}
    malformed: list[CacheEntry] = []
    foreign = total_count = total_bytes = 0
    seen: set[int] = set()
    shards: list[tuple[CacheEntry, KeyParts]] = []
    saved: set[BuildId] = set()
    for entry in entries:
        if entry.id in seen:
            continue
        seen.add(entry.id)
        total_count += 1
        total_bytes += entry.size_in_bytes
        try:
            parts = parse_key(entry.key)
        except MalformedKeyError:
            malformed.append(entry)
            continue
        if parts is None:
            foreign += 1
            continue
        if parts.kind == SHARD_KIND:
            shards.append((entry, parts))
            continue
        if parts.kind == CCACHE_KIND:
            saved.add(build_of(entry, parts))
        buckets[(entry.ref, parts.kind, parts.leg)].append(entry)
        parts_of[entry.id] = parts
    groups = []
    for ref, kind, leg in sorted(buckets):
        ordered = sorted(buckets[(ref, kind, leg)], key=_newest_first)
        kept = [e for i, e in enumerate(ordered) if i < keep or _unused_warm_up(e, ordered, parts_of)]
        groups.append(
            GroupPlan(
                ref=ref,
                kind=kind,
                leg=leg,
                keep=tuple(kept),
                delete=tuple(e for e in ordered if e not in kept),
            )
        )
    for ref, leg, shard_kept, gone in plan_shard_sets(shards, saved):
        groups.append(GroupPlan(ref=ref, kind=SHARD_KIND, leg=leg, keep=shard_kept, delete=gone))
    groups.sort(key=lambda g: (g.ref, g.kind, g.leg))
    return PrunePlan(
        groups=tuple(groups),
        malformed=tuple(sorted(malformed, key=lambda e: e.id)),
        foreign_count=foreign,
        total_count=total_count,
        total_bytes=total_bytes,
        keep=keep,
        limit_bytes=limit_bytes,
        warn_fraction=warn_fraction,
    )


def api_requests(plan: PrunePlan, per_page: int = PER_PAGE) -> int:
    """The REST calls a prune takes: the listing pages plus one DELETE per cache."""
    pages = max(1, math.ceil(plan.total_count / per_page))
    return pages + len(plan.to_delete)


def plan_with_cost(
    entries: Iterable[CacheEntry],
    *,
    keep: int,
    limit_bytes: int = 10 * 1024**3,
    warn_fraction: float = 0.8,
) -> tuple[PrunePlan, int]:
    """The plan and the number of API requests listing and applying it takes (for benchmarks)."""
    plan = plan_prune(entries, keep=keep, limit_bytes=limit_bytes, warn_fraction=warn_fraction)
    return plan, api_requests(plan)


# --------------------------------------------------------------------------
# Applying (the deleting function is passed in: the REST client, or a fake)


@dataclass(kw_only=True)
class PruneResult:
    deleted: list[CacheEntry] = field(default_factory=list)
    # Gone before we got to them (another prune, GitHub's own eviction).
    already_gone: list[CacheEntry] = field(default_factory=list)
    error: PipelineError | None = None
    # The entry being deleted when the error struck.
    failed: CacheEntry | None = None

    @property
    def bytes_freed(self) -> int:
        return sum(e.size_in_bytes for e in self.deleted)

    @property
    def deleted_ids(self) -> set[int]:
        return {e.id for e in self.deleted} | {e.id for e in self.already_gone}

    def to_json(self) -> dict[str, Any]:
        return {
            "deleted": [e.id for e in self.deleted],
            "already_gone": [e.id for e in self.already_gone],
            "bytes_freed": self.bytes_freed,
            "error": str(self.error) if self.error else None,
            "failed": self.failed.id if self.failed else None,
        }


def apply_plan(
    plan: PrunePlan,
    delete: Callable[[int], bool],
    on_deleted: Callable[[CacheEntry], None] | None = None,
) -> PruneResult:
    """Delete the plan's caches in order; stop at the first error and report it.

    ``delete(id)`` returns False when the cache was already gone. Stopping at
    the first error keeps a token without ``actions: write`` from sending
    hundreds of doomed requests.
    """
    result = PruneResult()
    for entry in plan.to_delete:
        try:
            gone_now = delete(entry.id)
        except PipelineError as err:
            result.error = err
            result.failed = entry
            break
        (result.deleted if gone_now else result.already_gone).append(entry)
        if on_deleted:
            on_deleted(entry)
    return result


# --------------------------------------------------------------------------
# Rendering


def summary_markdown(plan: PrunePlan, result: PruneResult | None) -> str:
    """The step summary: one row per group, then the totals and warnings."""
    applied = result is not None
    title = "Cache prune" if applied else "Cache prune (dry run)"
    lines = [
        f"### {title}",
        "",
        f"Keeping the newest {plan.keep} per (ref, leg); shard caches until their leg saved its ccache. "
        f"{plan.total_count} caches, {human_bytes(plan.total_bytes)} in total; "
        f"{plan.foreign_count} not minted by this pipeline.",
        "",
        "| ref | kind | leg | kept | deleted | freed |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    done = result.deleted_ids if result else set()
    for g in plan.groups:
        kept = "<br>".join(f"`{e.key}`" for e in g.keep)
        gone = [e for e in g.delete if not applied or e.id in done]
        deleted = "<br>".join(f"`{e.key}`" for e in gone) or "-"
        lines.append(
            f"| `{g.ref}` | {g.kind} | {g.leg} | {kept} | {deleted} | "
            f"{human_bytes(sum(e.size_in_bytes for e in gone))} |"
        )
    freed = result.bytes_freed if result else plan.bytes_freed
    verb = "Freed" if applied else "Would free"
    count = len(result.deleted) if result else len(plan.to_delete)
    lines += ["", f"**{verb} {human_bytes(freed)}** ({count} caches).", "", *plan.budget.markdown_rows()]
    if result and result.error:
        lines.append(f"\n:x: stopped at cache {result.failed.id if result.failed else '?'}: {result.error}")
    for warning in plan.warnings():
        lines.append(f"\n:warning: {warning}")
    return "\n".join(lines) + "\n"
