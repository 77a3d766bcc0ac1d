"""The ROCm toolchain: TheRock's clang, its environment and the HIP configure.

One code path for both operating systems: the OS is a parameter, so the
Windows leg's environment and CMake arguments are produced (and tested) on
Linux too. Paths are ``PurePath`` flavours of the leg's OS for that reason.

Facts (TheRock's layout, checked against its tarballs): TheRock's compilers live under ``llvm/bin`` or
``lib/llvm/bin``. Linux needs ROCM_PATH, HIP_PATH, HIP_PLATFORM=amd,
HIP_CLANG_PATH, HIP_DEVICE_LIB_PATH, PATH and LD_LIBRARY_PATH; Windows needs
HIP_PATH and PATH, with clang.exe from ``lib\\llvm\\bin``. CMake on Windows
has no HIP language for llama.cpp, which compiles HIP as C++ there; so ccache
launches HIP only on Linux.

A downloaded tarball is checked against the ``.sha256sum`` the index lists
beside it (``ResolvedRocm.sha256_url``). The checksum file goes through the
download cache like the tarball, so a second run with a complete install
fetches nothing and still matches the install's recorded digest against it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING

from pipeline.errors import NetworkError, ToolchainError, UsageError
from pipeline.inputs.matrix import Leg
from pipeline.names import rocm_identity
from pipeline.toolchain.compiler_set import Toolchain, ToolchainRequest, safe_identity
from pipeline.util.fsutil import file_digest, folder_problem

if TYPE_CHECKING:
    from rich.console import Console

    from pipeline.inputs.resolution_file import ResolvedRocm
    from pipeline.toolchain.installer.download import Downloaded

# Where TheRock (and /opt/rocm) keep clang, relative to the install root.
CLANG_DIRS = ("llvm/bin", "lib/llvm/bin")
# TheRock's device libraries; other layouts are searched too.
THEROCK_DEVICE_LIBS = "lib/llvm/amdgcn/bitcode"
_LLVM_VERSIONED = re.compile(r"^llvm-(\d+)$")
# One line of sha256sum's output: the digest, then "  name" (text) or " *name" (binary) mode.
_CHECKSUM_LINE = re.compile(r"([0-9A-Fa-f]{64})(?:\s+\*?(\S.*))?")
# A checksum file is one short line per file; anything this big is something else.
MAX_CHECKSUM_BYTES = 64 * 1024


def pure_path(os_name: str, path: str | PurePath) -> PurePath:
    """``path`` as a path of ``os_name`` (Windows paths stay Windows paths on Linux)."""
    return PureWindowsPath(path) if os_name == "windows" else PurePosixPath(path)


def exe(os_name: str, name: str) -> str:
    return f"{name}.exe" if os_name == "windows" else name


def cmake_path(path: PurePath) -> str:
    """CMake wants forward slashes on every OS."""
    return path.as_posix()


@dataclass(frozen=True, kw_only=True)
class RocmLayout:
    """Where the parts of one ROCm install are, in the leg's OS's path flavour."""

    os: str
    root: PurePath
    clang_dir: PurePath
    device_lib_dir: PurePath

    @property
    def clang(self) -> PurePath:
        return self.clang_dir / exe(self.os, "clang")

    @property
    def clangxx(self) -> PurePath:
        return self.clang_dir / exe(self.os, "clang++")


# --------------------------------------------------------------------------
# Discovery (reads the file system)


def clang_dir_candidates(root: Path) -> list[Path]:
    """TheRock's and /opt/rocm's folders first, then Debian's ``lib/llvm-N/bin``, newest N first."""
    found = [root / rel for rel in CLANG_DIRS]
    lib = root / "lib"
    versioned: list[tuple[int, Path]] = []
    if lib.is_dir():
        for child in lib.iterdir():
            if m := _LLVM_VERSIONED.match(child.name):
                versioned.append((int(m.group(1)), child / "bin"))
    found += [p for _, p in sorted(versioned, reverse=True)]
    return found


def find_clang_dir(root: Path, os_name: str) -> Path:
    """The folder holding the install's clang; ToolchainError naming where it looked."""
    name = exe(os_name, "clang")
    for candidate in clang_dir_candidates(root):
        if (candidate / name).is_file():
            return candidate
    raise ToolchainError(
        f"{root}: no {name} under {' or '.join(CLANG_DIRS)} (is this a ROCm install?)"
    )


