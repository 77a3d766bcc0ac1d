"""Third-party files a bundle redistributes: where each came from, and the licenses that travel with it.

The runtime closure (:mod:`pipeline.bundle.closure`) copies libraries and data
folders from the toolchain into the bundle. Each such file came out of one
archive of the toolchain's install (its marker names the archives and their
sha256), and is covered by the license files that archive ships:

- a wheel (NVIDIA's CUDA wheels) is found by its ``*.dist-info/RECORD``,
  which lists the file; its name, version and license come from its
  ``METADATA``, its license files (NVIDIA's EULA, the redistribution
  attachment) from the dist-info folder;
- any other archive (TheRock's tarball) is the toolchain's one archive, at
  the toolchain's version; its license files are the ``LICENSE*``,
  ``COPYING*``, ``NOTICE*`` and ``EULA*`` files under ``share/doc/``,
  ``share/licenses/`` and ``licenses/`` (one folder per component there), or
  at its top. A file whose name holds a component's folder name
  (``librocblas.so.4`` and ``share/doc/rocblas/``) gets that component's
  licenses; any other gets all of them.

- a file copied from outside any toolchain (a macOS bundle's Homebrew
  ``libomp``, named by an absolute install name) is covered by the license
  files of the nearest folder above it that has some (a Homebrew keg keeps
  ``LICENSE.TXT`` at its top, beside ``lib/``).

The license files are copied under ``licenses/toolchain/`` (their path in the
install kept), and the manifest's ``third_party`` list names, for every
copied file, its package, origin and license files. ``check-bundle`` refuses a
bundle in which a copied file has none.
"""

from __future__ import annotations

import email.parser
import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.archives.extract import MARKER
from pipeline.bundle.closure import CopiedFile
from pipeline.bundle.stage import LICENSES_DIR

# Where the toolchain's license files go in the bundle.
TOOLCHAIN_LICENSES = f"{LICENSES_DIR}/toolchain"
_LICENSE_NAME = re.compile(r"^(?:licen[cs]e|copying|notice|eula)", re.IGNORECASE)
_LICENSE_FOLDERS = ("share/doc", "share/licenses", "licenses")
# How far above the toolchain root its install's marker may sit (CUDA's tree is <install>/nvidia/cu13).
_MARKER_DEPTH = 3


@dataclass(frozen=True, kw_only=True)
class Package:
    """One archive of the toolchain's install, as far as the bundle's files are concerned."""

    name: str
    version: str | None
    archive: str | None
    archive_sha256: str | None
    # The license the package declares (a wheel's METADATA), when it does.
    declared_license: str | None = None
    # License files, relative to the install.
    license_files: tuple[str, ...] = ()
    # Component folder name -> its license files (relative to the install); archives only.
    components: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def find_install(root: Path) -> Path:
    """The install folder holding ``root``: the nearest folder at or above it with an install marker,
    else the nearest with a wheel's ``*.dist-info`` (a tree pip installed: its site-packages), else ``root``.

    Without the second, a pip-installed CUDA tree (``--cuda-path .../site-packages/nvidia/cu13``)
    had no wheel to ask: every library got the toolchain's version (nvcc's), not its own wheel's.
    """
    for found in (lambda d: (d / MARKER).is_file(), lambda d: any(d.glob("*.dist-info"))):
        for here in [root, *root.parents][:_MARKER_DEPTH]:
            if found(here):
                return here
    return root


