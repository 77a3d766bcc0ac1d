"""One module per backend behind one small interface, picked from a table.

:class:`~pipeline.backends.protocol.Backend` says everything a backend differs
in: how its toolchain is prepared, its cache identity, the runtime its
bundles carry, its bundle name. ``BACKENDS`` is the table; what a backend
does is asked of :func:`backend_of`. Other layers still name a backend where
a rule is the matrix's, not the backend's: which legs need a ROCm resolution
(:attr:`pipeline.inputs.leg.Leg.needs_resolution`), which (os, arch) a
backend may target (``inputs/matrix.py``), the cross-built cpu legs
(``toolchain/cross.py``), a bundle manifest's CUDA line and the GPU smoke
check's wording.

Adding a backend: a module here with its ``BACKEND``, its entry in
``BACKENDS``, its name in :data:`pipeline.names.BACKEND_NAMES`.

:func:`toolchain_request` is the one place a :class:`ToolchainRequest` is
built from the run's inputs, so every setting (``--wait-lock``, the retry
backoff and budget) reaches every backend's downloads.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.backends import cpu, cuda, metal, rocm, vulkan
from pipeline.backends.protocol import Backend, RuntimeProfile
from pipeline.errors import ToolchainError
from pipeline.inputs.leg import Leg
from pipeline.inputs.matrix import Matrix
from pipeline.inputs.resolution_file import ResolvedRocm
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import DEFAULT_ARCH, DEFAULT_TEMPLATE, OS_LABELS
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "BACKENDS",
    "Backend",
    "backend_of",
    "leg_description",
    "leg_toolkit",
    "prepare_toolchain",
    "render_name",
    "runtime_profile",
    "toolchain_request",
]

BACKENDS: dict[str, Backend] = {
    b.name: b for b in (cpu.BACKEND, cuda.BACKEND, metal.BACKEND, rocm.BACKEND, vulkan.BACKEND)
}


def backend_of(leg: Leg) -> Backend:
    try:
        return BACKENDS[leg.backend]
    except KeyError:
        raise ToolchainError(f"leg {leg.name!r}: the {leg.backend} toolchain is not supported") from None


def toolchain_request(
    inputs: RunInputs,
    leg: Leg,
    *,
    rocm: ResolvedRocm | None = None,
    rocm_path: Path | None = None,
    cuda_path: Path | None = None,
    vulkan_sdk: Path | None = None,
) -> ToolchainRequest:
    """What ``leg``'s backend needs, from the run's inputs; nothing here reaches the network.

    ``rocm``: a ROCm leg's TheRock build, resolved before the leg's steps
    (:func:`pipeline.run_resolution.resolve_leg`). ``rocm_path`` /
    ``cuda_path`` / ``vulkan_sdk``: an install given on the command line
    instead of the one the run would download.
    """
    if leg.needs_resolution and rocm is None and rocm_path is None:
        raise ToolchainError(
            f"leg {leg.name!r}: no TheRock build was resolved for it and no --rocm-path given"
        )
    return ToolchainRequest(
        leg=leg,
        environ=inputs.environ,
        rocm=rocm,
        rocm_path=rocm_path,
        rocm_version=inputs.rocm_policy if inputs.rocm_policy_overridden else None,
        cuda_path=cuda_path,
        vulkan_sdk=vulkan_sdk,
        # The leg's own CUDA line and arch: the toolchain sees one line's pins as [toolchains.cuda].
        pins=inputs.require_matrix().toolchains.for_leg(leg.cuda_line, leg.arch),
        download_cache=inputs.download_cache,
        toolchain_dir=inputs.toolchain_dir,
        retry=inputs.retry,
        wait_lock=inputs.wait_lock,
        started=inputs.started,
    )


def prepare_toolchain(request: ToolchainRequest, console: Console) -> Toolchain:
    """Find (or install) the toolchain that builds ``request.leg``; a ToolchainError for a leg of another
    arch that this machine cannot cross-build."""
    from pipeline.toolchain.cross import cross_problem
    from pipeline.util.this_machine import host_arch, host_os

    if (problem := cross_problem(request.leg, host_os=host_os(), host=host_arch())) is not None:
        raise ToolchainError(problem)
    return backend_of(request.leg).prepare(request, console)


def runtime_profile(backend: str, os_name: str) -> RuntimeProfile:
    """The backend's runtime layout on ``os_name``; an empty profile (nothing to copy) for an unknown one."""
    found = BACKENDS.get(backend)
    return found.runtime(os_name) if found is not None else RuntimeProfile()


