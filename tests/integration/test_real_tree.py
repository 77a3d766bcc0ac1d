"""The real llama.cpp tree through the nightly path, end to end.

No ``--source``: ``python -m pipeline resolve`` picks the newest ``b<digits>``
tag old enough at the run's moment and pins the mix, then ``python -m
pipeline build cpu --resolved`` clones the tag, merges the pull request
deterministically, builds and bundles. The tree is llama.cpp 0c1e570's files from
llama-cpp-python 0.3.36's sdist (tests/support/llama_tree.py).

The cpu leg here is the shipped matrix.toml's cpu leg with the one CI
reduction of scripts/workload/reduction.py and nothing else (its TLS, RPC and
shared flags as shipped; tests/unit/test_tested_flags.py checks it): the
tools, examples, server and app off, one CPU variant instead of
``GGML_CPU_ALL_VARIANTS`` (561 steps, over an hour on 2 cores), plus the
programs check-bundle's smoke run needs (``REDUCED_PROGRAMS``: llama-gguf-split,
llama-tokenize, llama-simple, added by scripts/workload/llama_programs.cmake).

Each workspace runs the workflow's path: ``resolve``, ``source`` (one
archive of the merged tree), then ``build cpu`` from that archive. Each
workspace is itself a git repository with a history of its own, as the
pipeline's checkout is on a runner: the programs must still report
llama.cpp's build number and commit, not that repository's.

Two workspaces build the same run: ``runner/`` first (cold, or warm when the
machine's test cache already has the objects: only success is asserted), then
``elsewhere/laptop/`` (100% hits whatever the cache held). Their bundles must
be byte-identical, hold no path of either workspace, and ``reproduce`` of the
runner's bundle in a third folder, and in the runner's own (its default
``out/reproduce``), must compare equal with every object a hit.

The ccache directory and the sdist live under ``~/.cache/llama-pipeline-tests``
(``PIPELINE_TEST_CACHE``), so a CI rerun on the same machine is warm.
Deselect with ``-m "not e2e"``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scripts.workload.llama_sdist import e2e_cache_root
from scripts.workload.reduction import REDUCED_PROGRAMS
from tests.support import shared_jobs
from tests.support.bundle_archive import extract_top
from tests.support.gitrepos import commit_files, git, init_repo
from tests.support.llama_tree import (
    BASE_TAG,
    PR_NUMBER,
    PR_REPO,
    TREE_SHA,
    Forge,
    prepared_forge,
)
from tests.support.planted import PLANTED_MESSAGE, plant_libraries

# The matrix template and the legs it declares (tests/unit/test_tested_flags.py reads them here).
from tests.support.real_tree_matrix import MATRIX as MATRIX
from tests.support.real_tree_matrix import TESTED_LEGS, TESTED_SHARED, matrix_text
from tests.support.shared_units import shared_units, writer_finished, xdist_run

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.leg("cpu")]

# The smoke run's vocab (pipeline/bundle/smoke.py), named here as the tree names it.
VOCAB = "ggml-vocab-llama-spm.gguf"

ROOT = Path(__file__).resolve().parents[2]
# The nightly's moment: 10 h after the real commit (b7000), 2 h after b7001.
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
# Compilations of the reduced cpu leg: `ninja -t commands | grep -c ' -c '` on the configured tree.
COMPILATIONS = 133
PROGRAM = "llama-gguf-split"
# Budget for one build: ~5 min cold on 2 idle cores; CI shares the machine.
BUILD_TIMEOUT = 3600

# The build number upstream's tag names (b7000) and the commits of the pipeline-like repository around the tree.
BUILD_NUMBER = int(BASE_TAG.removeprefix("b"))
PIPELINE_REPO_COMMITS = 3


@dataclass
class Run:
    """One workspace's nightly: its resolution, record, bundle and wall time."""

    workspace: Path
    resolution: dict[str, Any]
    # What `source` printed: the archive's path, tag, commit and fetch figures.
    source: dict[str, Any]
    record: dict[str, Any]
    bundle: Path
    seconds: float


