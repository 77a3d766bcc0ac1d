"""The real llama.cpp tree through a shipped CUDA 12 leg, with Debian trixie's CUDA 12.4 as ``--cuda-path /usr``.

NVIDIA's cu12 wheels hold no nvcc, and NVIDIA's redistributable archives
are out of this machine's reach, so the one 12.x compiler here is trixie's
non-free ``nvidia-cuda-toolkit`` 12.4.131, in a trixie root made once in the
test cache (tests/support/sid_root.py's :class:`DebianRoot`, about 4 minutes
and 5 GB; the pipeline of this checkout runs inside it, its dependencies in a
venv there). The leg is the shipped ``cuda-12.8-older`` (70 75 80 86 89:
every architecture 12.4 compiles; the newer and portable profiles list 100
and 120, which need 12.8) with the one reduction of scripts/workload/reduction.py
(programs, CPU variants, one architecture: ``CUDA_ARCHITECTURE``, 89, which
this leg lists; tests/unit/test_tested_flags.py checks it).

Debian's layout is not NVIDIA's: ``/usr/bin/nvcc`` is a script running the
real nvcc from ``/usr/lib/nvidia-cuda-toolkit/bin``, whose ``g++`` picks
g++-13 (12.4's newest; trixie's default g++ 14 is refused by nvcc); the
headers are in ``/usr/include`` and the libraries in
``/usr/lib/x86_64-linux-gnu``. The bundle carries the CUDA 12 runtime its
closure finds there, each file with the copyright of the Debian package
that installed it, and its manifest names the 12.x driver floor (R525).

The leg's glibc floor is the shipped one (its runner's, Ubuntu 22.04's
2.35). A bundle built against trixie's glibc 2.41 needs newer symbols
(``__isoc23_strtol@GLIBC_2.38``), so check-bundle refuses it for that floor
and the leg ends with check-bundle's exit code, as the rocm real-tree test's
does: the test asserts that this is the one problem, and that every other
check (the closure, the CUDA line, the smoke run) passes.

The checkout, the workspace and the ccache are bound inside the root at
their host paths: the reduction names ``scripts/workload/llama_programs.cmake`` by
its absolute path, and the rebuild's hits need one path for each. The cold
build took 32 minutes on 2 shared cores; the second, in another folder, hits
every compile (docs/testing.md has the times). Deselect with ``-m "not e2e"``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pipeline.errors import BundleCheckError
from scripts.workload.leg_matrix import SOURCE_TEMPLATE, leg_table
from scripts.workload.llama_sdist import cached_sdist, e2e_cache_root, missing_reason, standalone_tree
from scripts.workload.reduction import CUDA_ARCHITECTURE, reduce_leg_flags, shipped_flags
from tests.support.big_trees import drop_big_trees
from tests.support.bundle_archive import extract_top
from tests.support.real_tree_matrix import shipped_cuda_pins
from tests.support.sid_root import ROOT, TRIXIE_CUDA, mounted, pipeline_venv, run_in

# Beyond nox -s tests' cold budget (about 20 minutes more on 2 cores, the trixie root's 3.5 among them):
# nox -s e2e runs it (docs/testing.md).
pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.long, pytest.mark.leg("cuda-12.8-older")]
# Made in the background from the start of the run (tests/conftest.py).
DEBIAN_ROOTS = (TRIXIE_CUDA,)

LEG = "cuda-12.8-older"
TRIXIE_GLIBC = "2.41"
# The CUDA runtime libraries ggml-cuda links (its CMakeLists: CUDA::cudart, cublas, cublasLt), by soname.
CUDA_RUNTIME = ("libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12")
# Compilations of the reduced cuda leg: `ninja -t commands | grep -c ' -c '` (the CUDA 13 leg's count:
# the same sources, one architecture).
COMPILATIONS = 277
BUILD_TIMEOUT = 4 * 3600

# The legs this module builds, as configured: the shipped leg's flags plus the reduction (test_tested_flags.py).
TESTED_SHARED, _SHIPPED_CUDA12 = shipped_flags(LEG)
TESTED_LEGS: dict[str, list[str]] = {LEG: reduce_leg_flags(_SHIPPED_CUDA12)}


# The shipped leg's keys that name its CUDA line and bundle, the one architecture of the reduction.
MATRIX = (
    SOURCE_TEMPLATE
    + "\n"
    + shipped_cuda_pins().replace("{", "{{").replace("}", "}}")
    + leg_table(
        LEG,
        TESTED_LEGS[LEG],
        backend="cuda",
        os="linux",
        cuda_line="12",
        cuda_architectures=[CUDA_ARCHITECTURE],
        bundle_name="llama-{tag}-bin-ubuntu-cuda-12.8-older-{arch}",
    )
)


@dataclass
class Built:
    root: Path
    tmp: Path
    records: list[dict[str, Any]]
    seconds: list[float]
    check: dict[str, Any]
    nvcc_version: str
    gxx13_version: str
    glibc: str
    owners: dict[str, str]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    sdist = cached_sdist()
    assert sdist is not None, missing_reason()
    root = TRIXIE_CUDA.made()
    python = pipeline_venv(root)
    tmp = tmp_path_factory.mktemp("real-tree-cuda12")
    tree = standalone_tree(sdist, tmp / "sdist")
    matrix = tmp / "matrix.toml"
    matrix.write_text(MATRIX.format(upstream="https://example.invalid/llama.cpp.git"), encoding="utf-8")
    ccache = e2e_cache_root() / "ccache-cuda12"
    ccache.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONPATH": str(ROOT), "COLUMNS": "200", "PIPELINE_CACHE_HOME": str(tmp / "home")}
    records, seconds = [], []
    with mounted(root, binds=[(ROOT, str(ROOT)), (tmp, str(tmp)), (ccache, str(ccache))]):
        for name in ("runner", "elsewhere/laptop"):
            out = tmp / name / "out"
            started = time.monotonic()
            proc = run_in(root, [python, "-m", "pipeline", "--matrix", str(matrix), "build", LEG, "--source",
                                 str(tree), "--out", str(out), "--ccache-dir", str(ccache), "--cuda-path", "/usr"],
                          env=env, cwd=str(tmp), timeout=BUILD_TIMEOUT)  # fmt: skip
            seconds.append(time.monotonic() - started)
            record_file = out / LEG / "record.json"
            # Built and bundled; refused by check-bundle for the leg's glibc floor only (the last test).
            assert proc.returncode == BundleCheckError.exit_code, proc.stdout[-6000:] + proc.stderr[-3000:]
            records.append(json.loads(record_file.read_text()))
        bundle = tmp / "runner" / "out" / records[0]["bundle"]
        check = run_in(root, [python, "-m", "pipeline", "check-bundle", str(bundle), "--json"], env=env,
                       cwd=str(tmp), timeout=900)  # fmt: skip
        assert check.returncode == 1, check.stdout[-6000:] + check.stderr[-3000:]
        nvcc = run_in(root, ["nvcc", "--version"]).stdout
        gxx13 = run_in(root, ["g++-13", "-dumpfullversion"]).stdout.strip()
        glibc = run_in(root, ["getconf", "GNU_LIBC_VERSION"]).stdout.split()[-1]
        owners = {}
        for lib in CUDA_RUNTIME:
            real = (root / "usr/lib/x86_64-linux-gnu" / lib).resolve().name
            owned = run_in(root, ["dpkg-query", "-S", f"/usr/lib/x86_64-linux-gnu/{real}"])
            assert owned.returncode == 0, owned.stderr
            owners[real] = owned.stdout.split(":")[0]
    print(f"\nreal tree cuda 12: runner build {seconds[0]:.0f} s, laptop build {seconds[1]:.0f} s")
    yield Built(root=root, tmp=tmp, records=records, seconds=seconds, check=json.loads(check.stdout),
                nvcc_version=nvcc, gxx13_version=gxx13, glibc=glibc, owners=owners)  # fmt: skip
    drop_big_trees(tmp)


def test_the_12_leg_builds_with_debians_cuda_12_4_and_g_13_and_a_rebuild_elsewhere_hits_every_unit(
    built: Built,
) -> None:
    first, second = built.records
    for record in built.records:
        assert (record["status"], record["exit_code"]) == ("failed", BundleCheckError.exit_code), record[
            "error"
        ]
        assert {"configure", "build", "package"} <= set(record["phases"]), record["phases"]
    toolchain = first["toolchain"]
    # The version nvcc itself prints, and the g++ Debian's toolkit chose for it (12.4's newest: 13).
    version = re.search(r"release 12\.4, V(12\.4\.\d+)", built.nvcc_version)
    assert version, built.nvcc_version
    assert toolchain["details"]["version"] == version.group(1)
    assert toolchain["details"]["origin"] == "cuda-path" and toolchain["details"]["cuda_root"] == "/usr"
    assert built.gxx13_version.startswith("13.")
    assert toolchain["details"]["cuda_host_compiler"] == f"gcc-{built.gxx13_version}"
    assert toolchain["identity"].startswith(f"cuda-{version.group(1)}-gcc-14.")
    args = first["cmake_args"]
    declared = [*TESTED_SHARED, *TESTED_LEGS[LEG]]
    assert any(args[i : i + len(declared)] == declared for i in range(len(args))), args
    assert f"-DCMAKE_CUDA_ARCHITECTURES={CUDA_ARCHITECTURE}" in args
    assert "-DCMAKE_CUDA_HOST_COMPILER=/usr/lib/nvidia-cuda-toolkit/bin/g++" in args
    assert "-DCMAKE_CUDA_COMPILER=/usr/bin/nvcc" in args
    cold, warm = first["ccache"], second["ccache"]
    assert cold["hits"] + cold["misses"] == COMPILATIONS, cold
    assert (warm["hits"], warm["misses"]) == (COMPILATIONS, 0), warm
    assert second["toolchain"]["identity"] == toolchain["identity"]


def test_the_bundle_carries_the_cuda_12_runtime_with_each_debian_packages_copyright(
    built: Built, tmp_path: Path
) -> None:
    record = built.records[0]
    files = extract_top(built.tmp / "runner" / "out" / record["bundle"], tmp_path / "x")
    names = sorted(p.name for p in files.iterdir())
    assert "libggml-cuda.so" in names, names
    for lib in CUDA_RUNTIME:
        assert lib in names, f"{lib} not shipped: {names}"
    # The driver is the machine's (trixie's libcuda1 is in the root), never shipped.
    assert not [n for n in names if n.startswith("libcuda.so")], names
    manifest = json.loads((files / "manifest.json").read_text())
    assert manifest["runtime"]["unresolved"] == []
    # The 12.x line's floor, NVIDIA's table for 12.0 GA (pipeline/inputs/cuda_driver.py cites it).
    assert manifest["toolchain"]["driver_min"] == "R525 (525.60.13 or newer)"
    assert manifest["leg"]["cuda_line"] == "12"
    third_party = {e["path"]: e for e in manifest["third_party"]}
    assert set(built.owners) <= set(third_party), sorted(third_party)
    for real, package in built.owners.items():
        entry = third_party[real]
        assert (entry["package"], entry["archive"]) == (package, f"dpkg:{package}")
        assert entry["licenses"][0] == f"licenses/toolchain/share/doc/{package}/copyright"
        shipped = (files / entry["licenses"][0]).read_bytes()
        assert shipped == (built.root / "usr/share/doc" / package / "copyright").read_bytes()
    # One package per library in trixie: libcudart12, libcublas12, libcublaslt12.
    assert sorted(built.owners.values()) == ["libcublas12", "libcublaslt12", "libcudart12"]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_check_bundle_passes_the_closure_and_the_cuda_line_and_refuses_only_trixies_glibc(
    built: Built,
) -> None:
    assert built.glibc == TRIXIE_GLIBC
    for check in (*(r["bundle_check"] for r in built.records), built.check):
        # The one problem: the glibc the build's files need, above the shipped floor, at most trixie's.
        assert check["ok"] is False and [p["kind"] for p in check["problems"]] == ["glibc"], check["problems"]
        assert check["glibc_max"] == "2.35"
        assert _version("2.35") < _version(check["glibc_required"]) <= _version(TRIXIE_GLIBC), check
        lines = {c["name"]: c["status"] for c in check["checks"]}
        assert lines["backends"] == lines["versions"] == lines["forward-pass"] == "passed", lines
