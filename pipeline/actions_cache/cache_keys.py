"""GitHub Actions cache keys: the key, its restore prefix, and the inverse.

A ccache key is ``llama-ccache--<leg>--<toolchain>--<tag>``:

- ``<toolchain>`` is the identity of the compiler that fills the cache.
  ccache hashes the compiler into every entry, so a cache made by another
  toolchain is a download that can never hit.
- ``<tag>`` (``b10327`` or ``b10327-mix-1a2b3c4``) makes the key unique per
  run: GitHub caches are immutable, a key is written once.
- A warm-up (``python -m pipeline warm-up``: next week's build compiled on
  Saturday) saves under its run's tag plus ``-warm``: never the key a night
  writes, yet under the night's restore prefix, so the window's first night
  restores it, and the pruner can tell a warmed generation no night has used.
- The restore prefix stops right after the toolchain *and its separator*, so
  ``cpu`` never restores ``cpu-avx``'s caches and ``gcc-12`` never restores
  ``gcc-12.2``'s.

The downloaded ROCm toolchain archive is cached too, under
``llama-toolchain--<leg>--<toolchain>`` (an exact key: another version's
archive is of no use).

A shard job's cache (a part of a cold leg's compile steps, docs/caches.md) is
``llama-shard--<leg>--<toolchain>--<tag>--<i>of<n>``: a namespace of its own,
so the leg's restore prefix never takes a partial cache for a night's, and
the leg restores each shard by its exact key.

``--`` is the separator: a leg name cannot contain it (pipeline.inputs.matrix),
a toolchain identity is normalised so it cannot, and a tag has a fixed shape
without it. Everything above the I/O edge at the bottom is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.errors import PipelineError, UsageError
from pipeline.names import LEG_NAME, LEG_NAME_MAX, RUN_TAG, safe_identity

SEP = "--"
CCACHE_KIND = "ccache"
TOOLCHAIN_KIND = "toolchain"
SHARD_KIND = "shard"
KINDS = (CCACHE_KIND, TOOLCHAIN_KIND, SHARD_KIND)
_NAMESPACE = {kind: f"llama-{kind}" for kind in KINDS}

# A key of ours starts with one of these; a key that does but does not parse
# (an older scheme, a hand-made key) is reported, never deleted.
LOOKALIKE_PREFIXES = tuple(_NAMESPACE.values())

TAG = RUN_TAG
WARM_SUFFIX = "-warm"
# A ccache key's last part: a run tag, a warm-up's with its suffix.
KEY_TAG = re.compile(RUN_TAG.pattern.removesuffix("$") + f"(?:{re.escape(WARM_SUFFIX)})?$")
# safe_identity's alphabet, without '--' and without a '-' at either end, so
# the separators around it stay unambiguous.
TOOLCHAIN = re.compile(r"^[A-Za-z0-9._+]+(?:-[A-Za-z0-9._+]+)*$")
TOOLCHAIN_MAX = 128
# GitHub's longest Actions cache key.
GITHUB_KEY_MAX = 512
_DASHES = re.compile(r"-{2,}")
# A shard key's last part: ``<index>of<count>``, the index from 1.
SHARD_LABEL = re.compile(r"^([1-9][0-9]*)of([1-9][0-9]*)$")


class MalformedKeyError(PipelineError, ValueError):
    """A key that starts like ours but does not parse."""


@dataclass(frozen=True, kw_only=True)
class KeyParts:
    """What a key says: kind (ccache or toolchain), leg, toolchain and tag."""

    kind: str
    leg: str
    toolchain: str
    # None for a toolchain-archive key; the run's tag, without a warm-up's suffix.
    tag: str | None = None
    # A warm-up saved it (the tag ended in WARM_SUFFIX).
    warm: bool = False
    # A shard key's ``<index>of<count>``; None for the other kinds.
    shard: str | None = None


def key_toolchain(identity: str) -> str:
    """Normalise a toolchain identity or version for a key (no '--', no edge '-')."""
    squashed = _DASHES.sub("-", safe_identity(identity)).strip("-_")
    return squashed or "unknown"


def check_run_tag(tag: str) -> str:
    """``tag`` if it is a run tag (``b10327``, ``b10327-mix-1a2b3c4``), else a UsageError."""
    if not TAG.match(tag):
        raise UsageError(f"bad cache-key tag {tag!r}: expected 'b<digits>' or 'b<digits>-mix-<hex>'")
    return tag


def _check_leg(leg: str) -> None:
    if len(leg) > LEG_NAME_MAX or not LEG_NAME.match(leg):
        raise UsageError(f"bad leg name {leg!r} for a cache key: letters, digits, '.', '_' and single '-'")


def _check_toolchain(toolchain: str) -> None:
    if len(toolchain) > TOOLCHAIN_MAX or not TOOLCHAIN.match(toolchain):
        raise UsageError(
            f"bad toolchain identity {toolchain!r} for a cache key: "
            "letters, digits, '.', '_', '+' and single inner '-' (see key_toolchain)"
        )


def restore_prefix(leg: str, toolchain: str) -> str:
    """The prefix that restores only caches of ``leg`` built by ``toolchain``."""
    _check_leg(leg)
    _check_toolchain(toolchain)
    return f"{_NAMESPACE[CCACHE_KIND]}{SEP}{leg}{SEP}{toolchain}{SEP}"


def fits_github(key: str) -> str:
    """``key`` when GitHub's cache takes it (at most :data:`GITHUB_KEY_MAX` characters), else a UsageError: every
    key this module makes passes here before it is used."""
    if len(key) > GITHUB_KEY_MAX:
        raise UsageError(
            f"cache key {key[:80]!r}... is {len(key)} characters: GitHub's cache takes at most "
            f"{GITHUB_KEY_MAX}"
        )
    return key


def cache_key(leg: str, toolchain: str, tag: str, *, warm: bool = False) -> str:
    """The ccache key of one run of ``leg`` (of a warm-up's, with ``warm``)."""
    return fits_github(restore_prefix(leg, toolchain) + check_run_tag(tag) + (WARM_SUFFIX if warm else ""))


def shard_cache_key(leg: str, toolchain: str, tag: str, index: int, count: int) -> str:
    """The exact key of shard ``index`` of ``count`` of ``leg``'s cold build in one run: the ccache key's parts in
    the shard namespace, and the shard last."""
    if not 1 <= index <= count:
        raise UsageError(f"shard {index} of {count}: expected 1 to {count}")
    body = cache_key(leg, toolchain, tag).removeprefix(_NAMESPACE[CCACHE_KIND])
    return fits_github(f"{_NAMESPACE[SHARD_KIND]}{body}{SEP}{index}of{count}")


def restore_keys(leg: str, toolchain: str) -> list[str]:
    """``restore-keys`` for actions/cache: the one safe prefix, nothing broader."""
    return [restore_prefix(leg, toolchain)]


def toolchain_cache_key(leg: str, toolchain: str) -> str:
    """The exact key of ``leg``'s downloaded toolchain archive."""
    _check_leg(leg)
    _check_toolchain(toolchain)
    return fits_github(f"{_NAMESPACE[TOOLCHAIN_KIND]}{SEP}{leg}{SEP}{toolchain}")


def looks_minted(key: str) -> bool:
    """True when ``key`` starts like a key of ours (parsed or not)."""
    return key.startswith(LOOKALIKE_PREFIXES)


def parse_key(key: str) -> KeyParts | None:
    """The inverse of the key functions: None for a foreign key.

    A key that starts like ours but does not parse raises MalformedKeyError.
    The tag is split at the last separator and the leg at the first one that
    is followed by the toolchain's first character: a leg may end in '-'
    (``cpu-`` gives ``cpu---gcc``) but a toolchain never starts with one.
    """
    kind = next((k for k, ns in _NAMESPACE.items() if key.startswith(ns + SEP)), None)
    if kind is None:
        if looks_minted(key):
            raise MalformedKeyError(f"cache key {key!r} starts like this pipeline's but has no known kind")
        return None
    if kind == SHARD_KIND:
        return _parse_shard_key(key)
    rest = key[len(_NAMESPACE[kind]) + len(SEP) :]
    tag: str | None = None
    warm = False
    if kind == CCACHE_KIND:
        rest, sep, tag = rest.rpartition(SEP)
        if not sep or not KEY_TAG.match(tag):
            raise MalformedKeyError(f"cache key {key!r}: no run tag after the last {SEP!r}")
        warm = tag.endswith(WARM_SUFFIX)
        tag = tag.removesuffix(WARM_SUFFIX)
    leg, sep, toolchain = rest.rpartition(SEP)
    if not sep or not leg or len(leg) > LEG_NAME_MAX or not LEG_NAME.match(leg):
        raise MalformedKeyError(f"cache key {key!r}: no valid leg name")
    if len(toolchain) > TOOLCHAIN_MAX or not TOOLCHAIN.match(toolchain):
        raise MalformedKeyError(f"cache key {key!r}: no valid toolchain identity")
    return KeyParts(kind=kind, leg=leg, toolchain=toolchain, tag=tag, warm=warm)


def _parse_shard_key(key: str) -> KeyParts:
    """A shard key is a ccache key's parts in the shard namespace, then ``--<index>of<count>``."""
    body, sep, label = key.removeprefix(_NAMESPACE[SHARD_KIND]).rpartition(SEP)
    found = SHARD_LABEL.match(label)
    if not sep or not found or int(found.group(1)) > int(found.group(2)):
        raise MalformedKeyError(f"cache key {key!r}: no '<index>of<count>' shard after the last {SEP!r}")
    try:
        parts = parse_key(_NAMESPACE[CCACHE_KIND] + body)
    except MalformedKeyError as err:
        # The same reason, naming the shard key it was found in.
        raise MalformedKeyError(f"cache key {key!r}: {err.message.split(': ', 1)[-1]}") from None
    if parts is None:
        raise MalformedKeyError(f"cache key {key!r}: not a shard key")
    return KeyParts(kind=SHARD_KIND, leg=parts.leg, toolchain=parts.toolchain, tag=parts.tag, shard=label)
