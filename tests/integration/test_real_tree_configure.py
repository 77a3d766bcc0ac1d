"""The legs whose reduced real-tree build runs in ``nox -s e2e``, checked in the suite with real tools, cheaply.

The cuda and cpu-arm64 legs' reduced builds of the real tree
(tests/integration/test_real_tree_cuda.py, test_real_tree_arm64.py) are
past the suite's cold budget (docs/testing.md, "Which legs run where"), so
they run in ``nox -s e2e``. What stays here, each through the pipeline as a
leg runs it, with matrix.toml's shipped flags plus the one CI reduction
(``reduced_matrix``):

- the real llama.cpp tree configured (``build --configure-only``) for the
  cuda leg by the pinned wheels' nvcc, and for cpu-arm64 by Debian's
  aarch64 cross GCC: every compile step Ninja would run, read back from
  ``ninja -t commands``;
- a generated CUDA project built by the wheels' nvcc with the cuda leg's
  flags, then again in another folder into the same ccache: every compile
  a hit.

The wheels' install with its own checks and the stand-in driver are
tests/integration/test_cuda_wheels.py and test_cuda_driver_stub.py; the
cross compiler's ELF files and check-bundle's aarch64 rules are
test_arm64_bundle_rules.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scripts.workload.llama_sdist import e2e_cache_root, fetch_sdist, standalone_tree
from scripts.workload.reduction import (
    CUDA_ARCHITECTURE,
    SHIPPED_MATRIX,
    reduce_leg_flags,
    reduced_matrix,
    shipped_flags,
)
from scripts.workload.trixie_vulkan import VERSION as VULKAN_HEADERS
from scripts.workload.trixie_vulkan import SdkUnavailable, trixie_vulkan_sdk
from tests.support.cuda_project import COMPILATIONS as PROJECT_COMPILATIONS
from tests.support.cuda_project import KERNELS, write_cuda_project
from tests.support.pipeline_cli import no_cuda_env, run_pipeline
from tests.support.real_tree_matrix import REDUCED_CUDA_COMPILATIONS

pytestmark = pytest.mark.integration

# The pinned CUDA toolkit of matrix.toml's [toolchains.cuda].
CUDA_VERSION = "13.2.86"
# Compile steps of the reduced cpu-arm64 leg: `ninja -t commands | grep -c ' -c '` on the configured tree.
ARM64_COMPILATIONS = 132
# Compile steps of the reduced vulkan leg: `ninja -t commands | grep -c ' -c '` on the configured tree.
VULKAN_COMPILATIONS = (
    291  # the reduced vulkan build's ccache calls too (docs/testing.md: 131 of its 291 shared)
)
# One leg's configure on 2 cores: the CUDA compiler's checks run nvcc a few times.
CONFIGURE_TIMEOUT = 1800
READS_THE_SDIST = True


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist's llama.cpp, a repository of its own (``--source`` builds it)."""
    return standalone_tree(fetch_sdist(e2e_cache_root()), tmp_path_factory.mktemp("sdist") / "llama.cpp")


def _matrix(tmp: Path, leg: str) -> Path:
    matrix = tmp / "matrix.toml"
    matrix.write_text(reduced_matrix(SHIPPED_MATRIX.read_text(encoding="utf-8"), legs=[leg],
                                     source_repo="https://example.invalid/llama.cpp.git"), encoding="utf-8")  # fmt: skip
    return matrix


