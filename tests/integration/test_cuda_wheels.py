"""The cuda leg with the toolkit from the pinned wheels alone.

No CUDA_PATH, no /usr/local/cuda on PATH: the record must name the nvcc the
pipeline installed, the program must link the wheels' libcudart/libcublas
through the unversioned links the installer adds, and the cache key must
carry the exact CUDA version. The wheels (about 560 MB) are downloaded once
into ``~/.cache/llama-pipeline-tests/downloads`` and kept across runs on one
machine; the install itself (about 1 GB) is redone in the test's folder.
Measured here (2 shared cores): cold, nothing cached, 24 s; with the download
cache warm, 16 s (the install and the build).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import time
from pathlib import Path

from tests.integration.conftest import ROOT, run_pipeline
from tests.integration.test_cuda_leg import write_cuda_project

DOWNLOADS = Path.home() / ".cache" / "llama-pipeline-tests" / "downloads"


def pins_of_repo_matrix() -> str:
    """The [toolchains.cuda] tables of the repository's matrix.toml, as text."""
    text = (ROOT / "matrix.toml").read_text()
    start = text.index("[toolchains.cuda]")
    end = text.index("\n[legs.", start)
    return text[start:end]


def clean_env(tmp: Path) -> dict[str, str]:
    """The environment without any system CUDA: no CUDA_PATH, nothing CUDA on PATH."""
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if "cuda" not in p.lower())
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA")}
    env.update(PATH=path, PIPELINE_DOWNLOAD_CACHE=str(DOWNLOADS), PIPELINE_TOOLCHAIN_DIR=str(tmp / "toolchains"))
    return env


def test_cuda_leg_builds_with_the_wheel_toolkit_alone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    project = write_cuda_project(ws / "project")
    # An executable that links the runtime and cuBLAS: FindCUDAToolkit must find
    # them in the wheel tree through the unversioned links.
    (project / "src" / "main.cpp").write_text(
        '#include <cuda_runtime_api.h>\n#include <cublas_v2.h>\n#include <cstdio>\n'
        "int main() { int v = 0; cudaRuntimeGetVersion(&v); cublasHandle_t h;\n"
        ' std::printf("%d %d\\n", v, (int)cublasCreate(&h)); return 0; }\n'
    )
    with (project / "CMakeLists.txt").open("a") as fh:
        fh.write(textwrap.dedent("""\
            find_package(CUDAToolkit REQUIRED)
            add_executable(app src/main.cpp)
            target_link_libraries(app PRIVATE kernels CUDA::cudart CUDA::cublas)
            """))
    (ws / "matrix.toml").write_text(
        '[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n' + pins_of_repo_matrix()
        + '\n[legs.cuda]\nbackend = "cuda"\nos = "linux"\ncuda_architectures = ["75", "86"]\n'
    )
    env = clean_env(tmp_path)
    started = time.monotonic()
    first = run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), "build", "cuda", "--source", str(project),
         "--out", str(ws / "out"), "--cache-dir", str(tmp_path / "ccache"), "--no-bundle"],
        env=env, check=True,
    )  # fmt: skip
    print(f"cuda wheel leg: {time.monotonic() - started:.1f}s")
    assert "cuda: installed CUDA" in first.stdout.replace("\n", " ")
    pinned = re.search(r'\[toolchains\.cuda\]\s*(?:#[^\n]*\n)*\s*version = "([^"]+)"', pins_of_repo_matrix())
    assert pinned is not None
    version = pinned.group(1)
    record = json.loads((ws / "out" / "cuda" / "record.json").read_text())
    tc = record["toolchain"]
    tree = tmp_path / "toolchains" / f"cuda-{version}-linux" / "nvidia" / "cu13"
    # The nvcc that ran is the installed one, at the pinned version.
    assert tc["compilers"]["CUDA"] == f"nvcc {version} ({tree / 'bin' / 'nvcc'})"
    assert tc["identity"].startswith(f"cuda-{version}-")
    assert tc["details"]["source"] == f"wheels {version}"
    cache = (ws / "out" / "cuda" / "build" / "CMakeCache.txt").read_text()
    assert f"CMAKE_CUDA_COMPILER:STRING={tree / 'bin' / 'nvcc'}" in cache
    assert "/usr/local/cuda" not in cache
    # The program links the wheels' libraries (read back with readelf, not from our code).
    dynamic = subprocess.run(["readelf", "-d", str(ws / "out" / "cuda" / "build" / "app")],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "[libcudart.so.13]" in dynamic and "[libcublas.so.13]" in dynamic
    # The cache key carries the exact CUDA version.
    key = run_pipeline(["--matrix", str(ws / "matrix.toml"), "cache-key", "cuda", "--tag", "b1", "--json"],
                       env=env, check=True)  # fmt: skip
    assert json.loads(key.stdout)["key"].startswith(f"llama-ccache--cuda--cuda-{version}-"), key.stdout

    # A second run reuses the install: nothing downloaded or extracted.
    again = run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), "build", "cuda", "--source", str(project),
         "--out", str(ws / "out"), "--cache-dir", str(tmp_path / "ccache"), "--no-bundle"],
        env=env, check=True,
    )  # fmt: skip
    assert f"cuda: reused CUDA {version} from 7 wheels" in again.stdout.replace("\n", " ")
