"""Real HIP device code through the ROCm leg, with ``--rocm-path`` at Debian's HIP install.

Debian's ``hipcc`` + ``rocm-device-libs`` live under ``/usr``: clang under
``/usr/lib/llvm-<N>/bin``, the device libraries under
``/usr/lib/<triplet>/amdgcn/bitcode`` (Debian 12; sid keeps them in clang's
resource folder, see test_sid_rocm.py), HIP's CMake package under
``/usr/lib/<triplet>/cmake/hip``. ``gfx1030`` because ROCm 5.2's device
libraries lack gfx1100; ``HIP_PLATFORM=amd`` because this machine also has nvcc.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.support.hip_probe import cmake_says_hip_version
from tests.support.hip_project import COMPILATIONS, KERNELS, write_hip_project
from tests.support.pipeline_cli import build_leg, run_pipeline
from tests.support.projects import write_matrix

LEG = "rocm-linux-gfx1030"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write_hip_project(ws / "project")
    write_matrix(
        ws / "matrix.toml",
        extra=f"""
[legs.{LEG}]
backend = "rocm"
os = "linux"
family = "gfx103X-all"
targets = ["gfx1030"]
cmake_args = ["-DGGML_HIP=ON"]
""",
    )
    return ws


def test_hip_kernels_for_gfx1030_second_build_hits(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    cache = tmp_path / "ccache"

    def build() -> dict:
        return build_leg(ws, LEG, cache, "--rocm-path", "/usr")

    first = build()
    tc = first["toolchain"]
    # The installed HIP's version (what CMake's find_package(hip) hands a tree: 5.2.0 in Debian 12's
    # hip-config-version.cmake) and the digest of the compiler and the device libraries.
    assert re.fullmatch(
        rf"rocm-hip{re.escape(cmake_says_hip_version(tmp_path))}-[0-9a-f]{{12}}", tc["identity"]
    )
    assert tc["details"]["origin"] == "rocm-path"
    # The folder Debian's device-library package installed (dpkg says so, not the pipeline).
    owner = subprocess.run(
        ["dpkg", "-S", f"{tc['details']['device_libs']}/ockl.bc"], capture_output=True, text=True
    )
    assert owner.stdout.split(":")[0] == "rocm-device-libs", owner
    assert tc["details"]["cmake_prefix"] == "/usr"
    assert tc["details"]["hip_version_from"] == "/usr/lib/x86_64-linux-gnu/cmake/hip/hip-config-version.cmake"
    assert "-DGPU_TARGETS=gfx1030" in first["cmake_args"]
    assert any(a.startswith("-DCMAKE_HIP_COMPILER=/usr/lib/llvm-") for a in first["cmake_args"])
    assert any(a.startswith("-DCMAKE_HIP_COMPILER_LAUNCHER=") for a in first["cmake_args"])
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)
    objects = sorted((ws / "out" / LEG / "build").rglob("kernel*.hip.o"))
    assert len(objects) == KERNELS
    # Device code for the leg's target is inside each object's offload bundle.
    assert all(b"gfx1030" in obj.read_bytes() for obj in objects)

    second = build()
    assert second["toolchain"]["identity"] == tc["identity"]
    assert second["ccache"]["hits"] == COMPILATIONS
    assert second["ccache"]["misses"] == 0

    # cache-key names the same toolchain for the same install, by flag or variable, with TheRock's index out of
    # reach (before, it fetched the index, and named TheRock's build: a key no build of this install hits).
    offline = {"PIPELINE_ROCM_INDEX_URL": "http://127.0.0.1:9/index/", "PIPELINE_HTTP_BACKOFF": "0"}
    key = ["--matrix", str(ws / "matrix.toml"), "cache-key", LEG, "--tag", "b7000", "--json"]
    for extra, env in ((["--rocm-path", "/usr"], {}), ([], {"PIPELINE_ROCM_PATH": "/usr"})):
        proc = run_pipeline([*key, *extra], env={**offline, **env})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert json.loads(proc.stdout)["key"] == f"llama-ccache--{LEG}--{tc['identity']}--b7000", proc.stdout


def test_the_compilers_temporary_files_stay_in_the_build_folder(tmp_path: Path) -> None:
    """Debian 12's clang leaves an empty folder per HIP input (``kernel0-1a2b3c``, ``CMakeHIPCompilerId-...``)
    in the temporary folder on every compile, and an interrupted nvcc or clang leaves its intermediates
    there: a developer's /tmp would fill with one set per build. The build's TMPDIR is the build folder's
    own ``tmp``, which goes with the build folder."""
    ws = _workspace(tmp_path)
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    build_leg(ws, LEG, tmp_path / "ccache", "--rocm-path", "/usr", env={"TMPDIR": str(system_tmp)})
    assert sorted(p.name for p in system_tmp.iterdir()) == []
    assert (ws / "out" / LEG / "build" / "tmp").is_dir()
