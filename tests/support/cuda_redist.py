"""NVIDIA's redistributable CUDA archives, made here in NVIDIA's exact layout, and their manifest.

Each archive is ``<component>/<platform>/<component>-<platform>-<version>-archive.tar.xz``
holding one folder ``<component>-<platform>-<version>-archive/`` with
``bin/``, ``include/``, ``lib/`` and ``LICENSE``, as NVIDIA publishes them;
the manifest ``redistrib_<release>.json`` has NVIDIA's keys (``release_label``,
per component ``name``, ``license``, ``license_path``, ``version`` and per
platform ``relative_path``, ``sha256``, ``md5``, ``size`` as a string).

The compiler is this machine's real one: ``bin/nvcc`` is a wrapper that runs
``/usr/local/cuda/bin/nvcc``, so a leg built with the fake toolkit really
compiles, and ccache's ``compiler_check=content`` hashes the wrapper, which
is the same file in every install of the same archive.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from tests.support.httpserver import LocalServer, Response

REAL_NVCC = Path("/usr/local/cuda/bin/nvcc")
RELEASE = "12.8.1"
MANIFEST = f"redistrib_{RELEASE}.json"
# The real 12.8.1 manifest, NVIDIA's bytes (sha256 249e28a8...: the value rules_ml_toolchain pins).
REAL_MANIFEST = Path(__file__).parent / "data" / "redistrib_12.8.1.json"
LICENSE_TEXT = b"NVIDIA CUDA Toolkit End User License Agreement (test copy)\n"
VERSIONS = {"cuda_nvcc": "12.8.93", "cuda_cudart": "12.8.90", "cuda_cccl": "12.8.90", "libcublas": "12.8.4.1"}


def _nvcc_wrapper() -> bytes:
    return f'#!/bin/sh\nexec {REAL_NVCC} "$@"\n'.encode()


def component_files(component: str) -> dict[str, bytes | str]:
    """Path -> bytes (a file) or str (a symbolic link's target), inside the archive's folder."""
    files: dict[str, bytes | str] = {"LICENSE": LICENSE_TEXT}
    if component == "cuda_nvcc":
        files |= {
            "bin/nvcc": _nvcc_wrapper(),
            "include/crt/host_config.h": b"/* crt */\n",
            "nvvm/libdevice/libdevice.10.bc": b"BC",
        }
    elif component == "cuda_cudart":
        files |= {
            "include/cuda_runtime_api.h": b"/* cudart */\n",
            "include/cuda.h": b"/* driver API */\n",
            "lib/libcudart.so.12": b"\x7fELF cudart 12",
            "lib/libcudart_static.a": b"!<arch>\n",
            "lib/stubs/libcuda.so": b"\x7fELF driver stub",
        }
    elif component == "cuda_cccl":
        files |= {"include/cub/cub.cuh": b"/* cub */\n", "include/thrust/version.h": b"/* thrust */\n"}
    elif component == "libcublas":
        # NVIDIA's archives carry the unversioned links themselves; this one does, cudart's above does not.
        files |= {
            "include/cublas_v2.h": b"/* cublas */\n",
            "lib/libcublas.so.12": b"\x7fELF cublas 12",
            "lib/libcublasLt.so.12": b"\x7fELF cublasLt 12",
            "lib/libcublas.so": "libcublas.so.12",
            "lib/libcublasLt.so": "libcublasLt.so.12",
        }
    return files


def make_archive(
    component: str,
    version: str,
    platform: str = "linux-x86_64",
    files: Mapping[str, bytes | str] | None = None,
) -> bytes:
    """One component's ``.tar.xz``, its one folder named as NVIDIA names it."""
    top = f"{component}-{platform}-{version}-archive"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for rel, content in sorted((files if files is not None else component_files(component)).items()):
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.mtime = 1_700_000_000
            if isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content
                tar.addfile(info)
                continue
            info.size = len(content)
            info.mode = 0o755 if rel.startswith("bin/") else 0o644
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def relative_path(component: str, version: str, platform: str = "linux-x86_64") -> str:
    return f"{component}/{platform}/{component}-{platform}-{version}-archive.tar.xz"


def make_manifest(
    archives: Mapping[str, bytes], versions: Mapping[str, str] = VERSIONS, platform: str = "linux-x86_64"
) -> bytes:
    """The manifest listing ``archives`` (component -> bytes) as NVIDIA's does."""
    data: dict[str, object] = {
        "release_date": "2025-03-06",
        "release_label": RELEASE,
        "release_product": "cuda",
    }
    for component, blob in archives.items():
        data[component] = {
            "name": component, "license": "CUDA Toolkit", "license_path": f"{component}/LICENSE.txt",
            "version": versions[component],
            platform: {"relative_path": relative_path(component, versions[component], platform),
                       "sha256": hashlib.sha256(blob).hexdigest(), "md5": hashlib.md5(blob).hexdigest(),
                       "size": str(len(blob))},
        }  # fmt: skip
    return json.dumps(data, indent=4).encode()


class Redist:
    """A served redistributable release: the archives, the manifest, and the server's base URL."""

    def __init__(self, server: LocalServer, archives: Mapping[str, bytes] | None = None) -> None:
        self.server = server
        self.archives = (
            dict(archives) if archives is not None else {c: make_archive(c, v) for c, v in VERSIONS.items()}
        )
        self.manifest = make_manifest(self.archives)
        server.route(f"/redist/{MANIFEST}", Response(body=self.manifest))
        for component, blob in self.archives.items():
            server.route(f"/redist/{relative_path(component, VERSIONS[component])}", Response(body=blob))

    @property
    def url(self) -> str:
        return self.server.url("/redist/")

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.manifest).hexdigest()

    def path_of(self, component: str) -> str:
        return f"/redist/{relative_path(component, VERSIONS[component])}"

    def toml(self, *, sha256: str | None = None, components: tuple[str, ...] = tuple(VERSIONS)) -> str:
        """``[toolchains.cuda-12]`` with its ``redist`` table, for a test's matrix.toml."""
        listed = ", ".join(f'"{c}"' for c in components)
        return (
            f'[toolchains.cuda-12]\nversion = "{VERSIONS["cuda_nvcc"]}"\n\n[toolchains.cuda-12.redist]\n'
            f'url = "{self.url}"\nmanifest = "{MANIFEST}"\nsha256 = "{sha256 or self.sha256}"\n'
            f"components = [{listed}]\n"
        )


