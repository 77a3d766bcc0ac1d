"""The CUDA toolkit from pinned wheels, installed into the toolchain cache.

The wheels come through ``pip download --no-deps --only-binary :all:`` (pip
knows the package index and its mirrors; nothing here names a host), each
checked against its pinned sha256, then installed as one tree by the one
archive installer (:mod:`pipeline.toolchain.installer.install`). A wheel is a zip,
so the same safe extractor that unpacks TheRock unpacks it. Before the install
is sealed, the installer adds what the wheels lack (:mod:`pipeline.toolchain.cuda_layout`):
the unversioned library links and the driver's link stub, both recorded in
the install's marker like every extracted file, so a later run that finds one
missing or edited installs the toolkit again. The identity comes from
:mod:`pipeline.toolchain.cuda_identity`, which computes it without this module.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import NetworkError, ToolchainError
from pipeline.inputs.pins import CudaPins
from pipeline.names import CC
from pipeline.processes.groups import run_child
from pipeline.toolchain.cuda_identity import given_cuda, pinned_cuda_identity, pinned_wheels
from pipeline.toolchain.cuda_layout import (
    DRIVER_SONAME,
    DRIVER_STUB,
    UNVERSIONED_LIBS,
    driver_entry_points,
    install_folder,
    no_device_source,
    unversioned_links,
    wheel_tree,
)
from pipeline.toolchain.cuda_nvcc import cuda_toolchain
from pipeline.toolchain.host_compiler import find_compiler
from pipeline.toolchain.installer.install import ArchiveRef, install_archive_set
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest
from pipeline.util.fsutil import file_digest
from pipeline.util.http_retry import (
    DEFAULT_RETRY,
    RetriesExhausted,
    Retryable,
    RetryPolicy,
    call_with_retries,
)

if TYPE_CHECKING:
    from rich.console import Console


def pip_download_command(python: str, requirement: str, dest: Path, platform: str | None = None) -> list[str]:
    """The one ``pip download`` line for one pinned wheel: exact version, no deps, binary only."""
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
           "-d", str(dest), requirement]  # fmt: skip
    if platform:
        cmd[-1:-1] = ["--platform", platform]
    return cmd


# What pip says when the pinned wheel is not on the index at all: another attempt cannot help.
_NOT_THERE = ("No matching distribution found", "Could not find a version that satisfies")


def fetch_wheel(
    requirement: str,
    sha256: str,
    download_cache: Path,
    *,
    python: str,
    platform: str | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    console: Console | None = None,
    env: Mapping[str, str],
) -> Path:
    """A verified wheel for ``requirement`` in ``<download_cache>/wheels/<sha256>/`` (downloaded once).

    pip runs without retries of its own (``PIP_RETRIES=0``): a failed ``pip
    download`` is retried here, with the run's backoff and retry budget, like
    every other download. ``env``: the run's environment (pip's index and
    proxy settings).
    """
    pip_env = {**env, "PIP_RETRIES": "0"}
    folder = download_cache / "wheels" / sha256.lower()
    cached = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    if len(cached) == 1 and file_digest(cached[0])[1] == sha256.lower():
        return cached[0]
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".pip-") as tmp:
        cmd = pip_download_command(python, requirement, Path(tmp), platform)
        try:
            call_with_retries(
                _pip_once, cmd, requirement, pip_env,
                policy=retry,
                what=f"pip download {requirement}",
                on_wait=None if console is None else lambda line: console.print(line, highlight=False, markup=False),
            )  # fmt: skip
        except RetriesExhausted as err:
            raise NetworkError(
                f"pip download {requirement} failed after {err.attempts_text}: {err.last.reason}"
            ) from None
        got = sorted(Path(tmp).glob("*.whl"))
        if len(got) != 1:
            raise ToolchainError(
                f"pip download {requirement}: expected one wheel, got {[p.name for p in got]}"
            )
        digest = file_digest(got[0])[1]
        if digest != sha256.lower():
            raise ToolchainError(
                f"sha256 mismatch for {requirement} ({got[0].name}): expected {sha256.lower()}, got {digest}"
            )
        for old in cached:
            old.unlink(missing_ok=True)
        final = folder / got[0].name
        got[0].replace(final)
    return final


def _pip_once(cmd: list[str], requirement: str, env: Mapping[str, str]) -> None:
    """One ``pip download``: Retryable unless pip says the pinned wheel does not exist."""
    try:
        proc = run_child(cmd, capture_output=True, text=True, timeout=1800, env=dict(env))
    except subprocess.TimeoutExpired:
        raise Retryable("pip timed out") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise NetworkError(f"pip download {requirement}: cannot run pip: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        if any(text in proc.stderr for text in _NOT_THERE):
            raise NetworkError(f"pip download {requirement} failed (exit {proc.returncode}): {last}")
        raise Retryable(f"exit {proc.returncode}: {last}")


def link_unversioned(lib_dir: Path) -> dict[str, str]:
    """Add the unversioned ``lib*.so`` links FindCUDAToolkit looks for; the links made."""
    links = unversioned_links(p.name for p in lib_dir.iterdir()) if lib_dir.is_dir() else {}
    missing = [
        lib
        for lib in UNVERSIONED_LIBS
        if f"lib{lib}.so" not in links and not (lib_dir / f"lib{lib}.so").exists()
    ]
    if missing:
        raise ToolchainError(
            f"{lib_dir}: the pinned wheels hold no {', '.join('lib' + m + '.so.*' for m in missing)}"
        )
    for plain, versioned in links.items():
        (lib_dir / plain).symlink_to(versioned)
    return links


def compile_no_device_library(
    cc: Path, symbols: Sequence[str], out: Path, *, soname: str = DRIVER_SONAME
) -> Path:
    """Compile a shared library named ``soname`` at ``out`` exporting ``symbols``, each answering "no device".

    No C library, nothing but the functions: it loads wherever the compiler's target does.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".stub-", dir=out.parent) as tmp:
        src = Path(tmp) / "driver.c"
        src.write_text(no_device_source(symbols), encoding="utf-8")
        built = Path(tmp) / out.name
        # From its own folder, by a relative name: no temporary path in the library, the same file every time.
        cmd = [
            str(cc),
            "-shared",
            "-fPIC",
            "-nostdlib",
            "-O0",
            f"-Wl,-soname,{soname}",
            "-o",
            built.name,
            src.name,
        ]
        try:
            proc = run_child(cmd, capture_output=True, text=True, timeout=300, cwd=tmp)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ToolchainError(f"cannot run {cc} to make {out.name}: {exc}") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise ToolchainError(f"{cc} could not make {out.name} (exit {proc.returncode}): {last}")
        built.replace(out)
    return out