@dataclass
class RealTree:
    root: Path
    forge: Forge
    matrix: Path
    cache: Path
    runner: Run
    laptop: Run


def pipeline_may_fail(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m pipeline ARGS``, whatever its exit code."""
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)  # fmt: skip


def pipeline(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m pipeline ARGS`` as the nightly runs it; fails the test with its output on error."""
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"pipeline {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr}"
        )
    return proc


def pipeline_checkout(ws: Path) -> None:
    """Make ``ws`` a git repository with a history of its own, as the pipeline's checkout on a runner."""
    init_repo(ws)
    for n in range(PIPELINE_REPO_COMMITS):
        commit_files(
            ws,
            {f"pipeline-{n}.txt": f"commit {n} of the pipeline's repository\n"},
            f"pipeline {n}",
            when=NOW - timedelta(days=30 - n),
        )
    (ws / ".gitignore").write_text("out/\nresolved.json\n")


def nightly(tree_root: Path, name: str, matrix: Path, cache: Path, env: dict[str, str], *extra: str) -> Run:
    """resolve, source, then build cpu from the archive, in a fresh workspace ``name`` (the workflow's path);
    ``extra``: more arguments of ``build``."""
    ws = tree_root / name
    pipeline_checkout(ws)
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
    pipeline(
        [
            "--matrix",
            str(matrix),
            "build",
            "cpu",
            "--resolved",
            "resolved.json",
            "--source-archive",
            made["path"],
            "--out",
            "out",
            "--ccache-dir",
            str(cache),
            *extra,
        ],
        cwd=ws,
        env=env,
    )
    seconds = time.monotonic() - started
    record = json.loads((ws / "out" / "cpu" / "record.json").read_text())
    return Run(
        workspace=ws,
        resolution=json.loads((ws / "resolved.json").read_text()),
        source=made,
        record=record,
        bundle=ws / "out" / record["bundle"],
        seconds=seconds,
    )


