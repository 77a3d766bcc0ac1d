"""TheRock tarball names and the order of their versions (pure).

A tarball is ``therock-dist-<os>-<family>-<version>.tar.gz`` where a nightly
build's version is ``X.Y.Z`` + ``a`` or ``rc`` + ``YYYYMMDD`` and a stable
release's is ``X.Y.Z`` alone. Nightly builds are ordered by that date first,
then numerically: ``10.1.0a`` is newer than ``7.15.0a`` although it sorts
lower as text. Stable releases are ordered numerically (``10.0.0`` after
``7.14.0``); the two kinds live in different streams and are never compared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache

from pipeline.names import (
    FAMILY_PATTERN,
    ROCM_OSES,
    ROCM_VERSION_PATTERN,
    rocm_release_parts,
    rocm_version_date,
    rocm_version_parts,
)

# One compiled pattern for every entry of an index (tens of thousands of names), made of
# names.py's OS list, family and version patterns. Every '-'-separated part of a family after the
# first starts with a letter, so the split between family and version (a digit) is unambiguous.
_TARBALL = re.compile(
    rf"therock-dist-({'|'.join(ROCM_OSES)})-({FAMILY_PATTERN})-({ROCM_VERSION_PATTERN})\.tar\.gz"
)
# An alpha precedes a release candidate of the same X.Y.Z and date; a release follows both.
_STAGE_RANK = {"a": 0, "rc": 1}
_RELEASE_RANK = 2


@dataclass(frozen=True, kw_only=True)
class RocmBuild:
    """One TheRock tarball of the index."""

    # File name, e.g. "therock-dist-linux-gfx110X-all-10.1.0a20260807.tar.gz".
    name: str
    os: str
    family: str
    version: str
    # The build date at the end of a nightly's version; a stable release's version has none, so its
    # publish date stands in (date.min when the index does not say: visible on every date).
    date: date
    # When the index says it was published (aware); None when it does not say.
    published: datetime | None
    url: str

    @property
    def sort_key(self) -> tuple[int, ...]:
        return version_sort_key(self.version)


# Selection compares the same few thousand versions again and again.
@lru_cache(maxsize=1 << 16)
def _version_parts(version: str) -> tuple[int, ...] | None:
    """(date as YYYYMMDD int, major, minor, patch, stage rank), None if not a version (names.rocm_version_parts);
    a stable release's date is 0."""
    parts = rocm_version_parts(version)
    if parts is None:
        release = rocm_release_parts(version)
        return None if release is None else (0, *release, _RELEASE_RANK)
    major, minor, patch, stage, built = parts
    return (built.year * 10000 + built.month * 100 + built.day, major, minor, patch, _STAGE_RANK[stage])


def version_sort_key(version: str) -> tuple[int, ...]:
    """Order key: build date first, then the numeric X.Y.Z, then ``a`` < ``rc`` (stable releases: X.Y.Z).

    Raises ValueError for a string that is not a version with a valid date.
    """
    parts = _version_parts(version)
    if parts is None:
        raise ValueError(f"not a TheRock version: {version!r}")
    return parts


def version_line(version: str) -> tuple[int, int]:
    """(major, minor): ``10.1`` and ``7.15`` are two lines published side by side."""
    key = version_sort_key(version)
    return key[1], key[2]


def parse_tarball(name: str) -> tuple[str, str, str, date | None] | None:
    """(os, family, version, build date) of a TheRock tarball name (no date: a stable release); None for
    anything else."""
    m = _TARBALL.fullmatch(name)
    if m is None:
        return None
    os_name, family, version = m.groups()
    if rocm_release_parts(version) is not None:
        return os_name, family, version, None
    try:
        return os_name, family, version, rocm_version_date(version)
    except ValueError:
        return None


def parse_tarball_name(name: str) -> tuple[str, str, str] | None:
    """(os, family, version) of a TheRock tarball name; None for anything else.

    Checksums, other suffixes and nightly versions without a valid date are
    not tarballs of a build and give None.
    """
    parsed = parse_tarball(name)
    return None if parsed is None else parsed[:3]


def build_date(version: str, published: datetime | None) -> date:
    """A build's :attr:`RocmBuild.date`: a nightly's from its version; a stable release's is its publish date
    (UTC), ``date.min`` when unknown. ValueError for a string that is not a version."""
    parts = _version_parts(version)
    if parts is None:
        raise ValueError(f"not a TheRock version: {version!r}")
    if parts[0]:
        return date(parts[0] // 10000, parts[0] // 100 % 100, parts[0] % 100)
    return published.astimezone(UTC).date() if published is not None else date.min


def tarball_name(os_name: str, family: str, version: str) -> str:
    """The file name of a build: the inverse of :func:`parse_tarball_name`."""
    return f"therock-dist-{os_name}-{family}-{version}.tar.gz"