def _build(
    leg: str,
    matrix: Path,
    source: Path,
    out: Path,
    cache: Path,
    *extra: str,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    proc = run_pipeline(["--matrix", str(matrix), "build", leg, "--source", str(source), "--out", str(out),
                         "--ccache-dir", str(cache), *extra],
                        env={"PIPELINE_CACHE_HOME": str(out.parent / "home"), **(env or {})},
                        timeout=CONFIGURE_TIMEOUT)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    record: dict[str, Any] = json.loads((out / leg / "record.json").read_text())
    return record


def _compiles(build: Path) -> list[str]:
    """Every compile step of the configured build, as Ninja (the pipeline's own, on PATH) would run it."""
    commands = subprocess.run(["ninja", "-C", str(build), "-t", "commands"], capture_output=True, text=True,
                              check=True).stdout.splitlines()  # fmt: skip
    return [c for c in commands if " -c " in c]


def _declared_in(args: list[str], leg: str) -> None:
    shared, shipped = shipped_flags(leg)
    declared = [*shared, *reduce_leg_flags(shipped)]
    assert any(args[i : i + len(declared)] == declared for i in range(len(args))), (declared, args)


def _nothing_compiled(build: Path) -> None:
    assert not [p for p in build.rglob("*.o") if "CMakeFiles/CMakeScratch" not in p.as_posix()
                and "/CompilerId" not in p.as_posix()], "configure-only compiled objects"  # fmt: skip
    assert not list(build.rglob("*.so")), "configure-only linked libraries"


def test_the_real_tree_configures_for_the_cuda_leg_with_the_pinned_wheels(tree: Path, tmp_path: Path) -> None:
    record = _build(
        "cuda",
        _matrix(tmp_path, "cuda"),
        tree,
        tmp_path / "out",
        tmp_path / "ccache",
        "--configure-only",
        env=no_cuda_env(e2e_cache_root()),
    )
    assert record["status"] == "configured" and record["bundle"] is None, record
    _declared_in(record["cmake_args"], "cuda")
    assert f"-DCMAKE_CUDA_ARCHITECTURES={CUDA_ARCHITECTURE}" in record["cmake_args"]
    toolkit = e2e_cache_root() / "toolchains" / f"cuda-{CUDA_VERSION}-linux" / "nvidia" / "cu13"
    toolchain = record["toolchain"]
    assert toolchain["details"]["origin"] == f"wheels {CUDA_VERSION}", toolchain
    assert toolchain["compilers"]["CUDA"] == f"nvcc {CUDA_VERSION} ({toolkit / 'bin' / 'nvcc'})", toolchain
    build = tmp_path / "out" / "cuda" / "build"
    cache = (build / "CMakeCache.txt").read_text()
    assert (
        f"CMAKE_CUDA_COMPILER:STRING={toolkit / 'bin' / 'nvcc'}" in cache
        or f"CMAKE_CUDA_COMPILER:FILEPATH={toolkit / 'bin' / 'nvcc'}" in cache
    )
    assert "GGML_CUDA:BOOL=ON" in cache
    # Ninja's plan is the reduced leg's: the count the e2e build compiles (its ccache calls).
    compiles = _compiles(build)
    assert len(compiles) == REDUCED_CUDA_COMPILATIONS
    device = [c for c in compiles if re.search(r"/nvcc\s", c)]
    # Every top-level unit of the tree's ggml-cuda, each for the one architecture and no other.
    units = sorted(p.name for p in (tree / "ggml" / "src" / "ggml-cuda").glob("*.cu"))
    assert units and all(
        any(f"ggml-cuda/{unit} " in c or f'ggml-cuda/{unit}"' in c for c in device) for unit in units
    )
    for command in device:
        assert set(re.findall(r"compute_(\d+)", command)) == {CUDA_ARCHITECTURE}, command
    _nothing_compiled(build)


def test_a_cuda_project_built_with_the_shipped_flags_hits_every_unit_in_another_folder(
    tmp_path: Path,
) -> None:
    matrix = _matrix(tmp_path, "cuda")
    cache, records = tmp_path / "ccache", []
    for ws in (tmp_path / "runner", tmp_path / "elsewhere" / "laptop"):
        project = write_cuda_project(ws / "project")
        records.append(
            _build(
                "cuda", matrix, project, ws / "out", cache, "--no-bundle", env=no_cuda_env(e2e_cache_root())
            )
        )
        # The objects are the device code for the one architecture (sm_<N> in the fatbinary).
        objects = sorted((ws / "out" / "cuda" / "build").rglob("kernel*.cu.o"))
        assert len(objects) == KERNELS and all(
            f"sm_{CUDA_ARCHITECTURE}".encode() in o.read_bytes() for o in objects
        )
    cold, warm = records
    _declared_in(cold["cmake_args"], "cuda")
    assert cold["toolchain"]["details"]["origin"] == f"wheels {CUDA_VERSION}"
    version = subprocess.run(
        ["g++", "-dumpfullversion"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert (
        cold["toolchain"]["identity"].startswith(f"cuda-{CUDA_VERSION}-")
        and version in cold["toolchain"]["identity"]
    )
    assert warm["toolchain"]["identity"] == cold["toolchain"]["identity"]
    assert (cold["ccache"]["hits"], cold["ccache"]["misses"]) == (0, PROJECT_COMPILATIONS), cold["ccache"]
    assert (warm["ccache"]["hits"], warm["ccache"]["misses"], warm["ccache"]["hit_rate"]) == (
        PROJECT_COMPILATIONS,
        0,
        1.0,
    ), warm["ccache"]


def _arm64_missing() -> str | None:
    for tool, package in (("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
                          ("aarch64-linux-gnu-g++", "g++-aarch64-linux-gnu")):  # fmt: skip
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian: {package})"
    return None


def test_the_real_tree_configures_for_the_arm64_leg_with_the_cross_compiler(
    tree: Path, tmp_path: Path
) -> None:
    if (reason := _arm64_missing()) is not None:
        pytest.skip(f"the arm64 cross configure needs {reason}")
    record = _build(
        "cpu-arm64",
        _matrix(tmp_path, "cpu-arm64"),
        tree,
        tmp_path / "out",
        tmp_path / "ccache",
        "--configure-only",
    )
    assert record["status"] == "configured" and record["arch"] == "arm64", record
    _declared_in(record["cmake_args"], "cpu-arm64")
    version = subprocess.run(["aarch64-linux-gnu-gcc", "-dumpfullversion"], capture_output=True, text=True,
                             check=True).stdout.strip()  # fmt: skip
    assert record["toolchain"]["identity"] == f"gcc-{version}-aarch64-linux-gnu"
    build = tmp_path / "out" / "cpu-arm64" / "build"
    compiles = _compiles(build)
    assert len(compiles) == ARM64_COMPILATIONS
    # Every compile is the cross compiler's, through ccache; the CPU backend is ggml's ARM code.
    cross = shutil.which("aarch64-linux-gnu-g++")
    assert all(re.search(r"aarch64-linux-gnu-(gcc|g\+\+)(-\d+)?\s", c) for c in compiles), compiles[0]
    assert cross is not None and any("ggml-cpu/arch/arm/" in c for c in compiles)
    assert not any("ggml-cpu/arch/x86/" in c for c in compiles)
    _nothing_compiled(build)


def test_the_real_tree_configures_for_the_vulkan_leg_with_trixies_headers(tree: Path, tmp_path: Path) -> None:
    try:
        sdk = trixie_vulkan_sdk()
    except SdkUnavailable as exc:
        pytest.fail(f"the vulkan configure needs Debian 13's Vulkan headers and loader: {exc}")
    record = _build(
        "vulkan",
        _matrix(tmp_path, "vulkan"),
        tree,
        tmp_path / "out",
        tmp_path / "ccache",
        "--configure-only",
        "--vulkan-sdk",
        str(sdk),
    )
    assert record["status"] == "configured", record
    _declared_in(record["cmake_args"], "vulkan")
    assert record["toolchain"]["details"]["vulkan_headers"] == VULKAN_HEADERS
    build = tmp_path / "out" / "vulkan" / "build"
    cache = (build / "CMakeCache.txt").read_text()
    assert "GGML_VULKAN:BOOL=ON" in cache
    # glslc is the shader cache's launcher in the build folder (pipeline/ccache/glslc_session.py), not glslc itself.
    assert re.search(
        rf"^Vulkan_GLSLC_EXECUTABLE:\w+={re.escape(str(build))}/pipeline-glslc/glslc(-py)?$", cache, re.M
    )
    assert re.search(rf"^Vulkan_INCLUDE_DIR:\w+={re.escape(str(sdk))}/include$", cache, re.M)
    compiles = _compiles(build)
    assert len(compiles) == VULKAN_COMPILATIONS
    assert any("ggml-vulkan/ggml-vulkan.cpp" in c for c in compiles)
    _nothing_compiled(build)
