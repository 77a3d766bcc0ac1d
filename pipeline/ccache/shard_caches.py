"""Shard caches: where a shard job's ccache lives, and how the leg's job merges them into its own.

A shard job compiles its part of the leg into a ccache folder of its own, a
sibling of the leg's: ``<leg's ccache folder>--shard-<i>of<n>`` (``--``
never occurs in a leg's name, so it is no other leg's folder). The leg's job
restores each shard's cache there and, before it configures, moves every
entry into its own folder (:func:`merge_shard_caches`):

- only ccache's own entries move: the files under the one-character
  hexadecimal folders (``<x>/<y>/<key>`` in ccache 4.x, and deeper levels
  alike), never its ``stats`` counters, ``CACHEDIR.TAG``, lock or temporary
  files, its configuration, or the pipeline's files beside them (the
  toolchain marker, the glslc shader cache);
- an entry is added only where its name is free: a hard link made without
  replacing anything (``os.link`` refuses an existing name), or a copy written
  under a temporary name and linked the same way; the leg's own entry of the
  same key stays. A same-named entry is the same key, so keeping either
  loses nothing; no file is ever written in place;
- the shard's file is removed once the leg has it, so a shard is merged once
  and its disk space is not held twice;
- the leg's counters are then recomputed by ccache itself (``ccache
  --cleanup`` recounts the files and the size of every folder), instead of
  adding up the shards' counters, whose layout is ccache's business.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import ToolchainError
from pipeline.inputs.leg import ShardSpec
from pipeline.processes.groups import run_child

# ccache's own files that are not entries: counters, tags, locks.
_NOT_ENTRIES = frozenset({"stats", "CACHEDIR.TAG", "ccache.conf"})
_HEX = frozenset("0123456789abcdef")


def shard_cache_dir(leg_cache: Path, shard: ShardSpec) -> Path:
    """The ccache folder of ``shard``: beside the leg's, ``<leg's folder>--shard-<i>of<n>``."""
    return leg_cache.with_name(f"{leg_cache.name}--shard-{shard.label}")


def _is_entry(name: str) -> bool:
    # ccache writes an entry under a temporary name (".tmp" in it) and renames it; locks end in ".lock" or
    # ".alive"; a leading dot is a marker (tmp/.cleaned).
    return (
        name not in _NOT_ENTRIES
        and not name.startswith(".")
        and ".tmp" not in name
        and not name.endswith((".lock", ".alive"))
    )


def cache_entries(cache: Path) -> Iterator[Path]:
    """ccache's entries in ``cache``, relative to it: every file of a one-character hex folder at any depth
    under the top, sorted."""
    stack = sorted((p for p in cache.iterdir() if p.is_dir() and p.name in _HEX), reverse=True)
    while stack:
        folder = stack.pop()
        children = sorted(folder.iterdir())
        for child in children:
            if child.is_file() and not child.is_symlink() and _is_entry(child.name):
                yield child.relative_to(cache)
        stack.extend(sorted((c for c in children if c.is_dir() and c.name in _HEX), reverse=True))


def _add_without_replacing(source: Path, target: Path) -> bool:
    """``source`` at ``target`` when that name is free: True, False when it was taken. A hard link where the
    filesystem allows, else a whole copy under a temporary name, linked in the same way."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass  # another filesystem, or no hard links there: copy
    temporary = target.with_name(f".{target.name}.pipeline-merge.{os.getpid()}")
    try:
        shutil.copy2(source, temporary)
        os.link(temporary, target)
        return True
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)


@dataclass(kw_only=True)
class ShardMerge:
    """What merging the shards' caches into the leg's did."""

    # The shard folders found and merged, in shard order.
    shards: list[str] = field(default_factory=list)
    # Entries added to the leg's cache, and entries the leg already had under the same key.
    added: int = 0
    already_there: int = 0
    added_bytes: int = 0

    def to_record(self) -> dict[str, Any]:
        return {
            "shards": list(self.shards),
            "added": self.added,
            "already_there": self.already_there,
            "added_bytes": self.added_bytes,
        }


def merge_cache(source: Path, target: Path, merge: ShardMerge) -> None:
    """Move every entry of ccache folder ``source`` into ``target`` whose name is free there (counted in
    ``merge``); ``source`` is removed afterwards."""
    for relative in cache_entries(source):
        path = source / relative
        size = path.stat().st_size
        if _add_without_replacing(path, target / relative):
            merge.added += 1
            merge.added_bytes += size
        else:
            merge.already_there += 1
    shutil.rmtree(source)


def merge_shard_caches(
    leg_cache: Path, shards: tuple[ShardSpec, ...], *, ccache: Path, env: Mapping[str, str]
) -> ShardMerge | None:
    """Merge every shard folder of the leg that exists into ``leg_cache`` (its shard runs' caches, restored by
    the workflow or made here), then have ``ccache`` recount the leg's cache with ``env`` (the leg's
    CCACHE_DIR and size limit). None when no shard folder exists."""
    found = [(shard, folder) for shard in shards if (folder := shard_cache_dir(leg_cache, shard)).is_dir()]
    if not found:
        return None
    merge = ShardMerge()
    leg_cache.mkdir(parents=True, exist_ok=True)
    for shard, folder in found:
        merge.shards.append(shard.label)
        merge_cache(folder, leg_cache, merge)
    recount(ccache, env)
    return merge


def recount(ccache: Path, env: Mapping[str, str]) -> None:
    """``ccache --cleanup``: recounts the files and size of every folder of the cache ``env`` names."""
    try:
        proc = run_child(
            [str(ccache), "--cleanup"],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{ccache} --cleanup: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise ToolchainError(f"{ccache} --cleanup failed: {detail[-1] if detail else proc.returncode}")
