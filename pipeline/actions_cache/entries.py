"""GitHub Actions caches as data: one listed cache entry, validated (pure).

The REST client (:mod:`pipeline.actions_cache.caches_client`) lists them; the prune plan
(:mod:`pipeline.actions_cache.prune`) decides over them without any I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pipeline.errors import GitHubError
from pipeline.github.limits import GITHUB_PER_PAGE

PER_PAGE = GITHUB_PER_PAGE


@dataclass(frozen=True, kw_only=True)
class CacheEntry:
    """One Actions cache as the REST API lists it."""

    id: int
    ref: str
    key: str
    version: str
    created_at: datetime
    last_accessed_at: datetime | None
    size_in_bytes: int

    @classmethod
    def from_api(cls, item: Any, *, where: str) -> CacheEntry:
        """Validate one item of ``actions_caches``; GitHubError names what is wrong."""
        if not isinstance(item, dict):
            raise GitHubError(f"{where}: a cache entry is not an object")
        try:
            ident, ref, key = item["id"], item["ref"], item["key"]
            size = item.get("size_in_bytes", 0)
            created = _parse_time(item["created_at"])
            accessed = _parse_time(item["last_accessed_at"]) if item.get("last_accessed_at") else None
        except (KeyError, TypeError, ValueError) as exc:
            raise GitHubError(f"{where}: malformed cache entry {str(item.get('id', '?'))!r}: {exc}") from None
        if not isinstance(ident, int) or isinstance(ident, bool) or not isinstance(key, str):
            raise GitHubError(f"{where}: malformed cache entry: 'id' must be an integer, 'key' a string")
        if not isinstance(ref, str) or not isinstance(size, int) or size < 0:
            raise GitHubError(f"{where}: malformed cache entry {ident}: bad 'ref' or 'size_in_bytes'")
        return cls(
            id=ident,
            ref=ref,
            key=key,
            version=str(item.get("version", "")),
            created_at=created,
            last_accessed_at=accessed,
            size_in_bytes=size,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ref": self.ref,
            "key": self.key,
            "created_at": self.created_at.isoformat(),
            "size_in_bytes": self.size_in_bytes,
        }


def _parse_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO-8601 time, got {value!r}")
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
