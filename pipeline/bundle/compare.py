"""Comparing two bundles (or folders, or manifests) file by file: what ``compare`` and ``reproduce`` report.

Files are compared by size and sha256; a bundle's manifest is compared as
inputs (tag, source commit, toolchain, CMake arguments), not as a file (nor
is the SBOM made from it).
Paths are relative to the bundle's root: a tar.gz's top folder
(``llama-<tag>/``) is left out, so bundles of two tags compare file by file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from pipeline.archives.deterministic import archive_kind, read_members
from pipeline.bundle.make import (
    MANIFEST_NAME,
    is_manifest_member,
    manifest_root,
    parse_manifest,
    read_manifest_file,
    unpacked_root,
)
from pipeline.bundle.sbom import SBOM_NAME
from pipeline.bundle.stage import member_name
from pipeline.errors import BundleError
from pipeline.util.fsutil import file_digest

# --------------------------------------------------------------------------
# Comparing


@dataclass(frozen=True, kw_only=True)
class Digest:
    size: int | None = None
    sha256: str | None = None
    link: str | None = None


@dataclass(kw_only=True)
class Side:
    """What one side of a comparison holds: payload files and, for a bundle, its manifest."""

    label: str
    files: dict[str, Digest] = field(default_factory=dict)
    manifest: dict[str, Any] | None = None


@dataclass(kw_only=True)
class Comparison:
    a: str
    b: str
    identical: list[str] = field(default_factory=list)
    # (path, size in A, size in B); a symlink's size is None.
    differing: list[tuple[str, int | None, int | None]] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    # Dotted manifest keys whose values differ (inputs: tag, source.commit, toolchain.version...).
    manifest_differences: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.identical) + len(self.differing) + len(self.only_a) + len(self.only_b)

    @property
    def same(self) -> bool:
        return self.total == len(self.identical) and not self.manifest_differences

    @property
    def summary(self) -> str:
        return f"{len(self.identical)} of {self.total} files identical"

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "identical": self.same,
            "summary": self.summary,
            "identical_files": self.identical,
            "differing": [{"path": p, "size_a": sa, "size_b": sb} for p, sa, sb in self.differing],
            "only_in_a": self.only_a,
            "only_in_b": self.only_b,
            "manifest_differences": self.manifest_differences,
        }


def _digest_of_entry(entry: Mapping[str, Any], where: str) -> Digest:
    if "symlink" in entry:
        return Digest(link=str(entry["symlink"]))
    size, sha = entry.get("size"), entry.get("sha256")
    if not isinstance(size, int) or not isinstance(sha, str):
        raise BundleError(f"{where}: corrupt manifest: {entry.get('path')} has no size and sha256")
    return Digest(size=size, sha256=sha)


def _load_archive(path: Path) -> Side:
    side = Side(label=str(path))
    manifest_raw: bytes | None = None
    manifest_at = MANIFEST_NAME
    members: dict[str, Digest] = {}
    for member, data in read_members(path):
        if is_manifest_member(member.name) and manifest_raw is None:
            manifest_raw, manifest_at = data, member.name
        elif member.link is not None:
            members[member.name] = Digest(link=member.link)
        else:
            members[member.name] = Digest(size=member.size, sha256=member.sha256)
    if manifest_raw is None:
        raise BundleError(f"{path}: foreign bundle: no {MANIFEST_NAME} inside")
    side.manifest = parse_manifest(manifest_raw, f"{path}:{manifest_at}")
    top = manifest_root(side.manifest)
    if manifest_at != member_name(top, MANIFEST_NAME):
        raise BundleError(f"{path}: corrupt bundle: {manifest_at} is not in the folder its manifest names")
    for name, digest in members.items():
        if top and not name.startswith(top + "/"):
            raise BundleError(f"{path}: corrupt bundle: {name} is outside its top folder {top}/")
        side.files[name[len(top) + 1 :] if top else name] = digest
    # The SBOM is made from the manifest, as the manifest is from the files: compared through it.
    side.files.pop(SBOM_NAME, None)
    listed = {str(e["path"]): _digest_of_entry(e, str(path)) for e in side.manifest["files"]}
    if listed != side.files:
        wrong = sorted(set(listed) ^ set(side.files)) or sorted(
            k for k in listed if listed[k] != side.files[k]
        )
        raise BundleError(f"{path}: corrupt bundle: {wrong[0]} does not match the manifest")
    return side


def _load_folder(path: Path) -> Side:
    side = Side(label=str(path))
    path = unpacked_root(path)
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for fname in sorted(filenames):
            full = Path(dirpath) / fname
            rel = PurePath(os.path.relpath(full, path)).as_posix()
            if full.is_symlink():
                side.files[rel] = Digest(link=str(full.readlink()))
            elif not full.is_file():
                # Reading a FIFO blocks until a writer comes, a device may never end: refuse, naming it.
                raise BundleError(
                    f"{full}: not a regular file (a FIFO, socket or device); compare reads files only"
                )
            else:
                size, digest = file_digest(full)
                side.files[rel] = Digest(size=size, sha256=digest)
    top = path / MANIFEST_NAME
    if top.is_file():
        try:
            side.manifest = read_manifest_file(top)
        except BundleError:
            side.manifest = None  # an ordinary file of an ordinary folder
        else:
            del side.files[MANIFEST_NAME]
            side.files.pop(SBOM_NAME, None)
    return side


def _load_manifest_file(path: Path) -> Side:
    manifest = read_manifest_file(path)
    files = {str(e["path"]): _digest_of_entry(e, str(path)) for e in manifest["files"]}
    return Side(label=str(path), files=files, manifest=manifest)


def load_side(path: Path) -> Side:
    """A bundle, an unpacked bundle or any folder, or a manifest.json, ready to compare."""
    if path.is_dir():
        return _load_folder(path)
    if not path.is_file():
        raise BundleError(f"{path}: no such bundle, folder or manifest")
    if archive_kind(path) is not None:
        return _load_archive(path)
    if path.suffix == ".json":
        return _load_manifest_file(path)
    raise BundleError(f"{path}: not a bundle (neither a .tar.gz, a .zip, a folder nor a manifest.json)")


def manifest_differences(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ, ignoring the file list (compared file by file)."""
    keys = sorted(set(a) | set(b))
    diffs: list[str] = []
    for key in keys:
        if not prefix and key in ("files", "name"):
            continue
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            diffs.extend(manifest_differences(va, vb, f"{prefix}{key}."))
        elif va != vb:
            diffs.append(f"{prefix}{key}")
    return diffs


def compare_sides(a: Side, b: Side) -> Comparison:
    """File by file: identical, differing (with sizes), only in A, only in B; plus manifest inputs."""
    result = Comparison(a=a.label, b=b.label)
    for name in sorted(set(a.files) | set(b.files)):
        da, db = a.files.get(name), b.files.get(name)
        if db is None:
            result.only_a.append(name)
        elif da is None:
            result.only_b.append(name)
        elif da == db:
            result.identical.append(name)
        else:
            result.differing.append((name, da.size, db.size))
    if a.manifest is not None and b.manifest is not None:
        result.manifest_differences = manifest_differences(a.manifest, b.manifest)
    elif (a.manifest is None) != (b.manifest is None):
        result.manifest_differences = ["manifest"]
    return result


def compare(a: Path, b: Path) -> Comparison:
    """Compare two bundles (.tar.gz/.zip), folders or manifests file by file."""
    return compare_sides(load_side(a), load_side(b))