def find_device_lib_dir(root: Path, clang_dir: Path) -> Path | None:
    """The AMDGPU bitcode libraries of the install, if any (TheRock, /opt/rocm, Debian)."""
    candidates = [
        root / THEROCK_DEVICE_LIBS,
        root / "amdgcn" / "bitcode",
        root / "llvm" / "amdgcn" / "bitcode",
        *sorted((clang_dir.parent / "lib" / "clang").glob("*/lib/amdgcn/bitcode")),
        # Debian's multiarch layout: /usr/lib/x86_64-linux-gnu/amdgcn/bitcode.
        *sorted((root / "lib").glob("*/amdgcn/bitcode")),
    ]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return None


def layout_of(root: Path, clang_dir: Path, os_name: str) -> RocmLayout:
    """The layout of an install whose clang folder is known, in ``os_name``'s path flavour."""
    device_libs = find_device_lib_dir(root, clang_dir)
    return RocmLayout(
        os=os_name,
        root=pure_path(os_name, root),
        clang_dir=pure_path(os_name, clang_dir),
        # Absent from a C/C++-only install; TheRock's place is the honest default.
        device_lib_dir=pure_path(os_name, device_libs or root / THEROCK_DEVICE_LIBS),
    )


# --------------------------------------------------------------------------
# Environment and CMake arguments (pure)


def _prepend(os_name: str, entries: list[PurePath], current: str | None) -> str:
    sep = ";" if os_name == "windows" else ":"
    parts = [str(p) for p in entries]
    if current:
        parts.append(current)
    return sep.join(parts)


def rocm_env(layout: RocmLayout, base_env: Mapping[str, str]) -> dict[str, str]:
    """The variables the build needs, merged over ``base_env``'s PATH-like values."""
    root = layout.root
    if layout.os == "windows":
        return {
            "HIP_PATH": str(root),
            "PATH": _prepend("windows", [root / "bin", layout.clang_dir], base_env.get("PATH")),
        }
    lib_dirs: list[PurePath] = [root / "lib"]
    llvm_lib = layout.clang_dir.parent / "lib"
    if llvm_lib != root / "lib":
        lib_dirs.append(llvm_lib)
    return {
        "ROCM_PATH": str(root),
        "HIP_PATH": str(root),
        "HIP_PLATFORM": "amd",
        "HIP_CLANG_PATH": str(layout.clang_dir),
        "HIP_DEVICE_LIB_PATH": str(layout.device_lib_dir),
        "PATH": _prepend("linux", [root / "bin", layout.clang_dir], base_env.get("PATH")),
        "LD_LIBRARY_PATH": _prepend("linux", lib_dirs, base_env.get("LD_LIBRARY_PATH")),
    }


def hip_cmake_args(layout: RocmLayout, targets: tuple[str, ...]) -> tuple[str, ...]:
    """TheRock's clang as C/C++ (and on Linux HIP) compiler, and the GPU targets."""
    args = [
        f"-DCMAKE_C_COMPILER={cmake_path(layout.clang)}",
        f"-DCMAKE_CXX_COMPILER={cmake_path(layout.clangxx)}",
    ]
    if layout.os != "windows":
        args.append(f"-DCMAKE_HIP_COMPILER={cmake_path(layout.clangxx)}")
    args += [
        f"-DCMAKE_PREFIX_PATH={cmake_path(layout.root)}",
        f"-DGPU_TARGETS={';'.join(targets)}",
    ]
    return tuple(args)


def launcher_languages(os_name: str) -> tuple[str, ...]:
    """ccache launches HIP on Linux; on Windows llama.cpp compiles HIP as C++."""
    return () if os_name == "windows" else ("HIP",)


def derived_identity(clang_version: str, fingerprint: str) -> str:
    """The identity of an install without a version: clang's version and a content hash.

    ``clang --version`` alone is not enough: ROCm's clang prints the same
    string for different builds.
    """
    return safe_identity(f"rocm-clang{clang_version}-{fingerprint[:12]}")


# --------------------------------------------------------------------------
# The toolchain


def file_sha256(path: Path) -> str:
    """sha256 of a file's content (symlinks followed)."""
    try:
        return file_digest(path.resolve())[1]
    except OSError as exc:
        raise ToolchainError(f"{path}: cannot read: {exc.strerror}") from None


def install_fingerprint(clang: Path, device_lib_dir: Path | None) -> str:
    """sha256 over clang's binary and the device libraries' names and contents.

    ccache hashes the compiler binary, but not the bitcode that
    HIP_DEVICE_LIB_PATH links into every HIP object; an install without a
    version must change identity when either changes.
    """
    digest = hashlib.sha256(b"clang\0" + file_sha256(clang).encode())
    if device_lib_dir is not None and device_lib_dir.is_dir():
        for lib in sorted(device_lib_dir.iterdir()):
            if lib.is_file():
                digest.update(f"\0{lib.name}\0{file_sha256(lib)}".encode())
    return digest.hexdigest()


