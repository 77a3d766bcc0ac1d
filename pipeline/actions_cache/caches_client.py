"""The Actions caches REST client: list and delete a repository's caches (the I/O edge of ``prune``)."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.actions_cache.entries import PER_PAGE, CacheEntry
from pipeline.github.rest import RestClient


class CachesClient(RestClient):
    """List and delete a repository's Actions caches, with bounded retries."""

    user_agent = "llama-pipeline-prune"

    @property
    def caches_url(self) -> str:
        return f"{self.repo_url}/actions/caches"

    def list_caches(self, on_page: Callable[[int, int], None] | None = None) -> list[CacheEntry]:
        """Every cache of the repository, following ``Link: rel="next"`` to the end.

        ``on_page(page_number, entries_so_far)`` reports progress. Entries are
        de-duplicated by id (a cache created while paging may shift a page).
        """
        entries: dict[int, CacheEntry] = {}
        pages = self._pages(f"{self.caches_url}?per_page={PER_PAGE}", key="actions_caches")
        for page, (where, items) in enumerate(pages, 1):
            for item in items:
                entry = CacheEntry.from_api(item, where=where)
                entries[entry.id] = entry
            if on_page:
                on_page(page, len(entries))
        return list(entries.values())

    def delete_cache(self, cache_id: int) -> bool:
        """Delete one cache by id; False when it was already gone (404)."""
        resp = self._request("DELETE", f"{self.caches_url}/{cache_id}", accept=(404,))
        return resp.status_code != 404
