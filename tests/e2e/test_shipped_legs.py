"""The full shipped legs on the real llama.cpp tree: ``nox -s e2e``, not ``nox -s tests``.

Each leg that can build on this machine is built as matrix.toml ships it,
with nothing reduced but the programs (``PROGRAMS_ONLY`` of
scripts/workload/reduction.py): every CPU variant, the flash-attention kernels, every
CUDA architecture and every GPU target of the leg. Hours on 2 cores (the
cuda leg compiles every .cu unit once per architecture, seven times), so
``nox -s tests`` leaves these out (marker ``long``, deselected by
pyproject.toml's ``addopts``) and builds the same legs with the declared CI
reduction instead (scripts/workload/reduction.py says what each part saves and
what it still proves).

For each leg: a build in one folder, from the sdist's tree (``--source``),
then a rebuild in another folder into the same cache that must hit every
compile. The build's own outcome is the release's: success for the legs
built on this machine's Debian; for the legs built in a newer Debian root
(rocm in sid, the CUDA 12 line in trixie) the bundle is refused for the
runner's glibc floor, and that must be check-bundle's only finding.
What each leg's build must contain comes from the shipped matrix.toml (its
architectures and targets) and from the tree's own CMake (its CPU variants).

Run one leg with ``nox -s e2e -- --leg rocm-linux-gfx110X tests/e2e``. The caches are the test cache's
(``~/.cache/llama-pipeline-tests``: ``ccache-shipped-<leg>/``), so a rerun
on the same machine is warm.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pipeline.errors import BundleCheckError
from pipeline.inputs.matrix import load_matrix
from scripts.workload.llama_sdist import e2e_cache_root, fetch_sdist, standalone_tree
from scripts.workload.reduction import PROGRAMS_ONLY, SHIPPED_MATRIX, reduced_matrix
from scripts.workload.trixie_vulkan import trixie_vulkan_sdk
from tests.support.big_trees import drop_big_trees
from tests.support.pipeline_cli import no_cuda_env, run_pipeline
from tests.support.sid_root import ROOT, SID, TRIXIE_CUDA, DebianRoot, mounted, pipeline_venv, run_in

pytestmark = [pytest.mark.e2e, pytest.mark.long]

# One full leg, cold, on 2 cores: the cuda leg's seven architectures are the longest.
BUILD_TIMEOUT = 12 * 3600
SHIPPED = load_matrix(SHIPPED_MATRIX)


@dataclass(frozen=True)
class Case:
    leg: str
    # None: built on this machine; else the Debian root it is built in, with the bundle's expected refusal.
    root: DebianRoot | None = None
    # What the build needs beyond the tree: ``--vulkan-sdk``, ``--rocm-path`` and the like.
    extra: Callable[[], list[str]] = list


CASES = [
    Case("cpu"),
    Case("cpu-arm64"),
    Case("vulkan", extra=lambda: ["--vulkan-sdk", str(trixie_vulkan_sdk())]),
    Case("cuda"),
    Case("rocm-linux-gfx110X", root=SID, extra=lambda: ["--rocm-path", "/usr"]),
    Case("cuda-12.8-older", root=TRIXIE_CUDA, extra=lambda: ["--cuda-path", "/usr"]),
]


@dataclass
class Built:
    case: Case
    records: list[dict[str, Any]]
    # `ninja -t commands` of the first build: every command it ran.
    commands: list[str]
    bundle_files: list[str]


def _workspace(tmp: Path, leg: str) -> tuple[Path, Path]:
    tree = standalone_tree(fetch_sdist(e2e_cache_root()), tmp / "sdist")
    text = reduced_matrix(
        SHIPPED_MATRIX.read_text(encoding="utf-8"),
        legs=[leg],
        source_repo="https://example.invalid/llama.cpp.git",
        programs_only=True,
    )
    matrix = tmp / "matrix.toml"
    matrix.write_text(text, encoding="utf-8")
    return tree, matrix


def _bundle_files(out: Path, record: dict[str, Any]) -> list[str]:
    import tarfile

    with tarfile.open(out / record["bundle"]) as archive:
        return sorted(Path(name).name for name in archive.getnames())


def _build_here(case: Case, tmp: Path, tree: Path, matrix: Path, cache: Path) -> Built:
    env = {**no_cuda_env(e2e_cache_root()), "PIPELINE_CACHE_HOME": str(tmp / "home")}
    records: list[dict[str, Any]] = []
    for name, extra in (("runner", []), ("elsewhere", ["--no-bundle"])):
        out = tmp / name / "out"
        started = time.monotonic()
        proc = run_pipeline(["--matrix", str(matrix), "build", case.leg, "--source", str(tree), "--out", str(out),
                             "--ccache-dir", str(cache), *case.extra(), *extra],
                            env=env, timeout=BUILD_TIMEOUT)  # fmt: skip
        print(f"\n{case.leg} ({name}): {time.monotonic() - started:.0f} s", flush=True)
        assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
        records.append(json.loads((out / case.leg / "record.json").read_text()))
    build_dir = tmp / "runner" / "out" / case.leg / "build"
    # The pipeline's own Ninja (its dependency, on PATH in the session's venv).
    commands = subprocess.run(
        ["ninja", "-C", str(build_dir), "-t", "commands"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return Built(case, records, commands, _bundle_files(tmp / "runner" / "out", records[0]))


def _build_in_root(case: Case, tmp: Path, tree: Path, matrix: Path, cache: Path) -> Built:
    assert case.root is not None
    root = case.root.made()
    python = pipeline_venv(root)
    env = {
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "200",
        "PIPELINE_CACHE_HOME": str(tmp / "home"),
        "HIP_PLATFORM": "amd",
    }
    records: list[dict[str, Any]] = []
    # The checkout at its own path: the reduction names scripts/workload/llama_programs.cmake by its absolute path.
    with mounted(root, binds=[(ROOT, str(ROOT)), (tmp, str(tmp)), (cache, str(cache))]):
        for name, extra in (("runner", []), ("elsewhere", ["--no-bundle"])):
            out = tmp / name / "out"
            started = time.monotonic()
            proc = run_in(root, [python, "-m", "pipeline", "--matrix", str(matrix), "build", case.leg, "--source",
                                 str(tree), "--out", str(out), "--ccache-dir", str(cache), *case.extra(), *extra],
                          env=env, cwd=str(tmp), timeout=BUILD_TIMEOUT)  # fmt: skip
            print(
                f"\n{case.leg} ({name}, in {case.root.suite}): {time.monotonic() - started:.0f} s", flush=True
            )
            # Built in a newer Debian: the bundle needs its glibc, which check-bundle refuses for the floor.
            expected = BundleCheckError.exit_code if name == "runner" else 0
            assert proc.returncode == expected, proc.stdout[-6000:] + proc.stderr[-3000:]
            records.append(json.loads((out / case.leg / "record.json").read_text()))
        ninja = f"{Path(python).parent}/ninja"
        commands = run_in(
            root, [ninja, "-C", str(tmp / "runner" / "out" / case.leg / "build"), "-t", "commands"]
        )
        assert commands.returncode == 0, commands.stderr
    return Built(
        case, records, commands.stdout.splitlines(), _bundle_files(tmp / "runner" / "out", records[0])
    )


@pytest.fixture(params=[pytest.param(case, marks=pytest.mark.leg(case.leg), id=case.leg) for case in CASES])
def built(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Built]:
    case: Case = request.param
    tree, matrix = _workspace(tmp_path, case.leg)
    cache = e2e_cache_root() / f"ccache-shipped-{case.leg}"
    cache.mkdir(parents=True, exist_ok=True)
    yield (_build_in_root if case.root else _build_here)(case, tmp_path, tree, matrix, cache)
    drop_big_trees(tmp_path)


# Where the tree's ggml/src/CMakeLists.txt lists a Linux architecture's variants for GGML_CPU_ALL_VARIANTS:
# from the first pattern (after the ones before it) to the next.
_VARIANT_SPANS = {
    "x64": (('GGML_SYSTEM_ARCH STREQUAL "x86"',), 'GGML_SYSTEM_ARCH STREQUAL "ARM"'),
    "arm64": (('GGML_SYSTEM_ARCH STREQUAL "ARM"', 'CMAKE_SYSTEM_NAME MATCHES "Linux"'), 'MATCHES "Android"'),
}


def _cpu_variants(tree_cmake: str, arch: str) -> set[str]:
    """The CPU variants the tree's ggml/src/CMakeLists.txt declares for Linux ``arch`` (its own list)."""
    starts, end = _VARIANT_SPANS[arch]
    at = tree_cmake.index("if (GGML_CPU_ALL_VARIANTS)")
    for start in starts:
        at = tree_cmake.index(start, at)
    return set(
        re.findall(r"ggml_add_cpu_backend_variant\(([\w.]+)", tree_cmake[at : tree_cmake.index(end, at)])
    )


