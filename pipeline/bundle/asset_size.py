"""A bundle against GitHub's size limit per release asset: refused over it, warned near it.

GitHub refuses an asset of 2 GiB or more, and it says so only when the upload
is made: at the end of a night, after hours of building. ``build`` checks the
bundle it has just packed and ``publish`` checks every asset before its first
request, each with one line naming the leg, the size and the five largest
files (what to look at first to bring it under).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.archives.deterministic import member_sizes
from pipeline.errors import BundleError
from pipeline.github.limits import RELEASE_ASSET_LIMIT_BYTES, RELEASE_ASSET_WARN_FRACTION
from pipeline.util.byte_sizes import human_bytes

# How many of a bundle's files an over-the-limit message names.
LARGEST_SHOWN = 5


def largest_files(bundle: Path, count: int = LARGEST_SHOWN) -> list[tuple[str, int]]:
    """The ``count`` largest files of a bundle, largest first (ties by name), with their unpacked sizes."""
    return sorted(member_sizes(bundle), key=lambda item: (-item[1], item[0]))[:count]


def _largest_text(bundle: Path) -> str:
    try:
        found = largest_files(bundle)
    except BundleError as err:
        return f"its files cannot be listed ({err.message})"
    if not found:
        return "it holds no file"
    return "its largest files: " + ", ".join(f"{name} ({human_bytes(size)})" for name, size in found)


def oversize_problem(leg: str, bundle: Path, *, limit: int = RELEASE_ASSET_LIMIT_BYTES) -> str | None:
    """The one line refusing ``leg``'s bundle when it is not under GitHub's limit per asset, else None."""
    size = bundle.stat().st_size
    if size < limit:
        return None
    return (
        f"leg {leg}: {bundle.name} is {human_bytes(size)} ({size} bytes), not under GitHub's "
        f"{human_bytes(limit)} limit per release asset: no upload could take it; {_largest_text(bundle)}"
    )


def near_limit_warning(
    leg: str,
    bundle: Path,
    *,
    limit: int = RELEASE_ASSET_LIMIT_BYTES,
    fraction: float = RELEASE_ASSET_WARN_FRACTION,
) -> str | None:
    """A warning when ``leg``'s bundle has reached ``fraction`` of the limit (but is under it), else None."""
    size = bundle.stat().st_size
    if not limit * fraction <= size < limit:
        return None
    return (
        f"leg {leg}: {bundle.name} is {human_bytes(size)}, {size / limit:.0%} of GitHub's {human_bytes(limit)} "
        f"limit per release asset; {_largest_text(bundle)}"
    )


def check_asset_size(leg: str, bundle: Path) -> str | None:
    """BundleError when the bundle is over the limit; the warning to give when it is near it."""
    if problem := oversize_problem(leg, bundle):
        raise BundleError(problem)
    return near_limit_warning(leg, bundle)