def _marker_archives(install: Path) -> list[dict[str, str]]:
    try:
        data = json.loads((install / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    listed = data.get("archives") if isinstance(data, dict) else None
    return [
        {"label": str(a.get("label")), "sha256": str(a.get("sha256") or "")}
        for a in listed or [] if isinstance(a, dict) and a.get("label")
    ]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_packages(install: Path, archives: Sequence[Mapping[str, str]]) -> dict[str, Package]:
    """Installed path (relative to ``install``) -> the wheel that put it there."""
    owners: dict[str, Package] = {}
    for info in sorted(install.glob("*.dist-info")):
        metadata = info / "METADATA"
        if not metadata.is_file():
            continue
        meta = email.parser.HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
        name = meta.get("Name") or info.name.split("-")[0]
        version = meta.get("Version")
        archive = next((a for a in archives if _normal(re.split(r"[=<>!~ ;\[]", a["label"])[0]) == _normal(name)), None)
        licenses = tuple(sorted(
            p.relative_to(install).as_posix() for p in info.rglob("*") if p.is_file() and _LICENSE_NAME.match(p.name)
        ))
        package = Package(
            name=name, version=version,
            archive=archive["label"] if archive else info.name,
            archive_sha256=(archive["sha256"] or None) if archive else None,
            declared_license=meta.get("License-Expression") or meta.get("License") or None,
            license_files=licenses,
        )  # fmt: skip
        record = info / "RECORD"
        lines = record.read_text(encoding="utf-8", errors="replace").splitlines() if record.is_file() else []
        for line in lines:
            path = line.split(",", 1)[0]
            if path:
                owners[PurePosixPath(path).as_posix()] = package
    return owners


def _archive_package(install: Path, archives: Sequence[Mapping[str, str]], details: Mapping[str, Any]) -> Package:
    """The toolchain's own archive (everything no wheel claims) and its license files."""
    components: dict[str, list[str]] = {}
    loose: list[str] = []
    for folder in _LICENSE_FOLDERS:
        top = install / folder
        if not top.is_dir():
            continue
        for path in sorted(top.rglob("*")):
            if path.is_file() and _LICENSE_NAME.match(path.name):
                rel = path.relative_to(top)
                (components.setdefault(rel.parts[0], []) if len(rel.parts) > 1 else loose).append(
                    path.relative_to(install).as_posix()
                )
    loose += sorted(p.name for p in install.iterdir() if p.is_file() and _LICENSE_NAME.match(p.name)) if install.is_dir() else []
    everything = tuple(sorted({*loose, *(f for files in components.values() for f in files)}))
    own = [a for a in archives if not a["label"].endswith(".whl") and "==" not in a["label"]]
    url = details.get("url")
    return Package(
        name=str(details.get("kind") or install.name),
        version=str(details["version"]) if details.get("version") else None,
        archive=str(url) if url else (own[0]["label"] if len(own) == 1 else None),
        archive_sha256=str(details.get("sha256") or "") or (own[0]["sha256"] if len(own) == 1 else None),
        license_files=everything,
        components={name: tuple(files) for name, files in components.items()},
    )


def _toolchain_packages(root: Path, details: Mapping[str, Any]) -> Callable[[str], tuple[Path, Package]]:
    """Where a file copied from the toolchain at ``root`` came from: its install and the package (a wheel
    whose RECORD lists it, else the toolchain's own archive), read once for every file."""
    install = find_install(root)
    archives = _marker_archives(install)
    wheels = _wheel_packages(install, archives)
    fallback = _archive_package(install, archives, details)

    def owner(origin: str) -> tuple[Path, Package]:
        return install, wheels.get((root / origin).resolve().relative_to(install).as_posix(), fallback)

    return owner


def _package_around(path: Path) -> tuple[Path, Package]:
    """A file copied from outside the toolchain: the nearest folder above it with license files, and its package."""
    for folder in list(path.parents)[:_MARKER_DEPTH]:
        package = _archive_package(folder, [], {"kind": folder.name})
        if package.license_files:
            return folder, Package(name=path.name, version=None, archive=str(folder), archive_sha256=None,
                                   license_files=package.license_files, components=package.components)
    return path.parent, Package(name=path.name, version=None, archive=None, archive_sha256=None)


def _licenses_for(package: Package, bundle_path: str) -> tuple[str, ...]:
    if package.components:
        name = bundle_path.rsplit("/", 1)[-1].lower()
        matched = [c for c in package.components if c.lower() in name]
        if matched:
            longest = max(matched, key=len)
            return package.components[longest]
    return package.license_files


def describe_third_party(
    stage: Path, copied: Sequence[CopiedFile], *, toolchain_root: Path | None, details: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Copy the license files of what ``copied`` came from into ``stage``; the manifest's ``third_party`` list.

    ``toolchain_root``: the folder the copied files' origins are relative to;
    ``details``: the toolchain's kind, version, url and sha256 as the manifest has them.
    """
    files = [c for c in copied if c.link is None]
    in_toolchain = _toolchain_packages(toolchain_root.resolve(), details) if toolchain_root is not None else None
    listed: list[dict[str, Any]] = []
    for item in sorted(files, key=lambda c: c.path):
        origin = Path(item.origin)
        if origin.is_absolute():
            install_of, package = _package_around(origin.resolve())
        elif in_toolchain is not None:
            install_of, package = in_toolchain(item.origin)
        else:
            continue  # relative to a toolchain root the build does not have: nothing to say where from
        licenses = _licenses_for(package, item.path)
        for rel in licenses:
            dest = stage / TOOLCHAIN_LICENSES / rel
            if not dest.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(install_of / rel, dest)
        listed.append({
            "path": item.path,
            "package": package.name,
            "version": package.version,
            "archive": package.archive,
            "archive_sha256": package.archive_sha256,
            "declared_license": package.declared_license,
            "licenses": [f"{TOOLCHAIN_LICENSES}/{rel}" for rel in licenses],
        })
    return listed


def license_problems(manifest: Mapping[str, Any], root: Path) -> list[tuple[str, str]]:
    """(file, why) for each third-party file of the bundle at ``root`` with no license in the bundle.

    A third-party file is one the manifest says came from the toolchain
    (``from_toolchain``); its ``third_party`` entry must name license files the bundle holds.
    """
    entries = {str(e.get("path")): e for e in manifest.get("third_party") or [] if isinstance(e, Mapping)}
    problems: list[tuple[str, str]] = []
    for f in manifest.get("files") or []:
        if not isinstance(f, Mapping) or "from_toolchain" not in f or "symlink" in f:
            continue
        path = str(f["path"])
        names = entries.get(path, {}).get("licenses") or []
        present = [n for n in names if isinstance(n, str) and (root / n).is_file()]
        if not present:
            why = ("its license files are not in the bundle: " + ", ".join(map(str, names)) if names
                   else "no license in the bundle for it")
            problems.append((path, f"a third-party file (from the toolchain's {f['from_toolchain']}): {why}"))
    return problems
