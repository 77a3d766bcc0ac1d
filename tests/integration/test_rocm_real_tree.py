"""The real llama.cpp tree through the ROCm leg, with Debian sid's ROCm 6.4 at ``/usr``, inside a root.

The shipped ``rocm-linux-gfx110X`` leg plus the one reduction
(scripts/workload/reduction.py: the programs as for the cpu leg, one GPU
target, ``ROCM_TARGET``; tests/unit/test_tested_flags.py checks it) and
nothing else, built by this checkout's pipeline inside the sid root of
tests/support/sid_root.py (made once, kept in the test cache) with
``--rocm-path /usr``:

- the build runs ggml-hip's 145 device steps for gfx1100 (the seed's count:
  its 144 HIP units and the library's link), and its bundle carries Debian's libamdhip64, libhipblas
  and librocblas (plus what they load, libamd_comgr among them), each with
  its package's copyright, and rocBLAS's kernel files for gfx1100 alone;
- check-bundle's closure passes; its GPU check says there is no GPU here;
  and it refuses the bundle for the leg's glibc floor, as it must: built on
  sid, the bundle needs sid's glibc, not its runner's (Ubuntu 22.04);
- a rebuild in another folder, after the compiler's, the device libraries'
  and the HIP headers' packages are reinstalled and every file of theirs got
  a new mtime, hits every compile: the workspace's path is in no hash, and
  ``compiler_check = "content"`` holds on real device code. (One build
  proves both: each cause alone would make it miss; a build per cause cost
  the suite 45 s more.)

The ccache stays in the test cache (``ccache-rocm``), and so does the runner
build's cache home (``rocm-runner-home``: its packaging cache): cold, the
first build takes about 15 minutes on 2 idle cores; warm, under a minute.
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
from pipeline.util.tree_removal import remove_tree
from scripts.workload.leg_matrix import SOURCE_TEMPLATE, leg_table
from scripts.workload.llama_sdist import cached_sdist, e2e_cache_root, missing_reason, standalone_tree
from scripts.workload.reduction import ROCM_TARGET, reduce_leg_flags, shipped_flags
from tests.support import shared_jobs
from tests.support.big_trees import drop_big_trees
from tests.support.bundle_archive import extract_top
from tests.support.sid_root import ROOT, SID, mounted, pipeline_venv, run_in, sid_root

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.leg("rocm-linux-gfx110X")]
# Made in the background from the start of the run (tests/conftest.py).
DEBIAN_ROOTS = (SID,)

LEG = "rocm-linux-gfx110X"
# The legs this module builds, as configured: the shipped leg's flags plus the reduction (test_tested_flags.py).
TESTED_SHARED, _SHIPPED = shipped_flags(LEG)
TESTED_LEGS: dict[str, list[str]] = {LEG: reduce_leg_flags(_SHIPPED)}
MATRIX = SOURCE_TEMPLATE + leg_table(
    LEG, TESTED_LEGS[LEG], backend="rocm", os="linux", family="gfx110X-all", targets=[ROCM_TARGET]
)

# ggml-hip's device steps for one target, DESIGN.md's count and the seed's: the Ninja commands that
# name --offload-arch, that is its 144 .cu units compiled as HIP, and the link of libggml-hip.so.
DEVICE_STEPS = 145
DEVICE_UNITS = DEVICE_STEPS - 1
WS = "/ws"
CCACHE = "/ccache"
# The runner's cache home, kept in the test cache like its ccache: its packaging cache (compressed members
# by content) makes a warm run's package step a copy instead of 42 s of deflate for the 1.2 GB of Debian's
# ROCm. The archive's bytes never depend on that cache (pipeline/archives/packing.py).
RUNNER_HOME = "/runner-home"
MULTIARCH = "/usr/lib/x86_64-linux-gnu"
# The three libraries ggml-hip links from Debian's ROCm, by soname.
ROCM_LIBRARIES = ("libamdhip64.so.6", "libhipblas.so.2", "librocblas.so.4")
# One build: about 15 min cold on 2 idle cores; CI shares the machine.
BUILD_TIMEOUT = 5400


@dataclass
class Build:
    record: dict[str, Any]
    out: Path
    stdout: str


@dataclass
class RocmTree:
    root: Path
    workspace: Path
    runner: Build
    # In another folder, after the reinstall below.
    elsewhere: Build
    # The packages reinstalled, and the compiler's mtime before and after.
    packages: list[str]
    mtimes: tuple[float, float]
    # `ninja -t commands` of the runner's build: every command the build runs.
    commands: list[str]
    # The root's glibc (getconf), which the bundle built there needs.
    glibc: str


def _run(root: Path, argv: list[str], *, timeout: float = 600) -> str:
    proc = run_in(root, argv, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(argv)}: {proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return proc.stdout


def _owners(root: Path, paths: list[str]) -> list[str]:
    """The Debian packages that installed ``paths`` inside ``root`` (``dpkg -S``), sorted, each once."""
    found = _run(root, ["dpkg", "-S", *paths])
    return sorted({line.split(":")[0] for line in found.splitlines() if ":" in line})


def _reinstall(root: Path, packages: list[str]) -> None:
    """Reinstall ``packages`` with apt, then give each of their files a new mtime.

    dpkg restores every file's mtime from the package, so a reinstall alone would leave ccache's
    default ``compiler_check = mtime`` satisfied; a re-extracted toolchain (the seed's case) does not
    keep them. Both happen here: new inodes and ctimes from dpkg, new mtimes after.
    """
    option = "-oAcquire::Check-Valid-Until=false"
    _run(root, ["apt-get", option, "-q", "update"], timeout=900)
    _run(root, ["apt-get", option, "-q", "-y", "install", "--reinstall", *packages], timeout=1800)
    listed = _run(root, ["dpkg", "-L", *packages]).splitlines()
    now = time.time()
    for path in listed:
        inside = root / path.lstrip("/")
        if inside.is_file() and not inside.is_symlink():
            inside.touch()
            assert inside.stat().st_mtime >= now - 1


@pytest.fixture(scope="module")
def rocm_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RocmTree]:
    sdist = cached_sdist()
    assert sdist is not None, missing_reason()
    root = sid_root()
    python = pipeline_venv(root)
    ws = tmp_path_factory.mktemp("rocm-real-tree")
    tree = standalone_tree(sdist, ws / "sdist")
    (ws / "matrix.toml").write_text(
        MATRIX.format(upstream="https://example.invalid/llama.cpp.git"), encoding="utf-8"
    )
    cache = e2e_cache_root() / "ccache-rocm"
    cache.mkdir(parents=True, exist_ok=True)
    source = f"{WS}/{tree.relative_to(ws).as_posix()}"
    # The session's jobserver (tests/support/shared_jobs.py), its fifo bound at the same path inside.
    jobs = shared_jobs.fifo()
    env = {"HIP_PLATFORM": "amd", "PYTHONPATH": str(ROOT), "COLUMNS": "200", **shared_jobs.build_env()}

    def build(name: str, *extra: str, home: str | None = None, exit_code: int = 0) -> Build:
        out = f"{WS}/{name}/out"
        proc = run_in(
            root,
            [
                python,
                "-m",
                "pipeline",
                "--matrix",
                f"{WS}/matrix.toml",
                "build",
                LEG,
                "--source",
                source,
                "--out",
                out,
                "--ccache-dir",
                CCACHE,
                "--rocm-path",
                "/usr",
                *extra,
            ],
            env={**env, "PIPELINE_CACHE_HOME": home or f"{WS}/{name}/home"},
            cwd=WS,
            timeout=BUILD_TIMEOUT,
        )
        assert proc.returncode == exit_code, (
            f"build {LEG} in {name}: exit {proc.returncode}, not {exit_code}:\n{proc.stdout[-6000:]}\n{proc.stderr}"
        )
        record = json.loads((ws / name / "out" / LEG / "record.json").read_text())
        return Build(record=record, out=ws / name / "out", stdout=proc.stdout)

    # The checkout at its own path too: the reduction names scripts/workload/llama_programs.cmake by its absolute path.
    runner_home = e2e_cache_root() / "rocm-runner-home"
    runner_home.mkdir(parents=True, exist_ok=True)
    binds = [
        (ROOT, str(ROOT)),
        (ws, WS),
        (cache, CCACHE),
        (runner_home, RUNNER_HOME),
        *([(jobs.parent, str(jobs.parent))] if jobs else []),
    ]
    with mounted(root, binds=binds):
        started = time.monotonic()
        # Built on sid, the bundle needs sid's glibc: check-bundle refuses it for the leg's floor (below).
        runner = build("runner", home=RUNNER_HOME, exit_code=BundleCheckError.exit_code)
        glibc = _run(root, ["getconf", "GNU_LIBC_VERSION"]).split()[-1]
        print(f"\nreal tree rocm: runner build {time.monotonic() - started:.0f} s", flush=True)
        ninja = f"{Path(python).parent}/ninja"  # the pipeline's own, from its dependencies (pyproject.toml)
        commands = _run(root, [ninja, "-C", f"{WS}/runner/out/{LEG}/build", "-t", "commands"]).splitlines()
        # What the compile reads: the compiler, the device libraries, HIP's headers and CMake packages.
        device_libs = runner.record["toolchain"]["details"]["device_libs"]
        clang = _run(root, ["readlink", "-f", "/usr/lib/llvm-21/bin/clang++"]).strip()
        packages = _owners(
            root,
            [
                clang,
                f"{device_libs}/ockl.bc",
                "/usr/include/hip/hip_runtime.h",
                f"{MULTIARCH}/cmake/hip/hip-config.cmake",
                "/usr/include/hipblas/hipblas.h",
                "/usr/include/rocblas/rocblas.h",
            ],
        )
        before = (root / clang.lstrip("/")).stat().st_mtime
        _reinstall(root, packages)
        after = (root / clang.lstrip("/")).stat().st_mtime
        print(
            f"real tree rocm: {len(packages)} packages reinstalled at {time.monotonic() - started:.0f} s",
            flush=True,
        )
        elsewhere = build("elsewhere/laptop", "--no-bundle")
        print(f"real tree rocm: the rebuild elsewhere done at {time.monotonic() - started:.0f} s", flush=True)
    yield RocmTree(
        root=root,
        workspace=ws,
        runner=runner,
        elsewhere=elsewhere,
        packages=packages,
        mtimes=(before, after),
        commands=commands,
        glibc=glibc,
    )
    drop_big_trees(ws)


@pytest.fixture(scope="module")
def bundle_files(rocm_tree: RocmTree, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The runner's bundle, extracted once for the tests that read it."""
    dest = tmp_path_factory.mktemp("rocm-bundle")
    yield extract_top(rocm_tree.runner.out / rocm_tree.runner.record["bundle"], dest / "x")
    remove_tree(dest)


def _device_objects(build: Build) -> list[Path]:
    return sorted((build.out / LEG / "build" / "ggml" / "src" / "ggml-hip").rglob("*.cu.o"))


def test_the_real_tree_rocm_leg_compiles_every_device_unit_for_its_target(rocm_tree: RocmTree) -> None:
    record = rocm_tree.runner.record
    # The build and the bundle succeeded; the leg failed at check-bundle (the glibc floor, below).
    assert record["status"] == "failed" and record["exit_code"] == BundleCheckError.exit_code, record["error"]
    assert {"configure", "build", "package"} <= set(record["phases"]), record["phases"]
    args = record["cmake_args"]
    assert f"-DGPU_TARGETS={ROCM_TARGET}" in args and "-DCMAKE_PREFIX_PATH=/usr" in args
    declared = [*TESTED_SHARED, *TESTED_LEGS[LEG]]
    assert any(args[i : i + len(declared)] == declared for i in range(len(args))), args
    assert re.fullmatch(r"rocm-hip6\.4\.\d+-[0-9a-f]{12}", record["toolchain"]["identity"]), record[
        "toolchain"
    ]
    device = [c for c in rocm_tree.commands if f"--offload-arch={ROCM_TARGET}" in c]
    assert len(device) == DEVICE_STEPS
    assert not [c for c in rocm_tree.commands if "--offload-arch=" in c and c not in device]
    objects = _device_objects(rocm_tree.runner)
    assert len(objects) == DEVICE_UNITS
    # Each unit with device code holds it, in its clang offload bundle, for gfx1100 and no other target.
    # (A few units hold only host-side dispatch, sum.cu and set.cu among them: no offload bundle.)
    bundled = [obj.read_bytes() for obj in objects if b"__CLANG_OFFLOAD_BUNDLE__" in obj.read_bytes()]
    assert len(bundled) > DEVICE_UNITS * 0.9, len(bundled)
    for data in bundled:
        assert set(re.findall(rb"amdgcn-amd-amdhsa--(gfx[0-9a-f]+)", data)) == {ROCM_TARGET.encode()}
    # Every compile went through ccache (cold: all misses; on a warm machine some or all hit).
    ccache = record["ccache"]
    assert ccache["hits"] + ccache["misses"] >= DEVICE_UNITS


def test_a_rebuild_in_another_folder_hits_every_compile(rocm_tree: RocmTree) -> None:
    cold, warm = rocm_tree.runner.record["ccache"], rocm_tree.elsewhere.record["ccache"]
    assert warm["misses"] == 0 and warm["hits"] == cold["hits"] + cold["misses"], (cold, warm)
    assert len(_device_objects(rocm_tree.elsewhere)) == DEVICE_UNITS


def test_reinstalled_rocm_packages_with_new_mtimes_still_hit_every_compile(rocm_tree: RocmTree) -> None:
    before, after = rocm_tree.mtimes
    assert after > before, "the compiler's mtime did not change"
    # The compiler and device libraries (clang-21, rocm-device-libs) and HIP's headers are among them.
    assert any(p.startswith("clang-") for p in rocm_tree.packages), rocm_tree.packages
    assert any(p.startswith("rocm-device-libs") for p in rocm_tree.packages), rocm_tree.packages
    cold, again = rocm_tree.runner.record["ccache"], rocm_tree.elsewhere.record["ccache"]
    assert (again["hits"], again["misses"]) == (cold["hits"] + cold["misses"], 0), again
    # The toolchain's identity is its content: unchanged by the reinstall.
    assert (
        rocm_tree.elsewhere.record["toolchain"]["identity"]
        == rocm_tree.runner.record["toolchain"]["identity"]
    )


def test_the_bundle_carries_debians_rocm_each_with_its_copyright(
    rocm_tree: RocmTree, bundle_files: Path
) -> None:
    files = bundle_files
    names = {p.name for p in files.iterdir()}
    assert set(ROCM_LIBRARIES) <= names, sorted(names)
    # HIP opens its code-object compiler by name (not DT_NEEDED): it must be there too.
    assert "libamd_comgr.so.3" in names, sorted(names)
    manifest = json.loads((files / "manifest.json").read_text())
    third = {e["path"]: e for e in manifest["third_party"]}
    root = rocm_tree.root
    for soname in ROCM_LIBRARIES:
        real = (files / soname).resolve().name
        package = _owners(root, [f"{MULTIARCH}/{real}"])
        assert len(package) == 1, package
        entry = third[real]
        assert (entry["package"], entry["archive"]) == (package[0], f"dpkg:{package[0]}"), entry
        # Its package's copyright first, then the common licenses it refers to (Apache-2.0 for HIP's).
        license_file, *common = entry["licenses"]
        assert license_file == f"licenses/toolchain/share/doc/{package[0]}/copyright"
        assert (files / license_file).read_bytes() == (
            root / "usr/share/doc" / package[0] / "copyright"
        ).read_bytes()
        for rel in common:
            assert rel.startswith("licenses/toolchain/share/common-licenses/"), rel
            assert (files / rel).read_bytes() == (
                root / "usr" / rel.removeprefix("licenses/toolchain/")
            ).read_bytes()


def test_the_bundle_ships_rocblas_kernels_for_its_target_alone(
    rocm_tree: RocmTree, bundle_files: Path
) -> None:
    files = bundle_files
    # Where Debian's librocblas looks, relative to itself: rocblas/<version>/library.
    (installed,) = (rocm_tree.root / MULTIARCH.lstrip("/") / "rocblas").glob("*/library")
    version = installed.parent.name
    shipped = files / "rocblas" / version / "library"
    gfx = re.compile(r"gfx[0-9a-f]+")
    installed_names = {p.name for p in installed.iterdir()}
    targets_installed = {t for n in installed_names for t in gfx.findall(n)}
    assert len(targets_installed) > 5 and ROCM_TARGET in targets_installed, targets_installed
    shipped_names = {p.name for p in shipped.iterdir()}
    # The leg's target's files and the target-free ones, exactly: nothing of the other architectures.
    expected = {n for n in installed_names if set(gfx.findall(n)) <= {ROCM_TARGET}}
    assert shipped_names == expected
    assert any(ROCM_TARGET in n for n in shipped_names)


def test_check_bundle_finds_the_closure_complete_refuses_sids_glibc_and_says_there_is_no_gpu_here(
    rocm_tree: RocmTree,
) -> None:
    check = rocm_tree.runner.record["bundle_check"]
    # Every library resolves inside the bundle, every RUNPATH stays in it: no problem but the floor.
    # Built on sid, the build's own files need its glibc, above the leg's runner's (Ubuntu 22.04: 2.35):
    # such a bundle must not ship, and the check says so for each file.
    assert check["ok"] is False and check["problems"], check
    assert {p["kind"] for p in check["problems"]} == {"glibc"}, check["problems"]
    assert (check["glibc_required"], check["glibc_max"]) == (rocm_tree.glibc, "2.35"), check
    assert rocm_tree.runner.record["error"].endswith(
        f"requires GLIBC_{rocm_tree.glibc}, above the leg's floor glibc_max = 2.35"
        + (f" (and {len(check['problems']) - 1} more)" if len(check["problems"]) > 1 else "")
    ), rocm_tree.runner.record["error"]
    lines = {c["name"]: (c["status"], c["line"]) for c in check["checks"]}
    assert lines["versions"][0] == lines["forward-pass"][0] == "passed", lines
    status, line = lines["gpu-forward-pass"]
    assert status == "skipped" and line.startswith(
        "gpu-forward-pass: skipped: no GPU here: no ROCm/HIP device"
    ), line
