"""The run's source as one archive: made once by ``python -m pipeline source``, used by every leg.

Cloning llama.cpp per leg costs a fetch per leg (with a mix, the whole history
to find the merge base). The parent job checks the merged tree out once and
writes ``llama.cpp-<tag>.tar.gz`` with a manifest beside it
(``<archive>.json``: tag, commit, mix, sha256, size, fetched bytes); legs get
the archive as a workflow artifact, check its sha256 against the manifest and
extract it with the one safe extractor (:mod:`pipeline.archives.extract`).

Deterministic: ``git archive`` of a commit (entries in git's order, mtimes the
commit's time, no local ownership), gzip with no name and mtime 0. The same
commit gives the same bytes on every machine with the same git.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.archives.extract import MARKER, extract_archive, tree_change
from pipeline.errors import SourceError
from pipeline.guard.children import popen_child, run_child
from pipeline.names import is_safe_tag
from pipeline.util.fsutil import atomic_output, atomic_write_json, file_digest
from pipeline.util.tree_removal import remove_tree

# The folder every archive unpacks to (the configure line names it; same on every leg).
ARCHIVE_ROOT = "llama.cpp"
MANIFEST_SUFFIX = ".json"
MANIFEST_FORMAT = 1
_COMPRESS_LEVEL = 6


@dataclass(frozen=True, kw_only=True)
class SourceManifest:
    """What a source archive holds and how to check it."""

    archive: str
    tag: str
    commit: str
    sha256: str
    size: int
    source: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT, "archive": self.archive, "tag": self.tag, "commit": self.commit,
            "sha256": self.sha256, "size": self.size, "source": dict(self.source),
        }


def archive_name(tag: str) -> str:
    return f"llama.cpp-{tag}.tar.gz"


def manifest_path(archive: Path) -> Path:
    return archive.with_name(archive.name + MANIFEST_SUFFIX)


def write_source_archive(
    checkout: Path, dest_dir: Path, *, tag: str, source: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[Path, SourceManifest]:
    """Archive ``checkout``'s HEAD as ``<dest_dir>/llama.cpp-<tag>.tar.gz`` and write its manifest."""
    commit = _git_out(["rev-parse", "HEAD"], checkout, environ).strip()
    archive = dest_dir / archive_name(tag)
    dest_dir.mkdir(parents=True, exist_ok=True)
    with atomic_output(archive) as raw, gzip.GzipFile(
        filename="", mode="wb", fileobj=raw, compresslevel=_COMPRESS_LEVEL, mtime=0
    ) as gz:
        # In a process group of its own: an interrupt stops git too (no orphan writing into a removed archive).
        with popen_child(
            ["git", "-c", "core.autocrlf=false", "archive", "--format=tar", f"--prefix={ARCHIVE_ROOT}/", commit],
            cwd=checkout, env=dict(environ), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            shutil.copyfileobj(proc.stdout, gz, 1 << 20)
            err = proc.stderr.read().decode(errors="replace")
        if proc.returncode != 0:
            raise SourceError(f"{checkout}: git archive failed: {err.strip().splitlines()[-1:] or proc.returncode}")
    size, sha = file_digest(archive)
    manifest = SourceManifest(archive=archive.name, tag=tag, commit=commit, sha256=sha, size=size, source=source)
    atomic_write_json(manifest_path(archive), manifest.to_json())
    return archive, manifest


def read_manifest(archive: Path) -> SourceManifest:
    """The manifest beside ``archive``; a missing or malformed one is one clear error."""
    path = manifest_path(archive)
    if not archive.is_file():
        raise SourceError(f"source archive {archive}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SourceError(f"source archive {archive}: its manifest {path.name} is missing") from None
    except (OSError, ValueError) as exc:
        raise SourceError(f"{path}: not a source manifest ({exc})") from None
    try:
        if data.get("format") != MANIFEST_FORMAT:
            raise SourceError(f"{path}: manifest format {data.get('format')!r}, expected {MANIFEST_FORMAT}")
        manifest = SourceManifest(
            archive=str(data["archive"]), tag=str(data["tag"]), commit=str(data["commit"]),
            sha256=str(data["sha256"]), size=int(data["size"]), source=dict(data.get("source") or {}),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SourceError(f"{path}: malformed source manifest ({exc})") from None
    # The tag names the bundle file and the release: from a file someone else wrote, it is checked
    # here like a --tag on the command line ("../../x" would name a file outside the output folder).
    if not is_safe_tag(manifest.tag):
        raise SourceError(f"{path}: manifest tag {manifest.tag!r} is not a safe tag (letters, digits, '.', '_', '+', '-')")
    return manifest


def unpack_source_archive(archive: Path, target: Path) -> tuple[Path, SourceManifest]:
    """Check ``archive`` against its manifest and make ``target`` hold exactly its tree.

    ``target`` is one fixed folder per leg (``<out>/<leg>/src/llama.cpp``),
    whatever the archive: the tree's path is in every compile command (the
    paths ccache hands the compiler, the ``-ffile-prefix-map`` flags), so a
    folder named after the archive's hash made every new tag a cold build.
    A folder whose marker names this archive's sha256 and whose files are
    unchanged since they were extracted (every file's digest, listed in the
    marker) is re-used; anything else is replaced: the new tree is
    extracted beside it and swapped in whole, so a build never sees a mix of
    two tags. The caller holds the leg's lock.
    """
    manifest = read_manifest(archive)
    size, sha = file_digest(archive)
    if sha != manifest.sha256 or size != manifest.size:
        raise SourceError(
            f"source archive {archive}: sha256 {sha[:16]}... ({size} bytes) does not match its manifest's "
            f"{manifest.sha256[:16]}... ({manifest.size} bytes)"
        )
    if _extracted_from(target, manifest):
        return target, manifest
    from pipeline.archives.extract import remove_stale, swap_into_place
    from pipeline.errors import ToolchainError

    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target.parent, f".{target.name}.", (".partial",))
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"))
    try:
        new = extract_archive(archive, staging / "new", marker={"sha256": manifest.sha256, "commit": manifest.commit},
                              digests=True)
        swap_into_place(new, target, staging)
    except ToolchainError as err:
        raise SourceError(f"source archive {archive}: {err.message}") from None
    finally:
        with contextlib.suppress(OSError):
            remove_tree(staging)
    return target, manifest


def _extracted_from(target: Path, manifest: SourceManifest) -> bool:
    """Whether ``target`` is still exactly what this archive extracted to.

    The marker names the archive and lists every file's digest; a tree whose
    files were edited, added or removed since is extracted again, so what is
    built is always what the record's ``archive_sha256`` says. An older
    marker without the list is not trusted either.
    """
    try:
        marker = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("sha256") != manifest.sha256 or not isinstance(marker.get("files"), dict):
        return False
    try:
        # Every file hashed (a source tree is small): an edit that kept size and time is found too.
        return tree_change(target, marker["files"], quick=False, added=True) is None
    except OSError:
        return False


def git_objects_bytes(repo: Path) -> int:
    """The size of a clone's object store: before and after a fetch, the bytes fetched."""
    objects = repo / ".git" / "objects"
    if not objects.is_dir():
        return 0
    return sum(p.stat().st_size for p in objects.rglob("*") if p.is_file())


def _git_out(args: list[str], cwd: Path, environ: Mapping[str, str]) -> str:
    try:
        proc = run_child(["git", *args], cwd=cwd, env=dict(environ), stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, errors="replace", check=False)
    except FileNotFoundError:
        raise SourceError("git not found on PATH: install git") from None
    if proc.returncode != 0:
        raise SourceError(f"{cwd}: git {' '.join(args)} failed: {proc.stderr.strip()}")
    return str(proc.stdout)