def add_driver_stub(tree: Path, cc: Path) -> Path:
    """``<tree>/lib/stubs/libcuda.so``: NVIDIA's when a wheel carried one, else made from ``include/cuda.h``."""
    stub = tree / DRIVER_STUB
    if stub.is_file():
        return stub
    header = tree / "include" / "cuda.h"
    try:
        text = header.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ToolchainError(
            f"{header}: cannot read the driver API header the link stub is made from: {exc}"
        ) from None
    symbols = driver_entry_points(text)
    if not symbols:
        raise ToolchainError(f"{header}: declares no driver entry point (CUresult CUDAAPI cu...)")
    return compile_no_device_library(cc, symbols, stub)


def install_cuda_wheels(
    pins: CudaPins, request: ToolchainRequest, *, python: str, console: Console | None = None
) -> Path:
    """Install the pinned wheels for the leg's OS; the toolkit tree (``.../nvidia/cu13``)."""
    os_name = request.leg.os
    pairs = pinned_wheels(pins, os_name)
    refs = [ArchiveRef(label=wheel.requirement, sha256=sha) for wheel, sha in pairs]
    tree = wheel_tree(pins.version)

    def fetch(ref: ArchiveRef) -> Path:
        if console is not None:
            console.print(f"cuda: wheel {ref.label}", highlight=False)
        return fetch_wheel(
            ref.label,
            str(ref.sha256),
            request.download_cache,
            python=python,
            retry=request.retry,
            console=console,
            env=request.environ,
        )

    def finish(root: Path) -> None:
        if os_name != "windows":
            link_unversioned(root / tree / "lib")
            # FindCUDAToolkit's CUDA::cuda_driver, without a driver on the build machine.
            add_driver_stub(root / tree, find_compiler(CC, ("cc", "gcc", "clang"), request.environ))

    installed = install_archive_set(
        refs,
        request.toolchain_dir / install_folder(pins.version, os_name),
        fetch=fetch,
        finish=finish,
        wait_lock=request.wait_lock,
        since=request.started,
    )
    if console is not None:
        state = "reused" if installed.reused else "installed"
        console.print(
            f"cuda: {state} CUDA {pins.version} from {len(refs)} wheels at {installed.root}", highlight=False
        )
    return installed.root / tree


def prepare_cuda(request: ToolchainRequest, console: Console | None = None, *, python: str) -> Toolchain:
    """``--cuda-path`` wins; else matrix.toml's pinned wheels; else a system CUDA (CUDA_PATH, /usr/local/cuda, PATH)."""
    leg, env = request.leg, request.environ
    if request.cuda_path is not None:
        return given_cuda(request)
    pins = request.pins.cuda if request.pins else None
    if pins is None:
        return cuda_toolchain(leg, env)
    tree = install_cuda_wheels(pins, request, python=python, console=console)
    toolchain = cuda_toolchain(leg, env, root=tree, origin=f"wheels {pins.version}")
    # The identity the cache key was computed with before the install (cuda_identity).
    return dataclasses.replace(toolchain, identity=pinned_cuda_identity(pins, request))
