"""The real llama.cpp tree's cuda leg, from the pinned wheels alone, on a machine without a GPU.

The shipped matrix.toml's cuda leg with the one CI reduction of
scripts/workload/reduction.py (programs, CPU variants and one CUDA
architecture, ``CUDA_ARCHITECTURE``; tests/unit/test_tested_flags.py checks
it) and nothing else: its RPC, backend loading and shared flags as shipped,
its toolkit from the pinned wheels (no CUDA_PATH, nothing CUDA on PATH), so
configure needs the driver's link stub the installer makes (FindCUDAToolkit's
``CUDA::cuda_driver``, which ggml-cuda links).

The workflow's path, twice: ``resolve``, ``source``, then ``build cuda`` in
``runner/`` (cold, or warm when the machine's test cache already has the
objects: only its size is asserted), then in ``elsewhere/laptop/`` (every
compilation a hit). Each bundle carries ``libggml-cuda.so`` and the CUDA
runtime its closure finds (libcudart, libcublas, libcublasLt), every file
with an ``$ORIGIN`` RUNPATH and no ``libcuda.so*`` (the driver's); each
passes check-bundle here, where no NVIDIA driver is installed: the CUDA
module is loaded against a stand-in driver made for the check, and ggml
reports no CUDA device.

What outlives a run sits in the test cache (``~/.cache/llama-pipeline-tests``,
``PIPELINE_TEST_CACHE``): the wheels (``downloads/``), the installed toolkit
(``toolchains/``: its absolute include paths reach every nvcc call, so both
workspaces must see it at one path for the laptop's build to hit) and the
ccache (``ccache/``, shared with the cpu real-tree test). On a 2-core
machine the cold build takes tens of minutes, the warm one a few
(docs/cuda.md). Deselect with ``-m "not e2e"``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pipeline.bundle.driver_standin import system_has_driver
from pipeline.bundle.smoke_process import scrubbed_env
from scripts.workload.llama_sdist import e2e_cache_root
from scripts.workload.reduction import CUDA_ARCHITECTURE, REDUCED_PROGRAMS
from tests.support import shared_jobs
from tests.support.bundle_archive import extract_top
from tests.support.gitrepos import commit_files, init_repo
from tests.support.llama_tree import BASE_TAG, Forge, prepared_forge
from tests.support.pipeline_cli import no_cuda_env

# The matrix template and the legs it declares (tests/unit/test_tested_flags.py reads them here).
from tests.support.real_tree_matrix import CUDA_LEGS as TESTED_LEGS
from tests.support.real_tree_matrix import CUDA_MATRIX as MATRIX  # noqa: F401
from tests.support.real_tree_matrix import REDUCED_CUDA_COMPILATIONS as COMPILATIONS
from tests.support.real_tree_matrix import TESTED_SHARED, cuda_matrix_text

# In `nox -s e2e` (marker long): 40 to 50 minutes of both cores cold, past the suite's budget; the suite keeps
# the cheaper real checks of the leg (tests/integration/test_real_tree_configure.py, docs/testing.md).
pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.long, pytest.mark.leg("cuda")]

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
# Budget for one build: a cold one on 2 cores takes tens of minutes, and CI runs other tests beside it.
BUILD_TIMEOUT = 4 * 3600
BUILD_NUMBER = int(BASE_TAG.removeprefix("b"))
# The CUDA runtime libraries ggml-cuda links (its CMakeLists: CUDA::cudart, cublas, cublasLt), by soname.
CUDA_RUNTIME = ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13")


@dataclass
class Run:
    workspace: Path
    build: subprocess.CompletedProcess[str]
    record: dict[str, Any]
    seconds: float

    @property
    def bundle(self) -> Path:
        return self.workspace / "out" / self.record["bundle"]


@dataclass
class CudaTree:
    root: Path
    forge: Forge
    matrix: Path
    env: dict[str, str]
    runner: Run
    laptop: Run


def pipeline(
    args: list[str], *, cwd: Path, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT, check=False)  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(
            f"pipeline {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr}"
        )
    return proc


def nightly(tree_root: Path, name: str, matrix: Path, cache: Path, env: dict[str, str]) -> Run:
    """resolve, source, then build cuda from the archive, in a fresh workspace ``name`` (the workflow's path)."""
    ws = tree_root / name
    init_repo(ws)
    commit_files(
        ws, {"pipeline.txt": "the pipeline's repository\n"}, "pipeline", when=NOW - timedelta(days=30)
    )
    started = time.monotonic()
    pipeline(
        ["--matrix", str(matrix), "resolve", "--write", "resolved.json", "--now", NOW.isoformat()],
        cwd=ws,
        env=env,
    )
    made = json.loads(
        pipeline(
            ["--matrix", str(matrix), "source", "--resolved", "resolved.json", "--out", "out"],
            cwd=ws,
            env=env,
        ).stdout
    )
    build = pipeline(
        [
            "--matrix",
            str(matrix),
            "build",
            "cuda",
            "--resolved",
            "resolved.json",
            "--source-archive",
            made["path"],
            "--out",
            "out",
            "--ccache-dir",
            str(cache),
        ],
        cwd=ws,
        env=env,
        check=False,
    )
    seconds = time.monotonic() - started
    record_file = ws / "out" / "cuda" / "record.json"
    record = json.loads(record_file.read_text()) if record_file.is_file() else {}
    return Run(workspace=ws, build=build, record=record, seconds=seconds)


@pytest.fixture(scope="module")
def cuda_tree(tmp_path_factory: pytest.TempPathFactory) -> CudaTree:
    root = tmp_path_factory.mktemp("real-tree-cuda")
    forge = prepared_forge(root, young_at=NOW - timedelta(hours=2), pr_at=NOW - timedelta(hours=7))
    matrix = root / "matrix.toml"
    matrix.write_text(cuda_matrix_text(upstream=forge.upstream, pr_sha=forge.pr_sha))
    cache = e2e_cache_root()
    env = {**no_cuda_env(cache), "PIPELINE_GIT_URL_TEMPLATE": forge.template,
           "PIPELINE_CACHE_HOME": str(root / "cache-home"), **shared_jobs.build_env()}  # fmt: skip
    runner = nightly(root, "runner", matrix, cache / "ccache", env)
    laptop = nightly(root, "elsewhere/laptop", matrix, cache / "ccache", env)
    print(
        f"\nreal tree cuda: runner build {runner.seconds:.0f} s, laptop build {laptop.seconds:.0f} s",
        file=sys.stderr,
    )
    return CudaTree(root=root, forge=forge, matrix=matrix, env=env, runner=runner, laptop=laptop)


def _succeeded(run: Run) -> dict[str, Any]:
    assert run.build.returncode == 0, (
        f"build cuda failed ({run.build.returncode}):\n{run.build.stdout[-6000:]}\n{run.build.stderr}"
    )
    assert run.record["status"] == "success", run.record
    return run.record


def test_the_cuda_leg_builds_from_the_wheels_and_the_warm_build_hits_every_unit(cuda_tree: CudaTree) -> None:
    cold, warm = _succeeded(cuda_tree.runner)["ccache"], _succeeded(cuda_tree.laptop)["ccache"]
    assert cold["hits"] + cold["misses"] == COMPILATIONS
    assert (warm["hits"], warm["misses"], warm["hit_rate"]) == (COMPILATIONS, 0, 1.0)
    record = cuda_tree.runner.record
    args, declared = record["cmake_args"], [*TESTED_SHARED, *TESTED_LEGS["cuda"]]
    assert any(args[i : i + len(declared)] == declared for i in range(len(args))), args
    assert f"-DCMAKE_CUDA_ARCHITECTURES={CUDA_ARCHITECTURE}" in args
    # The toolkit is the pinned wheels' (nothing CUDA was on PATH), installed in the test cache.
    toolchain = record["toolchain"]
    assert toolchain["details"]["origin"] == "wheels 13.2.86", toolchain
    assert toolchain["details"]["cuda_root"] == str(
        e2e_cache_root() / "toolchains" / "cuda-13.2.86-linux" / "nvidia" / "cu13"
    )


def dynamic_section(path: Path) -> str:
    """``readelf -d``: binutils' reading of the file's NEEDED, SONAME and RUNPATH entries."""
    return subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout


def test_the_bundle_ships_the_cuda_module_and_its_runtime_with_origin_runpaths(
    cuda_tree: CudaTree, tmp_path: Path
) -> None:
    _succeeded(cuda_tree.runner)
    files = extract_top(cuda_tree.runner.bundle, tmp_path / "x")
    names = sorted(p.name for p in files.iterdir())
    assert "libggml-cuda.so" in names, names
    for lib in CUDA_RUNTIME:
        assert lib in names, f"{lib} not shipped: {names}"
    # The driver is the machine's: needed by the module, never shipped (not even the link stub).
    assert not [n for n in names if n.startswith("libcuda.so")], names
    module = dynamic_section(files / "libggml-cuda.so")
    for lib in ("libcuda.so.1", "libcudart.so.13", "libcublas.so.13"):
        assert f"Shared library: [{lib}]" in module, module
    # Every ELF file that needs a library of the bundle finds it beside itself, through $ORIGIN alone.
    shipped = set(names)
    for path in sorted(files.iterdir()):
        if path.is_symlink() or not path.is_file() or path.read_bytes()[:4] != b"\x7fELF":
            continue
        dynamic = dynamic_section(path)
        needed = set(re.findall(r"Shared library: \[([^\]]+)\]", dynamic))
        entries = [
            e
            for found in re.findall(r"Library (?:runpath|rpath): \[([^\]]*)\]", dynamic)
            for e in found.split(":")
        ]
        assert all(e.startswith("$ORIGIN") for e in entries), f"{path.name}: {entries}"
        if needed & shipped:
            assert "$ORIGIN" in entries, f"{path.name} needs {sorted(needed & shipped)}; RUNPATH {entries}"


def _backends_line() -> str:
    """The backends line without a driver: the module loaded against the stand-in, and ggml-cuda's own report."""
    return (
        "backends: llama-simple loaded CPU (libggml-cpu.so), CUDA (libggml-cuda.so), RPC (libggml-rpc.so); "
        "llama-tokenize --list-devices: no device besides the CPU; "
        "CUDA found no device (no CUDA-capable device is detected); "
        "no NVIDIA driver here: libcuda.so.1 was a stand-in answering 'no device', made for the check"
    )


def test_check_bundle_loads_the_cuda_module_without_a_driver_and_ggml_finds_no_device(
    cuda_tree: CudaTree,
) -> None:
    with_driver = system_has_driver(scrubbed_env(cuda_tree.root / "probe-home"))

    def backends_ok(line: str) -> None:
        if with_driver:
            # The real driver is used: no stand-in, and ggml-cuda says what it found.
            assert "stand-in" not in line and "the machine's NVIDIA driver (libcuda.so.1)" in line, line
        else:
            assert line == _backends_line(), line

    for run in (cuda_tree.runner, cuda_tree.laptop):
        check = _succeeded(run)["bundle_check"]
        assert check["ok"] is True and check["problems"] == [], check
        lines = {c["name"]: (c["status"], c["line"]) for c in check["checks"]}
        assert lines["backends"][0] == "passed", lines["backends"]
        backends_ok(lines["backends"][1])
        # The CPU checks pass as on the cpu leg: the programs start, tokenize and compute on the CPU module.
        assert lines["versions"][0] == lines["tokenizer"][0] == lines["forward-pass"][0] == "passed", lines
        assert [s["program"] for s in check["smoke"]] == sorted(REDUCED_PROGRAMS), check
    # The command agrees, on the bundle alone; the stand-in lived in a folder of the check's scratch.
    proc = pipeline(
        ["check-bundle", str(cuda_tree.runner.bundle), "--json"], cwd=cuda_tree.root, env=cuda_tree.env
    )
    data = json.loads(proc.stdout)
    assert data["ok"] is True, data
    backends_ok({c["name"]: c["line"] for c in data["checks"]}["backends"])
    assert not list(cuda_tree.runner.workspace.rglob("libcuda.so*"))


def _repack(root: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz", compresslevel=1) as tar:
        tar.add(root, arcname=root.name)
    return dest


def test_the_standin_hides_no_missing_runtime_library(cuda_tree: CudaTree, tmp_path: Path) -> None:
    """Without the bundled libcudart the module must not load: the stand-in is the driver, nothing more."""
    _succeeded(cuda_tree.runner)
    root = extract_top(cuda_tree.runner.bundle, tmp_path / "x")
    for path in root.glob("libcudart.so*"):
        path.unlink()
    bad = _repack(root, tmp_path / "bad" / cuda_tree.runner.bundle.name)
    proc = pipeline(["check-bundle", str(bad)], cwd=tmp_path, env=cuda_tree.env, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # The closure check reads the bundle alone: it names the missing file whatever the machine has.
    assert "error: libggml-cuda.so: needs libcudart.so.13: neither in the bundle" in proc.stdout, proc.stdout
    if _loader_cache_has("libcudart.so.13"):
        # This machine's loader finds a libcudart.so.13 of its own (a system CUDA in ld.so.cache, which
        # no environment hides): the module loads from there, and the check still fails on the closure.
        assert "CUDA (libggml-cuda.so)" in proc.stdout and "did not load" not in proc.stdout, proc.stdout
    else:
        assert (
            "backends: libggml-cuda.so did not load in llama-simple (a library it needs is missing or it is "
            "broken)"
        ) in proc.stdout, proc.stdout


def _loader_cache_has(soname: str) -> bool:
    """Whether the machine's dynamic loader finds ``soname`` by itself (``ldconfig -p``: its ld.so.cache)."""
    listed = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    return any(line.strip().startswith(f"{soname} ") for line in listed.splitlines())


def test_a_bundle_that_ships_the_driver_is_refused(cuda_tree: CudaTree, tmp_path: Path) -> None:
    _succeeded(cuda_tree.runner)
    root = extract_top(cuda_tree.runner.bundle, tmp_path / "x")
    stub = (
        e2e_cache_root()
        / "toolchains"
        / "cuda-13.2.86-linux"
        / "nvidia"
        / "cu13"
        / "lib"
        / "stubs"
        / "libcuda.so"
    )
    (root / "libcuda.so.1").write_bytes(stub.read_bytes())
    bad = _repack(root, tmp_path / "bad" / cuda_tree.runner.bundle.name)
    proc = pipeline(["check-bundle", str(bad), "--no-smoke"], cwd=tmp_path, env=cuda_tree.env, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "libcuda.so.1: the GPU driver's own library ships with the driver, never in a bundle" in proc.stdout
    )