# --------------------------------------------------------------------------
# CUDA 13.4.1 for the Windows arm64 leg: the x64 compiler and the arm64 libraries of one release, as zips.

CROSS_RELEASE = "13.4.1"
CROSS_MANIFEST = f"redistrib_{CROSS_RELEASE}.json"
# The real 13.4.1 manifest, NVIDIA's bytes (sha256 291178934b21...: NixOS/nixpkgs @28bfecf41a87's text).
REAL_CROSS_MANIFEST = Path(__file__).parent / "data" / CROSS_MANIFEST
# The reference's components and versions (the real manifest's: cccl has its own numbering).
CROSS_VERSIONS = {
    "cuda_nvcc": "13.4.59",
    "cuda_crt": "13.4.59",
    "libnvvm": "13.4.59",
    "cccl": "13.3.4.2.1",
    "cuda_cudart": "13.4.49",
    "libcublas": "13.7.0.27",
}
HOST_COMPONENTS = ("cuda_nvcc", "cuda_crt", "libnvvm", "cccl")
HOST_PLATFORM, TARGET_PLATFORM = "windows-x86_64", "windows-arm64"
CCCL_LICENSE_TEXT = b"CCCL End User License Agreement (test copy)\n"


def windows_component_files(component: str, platform: str) -> dict[str, bytes | str]:
    """One Windows archive's files, as NVIDIA lays them out: the x64 archives' libraries under ``lib/x64`` and
    ``bin/x64``, the arm64 ones' under ``lib/arm64`` and ``bin/arm64``; each archive's LICENSE at its top."""
    arch = "arm64" if platform == TARGET_PLATFORM else "x64"
    files: dict[str, bytes | str] = {"LICENSE": CCCL_LICENSE_TEXT if component == "cccl" else LICENSE_TEXT}
    if component == "cuda_nvcc":
        files |= {
            "bin/nvcc.exe": f"MZ nvcc {platform}".encode(),
            "bin/ptxas.exe": f"MZ ptxas {platform}".encode(),
        }
    elif component == "cuda_crt":
        files |= {"include/crt/host_config.h": b"/* crt */\n"}
    elif component == "libnvvm":
        files |= {"nvvm/bin/cicc.exe": f"MZ cicc {platform}".encode()}
    elif component == "cccl":
        files |= {"include/cccl/cub/cub.cuh": b"/* cub */\n"}
    elif component == "cuda_cudart":
        files |= {
            "include/cuda_runtime_api.h": b"/* cudart */\n",
            f"lib/{arch}/cudart.lib": f"!<arch> cudart {arch}".encode(),
            f"lib/{arch}/cuda.lib": f"!<arch> cuda {arch}".encode(),
            f"bin/{arch}/cudart64_13.dll": f"MZ cudart {arch}".encode(),
        }
    elif component == "libcublas":
        files |= {
            "include/cublas_v2.h": b"/* cublas */\n",
            f"lib/{arch}/cublas.lib": f"!<arch> cublas {arch}".encode(),
            f"lib/{arch}/cublasLt.lib": f"!<arch> cublasLt {arch}".encode(),
            f"bin/{arch}/cublas64_13.dll": f"MZ cublas {arch}".encode(),
            f"bin/{arch}/cublasLt64_13.dll": f"MZ cublasLt {arch}".encode(),
        }
    return files


