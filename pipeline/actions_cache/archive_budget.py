"""Whether this run's toolchain archives go into the Actions cache (the I/O half).

Sizes come from a HEAD request on each ROCm leg's resolved archive URL
(TheRock's HTML index lists no sizes); the arithmetic is pure, in
:mod:`pipeline.actions_cache.budget`. When every leg's ccache at ``[ccache] max_size``
already fills ``[github] cache_limit_bytes``, no request is made at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.actions_cache.budget import ArchiveDecision, parse_size, toolchain_archives_fit
from pipeline.errors import PipelineError
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


def archive_decision(inputs: RunInputs) -> ArchiveDecision:
    """Cache toolchain archives only if every leg's ccache plus every ROCm archive fits the limit."""
    matrix = inputs.require_matrix()
    per_leg = parse_size(matrix.ccache.max_size)
    ccache = dict.fromkeys(matrix.legs, per_leg)
    limit = matrix.github.cache_limit_bytes
    rocm_legs = [name for name, leg in matrix.legs.items() if leg.needs_resolution]
    if sum(ccache.values()) > limit:
        # Decided without asking anyone: the archives cannot fit whatever their size.
        return _no_room(ccache, limit)
    sizes: dict[str, int | None] = {}
    for name in rocm_legs:
        from pipeline.run_resolution import rocm_for_leg

        try:
            url = rocm_for_leg(inputs, name).url
        except PipelineError:
            sizes[name] = None
            continue
        sizes[name] = remote_size(url)
    return toolchain_archives_fit(ccache, sizes, limit)


def _no_room(ccache: dict[str, int], limit: int) -> ArchiveDecision:
    return ArchiveDecision(cache_archives=False, ccache_bytes=sum(ccache.values()), archive_bytes=0, limit_bytes=limit)
