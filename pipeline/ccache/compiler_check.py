"""ccache's ``compiler_check`` for a leg: ``content`` by default, ``toolchain`` where it is as strict.

``content`` hashes every compiler binary on every call: correct for any
compiler, but a statically linked LLVM clang is 100-200 MB (100 warm calls
took 11.9 s against 1.0 s with a ``string:`` check here). A toolchain the
pipeline installed itself from an archive whose sha256 it verified can only
change when that archive changes, so ``toolchain`` hands ccache
``string:<archive sha256>+<digest of compiler --version>``. Any other
toolchain (the system's gcc, a ``--rocm-path`` install, a host compiler
beside CUDA or Vulkan) falls back to ``content``, and the record says so.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ToolchainError
from pipeline.names import SHA256_HEX
from pipeline.processes.groups import run_child
from pipeline.toolchain.toolchain import Toolchain, version_output

TOOLCHAIN_MODE = "toolchain"
_COMPILER_ARG = re.compile(r"^-DCMAKE_(C|CXX|HIP|CUDA)_COMPILER=(.+)$")


@dataclass(frozen=True, kw_only=True)
class CompilerCheck:
    """matrix.toml's mode, the value ccache gets, and why it differs from the mode (None: it does not)."""

    mode: str
    value: str
    note: str | None = None


def verified_archive_digest(toolchain: Toolchain) -> str | None:
    """The sha256 of the archive the pipeline installed ``toolchain`` from, when it verified one.

    ROCm downloads record it as ``sha256`` with ``origin = download``; any
    installer that records ``archive_sha256`` qualifies the same way.
    """
    details = toolchain.details
    digest = details.get("archive_sha256") or (
        details.get("sha256") if details.get("origin") == "download" else None
    )
    return digest.lower() if digest and SHA256_HEX.fullmatch(digest.lower()) else None


def compilers_of(toolchain: Toolchain) -> list[Path]:
    """The compilers the configure line names (C, C++, HIP, CUDA), without repeats."""
    found: list[Path] = []
    for arg in toolchain.cmake_args:
        if (match := _COMPILER_ARG.match(arg)) and Path(match.group(2)) not in found:
            found.append(Path(match.group(2)))
    return found


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def resolve_compiler_check(
    mode: str, toolchain: Toolchain, *, version_of: Callable[[Path], str] = version_output
) -> CompilerCheck:
    """What ccache's ``compiler_check`` is for ``toolchain`` under ``mode`` (``content``, ``mtime``, ``toolchain``)."""
    if mode != TOOLCHAIN_MODE:
        return CompilerCheck(mode=mode, value=mode)

    def fallback(why: str) -> CompilerCheck:
        return CompilerCheck(
            mode=mode, value="content", note=f"compiler_check=toolchain fell back to content: {why}"
        )

    digest = verified_archive_digest(toolchain)
    if digest is None:
        return fallback(f"{toolchain.identity} was not installed by the pipeline from a verified archive")
    compilers = compilers_of(toolchain)
    # A wheel install's compilers are links into its sibling packages: the whole install is what was verified.
    root = toolchain.details.get("install_root") or toolchain.details.get("root")
    if not compilers or not root:
        return fallback(f"{toolchain.identity} names no compiler inside its install")
    # One ccache setting covers every compilation: each compiler must come from that archive.
    outside = [c for c in compilers if not _inside(c, Path(root))]
    if outside:
        return fallback(f"{outside[0]} is not part of {toolchain.identity}'s verified install")
    versions = hashlib.sha256()
    try:
        for compiler in compilers:
            versions.update(version_of(compiler).encode("utf-8") + b"\0")
    except ToolchainError as err:
        return fallback(err.message)
    return CompilerCheck(mode=mode, value=f"string:{digest}+{versions.hexdigest()}")


def time_compiler_check(
    ccache: Path, compiler: Path, check: str, *, calls: int, work: Path, env: dict[str, str]
) -> float:
    """Seconds for ``calls`` warm ccache hits of a one-line C file with ``compiler_check=check``.

    For the benchmark (one TheRock-sized compiler, both modes); nothing is asserted on it.
    One cold call fills the cache first. ``env`` is the caller's environment (PATH, HOME).
    """
    from pipeline.ccache.session import ccache_env

    work.mkdir(parents=True, exist_ok=True)
    source = work / "probe.c"
    source.write_text("int probe(void) { return 42; }\n", encoding="utf-8")
    run_env = {**env, **ccache_env(work / "ccache", work, check)}
    cmd = [str(ccache), str(compiler), "-c", str(source), "-o", str(work / "probe.o")]
    run_child(cmd, env=run_env, check=True, cwd=work, capture_output=True)
    started = time.monotonic()
    for _ in range(calls):
        run_child(cmd, env=run_env, check=True, cwd=work, capture_output=True)
    return time.monotonic() - started