def test_a_full_shipped_leg_builds_bundles_and_a_rebuild_elsewhere_hits_every_compile(
    built: Built, tmp_path: Path
) -> None:
    case, (first, second) = built.case, built.records
    shipped = SHIPPED.leg(case.leg)
    # The shipped flags with the programs' variables alone changed.
    flags = [f for f in shipped.cmake_args if f.split("=", 1)[0][2:] not in PROGRAMS_ONLY]
    assert all(flag in first["cmake_args"] for flag in flags), (flags, first["cmake_args"])
    if case.root is None:
        assert first["status"] == "success", first.get("error")
    else:
        problems = first["bundle_check"]["problems"]
        assert first["status"] == "failed" and {p["kind"] for p in problems} == {"glibc"}, problems
    # Another folder, the same cache: every compile a hit.
    assert (
        second["ccache"]["misses"] == 0
        and second["ccache"]["hits"] == first["ccache"]["hits"] + first["ccache"]["misses"]
    ), (first["ccache"], second["ccache"])
    # Every CPU variant the tree declares for the leg's architecture is in the bundle.
    tree_cmake = (tmp_path / "sdist" / "ggml" / "src" / "CMakeLists.txt").read_text(encoding="utf-8")
    variants = _cpu_variants(tree_cmake, shipped.arch)
    assert len(variants) > 1
    assert {f"libggml-cpu-{v}.so" for v in variants} <= set(built.bundle_files), built.bundle_files
    # Every GPU architecture or target the leg ships, in every device compile.
    if shipped.backend == "cuda":
        device = [c for c in built.commands if "nvcc" in c and " -c " in c and "ggml-cuda" in c]
        assert device
        for arch in shipped.cuda_architectures:
            number = arch.split("-")[0]
            assert all(f"compute_{number}" in c for c in device), (arch, device[0])
    if shipped.backend == "rocm":
        device = [c for c in built.commands if "--offload-arch=" in c]
        assert device
        for target in shipped.targets:
            assert all(f"--offload-arch={target}" in c for c in device), (target, device[0])
