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
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.archives.extract import check_archive
from pipeline.errors import NetworkError, ToolchainError
from pipeline.inputs.cuda_driver import driver_floor
from pipeline.inputs.pins import CudaPins, RedistPins
from pipeline.names import CC, SHA256_HEX, is_plain_relative_path
from pipeline.toolchain.cuda_layout import install_folder, unversioned_links
from pipeline.toolchain.cuda_nvcc import cuda_toolchain
from pipeline.toolchain.cuda_redist_identity import platform_of, redist_cuda_identity
from pipeline.toolchain.cuda_wheels import add_driver_stub
from pipeline.toolchain.host_compiler import find_compiler
from pipeline.toolchain.installer.download import download
from pipeline.toolchain.installer.install import ArchiveRef, install_archive_set
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
    chosen: list[RedistArchive] = []
    for name in components:
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
    platform = platform_of(leg.os, leg.arch)
    manifest = _fetch_manifest(redist, request, console)
    archives = choose_archives(manifest, redist.components, platform, f"{redist.key} ({redist.manifest})")
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

    def finish(root: Path) -> None:
        keep_licenses(root, archives)
        if leg.os != "windows":
            link_layout(root)
            # cuda_cudart carries lib/stubs/libcuda.so; made from cuda.h only if an archive set lacks it.
            add_driver_stub(root, find_compiler(CC, ("cc", "gcc", "clang"), request.environ))

    installed = install_archive_set(
        refs,
        request.toolchain_dir / install_folder(pins.version, leg.os),
        fetch=fetch,
        finish=finish,
        wait_lock=request.wait_lock,
        since=request.started,
    )
    if console is not None:
        state = "reused" if installed.reused else "installed"
        console.print(f"cuda: {state} CUDA {pins.version} from {len(refs)} redistributable archives "
                      f"({redist.manifest}) at {installed.root}", highlight=False)  # fmt: skip
    return installed.root


def keep_licenses(root: Path, archives: Sequence[RedistArchive]) -> None:
    """Each component's license under ``licenses/<component>/``.

    Every archive holds a ``LICENSE`` at its top; the installer merges
    identical files and refuses two different ones at one path, so after the
    merge the one at the top is every component's.
    """
    found = [p for p in sorted(root.iterdir()) if p.is_file() and _LICENSE.match(p.name)]
    if not found:
        raise ToolchainError(f"the archives of {', '.join(a.component for a in archives)} hold no LICENSE")
    for archive in archives:
        folder = root / LICENSES / archive.component
        folder.mkdir(parents=True, exist_ok=True)
        for path in found:
            shutil.copyfile(path, folder / path.name)
    for path in found:
        path.unlink()


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
