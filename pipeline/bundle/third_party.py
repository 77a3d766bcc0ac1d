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
  the toolchain's version; each file's license files are chosen by
  :mod:`pipeline.bundle.license_match`: the ``share/doc/<component>/`` of the
  prefix the file sits under (``lib/rocm_sysdeps/lib/...`` takes
  ``lib/rocm_sysdeps/share/doc/``), named by the file (``librocblas.so.4`` ->
  ``rocblas``) or by a name map (``liblzma`` -> ``xz``), else a declared
  source, else none: never every license of the archive;
- a Linux distribution's ROCm (``--rocm-path /usr``) is dpkg's: a file's package
  is the one ``dpkg-query -S`` names, its license that package's
  ``/usr/share/doc/<package>/copyright``;
- a file copied from the build machine's own system (a ROCm bundle's
  libatomic) is dpkg's, as above;
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

import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.archives.extract import MARKER
from pipeline.bundle.closure import CopiedFile
from pipeline.bundle.license_match import (
    DEBIAN_DOC,
    LICENSE_NAME,
    Covered,
    InstallLicenses,
    debian_copyright,
    dpkg_managed,
    dpkg_owner,
)
from pipeline.bundle.stage import LICENSES_DIR

# Where the toolchain's license files go in the bundle.
TOOLCHAIN_LICENSES = f"{LICENSES_DIR}/toolchain"
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
    # License files, relative to the install (a wheel's, which cover every file it installed).
    license_files: tuple[str, ...] = ()


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
        for a in listed or []
        if isinstance(a, dict) and a.get("label")
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
        # Here, not at the top: only a wheel's files need it (a cpu bundle copies none).
        import email.parser

        meta = email.parser.HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
        name = meta.get("Name") or info.name.split("-")[0]
        version = meta.get("Version")
        archive = next(
            (a for a in archives if _normal(re.split(r"[=<>!~ ;\[]", a["label"])[0]) == _normal(name)), None
        )
        licenses = tuple(
            sorted(
                p.relative_to(install).as_posix()
                for p in info.rglob("*")
                if p.is_file() and LICENSE_NAME.match(p.name)
            )
        )
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


def _archive_package(archives: Sequence[Mapping[str, str]], details: Mapping[str, Any], name: str) -> Package:
    """The toolchain's own archive (everything no wheel claims); its files' licenses are chosen one by one."""
    own = [a for a in archives if not a["label"].endswith(".whl") and "==" not in a["label"]]
    url = details.get("url")
    return Package(
        name=str(details.get("kind") or name),
        version=str(details["version"]) if details.get("version") else None,
        archive=str(url) if url else (own[0]["label"] if len(own) == 1 else None),
        archive_sha256=str(details.get("sha256") or "") or (own[0]["sha256"] if len(own) == 1 else None),
    )


Owner = Callable[[str], tuple[Package, Covered | None]]


def _toolchain_packages(root: Path, details: Mapping[str, Any], declared_doc: Path) -> Owner:
    """Where a file copied from the toolchain at ``root`` came from and its licenses: a wheel whose RECORD
    lists it, a dpkg package (a system ROCm at /usr), else the toolchain's own archive; read once."""
    install = find_install(root)
    archives = _marker_archives(install)
    wheels = _wheel_packages(install, archives)
    fallback = _archive_package(archives, details, install.name)
    licenses = InstallLicenses(install, declared_doc)
    system = dpkg_managed(install)

    def owner(origin: str) -> tuple[Package, Covered | None]:
        path = root / origin
        wheel = wheels.get(path.resolve().relative_to(install).as_posix())
        if wheel is not None:
            return wheel, Covered(base=install, files=wheel.license_files, source="its wheel's dist-info")
        if system and (owned := dpkg_owner(path)) is not None:
            package, version = owned
            return (
                Package(name=package, version=version, archive=f"dpkg:{package}", archive_sha256=None),
                debian_copyright(package),
            )
        return fallback, licenses.covering(path.relative_to(install).as_posix())

    return owner


def _package_around(path: Path) -> tuple[Package, Covered | None]:
    """A file copied from outside the toolchain: the dpkg package that installed it (the build machine's
    libatomic, say: its package's copyright), else the nearest folder above it with license files."""
    if dpkg_managed(Path("/usr")) and (owned := dpkg_owner(path)) is not None:
        package, version = owned
        return (
            Package(name=package, version=version, archive=f"dpkg:{package}", archive_sha256=None),
            debian_copyright(package),
        )
    for folder in list(path.parents)[:_MARKER_DEPTH]:
        covered = InstallLicenses(folder).covering(path.relative_to(folder).as_posix())
        if covered is not None:
            return Package(name=path.name, version=None, archive=str(folder), archive_sha256=None), covered
    return Package(name=path.name, version=None, archive=None, archive_sha256=None), None


def describe_third_party(
    stage: Path,
    copied: Sequence[CopiedFile],
    *,
    toolchain_root: Path | None,
    details: Mapping[str, Any],
    declared_doc: Path = DEBIAN_DOC,
) -> list[dict[str, Any]]:
    """Copy the license files of what ``copied`` came from into ``stage``; the manifest's ``third_party`` list.

    ``toolchain_root``: the folder the copied files' origins are relative to;
    ``details``: the toolchain's kind, version, url and sha256 as the manifest has them;
    ``declared_doc``: where the declared sources' Debian packages keep their copyright files.
    """
    files = [c for c in copied if c.link is None]
    in_toolchain = (
        _toolchain_packages(toolchain_root.resolve(), details, declared_doc)
        if toolchain_root is not None
        else None
    )
    listed: list[dict[str, Any]] = []
    for item in sorted(files, key=lambda c: c.path):
        origin = Path(item.origin)
        if origin.is_absolute():
            package, covered = _package_around(origin.resolve())
        elif in_toolchain is not None:
            package, covered = in_toolchain(item.origin)
        else:
            continue  # relative to a toolchain root the build does not have: nothing to say where from
        licenses = covered.files if covered is not None else ()
        for rel in licenses:
            dest = stage / TOOLCHAIN_LICENSES / rel
            if not dest.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                assert covered is not None
                shutil.copyfile(covered.base / rel, dest)
        listed.append(
            {
                "path": item.path,
                "package": package.name,
                "version": package.version,
                "archive": package.archive,
                "archive_sha256": package.archive_sha256,
                "declared_license": package.declared_license,
                "licenses": [f"{TOOLCHAIN_LICENSES}/{rel}" for rel in licenses],
                # Where the licenses were found (a component's doc folder, a declared source); none: refused.
                "license_source": covered.source if covered is not None else None,
            }
        )
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
            why = (
                "its license files are not in the bundle: " + ", ".join(map(str, names))
                if names
                else "no license in the bundle for it"
            )
            problems.append((path, f"a third-party file (from the toolchain's {f['from_toolchain']}): {why}"))
    return problems
