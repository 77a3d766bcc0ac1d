"""The runtime closure of a macOS bundle: install names a bundle can carry anywhere, and signatures kept.

A macOS bundle's programs and libraries sit flat at its root, as upstream's
archives hold them. Each Mach-O's needs are resolved like the ELF ones
(:mod:`pipeline.bundle.closure`):

1. ``/usr/lib/...`` and ``/System/Library/...`` (libSystem, libc++, Metal,
   Accelerate) are the base system, left as they are;
2. ``@rpath/NAME``, ``@loader_path/NAME`` and ``@executable_path/NAME`` must
   name a file of the bundle;
3. any other absolute install name (a Homebrew ``libomp``) is copied in from
   where it is, given the install name ``@rpath/NAME``, and the load command
   that named it is changed to match.

Then every ``LC_RPATH`` that names a folder of the build machine is removed
and ``@loader_path`` added where a file loads ``@rpath/`` names, so the bundle
runs from any folder. The edits are made with ``install_name_tool`` (Xcode's
on a runner; LLVM's ``llvm-install-name-tool`` elsewhere).

arm64 macOS kills a program whose code signature no longer matches its
bytes, and any load-command edit breaks it: each edited arm64 file is
signed again, ad hoc (``codesign --force --sign -``), where ``codesign``
exists (macOS). On Linux there is none; LLVM's ``llvm-install-name-tool``
refreshes the ad-hoc signature a linker made (ld64 and ld64.lld sign arm64
output), so such a file still matches; any edited file whose signature no
longer matches its bytes is listed as not re-signed, and check-bundle fails
it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.bundle.closure_policy import is_base_system
from pipeline.bundle.machodeps import is_macho, read_macho, signature_matches
from pipeline.errors import BundleError, ToolchainError
from pipeline.processes.groups import run_child

# Install-name prefixes that resolve inside the bundle (its files sit flat at the root).
RELATIVE_PREFIXES = ("@rpath/", "@loader_path/", "@executable_path/")
LOADER_RPATH = "@loader_path"
INSTALL_NAME_TOOLS = ("install_name_tool", "llvm-install-name-tool", "llvm-install-name-tool-15")


@dataclass(frozen=True, kw_only=True)
class MachoTools:
    """The programs that edit and sign: install_name_tool (or LLVM's) and codesign (macOS only)."""

    install_name_tool: Path
    codesign: Path | None = None


def find_tools(environ: Mapping[str, str] | None = None) -> MachoTools:
    """install_name_tool (Xcode's, else LLVM's) and codesign from PATH; a ToolchainError without the first."""
    # Without ``environ``: the process's PATH, as shutil.which reads it.
    path = environ.get("PATH") if environ is not None else None
    for name in INSTALL_NAME_TOOLS:
        found = shutil.which(name, path=path)
        if found:
            codesign = shutil.which("codesign", path=path)
            return MachoTools(install_name_tool=Path(found), codesign=Path(codesign) if codesign else None)
    raise ToolchainError(
        "no install_name_tool found: install Xcode's command-line tools (macOS) or LLVM "
        "(llvm-install-name-tool, Debian's llvm)"
    )


@dataclass
class MachoClosure:
    copied: list[tuple[str, str]] = field(default_factory=list)  # (bundle file, where it came from)
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # (bundle file, install name)
    edited: list[str] = field(default_factory=list)
    resigned: list[str] = field(default_factory=list)
    # Edited arm64 files this machine could not sign again (no codesign): check-bundle fails them.
    not_resigned: list[str] = field(default_factory=list)


def _run(tool: Path, args: list[str], file: Path) -> None:
    try:
        run_child([str(tool), *args, str(file)], check=True, capture_output=True, text=True, timeout=120)
    except subprocess.CalledProcessError as exc:
        raise BundleError(
            f"{file.name}: {tool.name} {' '.join(args)} failed: {exc.stderr.strip() or exc.returncode}"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"cannot run {tool}: {exc}") from None


def _basename(install_name: str) -> str:
    return install_name.rsplit("/", 1)[-1]


def complete_macho_runtime(stage: Path, *, arch: str, tools: MachoTools | None = None) -> MachoClosure:
    """Make the Mach-O files at ``stage``'s root carry what they need and run from any folder (see above)."""
    result = MachoClosure()
    queue = sorted(p.name for p in stage.iterdir() if is_macho(p))
    present = {p.name for p in stage.iterdir()}
    edits: dict[str, list[list[str]]] = {}
    seen = set(queue)
    while queue:
        rel = queue.pop(0)
        info = read_macho(stage / rel)
        for lib in {n for s in info for n in s.needed}:
            if is_base_system("macos", lib, arch):
                continue
            name = _basename(lib)
            if lib.startswith(RELATIVE_PREFIXES):
                if name not in present:
                    result.unresolved.append((rel, lib))
                continue
            source = Path(lib)
            if name not in present:
                if not source.is_file():
                    result.unresolved.append((rel, lib))
                    continue
                shutil.copyfile(source.resolve(), stage / name)
                (stage / name).chmod(0o755)
                present.add(name)
                result.copied.append((name, lib))
                edits.setdefault(name, []).append(["-id", f"@rpath/{name}"])
                if name not in seen:
                    seen.add(name)
                    queue.append(name)
            edits.setdefault(rel, []).append(["-change", lib, f"@rpath/{name}"])
        rpaths = {r for s in info for r in s.rpaths}
        for entry in sorted(rpaths):
            if not entry.startswith(("@loader_path", "@executable_path")):
                edits.setdefault(rel, []).append(["-delete_rpath", entry])
        loads_rpath = any(n.startswith("@rpath/") for s in info for n in s.needed) or any(
            args[0] == "-change" for args in edits.get(rel, [])
        )
        if loads_rpath and LOADER_RPATH not in rpaths:
            edits.setdefault(rel, []).append(["-add_rpath", LOADER_RPATH])
    if edits:
        tools = tools or find_tools()
    for rel in sorted(edits):
        assert tools is not None
        for args in edits[rel]:
            _run(tools.install_name_tool, args, stage / rel)
        result.edited.append(rel)
        if any(s.arch == "arm64" for s in read_macho(stage / rel)):
            if tools.codesign is not None:
                _run(tools.codesign, ["--force", "--sign", "-"], stage / rel)
                result.resigned.append(rel)
            elif signature_matches(stage / rel) is not True:
                # LLVM's tool refreshes a linker-made ad-hoc signature itself; anything else is now stale.
                result.not_resigned.append(rel)
    return result