def make_zip_archive(component: str, version: str, platform: str, files: Mapping[str, bytes | str]) -> bytes:
    """One component's ``.zip``, its one folder named as NVIDIA names it."""
    top = f"{component}-{platform}-{version}-archive"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, content in sorted(files.items()):
            info = zipfile.ZipInfo(f"{top}/{rel}", date_time=(2026, 9, 9, 0, 0, 0))
            zf.writestr(info, content.encode() if isinstance(content, str) else content)
    return buf.getvalue()


def zip_path(component: str, version: str, platform: str) -> str:
    return f"{component}/{platform}/{component}-{platform}-{version}-archive.zip"


class CrossRedist:
    """CUDA 13.4.1 served as NVIDIA publishes it: every component for both Windows platforms (a leg must take
    each from the right one), the manifest listing them all."""

    def __init__(
        self,
        server: LocalServer,
        *,
        files: Mapping[tuple[str, str], Mapping[str, bytes | str]] | None = None,
        replace: Mapping[tuple[str, str], bytes] | None = None,
    ) -> None:
        """``files``: another content for (component, platform)'s archive, listed as it is; ``replace``: bytes
        sent instead of an archive the manifest lists as made."""
        self.server = server
        self.archives: dict[tuple[str, str], bytes] = {}
        for component, version in CROSS_VERSIONS.items():
            for platform in (HOST_PLATFORM, TARGET_PLATFORM):
                content = (files or {}).get((component, platform)) or windows_component_files(
                    component, platform
                )
                self.archives[(component, platform)] = make_zip_archive(component, version, platform, content)
        data: dict[str, object] = {"release_date": "2026-09-09", "release_label": CROSS_RELEASE,
                                   "release_product": "cuda"}  # fmt: skip
        for component, version in CROSS_VERSIONS.items():
            entry: dict[str, object] = {
                "name": component, "license": "CCCL EULA" if component == "cccl" else "CUDA Toolkit",
                "license_path": f"{component}/LICENSE.txt", "version": version,
            }  # fmt: skip
            for platform in (HOST_PLATFORM, TARGET_PLATFORM):
                blob = self.archives[(component, platform)]
                entry[platform] = {"relative_path": zip_path(component, version, platform),
                                   "sha256": hashlib.sha256(blob).hexdigest(), "md5": hashlib.md5(blob).hexdigest(),
                                   "size": str(len(blob))}  # fmt: skip
            data[component] = entry
        self.manifest = json.dumps(data, indent=4).encode()
        # What the server sends: the listed archives, or a test's replacement for one (the manifest still lists
        # the original).
        self.archives.update(replace or {})
        server.route(f"/redist/{CROSS_MANIFEST}", Response(body=self.manifest))
        for (component, platform), blob in self.archives.items():
            server.route(self.path_of(component, platform), Response(body=blob))

    @property
    def url(self) -> str:
        return self.server.url("/redist/")

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.manifest).hexdigest()

    def path_of(self, component: str, platform: str) -> str:
        return f"/redist/{zip_path(component, CROSS_VERSIONS[component], platform)}"

    def toml(self, *, sha256: str | None = None) -> str:
        """``[toolchains."cuda-13.4"]`` as the shipped matrix declares it, served from here."""
        listed = ", ".join(f'"{c}"' for c in CROSS_VERSIONS)
        host = ", ".join(f'"{c}"' for c in HOST_COMPONENTS)
        return (
            f'[toolchains."cuda-13.4"]\nversion = "{CROSS_VERSIONS["cuda_nvcc"]}"\n\n'
            f'[toolchains."cuda-13.4".redist]\nurl = "{self.url}"\nmanifest = "{CROSS_MANIFEST}"\n'
            f'sha256 = "{sha256 or self.sha256}"\ncomponents = [{listed}]\n'
            f'host_platform = "{HOST_PLATFORM}"\nhost_components = [{host}]\n'
        )
