"""The CUDA toolkit from NVIDIA's redistributable archives, installed into the toolchain cache.

NVIDIA publishes each CUDA release as one archive per component and
platform (``cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz``,
each holding one ``<name>-archive/`` folder with ``bin/``, ``include/``,
``lib/`` and ``LICENSE``) and a manifest, ``redistrib_<release>.json``, that
gives every archive's relative path, sha256, md5 and size. matrix.toml pins
the manifest's sha256 (:class:`pipeline.inputs.pins.RedistPins`): the manifest
is downloaded and checked first, then each component the leg needs is
downloaded and checked against the manifest's sha256 for it, and the one
archive installer (:func:`pipeline.toolchain.installer.install.install_archive_set`)
merges them into one toolkit root, as NVIDIA's own installer lays it out
(``bin/nvcc``, ``include/``, ``lib/``, ``nvvm/``). Before the install is
sealed, the installer adds what CMake's FindCUDAToolkit looks for: a
``lib64`` link to ``lib`` (a runfile install's name), the unversioned
library links where an archive lacks them, and the driver's link stub
(``lib/stubs/libcuda.so``, which ``cuda_cudart`` carries; made from
``cuda.h`` otherwise). Each component's ``LICENSE`` is kept under
``licenses/<component>/``, where the bundle's third-party list
(:mod:`pipeline.bundle.third_party`) finds it.

A cross build takes each component for its own platform (``host_platform`` and
``host_components`` of the pins): the Windows arm64 leg's compiler (nvcc, crt,
nvvm, cccl) is the x64 runner's, its libraries (cudart, cuBLAS) the arm64
target's, merged into one root laid out as llama.cpp's
``cmake/arm64-windows-msvc-cuda.cmake`` reads it (``bin/nvcc.exe``,
``lib/arm64/*.lib``, the DLLs in ``bin/arm64``), checked before the install is
sealed (:data:`pipeline.toolchain.cuda_layout.CROSS_LAYOUT`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.archives.extract import check_archive, extract_archive
from pipeline.errors import NetworkError, ToolchainError
from pipeline.inputs.cuda_driver import driver_floor
from pipeline.inputs.pins import CudaPins, RedistPins
from pipeline.names import CC, SHA256_HEX, is_plain_relative_path
from pipeline.toolchain.cuda_layout import cross_layout, install_folder, missing_layout, unversioned_links
from pipeline.toolchain.cuda_nvcc import cuda_toolchain
from pipeline.toolchain.cuda_redist_identity import platform_of, redist_cuda_identity
from pipeline.toolchain.cuda_wheels import add_driver_stub
from pipeline.toolchain.host_compiler import find_compiler
from pipeline.toolchain.installer.download import download
from pipeline.toolchain.installer.install import ArchiveRef, install_archive_set, merge_tree
from pipeline.toolchain.toolchain import Toolchain, ToolchainRequest

if TYPE_CHECKING:
    from rich.console import Console

# The libraries ggml-cuda links by their unversioned names (FindCUDAToolkit's CUDA::cudart, CUDA::cublas).
REDIST_LIBS = ("cudart", "cublas", "cublasLt")
# Where each component's license goes in the toolkit root: licenses/<component>/LICENSE.
LICENSES = "licenses"
_LICENSE = re.compile(r"^licen[cs]e(?:\.txt)?$", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class RedistArchive:
    """One component's archive for one platform, as the manifest lists it."""

    component: str
    version: str
    platform: str
    relative_path: str
    sha256: str
    size: int
    # The license the manifest declares for it ("CUDA Toolkit").
    license: str | None

    @property
    def file_name(self) -> str:
        return self.relative_path.rsplit("/", 1)[-1]