@pytest.fixture(scope="module")
def real_tree(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> RealTree:
    root = tmp_path_factory.mktemp("real-tree")
    forge = prepared_forge(root, young_at=NOW - timedelta(hours=2), pr_at=NOW - timedelta(hours=7))
    matrix = root / "matrix.toml"
    matrix.write_text(matrix_text(upstream=forge.upstream, pr_sha=forge.pr_sha))
    cache = e2e_cache_root() / "ccache"
    env = {
        "PIPELINE_GIT_URL_TEMPLATE": forge.template,
        "PIPELINE_CACHE_HOME": str(root / "cache-home"),
        **shared_jobs.build_env(),
    }  # the session's compile slots (tests/support/shared_jobs.py)
    # The objects the runner compiles are stored for the legs that share them (tests/support/shared_units.py).
    filled = False
    try:
        runner = nightly(root, "runner", matrix, cache, env, "--remote-cache", shared_units().url)
        filled = True
    finally:
        # The readers of this run (act's first night) wait for this, on a cold machine.
        writer_finished(xdist_run(request.config), filled=filled)
    laptop = nightly(root, "elsewhere/laptop", matrix, cache, env)
    print(
        f"\nreal tree: runner build {runner.seconds:.0f} s, laptop build {laptop.seconds:.0f} s",
        file=sys.stderr,
    )
    return RealTree(root=root, forge=forge, matrix=matrix, cache=cache, runner=runner, laptop=laptop)


def expected_tag(forge: Forge) -> str:
    # The mix hash as documented in pipeline/inputs/mix.py, computed here independently.
    line = f"{PR_REPO}#{PR_NUMBER}:{forge.pr_sha}"
    return f"{BASE_TAG}-mix-{hashlib.sha256(line.encode()).hexdigest()[:7]}"


def test_the_nightly_takes_the_newest_tag_old_enough_and_pins_the_mix(real_tree: RealTree) -> None:
    source = real_tree.runner.resolution["source"]
    # b7001 is 2 h old at NOW: too young for 6 h; b7000 (the real commit) is 9.8 h old.
    assert (source["base_tag"], source["base_commit"]) == (BASE_TAG, real_tree.forge.base_sha)
    # The base is the real tree: the vendored commit's files.
    assert git(real_tree.forge.upstream, "rev-parse", f"{BASE_TAG}^{{tree}}") == TREE_SHA
    assert source["base_date"] == "2026-10-01T02:11:48Z"
    assert source["mix"] == [{"repo": PR_REPO, "number": PR_NUMBER, "sha": real_tree.forge.pr_sha}]
    assert source["tag"] == expected_tag(real_tree.forge)
    assert real_tree.laptop.resolution["source"] == source


def test_the_mix_is_merged_onto_the_tag_the_same_way_in_both_folders(real_tree: RealTree) -> None:
    runner, laptop = real_tree.runner.record, real_tree.laptop.record
    assert runner["status"] == laptop["status"] == "success"
    commit = runner["source"]["commit"]
    assert laptop["source"]["commit"] == commit
    clone = real_tree.runner.workspace / "out" / "src" / "llama.cpp"
    assert git(clone, "rev-parse", "HEAD") == commit
    assert git(clone, "rev-parse", "HEAD^1", "HEAD^2").split() == [
        real_tree.forge.base_sha,
        real_tree.forge.pr_sha,
    ]
    assert git(clone, "status", "--porcelain") == ""


def test_the_build_compiles_the_reduced_leg_and_the_warm_one_hits_everything(real_tree: RealTree) -> None:
    cold, warm = real_tree.runner.record["ccache"], real_tree.laptop.record["ccache"]
    # The first build may find a warm machine cache (a CI rerun): only its size is fixed.
    assert cold["hits"] + cold["misses"] == COMPILATIONS
    assert (warm["hits"], warm["misses"], warm["hit_rate"]) == (COMPILATIONS, 0, 1.0)
    # The configure line holds the shipped flags plus the reduction, as declared (test_tested_flags.py), in order.
    args, declared = real_tree.runner.record["cmake_args"], [*TESTED_SHARED, *TESTED_LEGS["cpu"]]
    assert any(args[i : i + len(declared)] == declared for i in range(len(args))), args
    assert f"-DLLAMA_BUILD_NUMBER={BUILD_NUMBER}" in args
    # The leg's folder: the archive's tree (out/cpu/src/llama.cpp) and the build folder (out/cpu/build).
    assert cold["base_dir"] == str(real_tree.runner.workspace / "out" / "cpu")
    assert warm["base_dir"] == str(real_tree.laptop.workspace / "out" / "cpu")


def test_bundles_from_two_folders_are_byte_identical(real_tree: RealTree) -> None:
    a, b = real_tree.runner.bundle, real_tree.laptop.bundle
    assert a.name == b.name == f"llama-{expected_tag(real_tree.forge)}-bin-ubuntu-x64.tar.gz"
    proc = pipeline(["compare", str(a), str(b)], cwd=real_tree.root, env={})
    assert "(identical)" in proc.stdout, proc.stdout
    assert a.read_bytes() == b.read_bytes()


def _extract(bundle: Path, dest: Path) -> Path:
    """Unpack ``bundle``; its one top folder, upstream's ``llama-<tag>/`` with the programs and libraries in it."""
    top = extract_top(bundle, dest)
    assert top.name == bundle.name.removesuffix("-bin-ubuntu-x64.tar.gz")
    return top


def _repack(root: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(root, arcname=root.name)
    return dest


def _vocab_case(models: Path) -> tuple[str, list[int]]:
    """The first plain two-word-or-more sentence of the vocab's test pair, read as test-tokenizer-0.cpp reads it."""
    inputs = (models / f"{VOCAB}.inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    outputs = (models / f"{VOCAB}.out").read_text(encoding="utf-8").splitlines()
    for text, ids in zip(inputs, outputs, strict=True):
        if " " in text and text.replace(" ", "").isalpha() and text.isascii() and not text.startswith(" "):
            return text, [int(i) for i in ids.split()]
    raise AssertionError(f"no plain sentence in {VOCAB}.inp")


def test_no_workspace_path_is_left_in_the_bundle(real_tree: RealTree, tmp_path: Path) -> None:
    files = _extract(real_tree.runner.bundle, tmp_path / "x")
    names = sorted(
        p.relative_to(files).as_posix() for p in files.rglob("*") if p.is_file() and not p.is_symlink()
    )
    assert PROGRAM in names and any(n.startswith("libllama.so") for n in names)
    assert "LICENSE" in names and "manifest.json" in names
    needles = [str(real_tree.root).encode(), str(real_tree.runner.workspace).encode(), b"/tmp/pytest-of-"]
    for rel in names:
        data = (files / rel).read_bytes()
        assert not [n for n in needles if n in data], f"{rel} names the build folder"
    # GGML_ASSERT's __FILE__: the path inside the tree, mapped from ../src/llama.cpp/ggml/src/ggml.c.
    base = next(n for n in names if n.startswith("libggml-base.so"))
    assert b"./ggml/src/ggml.c\x00" in (files / base).read_bytes()


def test_the_bundled_program_runs_from_the_extracted_bundle(real_tree: RealTree, tmp_path: Path) -> None:
    files = _extract(real_tree.laptop.bundle, tmp_path / "bundle")
    # The build folders are gone, as on a user's machine.
    for run in (real_tree.runner, real_tree.laptop):
        (run.workspace / "out" / "cpu" / "build").rename(run.workspace / "out" / "cpu" / "build.moved")
    try:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LC_ALL": "C"}
        version = subprocess.run([str(files / PROGRAM), "--version"], env=env, capture_output=True, text=True,
                                 timeout=60, check=False)  # fmt: skip
        usage = subprocess.run([str(files / PROGRAM), "--help"], env=env, capture_output=True, text=True,
                               timeout=60, check=False)  # fmt: skip
    finally:
        for run in (real_tree.runner, real_tree.laptop):
            (run.workspace / "out" / "cpu" / "build.moved").rename(run.workspace / "out" / "cpu" / "build")
    assert version.returncode == 0, version.stderr
    commit = real_tree.runner.record["source"]["commit"]
    # llama.cpp's build info: the tag's number and the commit that was built (the mix's
    # merge commit), although the archive was unpacked inside another git repository (the workspace's).
    assert f"(build {BUILD_NUMBER}, commit {commit[:7]})" in version.stderr, version.stderr
    workspace_head = git(real_tree.laptop.workspace, "rev-parse", "--short=7", "HEAD")
    assert workspace_head not in version.stderr, version.stderr
    # Nor does ggml's own commit string (ggml_commit(), compiled into libggml-base) name that repository.
    base = next(p for p in files.iterdir() if p.name.startswith("libggml-base.so") and not p.is_symlink())
    assert workspace_head.encode() not in base.read_bytes()
    assert "(built with the e2e mix)" in usage.stdout


def test_every_elf_file_searches_only_the_bundles_folders(real_tree: RealTree, tmp_path: Path) -> None:
    """CMake links the tree's libraries with RUNPATH ``$ORIGIN:`` (an empty entry: the working folder)."""
    files = _extract(real_tree.runner.bundle, tmp_path / "bundle")
    elfs = [p for p in sorted(files.iterdir())
            if p.is_file() and not p.is_symlink() and p.read_bytes()[:4] == b"\x7fELF"]  # fmt: skip
    names = [p.name for p in elfs]
    assert PROGRAM in names and "libggml-cpu.so" in names and any(n.startswith("libllama.so") for n in names)
    for path in elfs:
        out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
        assert "(RPATH)" not in out, path.name
        for runpath in re.findall(r"\(RUNPATH\)\s+Library runpath: \[(.*)\]", out):
            assert all(re.fullmatch(r"\$ORIGIN(/[^:]+)?", e) for e in runpath.split(":")), (
                path.name,
                runpath,
            )
    # Run from a folder holding files named like the system libraries it needs: none is loaded.
    planted = plant_libraries(tmp_path / "downloads", ("libm.so.6", "libgomp.so.1", "libgcc_s.so.1"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LC_ALL": "C"}
    proc = subprocess.run([str(files / PROGRAM), "--version"], cwd=planted, env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0 and PLANTED_MESSAGE not in proc.stderr, proc.stderr


def test_check_bundle_passes_on_both_bundles(real_tree: RealTree) -> None:
    """Every build ran check-bundle on its bundle; the command agrees, smoke run included."""
    models = real_tree.runner.workspace / "out" / "src" / "llama.cpp" / "models"
    text, ids = _vocab_case(models)
    for run in (real_tree.runner, real_tree.laptop):
        check = run.record["bundle_check"]
        assert check["ok"] is True and check["problems"] == [], check
        assert [s["program"] for s in check["smoke"]] == sorted(REDUCED_PROGRAMS), check
        lines = {c["name"]: (c["status"], c["line"]) for c in check["checks"]}
        # llama-simple (upstream's example) has no --version: it prints its usage, having started.
        assert lines["versions"] == (
            "passed",
            "versions: 2/3 programs printed their version; llama-simple started but take no --version",
        )
        # GGML_BACKEND_DL without the CPU variants: one CPU module, loaded from beside the program, and the
        # shipped GGML_RPC's module; no GPU.
        assert lines["backends"] == (
            "passed",
            "backends: llama-simple loaded CPU (libggml-cpu.so), RPC (libggml-rpc.so); "
            "llama-tokenize --list-devices: no device besides the CPU",
        )
        # The build gave check-bundle its tree: the tokenizer check used the tree's own test pair.
        assert lines["tokenizer"] == (
            "passed",
            f"tokenizer: llama-tokenize on {VOCAB}: {text!r} -> {ids}, as {VOCAB}.out expects",
        )
        # Up to 4 tokens: the random model may pick its end-of-generation token early.
        assert lines["forward-pass"][0] == "passed"
        assert re.fullmatch(
            r"forward-pass: llama-simple decoded [1-4] tokens with a tiny random-weight llama model "
            r"on libggml-cpu\.so",
            lines["forward-pass"][1],
        ), lines["forward-pass"]
        proc = pipeline(["check-bundle", str(run.bundle), "--json"], cwd=real_tree.root, env={})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        data = json.loads(proc.stdout)
        assert data["ok"] is True and data["glibc_required"] is not None
        # llama-simple takes no --version: upstream's usage text and exit 1, having started.
        assert {s["program"]: s["exit_code"] for s in data["smoke"]} == {
            "llama-gguf-split": 0,
            "llama-simple": 1,
            "llama-tokenize": 0,
        }, data
        # Without the tree the tokenizer check says why it did not run; the others still pass.
        assert {c["name"]: c["status"] for c in data["checks"]} == {
            "versions": "passed",
            "backends": "passed",
            "tokenizer": "skipped",
            "forward-pass": "passed",
        }
        assert [c["line"] for c in data["checks"] if c["name"] == "tokenizer"] == [
            "tokenizer: skipped: no llama.cpp source tree given for its models/ vocab"
        ]
    # A relative --source-tree is the caller's folder's (the smoke run's programs run elsewhere).
    proc = pipeline(
        [
            "check-bundle",
            str(real_tree.runner.bundle),
            "--json",
            "--source-tree",
            os.path.join("out", "src", "llama.cpp"),
        ],
        cwd=real_tree.runner.workspace,
        env={},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {c["name"]: c["status"] for c in json.loads(proc.stdout)["checks"]}["tokenizer"] == "passed", (
        proc.stdout
    )


def test_a_bundle_that_lost_its_cpu_backend_fails_the_backends_check(
    real_tree: RealTree, tmp_path: Path
) -> None:
    root = _extract(real_tree.runner.bundle, tmp_path / "x")
    (root / "libggml-cpu.so").unlink()
    bad = _repack(root, tmp_path / real_tree.runner.bundle.name)
    proc = pipeline_may_fail(["check-bundle", str(bad)], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # Nothing NEEDs the module (ggml loads it at run time): only the smoke run can see it is gone.
    assert (
        "backends: the CPU backend (no libggml-cpu*.so in the bundle) did not load in llama-simple "
        "(a library it needs is missing or it is broken); loaded: RPC (libggml-rpc.so)"
    ) in proc.stdout, proc.stdout
    assert "forward-pass: llama-simple with a tiny model exited" in proc.stdout


def test_a_gpu_backend_module_loads_without_a_gpu_and_fails_without_its_library(
    real_tree: RealTree, tmp_path: Path
) -> None:
    """A stand-in GPU module (a real ggml backend reporting no device) that needs a runtime library."""
    tree = real_tree.runner.workspace / "out" / "src" / "llama.cpp"
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "hip.c").write_text("int hip_device_count(void) { return 0; }\n")
    (runtime / "module.c").write_text(
        '#include "ggml-backend-impl.h"\n'
        "int hip_device_count(void);\n"
        'static const char * name(ggml_backend_reg_t r) { (void) r; return "HIPSTUB"; }\n'
        "static size_t count(ggml_backend_reg_t r) { (void) r; return (size_t) hip_device_count(); }\n"
        "static ggml_backend_dev_t get(ggml_backend_reg_t r, size_t i) { (void) r; (void) i; return 0; }\n"
        "static void * proc(ggml_backend_reg_t r, const char * n) { (void) r; (void) n; return 0; }\n"
        "static struct ggml_backend_reg reg = { GGML_BACKEND_API_VERSION, { name, count, get, proc }, 0 };\n"
        '__attribute__((visibility("default"))) ggml_backend_reg_t ggml_backend_init(void) { return &reg; }\n'
    )
    root = _extract(real_tree.runner.bundle, tmp_path / "x")
    gcc = ["gcc", "-shared", "-fPIC", "-O1"]
    subprocess.run([*gcc, "-Wl,-soname,libamdhip64.so.7", "-o", str(root / "libamdhip64.so.7"), str(runtime / "hip.c")],
                   check=True)  # fmt: skip
    subprocess.run([*gcc, f"-I{tree / 'ggml' / 'include'}", f"-I{tree / 'ggml' / 'src'}", "-o",
                    str(root / "libggml-hip.so"), str(runtime / "module.c"), f"-L{root}", "-l:libamdhip64.so.7",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN"], check=True)  # fmt: skip

    def check(bundle: Path) -> subprocess.CompletedProcess[str]:
        return pipeline_may_fail(["check-bundle", str(bundle)], cwd=tmp_path)

    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    good = check(_repack(root, tmp_path / "good" / real_tree.runner.bundle.name))
    assert good.returncode == 0, good.stdout + good.stderr
    # Loaded without a GPU: the module reports no device.
    assert (
        "backends: llama-simple loaded CPU (libggml-cpu.so), HIPSTUB (libggml-hip.so), RPC (libggml-rpc.so); "
        "llama-tokenize --list-devices: no device besides the CPU"
    ) in good.stdout, good.stdout

    (root / "libamdhip64.so.7").unlink()
    bad = check(_repack(root, tmp_path / "bad" / real_tree.runner.bundle.name))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "error: libggml-hip.so: needs libamdhip64.so.7: neither in the bundle" in bad.stdout
    assert (
        "backends: libggml-hip.so did not load in llama-simple (a library it needs is missing "
        "or it is broken); loaded: CPU (libggml-cpu.so)"
    ) in bad.stdout, bad.stdout


def test_a_tokenizer_that_disagrees_with_the_trees_test_pair_fails(
    real_tree: RealTree, tmp_path: Path
) -> None:
    models = real_tree.runner.workspace / "out" / "src" / "llama.cpp" / "models"
    text, ids = _vocab_case(models)
    other = tmp_path / "tree" / "models"
    other.mkdir(parents=True)
    for suffix in ("", ".inp"):
        shutil.copyfile(models / f"{VOCAB}{suffix}", other / f"{VOCAB}{suffix}")
    wrong = [*ids[:-1], ids[-1] + 1]
    lines = (models / f"{VOCAB}.out").read_text(encoding="utf-8").splitlines()
    at = [[int(i) for i in line.split()] for line in lines].index(ids)
    lines[at] = " " + " ".join(str(i) for i in wrong)
    (other / f"{VOCAB}.out").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = pipeline_may_fail(
        ["check-bundle", str(real_tree.runner.bundle), "--source-tree", str(tmp_path / "tree")], cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        f"tokenizer: llama-tokenize on {VOCAB} gave {ids} for {text!r}; {VOCAB}.out expects {wrong}"
        in proc.stdout
    ), proc.stdout


def test_reproduce_of_a_bundle_made_elsewhere_compares_equal(real_tree: RealTree) -> None:
    ws = real_tree.root / "release-engineer"
    ws.mkdir()
    env = {
        "PIPELINE_GIT_URL_TEMPLATE": real_tree.forge.template,
        "PIPELINE_CACHE_HOME": str(real_tree.root / "ch"),
    }
    proc = pipeline(
        ["--matrix", str(real_tree.matrix), "reproduce", str(real_tree.runner.bundle), "--out", "out",
         "--ccache-dir", str(real_tree.cache)],
        cwd=ws,
        env=env,
    )  # fmt: skip
    assert "(identical)" in proc.stdout, proc.stdout
    assert (
        ws / "out" / "dist" / real_tree.runner.bundle.name
    ).read_bytes() == real_tree.runner.bundle.read_bytes()
    stats = json.loads((ws / "out" / "cpu" / "record.json").read_text())["ccache"]
    assert (stats["hits"], stats["misses"]) == (COMPILATIONS, 0), stats


def test_reproduce_right_after_the_build_in_its_default_folder_hits_every_object(real_tree: RealTree) -> None:
    """From the runner's workspace, as a user would: the clone as a relative --source, reproduce's default
    --out (out/reproduce, one level deeper than the build's out): every object a hit."""
    ws = real_tree.runner.workspace
    env = {
        "PIPELINE_GIT_URL_TEMPLATE": real_tree.forge.template,
        "PIPELINE_CACHE_HOME": str(real_tree.root / "ch"),
    }
    proc = pipeline(
        ["--matrix", str(real_tree.matrix), "reproduce", str(real_tree.runner.bundle), "--source",
         os.path.join("out", "src", "llama.cpp"), "--ccache-dir", str(real_tree.cache)],
        cwd=ws,
        env=env,
    )  # fmt: skip
    assert "(identical)" in proc.stdout, proc.stdout
    stats = json.loads((ws / "out" / "reproduce" / "cpu" / "record.json").read_text())["ccache"]
    assert (stats["hits"], stats["misses"]) == (COMPILATIONS, 0), stats


def test_the_source_archive_of_the_real_tree_is_made_once_and_deterministic(real_tree: RealTree) -> None:
    """`source` of the same run in two folders: identical archives holding the merged tree."""
    first, second = real_tree.runner.source, real_tree.laptop.source
    assert Path(first["path"]).read_bytes() == Path(second["path"]).read_bytes()
    assert first["tag"] == expected_tag(real_tree.forge)
    merge = first["commit"]
    checkout = real_tree.runner.workspace / "out" / "src" / "llama.cpp"
    assert git(checkout, "rev-parse", "HEAD") == merge
    assert git(checkout, "rev-parse", "HEAD^1") == real_tree.forge.base_sha
    assert git(checkout, "rev-parse", "HEAD^2") == real_tree.forge.pr_sha
    # Every file of the merge commit, and nothing else, under llama.cpp/ (git's own listing is the reference).
    files = set(git(checkout, "ls-tree", "-r", "--name-only", merge).splitlines())
    with tarfile.open(first["path"]) as tar:
        archived = {m.name.removeprefix("llama.cpp/") for m in tar.getmembers() if m.isfile() or m.issym()}
    assert archived == files
    assert first["source"]["fetched_bytes"] > 0