def installed_version(root: Path) -> str | None:
    """The version an /opt/rocm-style install records in ``.info/version``, if any."""
    try:
        text = (root / ".info" / "version").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text.splitlines()[0].strip() if text else None


def rocm_toolchain(
    root: Path,
    leg: Leg,
    *,
    version: str | None,
    details: Mapping[str, str] | None = None,
    environ: Mapping[str, str],
) -> Toolchain:
    """The toolchain of the ROCm install at ``root`` for ``leg`` (its OS and targets).

    ``version`` None: the identity comes from clang's version and a hash of
    its binary and device libraries, stable for one install and different for
    another build.
    """
    from pipeline.toolchain.host_compiler import compiler_version

    if not root.is_dir():
        raise ToolchainError(f"{root}: ROCm install not found (no such directory)")
    clang_dir = find_clang_dir(root, leg.os)
    layout = layout_of(root, clang_dir, leg.os)
    # The file on this machine (a Windows leg's layout holds Windows paths).
    clang = clang_dir / exe(leg.os, "clang")
    clang_hash = file_sha256(clang)
    try:
        _, clang_ver = compiler_version(clang)
    except ToolchainError:
        if leg.os == "linux" and os.name != "nt":
            raise
        # A Windows leg prepared on Linux (or the reverse) cannot run its clang.
        clang_ver = "unknown"
    if version:
        identity = safe_identity(rocm_identity(version))
    else:
        fingerprint = install_fingerprint(clang, find_device_lib_dir(root, clang_dir))
        identity = derived_identity(clang_ver, fingerprint)
    description = f"clang {clang_ver} ({cmake_path(layout.clang)})"
    compilers = {"C": description, "CXX": f"clang++ {clang_ver} ({cmake_path(layout.clangxx)})"}
    if leg.os != "windows":
        compilers["HIP"] = compilers["CXX"]
    info = {
        "root": str(layout.root),
        "clang_version": clang_ver,
        "clang_sha256": clang_hash,
        "device_libs": str(layout.device_lib_dir),
        "targets": ";".join(leg.targets),
        **(details or {}),
    }
    if version:
        info["version"] = version
    return Toolchain(
        kind="rocm",
        identity=identity,
        compilers=compilers,
        details=info,
        env=rocm_env(layout, environ),
        cmake_args=hip_cmake_args(layout, leg.targets),
        launcher_languages=launcher_languages(leg.os),
    )


