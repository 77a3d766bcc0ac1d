"""The vulkan leg with a pinned SDK archive served on 127.0.0.1.

The archive has the shape of LunarG's Linux SDK tarball
(``<version>/x86_64/{bin,include,lib}``, tar.xz) and is built from this
machine's glslc, Vulkan headers and loader, with one change: the headers say
``VK_HEADER_VERSION 998``, so the program proves which headers it was
compiled against.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.support.httpserver import LocalServer, Response
from tests.support.pipeline_cli import run_pipeline
from tests.support.vulkan_project import COMPILATIONS, write_vulkan_project

SDK_VERSION = "1.3.998.0"
FAKE_PATCH = "998"


def sdk_archive(path: Path) -> Path:
    """A LunarG-shaped SDK tarball from the machine's glslc, headers and loader."""
    top = f"{SDK_VERSION}/x86_64"
    glslc = Path(shutil.which("glslc") or "/usr/bin/glslc")
    loader = Path("/usr/lib/x86_64-linux-gnu/libvulkan.so.1").resolve()

    def add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, 1_700_000_000
        tar.addfile(info, io.BytesIO(data))

    def add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = tarfile.SYMTYPE, target
        tar.addfile(info)

    with tarfile.open(path, "w:xz") as tar:
        add_bytes(tar, f"{SDK_VERSION}/setup-env.sh", b'export VULKAN_SDK="$(dirname "$0")/x86_64"\n', 0o755)
        add_bytes(tar, f"{top}/bin/glslc", glslc.read_bytes(), 0o755)
        for folder in ("vulkan", "vk_video"):
            for header in sorted(Path("/usr/include", folder).glob("*.h")):
                data = header.read_bytes()
                if header.name == "vulkan_core.h":
                    data = data.replace(
                        b"#define VK_HEADER_VERSION 239", f"#define VK_HEADER_VERSION {FAKE_PATCH}".encode()
                    )
                add_bytes(tar, f"{top}/include/{folder}/{header.name}", data)
        add_bytes(tar, f"{top}/lib/{loader.name}", loader.read_bytes(), 0o755)
        add_link(tar, f"{top}/lib/libvulkan.so.1", loader.name)
        add_link(tar, f"{top}/lib/libvulkan.so", "libvulkan.so.1")
    return path


def test_vulkan_leg_installs_the_pinned_sdk_and_builds_with_it(tmp_path: Path) -> None:
    archive = sdk_archive(tmp_path / f"vulkansdk-linux-x86_64-{SDK_VERSION}.tar.xz")
    body = archive.read_bytes()
    sha = hashlib.sha256(body).hexdigest()
    ws = tmp_path / "ws"
    write_vulkan_project(ws / "project")
    env = {
        "PIPELINE_DOWNLOAD_CACHE": str(tmp_path / "downloads"),
        "PIPELINE_TOOLCHAIN_DIR": str(tmp_path / "tc"),
    }
    args = ["--matrix", str(ws / "matrix.toml"), "build", "vulkan", "--source", str(ws / "project"),
            "--out", str(ws / "out"), "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle"]  # fmt: skip
    with LocalServer() as srv:
        path = f"/sdk/{SDK_VERSION}/linux/{archive.name}"
        srv.route(path, Response(body=body))
        (ws / "matrix.toml").write_text(
            '[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n[toolchains.vulkan.linux]\n'
            f'url = "{srv.url(path)}"\nsha256 = "{sha}"\nversion = "{SDK_VERSION}"\nroot = "x86_64"\n\n'
            '[legs.vulkan]\nbackend = "vulkan"\nos = "linux"\n'
        )
        first = run_pipeline(args, env={**env, "VULKAN_SDK": ""}, check=True)
        assert f"vulkan: installed SDK {SDK_VERSION}" in first.stdout.replace("\n", " ")
        second = run_pipeline(args, env={**env, "VULKAN_SDK": ""}, check=True)
        assert f"vulkan: reused SDK {SDK_VERSION}" in second.stdout.replace("\n", " ")
        # Downloaded once, installed once.
        assert srv.hits(path) == 1

    sdk = tmp_path / "tc" / f"vulkan-sdk-{SDK_VERSION}-linux" / "x86_64"
    record = json.loads((ws / "out" / "vulkan" / "record.json").read_text())
    tc = record["toolchain"]
    assert tc["compilers"]["GLSL"].endswith(f"({sdk / 'bin' / 'glslc'})")
    assert tc["details"]["include_dir"] == str(sdk / "include")
    assert tc["details"]["vulkan_headers"].endswith(f".{FAKE_PATCH}")
    # Keyed on the pin (known before the install: cache-key installs nothing), its tools in the details.
    assert tc["identity"].startswith(f"vulkan-sdk-{SDK_VERSION}-{sha[:8]}-")
    assert tc["details"]["glslc"]
    # The second build hit the cache: the installed SDK was not re-extracted.
    assert (record["ccache"]["hits"], record["ccache"]["misses"]) == (COMPILATIONS, 0)
    cache = (ws / "out" / "vulkan" / "build" / "CMakeCache.txt").read_text()
    assert f"Vulkan_LIBRARY:FILEPATH={sdk / 'lib' / 'libvulkan.so'}" in cache
    out = subprocess.run([str(ws / "out" / "vulkan" / "build" / "vkdemo")], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert f"header {FAKE_PATCH} " in out and "magic 07230203" in out
