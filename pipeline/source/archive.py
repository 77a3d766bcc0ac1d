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

Fast: the archive only travels inside one run (the parent job's artifact, which
the upload compresses again), so it is gzip level 1 (44 MB of llama.cpp's 177 MB
tree in 1.8 s of CPU, against 37.6 MB in 5.4 s at gzip's default 6), and the
manifest's file list is read from git's tar stream on its way to gzip, not from
the archive decompressed again (docs/benchmarks.md, "The source archive").
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pipeline.archives.extract import MARKER, extract_archive
from pipeline.errors import SourceError
from pipeline.names import is_safe_tag
from pipeline.processes.groups import popen_child, run_child
from pipeline.util.fsutil import atomic_output, atomic_write_json, file_digest, stream_digest
from pipeline.util.tree_removal import remove_tree

# The folder every archive unpacks to (the configure line names it; same on every leg).
ARCHIVE_ROOT = "llama.cpp"
MANIFEST_SUFFIX = ".json"
MANIFEST_FORMAT = 1
_COMPRESS_LEVEL = 1


@dataclass(frozen=True, kw_only=True)
class SourceManifest:
    """What a source archive holds and how to check it."""

    archive: str
    tag: str
    commit: str
    sha256: str
    size: int
    source: Mapping[str, Any]
    # Every file of the tree the archive unpacks to (relative to it): ``"<sha256> <size>[ x]"``, or
    # ``"-> <target>"`` for a link. A reused tree is checked against this list, which travels with
    # the archive, never against a list kept inside the tree (one edited with it would agree).
    files: Mapping[str, str] = field(default_factory=dict)

    def to_json(self, *, files: bool = True) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "archive": self.archive,
            "tag": self.tag,
            "commit": self.commit,
            "sha256": self.sha256,
            "size": self.size,
            "source": dict(self.source),
            **({"files": dict(self.files)} if files else {}),
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
    with (
        atomic_output(archive) as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=_COMPRESS_LEVEL, mtime=0) as gz,
    ):
        # In a process group of its own: an interrupt stops git too (no orphan writing into a removed archive).
        with popen_child(
            [
                "git",
                "-c",
                "core.autocrlf=false",
                "archive",
                "--format=tar",
                f"--prefix={ARCHIVE_ROOT}/",
                commit,
            ],
            cwd=checkout,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            tee = _Tee(proc.stdout, gz)
            try:
                with tarfile.open(fileobj=tee, mode="r|") as tar:
                    files = _listing(tar)
            except tarfile.TarError:
                files = {}  # git failed mid-stream: its exit status and message say why (below)
            while tee.read(1 << 20):  # what follows the last member (the end blocks): gzip gets it too
                pass
            err = proc.stderr.read().decode(errors="replace")
        if proc.returncode != 0:
            raise SourceError(
                f"{checkout}: git archive failed: {err.strip().splitlines()[-1:] or proc.returncode}"
            )
    size, sha = file_digest(archive)
    manifest = SourceManifest(
        archive=archive.name, tag=tag, commit=commit, sha256=sha, size=size, source=source, files=files
    )
    atomic_write_json(manifest_path(archive), manifest.to_json())
    return archive, manifest


class _Tee(io.RawIOBase):
    """A readable stream that writes every byte read from ``source`` to ``sink``, in order, once."""

    def __init__(self, source: IO[bytes], sink: gzip.GzipFile) -> None:
        self._source, self._sink = source, sink

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._source.read(len(buffer))
        self._sink.write(data)
        buffer[: len(data)] = data
        return len(data)


def archive_listing(archive: Path) -> dict[str, str]:
    """What the archive's tree holds, read from its members (see :attr:`SourceManifest.files`)."""
    with tarfile.open(archive, "r:gz") as tar:
        return _listing(tar)


def _listing(tar: tarfile.TarFile) -> dict[str, str]:
    """:func:`archive_listing` of an open archive, read once from start to end (a stream will do)."""
    found: dict[str, str] = {}
    for member in tar:
        rel = member.name.removeprefix(f"{ARCHIVE_ROOT}/").rstrip("/")
        if not rel or rel == ARCHIVE_ROOT or member.isdir():
            continue
        if member.issym():
            found[rel] = f"-> {member.linkname}"
        elif member.isreg() and (data := tar.extractfile(member)) is not None:
            with data:
                digest = stream_digest(data)[1]
            found[rel] = f"{digest} {member.size}" + (" x" if member.mode & 0o100 else "")
    return dict(sorted(found.items()))


def tree_listing(root: Path) -> dict[str, str]:
    """The same listing, read from an unpacked tree (the extractor's marker file left out)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        here = Path(dirpath)
        for name in [*filenames, *(d for d in dirnames if (here / d).is_symlink())]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if rel == MARKER:
                continue
            if path.is_symlink():
                found[rel] = f"-> {path.readlink()}"
            elif path.is_file():
                size, digest = file_digest(path)
                found[rel] = f"{digest} {size}" + (" x" if path.stat().st_mode & 0o100 else "")
            else:
                found[rel] = "not a file"
    return dict(sorted(found.items()))


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
        files = data.get("files") or {}
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise SourceError(f"{path}: malformed source manifest (files: expected an object of strings)")
        manifest = SourceManifest(
            archive=str(data["archive"]),
            tag=str(data["tag"]),
            commit=str(data["commit"]),
            sha256=str(data["sha256"]),
            size=int(data["size"]),
            source=dict(data.get("source") or {}),
            files=files,
        )
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise SourceError(f"{path}: malformed source manifest ({exc})") from None
    # The tag names the bundle file and the release: from a file someone else wrote, it is checked
    # here like a --tag on the command line ("../../x" would name a file outside the output folder).
    if not is_safe_tag(manifest.tag):
        raise SourceError(
            f"{path}: manifest tag {manifest.tag!r} is not a safe tag (letters, digits, '.', '_', '+', '-')"
        )
    return manifest


def unpack_source_archive(archive: Path, target: Path) -> tuple[Path, SourceManifest]:
    """Check ``archive`` against its manifest and make ``target`` hold exactly its tree.

    ``target`` is one fixed folder per leg (``<out>/<leg>/src/llama.cpp``),
    whatever the archive: the tree's path is in every compile command (the
    paths ccache hands the compiler, the ``-ffile-prefix-map`` flags), so a
    folder named after the archive's hash made every new tag a cold build.
    A folder whose marker names this archive's sha256 and whose files are
    exactly those the manifest lists (every file's digest: the manifest
    travels with the archive and vouches for it by its sha256) is re-used;
    anything else is replaced: the new tree is extracted beside it, checked
    against the manifest's list, and swapped in whole, so a build never sees a
    mix of two tags. The caller holds the leg's lock.
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
        new = extract_archive(
            archive, staging / "new", marker={"sha256": manifest.sha256, "commit": manifest.commit}
        )
        if manifest.files and (differs := _first_difference(tree_listing(new), manifest.files)):
            raise SourceError(
                f"source archive {archive}: its tree does not match its manifest's file list ({differs})"
            )
        swap_into_place(new, target, staging)
    except ToolchainError as err:
        raise SourceError(f"source archive {archive}: {err.message}") from None
    finally:
        with contextlib.suppress(OSError):
            remove_tree(staging)
    return target, manifest