def parse_sha256sum(text: str, *, file_name: str, where: str) -> str:
    """The sha256 of ``file_name`` in a checksum file, lower case.

    Accepts sha256sum's output (``<64 hex>  <name>``, or ``*<name>`` in binary
    mode; one line per file) and a bare digest. A listed name must be
    ``file_name`` (a leading folder is ignored). ToolchainError naming
    ``where`` for anything else.
    """
    lines = [line.strip() for line in text.lstrip("\ufeff").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        raise ToolchainError(f"{where}: empty checksum file (expected '<64 hex digits>  {file_name}')")
    found: set[str] = set()
    others: list[str] = []
    for line in lines:
        m = _CHECKSUM_LINE.fullmatch(line)
        if m is None:
            raise ToolchainError(
                f"{where}: malformed checksum line {line[:80]!r} (expected '<64 hex digits>  {file_name}')"
            )
        digest, listed = m.group(1).lower(), m.group(2)
        if listed is None and len(lines) > 1:
            raise ToolchainError(f"{where}: a bare digest among {len(lines)} lines names no file")
        if listed is None or PurePosixPath(listed.strip().replace("\\", "/")).name == file_name:
            found.add(digest)
        else:
            others.append(listed.strip())
    if not found:
        raise ToolchainError(f"{where}: the checksum is for {', '.join(others)[:200]}, not {file_name}")
    if len(found) > 1:
        raise ToolchainError(f"{where}: {len(found)} different sha256 digests for {file_name}")
    return found.pop()


def _fetch_checksum(resolved: ResolvedRocm, request: ToolchainRequest) -> tuple[str, Downloaded]:
    """The digest the index publishes for ``resolved``'s tarball, and the cached checksum file.

    Fetched through the download cache (same retries, backoff, budget and lock wait as the
    tarball), so a later run reads it from disk. A checksum the index lists
    but that cannot be had is an error, never a reason to skip the check.
    """
    from pipeline.toolchain.installer.download import download

    url = resolved.sha256_url
    assert url is not None
    try:
        got = download(url, cache_dir=request.download_cache, backoff_seconds=request.http_backoff,
                       retry_budget=request.http_retry_budget, wait_lock=request.wait_lock, since=request.started)
    except NetworkError as err:
        # download's message leads with "download of <url>"; say it once.
        reason = err.message.replace(f"download of {url} ", "", 1)
        raise ToolchainError(
            f"cannot verify {resolved.file}: the index lists the checksum {url}, but its download {reason}"
        ) from None
    try:
        if got.size > MAX_CHECKSUM_BYTES:
            raise ToolchainError(f"{url}: {got.size} bytes is not a checksum file")
        try:
            text = got.path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolchainError(f"{url}: the checksum file is not UTF-8 text") from None
        except OSError as exc:
            raise ToolchainError(f"{got.path}: cannot read: {exc.strerror}") from None
        return parse_sha256sum(text, file_name=resolved.file, where=url), got
    except ToolchainError:
        # A bad copy must not stay cached: the next run fetches it again.
        got.path.unlink(missing_ok=True)
        raise


def install_check(os_name: str) -> Callable[[Path], None]:
    """What a new TheRock install must pass before it replaces the working one: its clang runs.

    A tarball without clang, an empty one, or one whose clang cannot run is
    refused here, not kept as a complete install that fails every later run.
    A Windows install checked on another OS can only show that clang is there.
    """
    import sys

    from pipeline.toolchain.compiler_set import version_output

    def check(root: Path) -> None:
        clang = find_clang_dir(root, os_name) / exe(os_name, "clang")
        if (os_name == "windows") == (sys.platform == "win32"):
            version_output(clang)

    return check


def prepare_rocm(request: ToolchainRequest, console: Console) -> Toolchain:
    """``--rocm-path``: that install; otherwise download and install the run's resolved TheRock build.

    When the index lists a ``.sha256sum`` beside the tarball, the tarball (or
    the complete install's recorded digest) must match it.
    """
    leg = request.leg
    if request.rocm_path is not None:
        return _existing_install(request.rocm_path, request)
    from pipeline.toolchain.installer.download import file_name_of
    from pipeline.toolchain.installer.install import install_archive

    resolved = request.rocm
    if resolved is None:
        raise ToolchainError(f"leg {leg.name}: no ROCm build was resolved for it")
    digest: str | None = None
    checksum: Downloaded | None = None
    if resolved.sha256_url is not None:
        digest, checksum = _fetch_checksum(resolved, request)
    try:
        installed = install_archive(
            resolved.url,
            f"{resolved.identity}-{resolved.os}-{resolved.family}",
            sha256=digest,
            console=console,
            root_dir=request.toolchain_dir,
            cache_dir=request.download_cache,
            backoff_seconds=request.http_backoff,
            check=install_check(leg.os),
            wait_lock=request.wait_lock,
            since=request.started,
            retry_budget=request.http_retry_budget,
        )
    except ToolchainError as err:
        if checksum is None:
            raise
        # Fetch the checksum afresh next time: the mismatch may be a stale or corrected checksum.
        checksum.path.unlink(missing_ok=True)
        if err.message.startswith("sha256 mismatch"):
            raise ToolchainError(err.message, hint=f"expected digest from {resolved.sha256_url}") from None
        raise
    checked = f", sha256 checked against {file_name_of(resolved.sha256_url)}" if resolved.sha256_url else ""
    console.print(
        f"{leg.name}: ROCm {resolved.version} ({resolved.policy}) "
        f"{'reused' if installed.reused else 'installed'} at {installed.root}{checked}",
        highlight=False,
    )
    details = {
        "source": "download",
        "policy": resolved.policy,
        "url": resolved.url,
        "file": resolved.file,
        "sha256": installed.sha256,
        "family": resolved.family,
    }
    if resolved.sha256_url is not None:
        # The digest above was checked against this published checksum.
        details["sha256_url"] = resolved.sha256_url
    if resolved.published is not None:
        details["published"] = resolved.published.isoformat()
    return rocm_toolchain(installed.root, leg, version=resolved.version, details=details, environ=request.environ)


def _existing_install(path: Path, request: ToolchainRequest) -> Toolchain:
    from pipeline.rocm.versions import is_version

    if (problem := folder_problem(path)) is not None:
        raise UsageError(f"--rocm-path {path}: {problem}")
    root = path.resolve()
    # An explicit --rocm-version names this install's version; a policy does not.
    asked = request.rocm_version
    version = asked if asked and is_version(asked) else installed_version(root)
    return rocm_toolchain(root, request.leg, version=version, details={"source": "rocm-path"},
                          environ=request.environ)
