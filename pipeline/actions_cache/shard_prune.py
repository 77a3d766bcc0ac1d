"""Which shard caches to delete (pure): a shard set goes once it has served, or once a newer set replaces it.

A shard set is the caches of one cold build of one leg, split over its shard
jobs: the same (ref, leg, toolchain, tag), one cache per ``<index>of<count>``.
It serves once: the leg's job restores every shard, merges them and saves its
own ccache under the same toolchain and tag. From then on the set is a copy
of what that ccache holds, in the repository's 10 GB, so:

- a set whose leg saved its ccache of the same toolchain and tag (on the same
  ref: caches are scoped by ref) is deleted;
- of the sets that have not served, each (ref, leg) keeps its newest (the
  leg's job may still be on its way, or "re-run failed jobs" may need it)
  and deletes the older ones: a newer cold build has replaced them.

Newest is by the set's newest ``created_at`` (ties: the higher id), never by
the order the server listed them in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Set

from pipeline.actions_cache.cache_keys import SHARD_KIND, KeyParts
from pipeline.actions_cache.entries import CacheEntry

# (ref, leg, toolchain, tag): a cold build, the leg's ccache key's parts or a shard set's.
BuildId = tuple[str, str, str, str | None]


def build_of(entry: CacheEntry, parts: KeyParts) -> BuildId:
    """The cold build a cache belongs to: its ref and its key's leg, toolchain and tag."""
    return (entry.ref, parts.leg, parts.toolchain, parts.tag)


def plan_shard_sets(
    shards: Iterable[tuple[CacheEntry, KeyParts]], saved: Set[BuildId]
) -> list[tuple[str, str, tuple[CacheEntry, ...], tuple[CacheEntry, ...]]]:
    """``(ref, leg, keep, delete)`` for each (ref, leg) holding shard caches; ``saved``: the builds whose leg
    saved its own ccache (:func:`build_of` of every ccache key listed)."""
    sets: dict[BuildId, list[CacheEntry]] = defaultdict(list)
    for entry, parts in shards:
        if parts.kind != SHARD_KIND:
            raise ValueError(f"not a shard key: {entry.key!r}")
        sets[build_of(entry, parts)].append(entry)
    by_leg: dict[tuple[str, str], list[BuildId]] = defaultdict(list)
    for build in sets:
        by_leg[(build[0], build[1])].append(build)
    plans = []
    for ref, leg in sorted(by_leg):

        def newest(build: BuildId) -> tuple[float, int]:
            return max((e.created_at.timestamp(), e.id) for e in sets[build])

        waiting = sorted((b for b in by_leg[(ref, leg)] if b not in saved), key=newest, reverse=True)
        kept = set(waiting[:1])
        keep = tuple(e for b in kept for e in sorted(sets[b], key=lambda e: e.key))
        delete = tuple(
            e
            for b in sorted(by_leg[(ref, leg)], key=newest, reverse=True)
            if b not in kept
            for e in sorted(sets[b], key=lambda e: e.key)
        )
        plans.append((ref, leg, keep, delete))
    return plans