def render_name(
    template: str | None,
    *,
    tag: str,
    leg: str,
    backend: str,
    os_name: str,
    family: str | None,
    arch: str = DEFAULT_ARCH,
) -> str:
    """The bundle's file name: the template (:data:`pipeline.names.DEFAULT_TEMPLATE`) filled in, plus
    ``.zip`` (Windows) or ``.tar.gz``."""
    found = BACKENDS.get(backend)
    stem = (template or DEFAULT_TEMPLATE).format(
        tag=tag,
        os_label=OS_LABELS.get(os_name, os_name),
        variant=found.bundle_variant(os_name, family) if found is not None else f"-{backend}",
        backend=backend,
        family=family or "",
        leg=leg,
        arch=arch,
    )
    return f"{stem}.{'zip' if os_name == 'windows' else 'tar.gz'}"


def bundle_file_name(leg: Leg, tag: str) -> str:
    """The file name of ``leg``'s bundle for ``tag``: its matrix.toml template (upstream's style by default)
    filled in. The one place a leg's bundle is named: the build writes it, ``legs --json`` shows it, the
    matrix check compares it."""
    return render_name(leg.bundle_template, tag=tag, leg=leg.name, backend=leg.backend, os_name=leg.os,
                       family=leg.family, arch=leg.arch)  # fmt: skip


# The tag a matrix check names bundles with: every leg of a run has the same one, so it never tells two apart.
_PROBE_TAG = "b1"


def check_bundle_names(matrix: Matrix) -> None:
    """ConfigError when two built legs of ``matrix`` would write one bundle (:meth:`Matrix.check_bundle_names`)."""
    matrix.check_bundle_names(lambda leg: bundle_file_name(leg, _PROBE_TAG))


def leg_toolkit(matrix: Matrix, leg: Leg) -> str:
    """The toolchain ``leg`` builds with, as matrix.toml pins it (offline: nothing is asked or installed).

    CUDA and Vulkan: the pinned version (``system`` when matrix.toml pins none);
    ROCm: TheRock's family and the run's policy (the version is resolved per run);
    CPU and Metal: the runner's compiler (a Linux arm64 leg cross-built on x86-64 uses
    Debian's aarch64-linux-gnu GCC).
    """
    pins = matrix.toolchains.for_leg(leg.cuda_line, leg.arch)
    if leg.backend == "cuda":
        cuda = pins.cuda
        return f"CUDA {cuda.version}" if cuda is not None else "CUDA (system)"
    if leg.backend == "vulkan":
        sdk = pins.vulkan.get(leg.os)
        return f"Vulkan SDK {sdk.version}" if sdk is not None else "Vulkan SDK (system)"
    if leg.backend == "rocm":
        return f"TheRock {leg.family} ({matrix.rocm.policy})"
    if leg.os == "macos":
        return "Xcode (runner)"
    return "host C/C++ compiler"


def leg_description(matrix: Matrix, leg: Leg, *, tag: str) -> dict[str, Any]:
    """What ``legs --json`` prints for ``leg``: its name, backend, os, arch, runner, targets, toolkit, the
    bundle's file name for ``tag``, and why it is disabled (None when it is built)."""
    return {
        "name": leg.name,
        "backend": leg.backend,
        "os": leg.os,
        "arch": leg.arch,
        "runner": leg.runner,
        "targets": list(leg.targets or leg.cuda_architectures),
        "toolkit": leg_toolkit(matrix, leg),
        "bundle": bundle_file_name(leg, tag),
        # Why the leg is not built (matrix.toml's ``disabled``); null for the legs a run builds.
        "disabled": leg.disabled,
    }
