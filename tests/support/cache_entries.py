"""Actions cache entries as the caches API lists them, for the pruner's and the budget's tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pipeline.actions_cache.entries import CacheEntry

# The moment every entry's age is counted from.
T0 = datetime(2026, 8, 1, 3, 0, tzinfo=UTC)


def entry(
    ident: int, key: str, *, ref: str = "refs/heads/main", day: float = 0, size: int = 100
) -> CacheEntry:
    return CacheEntry(
        id=ident,
        ref=ref,
        key=key,
        version="v",
        created_at=T0 + timedelta(days=day),
        last_accessed_at=None,
        size_in_bytes=size,
    )
