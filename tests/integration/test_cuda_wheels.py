"""The cuda leg with the toolkit from the pinned wheels alone.

No CUDA_PATH, no /usr/local/cuda on PATH: the record must name the nvcc the
pipeline installed, the program must link the wheels' libcudart/libcublas
through the unversioned links the installer adds, and the cache key must
carry the exact CUDA version. The wheels (about 560 MB) are downloaded once
into ``~/.cache/llama-pipeline-tests/downloads`` and kept across runs on one
machine; the install itself (about 1 GB) is redone in the test's folder.
On a 2-core machine the whole test takes about 40 s cold (nothing
cached; its first build, wheels fetched and installed, 27 s) and 32 s with the
download cache warm (first build 20 s).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from pipeline.inputs.leg import Leg
from pipeline.toolchain.cuda_nvcc import cuda_toolchain
from tests.support.cuda_project import write_cuda_project
from tests.support.pipeline_cli import ROOT, run_pipeline

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
    env.update(
        PATH=path, PIPELINE_DOWNLOAD_CACHE=str(DOWNLOADS), PIPELINE_TOOLCHAIN_DIR=str(tmp / "toolchains")
    )
    return env


def test_cuda_leg_builds_with_the_wheel_toolkit_alone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    project = write_cuda_project(ws / "project")
    # An executable that links the runtime and cuBLAS: FindCUDAToolkit must find
    # them in the wheel tree through the unversioned links.
    (project / "src" / "main.cpp").write_text(
        "#include <cuda_runtime_api.h>\n#include <cublas_v2.h>\n#include <cstdio>\n"
        "int main() { int v = 0; cudaRuntimeGetVersion(&v); cublasHandle_t h;\n"
        ' std::printf("%d %d\\n", v, (int)cublasCreate(&h)); return 0; }\n'
    )
    with (project / "CMakeLists.txt").open("a") as fh:
        fh.write(
            textwrap.dedent("""\
            find_package(CUDAToolkit REQUIRED)
            add_executable(app src/main.cpp)
            target_link_libraries(app PRIVATE kernels CUDA::cudart CUDA::cublas)
            """)
        )
    (ws / "matrix.toml").write_text(
        '[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n'
        + pins_of_repo_matrix()
        + '\n[legs.cuda]\nbackend = "cuda"\nos = "linux"\ncuda_architectures = ["75", "86"]\n'
    )
    env = clean_env(tmp_path)
    started = time.monotonic()
    first = run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), "build", "cuda", "--source", str(project),
         "--out", str(ws / "out"), "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle"],
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
    assert tc["details"]["origin"] == f"wheels {version}"
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
         "--out", str(ws / "out"), "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle"],
        env=env, check=True,
    )  # fmt: skip
    assert f"cuda: reused CUDA {version} from 7 wheels" in again.stdout.replace("\n", " ")


def cuda_matrix(ws: Path, pins: str) -> Path:
    path = ws / "matrix.toml"
    path.write_text(
        '[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n'
        + pins
        + '\n[legs.cuda]\nbackend = "cuda"\nos = "linux"\ncuda_architectures = ["75"]\n'
    )
    return path


def test_cuda_path_uses_that_install_and_fetches_no_wheel(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    project = write_cuda_project(ws / "project")
    # Pins no index can serve: touching them would fail the build.
    pins = ('[toolchains.cuda]\nversion = "13.2.86"\n[[toolchains.cuda.wheels]]\nname = "not-a-real-wheel"\n'
            f'version = "1.0"\nsha256.linux = "{"0" * 64}"\n')  # fmt: skip
    matrix = cuda_matrix(ws, pins)
    env = {**clean_env(tmp_path), "PIP_NO_INDEX": "1"}
    run_pipeline(
        ["--matrix", str(matrix), "build", "cuda", "--source", str(project), "--out", str(ws / "out"),
         "--ccache-dir", str(tmp_path / "ccache"), "--no-bundle", "--cuda-path", "/usr/local/cuda"],
        env=env, check=True,
    )  # fmt: skip
    tc = json.loads((ws / "out" / "cuda" / "record.json").read_text())["toolchain"]
    assert tc["details"]["origin"] == "cuda-path"
    assert tc["compilers"]["CUDA"].endswith("(/usr/local/cuda/bin/nvcc)")
    assert not (tmp_path / "toolchains").exists()


def test_a_bad_cuda_path_is_one_clear_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    project = write_cuda_project(ws / "project")
    matrix = cuda_matrix(ws, "")
    proc = run_pipeline(["--matrix", str(matrix), "build", "cuda", "--source", str(project), "--out",
                         str(ws / "out"), "--cuda-path", str(tmp_path / "nowhere"), "--no-bundle"])  # fmt: skip
    assert proc.returncode == 7
    assert f"--cuda-path {tmp_path / 'nowhere'}: no bin/nvcc there" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_wheel_that_does_not_match_its_pin_installs_nothing(tmp_path: Path) -> None:
    """pip serves the wheel from a local folder (PIP_FIND_LINKS): the real pip, no network."""
    import zipfile

    links = tmp_path / "links"
    links.mkdir()
    with zipfile.ZipFile(links / "fake_cuda-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("nvidia/cu13/bin/nvcc", "#!/bin/sh\n")
        zf.writestr(
            "fake_cuda-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fake-cuda\nVersion: 1.0\n"
        )
        zf.writestr(
            "fake_cuda-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr("fake_cuda-1.0.dist-info/RECORD", "")
    ws = tmp_path / "ws"
    project = write_cuda_project(ws / "project")
    wrong = "1" * 64
    pins = ('[toolchains.cuda]\nversion = "13.2.86"\n[[toolchains.cuda.wheels]]\nname = "fake-cuda"\n'
            f'version = "1.0"\nsha256.linux = "{wrong}"\n')  # fmt: skip
    matrix = cuda_matrix(ws, pins)
    env = {**clean_env(tmp_path), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links),
           "PIPELINE_DOWNLOAD_CACHE": str(tmp_path / "downloads")}  # fmt: skip
    proc = run_pipeline(["--matrix", str(matrix), "build", "cuda", "--source", str(project), "--out",
                         str(ws / "out"), "--no-bundle"], env=env)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 7, out
    assert f"sha256 mismatch for fake-cuda==1.0 (fake_cuda-1.0-py3-none-any.whl): expected {wrong}" in out
    assert "Traceback" not in out
    # Nothing installed, nothing cached that could vouch for the wrong file later.
    assert not list((tmp_path / "toolchains").glob("cuda-*"))
    assert not list((tmp_path / "downloads").rglob("*.whl"))


def _debian_cuda(root: Path, *, with_choice: bool) -> Path:
    """A toolkit in Debian's layout: ``bin/nvcc`` a script (as Debian's) and, optionally, the toolkit's g++."""
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    nvcc.chmod(0o755)
    if with_choice:
        chosen = root / "lib" / "nvidia-cuda-toolkit" / "bin" / "g++"
        chosen.parent.mkdir(parents=True)
        # Debian's picks g++-13 when installed; this one runs the machine's g++ (its version is read below).
        chosen.write_text('#!/bin/sh\nexec g++ "$@"\n')
        chosen.chmod(0o755)
    return root


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ on PATH")
def test_debians_toolkit_names_nvccs_host_compiler_and_the_identity_carries_it(tmp_path: Path) -> None:
    """Before, -ccbin was the system's g++ (trixie's 14, which CUDA 12.4's nvcc refuses) whatever Debian chose."""
    leg = Leg(name="cuda-12", backend="cuda", os="linux", runner="ubuntu-22.04", cuda_architectures=("89",))
    env = {"PATH": os.environ["PATH"], "CXX": "g++", "CC": "gcc"}
    root = _debian_cuda(tmp_path / "debian", with_choice=True)
    toolchain = cuda_toolchain(leg, env, root=root, origin="cuda-path")
    chosen = root / "lib/nvidia-cuda-toolkit/bin/g++"
    assert f"-DCMAKE_CUDA_HOST_COMPILER={chosen}" in toolchain.cmake_args
    version = subprocess.run(
        ["g++", "-dumpfullversion"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert toolchain.details["cuda_host_compiler"] == f"gcc-{version}"
    assert toolchain.identity.endswith(f"-ccbin-gcc-{version}") and toolchain.identity.startswith(
        "cuda-12.4.131-"
    )
    # Without the toolkit's choice, nvcc drives the leg's C++ compiler, as before.
    plain = cuda_toolchain(
        leg, env, root=_debian_cuda(tmp_path / "plain", with_choice=False), origin="cuda-path"
    )
    assert f"-DCMAKE_CUDA_HOST_COMPILER={shutil.which('g++')}" in plain.cmake_args
    assert "cuda_host_compiler" not in plain.details and "ccbin" not in plain.identity
