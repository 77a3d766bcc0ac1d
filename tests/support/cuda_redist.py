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
