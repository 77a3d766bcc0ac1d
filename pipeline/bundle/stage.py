"""The bundle's folder before it is packed: payload, runtime closure, licenses.

``stage_bundle`` copies the selected build outputs into a staging folder
(``<out>/<leg>/bundle``), completes their runtime from the toolchain
(:mod:`pipeline.bundle.closure`), adds llama.cpp's LICENSE (and its
``licenses/`` folder where the tree has one); ``pack_staged`` packs the staging folder.
The build folder itself is never changed.

The layout is upstream's (llama.cpp's release.yml): the build's ``bin/`` is
flat at the bundle's root, programs and shared libraries side by side (the
libraries a program needs and the ``libggml-*`` backends ggml loads from the
program's own folder), with LICENSE beside them. A tar.gz bundle holds that
root under one top folder ``llama-<tag>/``, as upstream's Linux archives do; a
zip holds it at the top, as upstream's Windows zips do. The staging folder is
the root itself; only :func:`archive_entries` adds the top folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from pipeline.archives.deterministic import Entry
from pipeline.archives.packing import content_digest
from pipeline.errors import BundleError
from pipeline.names import bundle_member_problem
from pipeline.util.tree_removal import remove_tree

LICENSE_NAME = "LICENSE"
LICENSES_DIR = "licenses"
STAGE_DIR = "bundle"
# The top folder of a tar.gz bundle: upstream's `tar --transform "s,^\\.,llama-<tag>,"`.
TOP_FOLDER_TEMPLATE = "llama-{tag}"
# Where a build puts its programs and libraries (CMake's runtime and library output folders).
PAYLOAD_FOLDERS = ("bin", "lib")
# Toolchain details and environment variables naming the toolchain's root folder, in order.
_ROOT_DETAILS = ("root", "cuda_root")
_ROOT_ENV = ("ROCM_PATH", "HIP_PATH", "CUDA_PATH")


def payload_items(build_dir: Path) -> Iterator[tuple[str, Path]]:
    """(``bin/name`` or ``lib/name``, path) of everything in the payload folders of a build, in order.

    The bundle holds them flat at its root (see the module docstring).
    """
    for folder in PAYLOAD_FOLDERS:
        top = build_dir / folder
        if top.is_dir():
            for item in sorted(top.iterdir()):
                yield f"{folder}/{item.name}", item


@dataclass(frozen=True, kw_only=True)
class StagedFile:
    """One file of the staging folder: its bundle path, and the symlink target name when a link."""

    relpath: str
    path: Path
    link: str | None = None


def toolchain_root(details: dict[str, str], env: dict[str, str]) -> Path | None:
    """The folder a toolchain's runtime libraries are copied from, or None (a system compiler)."""
    for key in _ROOT_DETAILS:
        if details.get(key):
            return Path(details[key])
    for key in _ROOT_ENV:
        value = env.get(key)
        if value and Path(value).is_absolute():
            return Path(value)
    return None


def fresh_stage(stage: Path) -> Path:
    """An empty ``stage`` folder (a previous run's is removed)."""
    if stage.exists() or stage.is_symlink():
        remove_tree(stage)  # never through a link, never into a mount
    stage.mkdir(parents=True)
    return stage


def stage_file(stage: Path, relpath: str, source: Path, link: str | None) -> None:
    """Copy one payload file (following symlinks) or recreate a kept symlink."""
    dest = stage / relpath
    dest.parent.mkdir(parents=True, exist_ok=True)
    if link is not None:
        dest.symlink_to(link)
    else:
        shutil.copyfile(source, dest)
        dest.chmod(0o755)


def stage_licenses(stage: Path, source_tree: Path | None) -> list[str]:
    """Copy ``LICENSE`` and ``licenses/`` of the source tree into ``stage``; the bundle paths copied.

    A missing LICENSE is not an error here: ``check-bundle`` names it.
    """
    if source_tree is None:
        return []
    copied: list[str] = []
    license_file = source_tree / LICENSE_NAME
    if license_file.is_file():
        shutil.copyfile(license_file, stage / LICENSE_NAME)
        copied.append(LICENSE_NAME)
    folder = source_tree / LICENSES_DIR
    if folder.is_dir():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames.sort()
            for name in sorted(filenames):
                src = Path(dirpath) / name
                if not src.is_file():
                    continue
                rel = PurePath(LICENSES_DIR, os.path.relpath(src, folder)).as_posix()
                (stage / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, stage / rel)
                copied.append(rel)
    return copied


def staged_files(stage: Path, *, symlinks: bool) -> list[StagedFile]:
    """Every file of ``stage``, sorted; symlinks stay links only with ``symlinks`` (tar bundles)."""
    found: list[StagedFile] = []
    for dirpath, dirnames, filenames in os.walk(stage):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = PurePath(os.path.relpath(full, stage)).as_posix()
            link = str(full.readlink()) if full.is_symlink() and symlinks else None
            found.append(StagedFile(relpath=rel, path=full, link=link))
    return sorted(found, key=lambda f: f.relpath)


def top_folder(tag: str, *, zipped: bool) -> str:
    """The folder a bundle's root sits in inside its archive: ``llama-<tag>`` for tar.gz, none for zip."""
    return "" if zipped else TOP_FOLDER_TEMPLATE.format(tag=tag)


def member_name(top: str, relpath: str) -> str:
    """The archive member of the bundle path ``relpath`` (relative to the bundle's root)."""
    return f"{top}/{relpath}" if top else relpath


def archive_entries(
    staged: Sequence[StagedFile], origins: Mapping[str, str], *, top: str = ""
) -> tuple[list[dict[str, Any]], list[Entry]]:
    """The manifest's file list and the archive entries (folders included) of the staged files.

    ``origins`` maps a bundle path to where it came from in the toolchain
    (``from_toolchain`` in the manifest). Files at the root (programs, shared
    libraries) are executable; licenses and data files in subfolders are not
    (LICENSE itself is data too). The manifest's paths are relative to the
    root; the archive's members sit under ``top`` (see :func:`top_folder`).
    """
    files: list[dict[str, Any]] = []
    entries: list[Entry] = []
    for sf in staged:
        if problem := bundle_member_problem(sf.relpath):
            # Refused here, where every member is named: a bundle its own verify would refuse is never made.
            raise BundleError(
                f"{sf.path}: cannot go into the bundle as {sf.relpath!r}: {problem} (rename it)"
            )
        came_from = {"from_toolchain": origins[sf.relpath]} if sf.relpath in origins else {}
        name = member_name(top, sf.relpath)
        if sf.link is not None:
            files.append({"path": sf.relpath, "symlink": sf.link, **came_from})
            entries.append(Entry(name=name, mode=0o777, link=sf.link))
            continue
        # One read of each file: its sha256 for the manifest, and the digest the packaging cache needs.
        digest = content_digest(sf.path)
        files.append({"path": sf.relpath, "size": digest.size, "sha256": digest.sha256, **came_from})
        program = "/" not in sf.relpath and sf.relpath != LICENSE_NAME
        entries.append(Entry(name=name, mode=0o755 if program else 0o644, path=sf.path, digest=digest))
    folders = staged_folders(staged)
    if top:
        folders = [top, *(member_name(top, d) for d in folders)]
    entries.extend(Entry(name=f"{d}/", mode=0o755, is_dir=True) for d in folders)
    return files, entries


def staged_folders(files: Sequence[StagedFile]) -> list[str]:
    """Every folder that holds a staged file, parents included, sorted."""
    folders: set[str] = set()
    for f in files:
        parts = f.relpath.split("/")[:-1]
        folders.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return sorted(folders)
