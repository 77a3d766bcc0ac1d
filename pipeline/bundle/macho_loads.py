"""check-bundle's Mach-O side: each image's arch, minimum macOS and signature, and every load command resolved as dyld resolves it (@rpath through the loading chain), never leaving the bundle."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pipeline.bundle.check_findings import Problem, TreeFindings
from pipeline.bundle.closure_policy import is_base_system
from pipeline.bundle.machodeps import MachoInfo, read_macho, signature_matches
from pipeline.names import dotted_version


def check_macho(
    root: Path, rel: str, found: TreeFindings, arch: str, macos_min: str | None
) -> MachoInfo | None:
    """A macOS file on its own: its arch, no build-machine LC_RPATH, its minos at most the leg's, and
    (arm64) a signature that matches its bytes. Its slice for ``arch`` (None: it has none) goes on to
    :func:`check_macho_loads`, which follows the install names through the loading chains."""
    slices = read_macho(root / rel)
    if arch not in {s.arch for s in slices}:
        found.problems.append(
            Problem(
                file=rel,
                kind="arch",
                message=f"built for {', '.join(s.arch for s in slices)}, the bundle is for {arch}",
            )
        )
    info = next((s for s in slices if s.arch == arch), None)
    if info is not None:
        for entry in info.rpaths:
            if not entry.startswith(_MACHO_RELATIVE):
                found.problems.append(
                    Problem(
                        file=rel,
                        kind="runpath",
                        message=f"build-machine LC_RPATH {entry!r} (want @loader_path-relative)",
                    )
                )
        if macos_min and info.minos and dotted_version(info.minos) > dotted_version(macos_min):
            found.problems.append(
                Problem(
                    file=rel,
                    kind="macos",
                    message=f"requires macOS {info.minos} "
                    f"(LC_BUILD_VERSION minos), above the leg's macos_min = {macos_min}",
                )
            )
    if arch == "arm64" and signature_matches(root / rel) is not True:
        found.problems.append(
            Problem(
                file=rel,
                kind="signature",
                message=(
                    "no code signature that matches its bytes: arm64 macOS kills it (sign it ad hoc: codesign --force --sign -)"
                ),
            )
        )
    return info


_MACHO_RELATIVE = ("@loader_path", "@executable_path")


# Deeper loading chains than this are a cycle dyld would not follow either.
_MAX_CHAIN = 64


def _macho_path(root: Path, text: str, *, loader: Path, executable: Path) -> Path:
    """Where an ``@loader_path``/``@executable_path`` path (an install name or an LC_RPATH) points."""
    for prefix, base in (("@loader_path", loader), ("@executable_path", executable)):
        if text == prefix or text.startswith(prefix + "/"):
            return Path(os.path.normpath(base / text[len(prefix) :].lstrip("/")))
    raise AssertionError(text)


def check_macho_loads(root: Path, images: Mapping[str, MachoInfo], found: TreeFindings) -> None:
    """Every install name of every Mach-O file resolved as dyld resolves it, inside the bundle.

    ``@rpath/NAME`` is searched in the loading image's LC_RPATHs, then in those of the image that
    loaded it, and so on up to the main executable; ``@executable_path`` is that executable's folder.
    So each program is followed down its chain of libraries; a library no program loads (a backend
    module opened with dlopen) is taken as loaded by each program (the main executable's LC_RPATHs
    apply to it), or on its own when the bundle holds no program. A path that leaves the bundle, an
    LC_RPATH included, is a problem even where the file it names exists.
    """
    reported: set[tuple[str, str]] = set()
    visited: set[tuple[str, Path, tuple[Path, ...]]] = set()

    def problem(rel: str, key: str, kind: str, message: str, library: str | None = None) -> None:
        if (rel, key) not in reported:
            reported.add((rel, key))
            found.problems.append(Problem(file=rel, kind=kind, library=library, message=message))

    def visit(rel: str, executable: Path, inherited: tuple[Path, ...], depth: int) -> None:
        if (rel, executable, inherited) in visited or depth > _MAX_CHAIN:
            return
        visited.add((rel, executable, inherited))
        info, loader = images[rel], (root / rel).parent
        own: list[Path] = []
        for entry in info.rpaths:
            if not entry.startswith(_MACHO_RELATIVE):
                continue  # a build-machine entry: check_macho named it
            target = _macho_path(root, entry, loader=loader, executable=executable)
            if not target.is_relative_to(root):
                problem(rel, f"rpath {entry}", "runpath", f"LC_RPATH {entry!r} leaves the bundle")
                continue
            own.append(target)
        # dyld: the image's own LC_RPATHs first, then its loader's, up to the main executable's.
        search = (*own, *inherited)
        for lib in info.needed:
            if is_base_system("macos", lib, info.arch):
                continue
            if lib.startswith("@rpath/"):
                candidates = [Path(os.path.normpath(d / lib.removeprefix("@rpath/"))) for d in search]
                if not any(c.is_relative_to(root) and c.exists() for c in candidates):
                    problem(
                        rel,
                        lib,
                        "library",
                        f"needs {lib}: not found in the bundle through its LC_RPATHs "
                        "or those of the files that load it",
                        lib,
                    )
                    continue
                target = next(c for c in candidates if c.is_relative_to(root) and c.exists())
            elif lib.startswith(_MACHO_RELATIVE):
                target = _macho_path(root, lib, loader=loader, executable=executable)
                if not target.is_relative_to(root):
                    problem(rel, lib, "library", f"needs {lib}: it points outside the bundle", lib)
                    continue
                if not target.exists():
                    problem(rel, lib, "library", f"needs {lib}: not found in the bundle", lib)
                    continue
            else:
                problem(
                    rel,
                    lib,
                    "library",
                    f"needs {lib}: an absolute install name outside the macOS base "
                    "system (want @rpath/... and the library in the bundle)",
                    lib,
                )
                continue
            real, top = target.resolve(), root.resolve()
            if real.is_relative_to(top) and (loaded := real.relative_to(top).as_posix()) in images:
                visit(loaded, executable, search, depth + 1)

    programs = sorted(rel for rel, info in images.items() if info.filetype == "execute")
    for rel in programs:
        visit(rel, (root / rel).parent, (), 0)
    reached = {rel for rel, _, _ in visited}
    for rel in sorted(set(images) - reached):
        for program in programs or [rel]:
            info, here = images[program], (root / program).parent
            inherited = tuple(
                p
                for e in info.rpaths
                if e.startswith(_MACHO_RELATIVE)
                and program != rel
                and (p := _macho_path(root, e, loader=here, executable=here)).is_relative_to(root)
            )
            visit(rel, here, inherited, 0)
