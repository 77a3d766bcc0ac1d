"""Whether this run's toolchain archives go into the Actions cache (the I/O half).

Sizes come from a HEAD request on each ROCm leg's resolved archive URL
(TheRock's HTML index lists no sizes); the arithmetic is pure, in
:mod:`pipeline.actions_cache.budget`. When every leg's ccache at ``[ccache] max_size``
already fills ``[github] cache_limit_bytes``, no request is made at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pipeline.actions_cache.budget import ArchiveDecision, parse_size, toolchain_archives_fit
from pipeline.inputs.run_inputs import RunInputs

if TYPE_CHECKING:
    import requests


def remote_size(url: str, *, session: requests.Session | None = None, timeout: float = 30.0) -> int | None:
    """The ``Content-Length`` a HEAD request on ``url`` answers (redirects followed), or None."""
    import requests

    http = session or requests.Session()
    try:
        resp = http.head(url, allow_redirects=True, timeout=timeout)
    except requests.RequestException:
        return None
    finally:
        if session is None:
            http.close()
    value = resp.headers.get("Content-Length", "")
    return int(value) if resp.status_code == 200 and value.strip().isdigit() else None


def archive_decision(inputs: RunInputs, rocm_urls: Callable[[], Mapping[str, str | None]]) -> ArchiveDecision:
    """Cache toolchain archives only if every leg's ccache plus every ROCm archive fits the limit.

    ``rocm_urls``: each ROCm leg's resolved archive URL (None where it does not resolve), asked for only when
    the ccaches leave room (:func:`pipeline.run_resolution.rocm_archive_urls`)."""
    matrix = inputs.require_matrix()
    per_leg = parse_size(matrix.ccache.max_size)
    # A leg with shards may hold its shard caches beside its own ccache until the pruner drops them: one more
    # ccache's worth (the shards split one cold build's objects).
    ccache = {name: per_leg * (2 if leg.shards > 1 else 1) for name, leg in matrix.legs.items()}
    limit = matrix.github.cache_limit_bytes
    if sum(ccache.values()) > limit:
        # Decided without asking anyone: the archives cannot fit whatever their size.
        return _no_room(ccache, limit)
    sizes = {name: None if url is None else remote_size(url) for name, url in rocm_urls().items()}
    return toolchain_archives_fit(ccache, sizes, limit)


def _no_room(ccache: dict[str, int], limit: int) -> ArchiveDecision:
    return ArchiveDecision(
        cache_archives=False, ccache_bytes=sum(ccache.values()), archive_bytes=0, limit_bytes=limit
    )