def _extracted_from(target: Path, manifest: SourceManifest) -> bool:
    """Whether ``target`` is still exactly what this archive extracted to.

    Its marker must name the archive, and its files must be the manifest's list, each one hashed
    (a source tree is small: an edit that kept size and time is found too); a file added, edited
    or removed since, even together with the marker, means it is extracted again. A manifest
    without the list (an older one) never lets a tree be re-used.
    """
    if not manifest.files:
        return False
    try:
        marker = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("sha256") != manifest.sha256:
        return False
    try:
        return _first_difference(tree_listing(target), manifest.files) is None
    except OSError:
        return False


def _first_difference(found: Mapping[str, str], listed: Mapping[str, str]) -> str | None:
    for rel in sorted(set(found) | set(listed)):
        if rel not in found:
            return f"{rel} is missing"
        if rel not in listed:
            return f"{rel} was added"
        if found[rel] != listed[rel]:
            return f"{rel} changed"
    return None


def git_objects_bytes(repo: Path) -> int:
    """The size of a clone's object store: before and after a fetch, the bytes fetched."""
    objects = repo / ".git" / "objects"
    if not objects.is_dir():
        return 0
    return sum(p.stat().st_size for p in objects.rglob("*") if p.is_file())


def _git_out(args: list[str], cwd: Path, environ: Mapping[str, str]) -> str:
    try:
        proc = run_child(
            ["git", *args],
            cwd=cwd,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
        )
    except FileNotFoundError:
        raise SourceError("git not found on PATH: install git") from None
    if proc.returncode != 0:
        raise SourceError(f"{cwd}: git {' '.join(args)} failed: {proc.stderr.strip()}")
    return str(proc.stdout)
