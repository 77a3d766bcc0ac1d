"""The Actions cache budget (pure): bytes by kind, and whether toolchain archives fit.

GitHub keeps 10 GB of caches per repository and evicts the least recently
used past that. Each leg's ccache is the cache that saves hours; a ROCm
leg's TheRock archive is several GB and is re-downloadable. So a toolchain
archive goes into the Actions cache only when ``[github] cache_limit_bytes``
holds every leg's ccache (at its ``[ccache] max_size``) plus every archive,
and the prune plan shows the budget by kind and warns before GitHub would evict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.util.byte_sizes import human_bytes
from pipeline.util.byte_sizes import parse_size as parse_size


@dataclass(frozen=True, kw_only=True)
class KindBudget:
    kind: str
    count: int
    bytes_now: int
    bytes_after: int


@dataclass(frozen=True, kw_only=True)
class CacheBudget:
    """The repository's Actions caches, by kind, now and after the prune."""

    kinds: tuple[KindBudget, ...]
    limit_bytes: int
    warn_fraction: float

    @property
    def bytes_after(self) -> int:
        return sum(k.bytes_after for k in self.kinds)

    def warnings(self) -> list[str]:
        """A warning when, even after pruning, the caches stay past the warn fraction: GitHub evicts next."""
        if self.bytes_after < self.warn_fraction * self.limit_bytes:
            return []
        parts = ", ".join(f"{k.kind} {human_bytes(k.bytes_after)}" for k in self.kinds if k.bytes_after)
        over = (
            "over the limit: GitHub is evicting"
            if self.bytes_after > self.limit_bytes
            else "GitHub evicts past the limit"
        )
        return [
            f"after pruning, Actions caches still use {human_bytes(self.bytes_after)} of "
            f"{human_bytes(self.limit_bytes)} ({parts}); {over}, least recently used first, "
            "ccache included: keep toolchain archives out of the cache or lower [ccache] max_size"
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "limit_bytes": self.limit_bytes,
            "bytes_after": self.bytes_after,
            "kinds": [
                {"kind": k.kind, "count": k.count, "bytes_now": k.bytes_now, "bytes_after": k.bytes_after}
                for k in self.kinds
            ],
        }

    def markdown_rows(self) -> list[str]:
        rows = ["| kind | caches | now | after pruning |", "| --- | ---: | ---: | ---: |"]
        rows += [
            f"| {k.kind} | {k.count} | {human_bytes(k.bytes_now)} | {human_bytes(k.bytes_after)} |"
            for k in self.kinds
        ]
        rows.append(
            f"| **total** (limit {human_bytes(self.limit_bytes)}) | | | **{human_bytes(self.bytes_after)}** |"
        )
        return rows


def budget_by_kind(
    entries: Iterable[tuple[str, int, bool]],
    *,
    limit_bytes: int,
    warn_fraction: float,
    other_count: int = 0,
    other_bytes: int = 0,
) -> CacheBudget:
    """``(kind, size, deleted)`` for each of our caches; the rest counts as kind "other", never deleted."""
    now: dict[str, int] = {"other": other_bytes} if other_count else {}
    after: dict[str, int] = dict(now)
    count: dict[str, int] = {"other": other_count} if other_count else {}
    for kind, size, deleted in entries:
        now[kind] = now.get(kind, 0) + size
        count[kind] = count.get(kind, 0) + 1
        after[kind] = after.get(kind, 0) + (0 if deleted else size)
    order = sorted(now, key=lambda k: (k == "other", k))
    kinds = tuple(KindBudget(kind=k, count=count[k], bytes_now=now[k], bytes_after=after[k]) for k in order)
    return CacheBudget(kinds=kinds, limit_bytes=limit_bytes, warn_fraction=warn_fraction)


@dataclass(frozen=True, kw_only=True)
class ArchiveDecision:
    """Whether toolchain archives go into the Actions cache, and the arithmetic behind it."""

    cache_archives: bool
    ccache_bytes: int
    archive_bytes: int | None
    limit_bytes: int

    @property
    def reason(self) -> str:
        ccache = f"{human_bytes(self.ccache_bytes)} of ccache"
        if not self.cache_archives and self.ccache_bytes > self.limit_bytes:
            return (f"{ccache} ([ccache] max_size for every leg) alone exceed the {human_bytes(self.limit_bytes)} "
                    "limit: toolchain archives kept out of the Actions cache (downloaded each run)")  # fmt: skip
        if self.archive_bytes is None:
            return (
                f"toolchain archives kept out of the Actions cache: their size is unknown ({ccache} budgeted)"
            )
        need = f"{ccache} + {human_bytes(self.archive_bytes)} of toolchain archives"
        fits = "fit in" if self.cache_archives else "exceed"
        verdict = "cached" if self.cache_archives else "kept out of the Actions cache (downloaded each run)"
        return f"{need} {fits} the {human_bytes(self.limit_bytes)} limit: toolchain archives {verdict}"


def toolchain_archives_fit(
    ccache_max_bytes: Mapping[str, int], archive_bytes: Mapping[str, int | None], limit_bytes: int
) -> ArchiveDecision:
    """Cache archives only when every leg's ccache at its maximum plus every archive fits the limit.

    An archive of unknown size (no Content-Length, the index silent) keeps
    them all out: guessing low is what lets GitHub evict the ccache.
    """
    ccache = sum(ccache_max_bytes.values())
    sizes = list(archive_bytes.values())
    if any(size is None for size in sizes):
        return ArchiveDecision(
            cache_archives=False, ccache_bytes=ccache, archive_bytes=None, limit_bytes=limit_bytes
        )
    total = sum(size for size in sizes if size is not None)
    return ArchiveDecision(
        cache_archives=ccache + total <= limit_bytes,
        ccache_bytes=ccache,
        archive_bytes=total,
        limit_bytes=limit_bytes,
    )