def parse_manifest(raw: bytes, where: str) -> dict[str, Any]:
    """The manifest's JSON object; ToolchainError naming ``where`` when it is not one."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ToolchainError(f"{where}: not a JSON manifest: {exc}") from None
    if not isinstance(data, dict):
        raise ToolchainError(f"{where}: not a manifest: expected a JSON object")
    return data


def choose_archives(
    manifest: Mapping[str, Any], components: Sequence[str], platform: str, where: str
) -> tuple[RedistArchive, ...]:
    """The archive of each of ``components`` for ``platform``; one ToolchainError naming the first component missing."""
    return choose_platform_archives(manifest, [(name, platform) for name in components], where)


def choose_platform_archives(
    manifest: Mapping[str, Any], wanted: Sequence[tuple[str, str]], where: str
) -> tuple[RedistArchive, ...]:
    """The archive of each (component, platform) of ``wanted`` (a cross build takes its compiler for the host's
    platform and its libraries for the target's); one ToolchainError naming the first component missing."""
    chosen: list[RedistArchive] = []
    for name, platform in wanted:
        entry = manifest.get(name)
        if not isinstance(entry, Mapping):
            raise ToolchainError(
                f"{where}: {name}: no such component in the manifest "
                f"(release {manifest.get('release_label', '?')})"
            )
        archive = entry.get(platform)
        if not isinstance(archive, Mapping):
            raise ToolchainError(f"{where}: {name}: the manifest has no {platform} archive for it")
        path, sha, size = (
            archive.get("relative_path"),
            str(archive.get("sha256", "")).lower(),
            archive.get("size"),
        )
        if not is_plain_relative_path(path):
            raise ToolchainError(f"{where}: {name}: {platform}.relative_path {path!r} is not a relative path")
        if not SHA256_HEX.match(sha):
            raise ToolchainError(f"{where}: {name}: {platform}.sha256 {sha!r} is not a sha256")
        if not str(size).isdigit():
            raise ToolchainError(f"{where}: {name}: {platform}.size {size!r} is not a byte count")
        version, license_name = entry.get("version"), entry.get("license")
        chosen.append(RedistArchive(component=name, version=str(version or "?"), platform=platform,
                                    relative_path=path, sha256=sha, size=int(str(size)),
                                    license=str(license_name) if license_name else None))  # fmt: skip
    return tuple(chosen)


def _fetch_manifest(redist: RedistPins, request: ToolchainRequest, console: Console | None) -> dict[str, Any]:
    where = f"{redist.key} manifest {redist.manifest}"
    try:
        got = download(redist.manifest_url, download_cache=request.download_cache / "cuda-redist", sha256=redist.sha256,
                       console=console, retry=request.retry,
                       wait_lock=request.wait_lock, since=request.started)  # fmt: skip
    except (ToolchainError, NetworkError) as err:
        raise type(err)(f"{where}: {err.message}", hint=err.hint) from None
    return parse_manifest(got.path.read_bytes(), where)


def install_cuda_redist(pins: CudaPins, request: ToolchainRequest, *, console: Console | None = None) -> Path:
    """Install the pinned components for the leg's platform; the toolkit root (``bin/nvcc`` under it)."""
    redist = pins.redist
    if redist is None:
        raise ToolchainError(f"CUDA {pins.version}: no redistributable pins")
    leg = request.leg
    # Each component for its platform: the leg's, or the host's for a cross build's compiler.
    wanted = redist.platforms(platform_of(leg.os, leg.arch))
    manifest = _fetch_manifest(redist, request, console)
    archives = choose_platform_archives(manifest, wanted, f"{redist.key} ({redist.manifest})")
    nvcc = next((a for a in archives if a.component == "cuda_nvcc"), None)
    if nvcc is not None and nvcc.version != pins.version:
        raise ToolchainError(
            f"{redist.key}: cuda_nvcc: the manifest {redist.manifest} lists {nvcc.version}, "
            f"matrix.toml's version is {pins.version}"
        )
    by_label = {a.file_name: a for a in archives}
    refs = [ArchiveRef(label=a.file_name, sha256=a.sha256) for a in archives]

    def fetch(ref: ArchiveRef) -> Path:
        archive = by_label[ref.label]
        if console is not None:
            console.print(
                f"cuda: {archive.component} {archive.version} ({archive.platform})", highlight=False
            )
        try:
            got = download(redist.url + archive.relative_path, download_cache=request.download_cache / "cuda-redist",
                           sha256=archive.sha256, console=console, retry=request.retry, verify=check_archive,
                           wait_lock=request.wait_lock, since=request.started)  # fmt: skip
        except (ToolchainError, NetworkError) as err:
            # One line naming the component: the download's own message names only its URL.
            raise type(err)(
                f"{redist.key}: {archive.component} {archive.version}: {err.message}", hint=err.hint
            ) from None
        return got.path

    def populate(files: Sequence[tuple[ArchiveRef, Path]], tree: Path, scratch: Path) -> None:
        # Each archive's license goes to licenses/<component>/ before the merge: two components' licenses
        # differ (cccl's is the CCCL EULA, the others' the CUDA Toolkit's), and both travel with the bundle.
        for i, (ref, path) in enumerate(files):
            part = extract_archive(path, scratch / f"part{i}")
            keep_license(part, by_label[ref.label].component, origin=ref.label)
            merge_tree(part, tree, origin=ref.label)

    def finish(root: Path) -> None:
        check_cross_layout(root, redist.key, leg.os, leg.arch, pins.version, archives)
        if leg.os != "windows":
            link_layout(root)
            # cuda_cudart carries lib/stubs/libcuda.so; made from cuda.h only if an archive set lacks it.
            add_driver_stub(root, find_compiler(CC, ("cc", "gcc", "clang"), request.environ))

    installed = install_archive_set(
        refs,
        request.toolchain_dir / install_folder(pins.version, leg.os, leg.arch),
        fetch=fetch,
        populate=populate,
        finish=finish,
        wait_lock=request.wait_lock,
        since=request.started,
    )
    if console is not None:
        state = "reused" if installed.reused else "installed"
        console.print(f"cuda: {state} CUDA {pins.version} from {len(refs)} redistributable archives "
                      f"({redist.manifest}) at {installed.root}", highlight=False)  # fmt: skip
    return installed.root


def keep_license(part: Path, component: str, *, origin: str) -> None:
    """Move the license files at the top of one extracted archive (``part``) to ``licenses/<component>/``.

    Every NVIDIA archive holds its ``LICENSE`` at its top; one without is refused, naming it.
    """
    found = [p for p in sorted(part.iterdir()) if p.is_file() and _LICENSE.match(p.name)]
    if not found:
        raise ToolchainError(f"{origin}: the {component} archive holds no LICENSE")
    folder = part / LICENSES / component
    folder.mkdir(parents=True, exist_ok=True)
    for path in found:
        path.rename(folder / path.name)


def check_cross_layout(
    root: Path, key: str, os_name: str, arch: str, version: str, archives: Sequence[RedistArchive]
) -> None:
    """A cross toolkit holds what llama.cpp's toolchain file reads and the DLLs a bundle ships
    (:data:`pipeline.toolchain.cuda_layout.CROSS_LAYOUT`); ToolchainError naming the first file missing and
    the component whose archive should have held it. Nothing is installed then (the tree is still staged)."""
    expected = cross_layout(os_name, arch, version)
    if not expected:
        return
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    missing = missing_layout(files, expected)
    if missing:
        path, component = missing[0]
        which = next((a for a in archives if a.component == component), None)
        what = f"{component} {which.version} ({which.platform})" if which else component
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ToolchainError(
            f"{key}: {what}: the toolkit for {os_name}/{arch} lacks {path}{more}, which llama.cpp's cross "
            "build reads"
        )


def link_layout(root: Path) -> dict[str, str]:
    """``lib64`` -> ``lib`` and the unversioned library links an archive lacks; the links made."""
    lib = root / "lib"
    if not lib.is_dir():
        raise ToolchainError(f"{root}: the archives hold no lib/ folder")
    made: dict[str, str] = {}
    if not (root / "lib64").exists() and not (root / "lib64").is_symlink():
        (root / "lib64").symlink_to("lib")
        made["lib64"] = "lib"
    links = unversioned_links((p.name for p in lib.iterdir()), REDIST_LIBS)
    for plain, versioned in links.items():
        (lib / plain).symlink_to(versioned)
    made.update(links)
    missing = [name for name in REDIST_LIBS if not (lib / f"lib{name}.so").exists()]
    if missing:
        raise ToolchainError(f"{lib}: the archives hold no {', '.join('lib' + m + '.so' for m in missing)}")
    return made


def prepare_cuda_redist(
    pins: CudaPins, redist: RedistPins, request: ToolchainRequest, console: Console | None = None
) -> Toolchain:
    """Install the pinned archives and give the toolchain, with the identity ``cache-key`` computed before."""
    root = install_cuda_redist(pins, request, console=console)
    toolchain = cuda_toolchain(request.leg, request.environ, root=root, origin=f"redist {redist.manifest}")
    floor = driver_floor(pins.version)
    # The pinned line's floor: the runtime shipped is the pinned archives' cudart.
    details = {
        **toolchain.details,
        **({"driver_min": floor.text(request.leg.os)} if floor is not None else {}),
    }
    return dataclasses.replace(
        toolchain, identity=redist_cuda_identity(pins, redist, request), details=details
    )
