"""Real CUDA code compiled by nvcc through the ``cuda`` leg (compile only: no GPU needed)."""

from __future__ import annotations

from pathlib import Path

from tests.support.cuda_project import COMPILATIONS, KERNELS, write_cuda_project
from tests.support.pipeline_cli import build_leg
from tests.support.projects import write_matrix


def test_cuda_kernels_second_build_hits(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_cuda_project(ws / "project")
    write_matrix(
        ws / "matrix.toml",
        extra="""
[legs.cuda]
backend = "cuda"
os = "linux"
cuda_architectures = ["75", "86"]
cmake_args = ["-DGGML_CUDA=ON"]
""",
    )
    cache = tmp_path / "ccache"

    def build() -> dict:
        return build_leg(ws, "cuda", cache)

    first = build()
    tc = first["toolchain"]
    version = tc["details"]["version"]
    assert version.count(".") == 2
    # The identity carries the CUDA version and the host compiler nvcc drives.
    assert tc["identity"] == f"cuda-{version}-{tc['details']['host_compiler']}"
    assert tc["compilers"]["CUDA"].startswith(f"nvcc {version} (")
    assert "-DCMAKE_CUDA_ARCHITECTURES=75;86" in first["cmake_args"]
    assert any(a.startswith("-DCMAKE_CUDA_COMPILER_LAUNCHER=") for a in first["cmake_args"])
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)
    objects = sorted((ws / "out" / "cuda" / "build").rglob("kernel*.cu.o"))
    assert len(objects) == KERNELS
    assert all(b"sm_86" in obj.read_bytes() for obj in objects)

    second = build()
    assert second["toolchain"]["identity"] == tc["identity"]
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)


CUDA_LEG = """
[legs.cuda]
backend = "cuda"
os = "linux"
cuda_architectures = ["75"]
cmake_args = ["-DGGML_CUDA=ON"]
"""


def test_a_warm_cuda_build_in_another_folder_hits_every_cu_unit(tmp_path: Path) -> None:
    """The same project in another workspace (same layout) hits .cu units too.

    nvcc gets its prefix maps as ``-Xcompiler=...``, which ccache hashes as
    written: an absolute folder there made every .cu unit miss elsewhere
    (``reproduce`` of a CUDA nightly was cold). The objects still name no
    folder of either workspace: ``__FILE__`` in a kernel file is mapped.
    """
    cache = tmp_path / "ccache"
    records, workspaces = [], []
    for ws in (tmp_path / "runner" / "ws", tmp_path / "elsewhere" / "laptop" / "ws"):
        write_cuda_project(ws / "project")
        kernel = ws / "project" / "src" / "kernel0.cu"
        kernel.write_text(kernel.read_text() + 'const char* kernel0_where() { return "at " __FILE__; }\n')
        write_matrix(ws / "matrix.toml", extra=CUDA_LEG)
        records.append(build_leg(ws, "cuda", cache))
        workspaces.append(ws)
    cold, warm = records[0]["ccache"], records[1]["ccache"]
    assert (cold["hits"], cold["misses"]) == (0, COMPILATIONS)
    assert (warm["hits"], warm["misses"]) == (COMPILATIONS, 0), warm
    for ws in workspaces:
        (obj,) = (ws / "out" / "cuda" / "build").rglob("kernel0.cu.o")
        data = obj.read_bytes()
        assert b"at ./src/kernel0.cu\x00" in data
        assert str(tmp_path).encode() not in data
