"""The driver's link stub in the pinned CUDA toolkit, and check-bundle's stand-in driver, with real tools.

The toolkit is installed from the pinned wheels (the download cache of the
test cache, ``~/.cache/llama-pipeline-tests/downloads``) into this module's
folder: editing its stub must not touch the install other tests build with.
A program linking ``CUDA::cuda_driver`` (llama.cpp's ggml-cuda does) must
configure and link against the stub, need ``libcuda.so.1`` and, on this
machine without an NVIDIA driver, run against the stand-in check-bundle
makes: every call answers "no device".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.bundle.driver_standin import driver_for_smoke, imported_driver_symbols, system_has_driver
from pipeline.bundle.elfdeps import read_elf
from pipeline.bundle.smoke_process import scrubbed_env
from pipeline.inputs.matrix import load_matrix
from pipeline.toolchain.cuda_wheels import install_cuda_wheels
from pipeline.toolchain.toolchain import ToolchainRequest
from pipeline.util.fsutil import file_digest
from scripts.workload.llama_sdist import e2e_cache_root
from tests.support.cuda_project import write_cuda_project
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.real_tree_matrix import shipped_cuda_pins

pytestmark = pytest.mark.integration

SHIPPED = load_matrix(ROOT / "matrix.toml")
VERSION = "13.2.86"


def request(toolchains: Path) -> ToolchainRequest:
    return ToolchainRequest(leg=SHIPPED.leg("cuda"), environ=dict(os.environ), pins=SHIPPED.toolchains,
                            download_cache=e2e_cache_root() / "downloads", toolchain_dir=toolchains)  # fmt: skip


def install(toolchains: Path) -> Path:
    assert SHIPPED.toolchains.cuda is not None
    return install_cuda_wheels(SHIPPED.toolchains.cuda, request(toolchains), python=sys.executable)


@pytest.fixture(scope="module")
def toolkit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("toolchains"))


def defined_symbols(library: Path) -> set[str]:
    """The library's exported functions, as binutils' nm lists them."""
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    )
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def test_the_toolkit_from_the_wheels_has_a_driver_link_stub(toolkit: Path) -> None:
    stub = toolkit / "lib" / "stubs" / "libcuda.so"
    assert read_elf(stub).soname == "libcuda.so.1"
    # Names as a program compiled against this cuda.h imports them: declared, #define-renamed, per-thread.
    assert {"cuInit", "cuMemCreate", "cuMemAddressReserve", "cuMemAlloc_v2", "cuMemcpyHtoD_v2_ptds",
            "cuGetProcAddress_v2", "cuDeviceGetAttribute"} <= defined_symbols(stub)  # fmt: skip
    # Part of the verified install: the marker names it with its digest.
    marker = json.loads((toolkit.parents[1] / ".pipeline-install.json").read_text())
    assert marker["files"]["nvidia/cu13/lib/stubs/libcuda.so"]


@pytest.mark.skipif(
    system_has_driver(scrubbed_env(Path("/nonexistent"))), reason="this machine has an NVIDIA driver"
)
def test_a_program_linking_the_driver_builds_from_the_wheels_and_runs_against_the_standin(
    toolkit: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    project = write_cuda_project(ws / "project")
    (project / "src" / "main.cpp").write_text(
        textwrap.dedent("""\
        #include <cuda.h>
        #include <cuda_runtime_api.h>
        #include <cstdio>
        int main() {
            int count = -1;
            int runtime = (int) cudaGetDeviceCount(&count);
            std::printf("cuInit=%d cudaGetDeviceCount=%d (%s)\\n", (int) cuInit(0), runtime,
                        cudaGetErrorString((cudaError_t) runtime));
            return 0;
        }
        """)
    )
    with (project / "CMakeLists.txt").open("a") as fh:
        # What ggml-cuda links: without the stub, FindCUDAToolkit makes no CUDA::cuda_driver.
        fh.write(
            "find_package(CUDAToolkit REQUIRED)\nadd_executable(app src/main.cpp)\n"
            "target_link_libraries(app PRIVATE kernels CUDA::cudart CUDA::cuda_driver)\n"
        )
    (ws / "matrix.toml").write_text(
        '[cmake]\nargs = ["-DCMAKE_BUILD_TYPE=Release"]\n\n'
        + shipped_cuda_pins()
        + '\n[legs.cuda]\nbackend = "cuda"\nos = "linux"\ncuda_architectures = ["89"]\n'
    )
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if "cuda" not in p.lower())
    env = {"PATH": path, "PIPELINE_DOWNLOAD_CACHE": str(e2e_cache_root() / "downloads"),
           "PIPELINE_TOOLCHAIN_DIR": str(toolkit.parents[2])}  # fmt: skip
    run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cuda",
            "--source",
            str(project),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "ccache"),
            "--no-bundle",
        ],
        env=env,
        check=True,
    )
    app = ws / "out" / "cuda" / "build" / "app"
    assert "libcuda.so.1" in read_elf(app).needed
    assert "cuInit" in imported_driver_symbols([app])

    # No driver here: the program cannot start...
    home = tmp_path / "home"
    bare = subprocess.run([str(app)], env=scrubbed_env(home), capture_output=True, text=True, check=False)
    assert bare.returncode == 127 and "libcuda.so.1" in bare.stderr, bare
    # ...and with check-bundle's stand-in, in a folder of its own, every call says "no device".
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "app").write_bytes(app.read_bytes())
    (bundle / "libcudart.so.13").symlink_to(toolkit / "lib" / "libcudart.so.13")
    driver = driver_for_smoke(bundle, tmp_path / "driver", scrubbed_env(home))
    assert driver.needed_by == ("app",) and driver.problem is None
    assert driver.library_dir == tmp_path / "driver"
    assert sorted(p.name for p in driver.library_dir.iterdir()) == ["libcuda.so.1"]
    ran = subprocess.run([str(app)], env=scrubbed_env(home, driver.env), capture_output=True, text=True,
                         check=False)  # fmt: skip
    # CUDA_ERROR_NO_DEVICE from the driver API, cudaErrorNoDevice (100) from the runtime (cuda.h, driver_types.h).
    assert ran.stdout.strip() == "cuInit=100 cudaGetDeviceCount=100 (no CUDA-capable device is detected)", ran


def test_an_edited_stub_and_a_missing_header_are_installed_again(toolkit: Path) -> None:
    # The module's own install: the repair leaves it as it was made.
    toolchains, tree = toolkit.parents[2], toolkit
    stub, header = tree / "lib" / "stubs" / "libcuda.so", tree / "include" / "cuda.h"
    made = {path: file_digest(path)[1] for path in (stub, header)}
    with stub.open("ab") as fh:
        fh.write(b"\0")
    header.unlink()
    assert install(toolchains) == tree
    assert {path: file_digest(path)[1] for path in (stub, header)} == made
