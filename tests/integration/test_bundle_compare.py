"""A mix build twice, cold then warm, in two workspaces: 100% hits and byte-identical bundles.

The generated project embeds its git commit in a compiled file, as llama.cpp's
build info does: a merge commit minted anew per run would miss that object
and change the library that holds it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import textwrap
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from pipeline.bundle.compare import compare
from pipeline.bundle.make import read_manifest
from pipeline.inputs.matrix import MixPin, SourceConfig, load_matrix
from pipeline.inputs.resolution_file import LegResolution, SourceSpec
from pipeline.leg.options import LegOptions
from pipeline.leg.steps import run_leg
from pipeline.results.record import LegRecord
from pipeline.source.checkout import checkout_source, resolve_source
from pipeline.toolchain.host_compiler import host_toolchain
from tests.support.bundles import make_bundle
from tests.support.gitrepos import clone, commit_files, git, init_repo, tag
from tests.support.inputs import leg_inputs
from tests.support.pipeline_cli import run_pipeline

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
# core.cpp, main.cpp, build-info.cpp
COMPILATIONS = 3

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.16)
project(mixdemo C CXX)
# As llama.cpp's build-info: the commit's short SHA compiled into the library, LLAMA_BUILD_COMMIT
# when the builder defines it (llama.cpp's CMakeLists.txt: if (NOT DEFINED LLAMA_BUILD_COMMIT)), else git's.
if(DEFINED LLAMA_BUILD_COMMIT)
    set(BUILD_COMMIT ${LLAMA_BUILD_COMMIT})
else()
    find_package(Git REQUIRED)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short HEAD
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                    OUTPUT_VARIABLE BUILD_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
configure_file(build-info.cpp.in ${CMAKE_BINARY_DIR}/build-info.cpp @ONLY)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_library(mixcore SHARED src/core.cpp ${CMAKE_BINARY_DIR}/build-info.cpp)
add_executable(mixdemo src/main.cpp)
target_link_libraries(mixdemo PRIVATE mixcore)
"""

FILES = {
    "CMakeLists.txt": CMAKELISTS,
    "build-info.cpp.in": 'extern "C" const char * mix_build_commit() { return "@BUILD_COMMIT@"; }\n',
    "src/core.cpp": 'extern "C" int mix_core(int x) { return x * 2; }\n',
    "src/main.cpp": textwrap.dedent(
        """\
        #include <cstdio>
        extern "C" int mix_core(int);
        extern "C" const char * mix_build_commit();
        int main() { std::printf("%d %s\\n", mix_core(21), mix_build_commit()); return 0; }
        """
    ),
}

MATRIX = """\
[source]
repo = "{repo}"
tag = "b1"
min_age_hours = 0

[ccache]
compiler_check = "content"

[cmake]
# A build-tree RPATH of $ORIGIN: the binaries do not name the workspace they were linked in.
args = ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON"]

[legs.cpu]
backend = "cpu"
os = "linux"
"""


@dataclass
class Setup:
    root: Path
    matrix: Path
    template: str
    spec: SourceSpec
    cache: Path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    root = tmp_path_factory.mktemp("mixbuild")
    up = init_repo(root / "upstream")
    commit_files(up, FILES, "mixdemo", when=NOW - timedelta(days=3))
    tag(up, "b1", when=NOW - timedelta(days=3))
    fork = clone(up, root / "gh" / "acme" / "mixdemo")
    pins = []
    for number, (rel, old, new) in enumerate(
        [("src/core.cpp", "x * 2", "x * 2 + 0"), ("src/main.cpp", "mix_core(21)", "mix_core(20 + 1)")],
        start=1,
    ):
        git(fork, "checkout", "--quiet", "-b", f"pr{number}", "b1")
        text = (fork / rel).read_text().replace(old, new)
        sha = commit_files(fork, {rel: text}, f"PR {number}", when=NOW - timedelta(days=2))
        pins.append(MixPin(repo="acme/mixdemo", number=number, sha=sha))
    matrix = root / "matrix.toml"
    matrix.write_text(MATRIX.format(repo=up))
    template = f"file://{root}/gh/{{repo}}"
    spec = resolve_source(
        SourceConfig(repo=str(up), tag="b1", min_age_hours=0, mix=tuple(pins)),
        now=NOW,
        git_url_template=template,
        environ=os.environ,
    )
    return Setup(root=root, matrix=matrix, template=template, spec=spec, cache=root / "ccache")


def build_in(setup: Setup, workspace: Path, spec: SourceSpec | None = None) -> tuple[LegRecord, Path, str]:
    """Check the mix out under ``workspace``, build the cpu leg with run_leg, bundle it."""
    spec = spec or setup.spec
    out = workspace / "out"
    src = out / "src" / "llama.cpp"
    commit = checkout_source(spec, src, git_url_template=setup.template, environ=os.environ)
    matrix = load_matrix(setup.matrix)
    leg = matrix.leg("cpu")
    inputs = leg_inputs(matrix, out=out, tag=spec.tag, ccache_dir=setup.cache, now=NOW)
    record = run_leg(
        inputs,
        leg,
        LegOptions(source_tree=src, no_bundle=True),
        Console(file=io.StringIO()),
        resolve=LegResolution,
    ).record
    # What the pipeline records for a checkout it made: the spec, at its commit.
    record.source = {**record.source, **spec.to_json(), "commit": commit}
    bundle = make_bundle(
        leg=leg, record=record, build_dir=out / "cpu" / "build", out_dir=out,
        toolchain=host_toolchain(os.environ), tag=spec.tag, commit=commit,
    )  # fmt: skip
    return record, bundle, commit


@pytest.fixture(scope="module")
def two_builds(setup: Setup) -> tuple[tuple[LegRecord, Path, str], tuple[LegRecord, Path, str]]:
    cold = build_in(setup, setup.root / "first")
    warm = build_in(setup, setup.root / "elsewhere" / "second")
    return cold, warm


def test_same_mix_inputs_give_the_same_commit_full_hits_and_identical_bundles(two_builds: tuple) -> None:
    (cold, bundle_a, commit_a), (warm, bundle_b, commit_b) = two_builds
    assert commit_a == commit_b
    assert cold.ccache["misses"] == COMPILATIONS
    assert (warm.ccache["hits"], warm.ccache["misses"], warm.ccache["hit_rate"]) == (COMPILATIONS, 0, 1.0)
    result = compare(bundle_a, bundle_b)
    assert result.same, result.to_json()
    assert result.summary == "2 of 2 files identical"
    assert bundle_a.read_bytes() == bundle_b.read_bytes()
    assert bundle_a.name == bundle_b.name == f"llama-{cold.source['tag']}-bin-ubuntu-x64.tar.gz"


def test_the_commit_is_baked_in(setup: Setup, two_builds: tuple) -> None:
    (_, bundle, commit), _ = two_builds
    out = setup.root / "first" / "out" / "cpu" / "build" / "bin"
    proc = subprocess.run([str(out / "mixdemo")], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["42", commit[:7]]
    manifest = read_manifest(bundle)
    assert manifest["source"]["commit"] == commit
    assert [p["number"] for p in manifest["source"]["mix"]] == [1, 2]
    assert str(setup.root) not in json.dumps(manifest)


def test_a_new_merge_commit_misses_one_object_and_changes_one_file(setup: Setup, two_builds: tuple) -> None:
    """The failure this pipeline prevents: same tree, a new merge commit (as a per-run merge would make)."""
    (_, bundle_a, commit_a), _ = two_builds
    ws = setup.root / "remerged"
    record, bundle, commit = build_in(setup, ws)
    assert commit == commit_a and record.ccache["misses"] == 0
    assert bundle.read_bytes() == bundle_a.read_bytes()
    src = ws / "out" / "src" / "llama.cpp"
    git(src, "commit", "--quiet", "--amend", "--no-edit", when=NOW)
    minted = git(src, "rev-parse", "HEAD")
    assert minted != commit_a
    leg = load_matrix(setup.matrix).leg("cpu")
    inputs = leg_inputs(load_matrix(setup.matrix), out=ws / "out", tag=setup.spec.tag, ccache_dir=setup.cache)
    rebuilt = run_leg(
        inputs,
        leg,
        LegOptions(source_tree=src, no_bundle=True),
        Console(file=io.StringIO()),
        resolve=LegResolution,
    ).record
    assert (rebuilt.ccache["misses"], rebuilt.ccache["hits"]) == (1, COMPILATIONS - 1)
    rebuilt.source = {**rebuilt.source, **setup.spec.to_json(), "commit": commit_a}
    other = make_bundle(
        leg=leg, record=rebuilt, build_dir=ws / "out" / "cpu" / "build", out_dir=ws / "elsewhere",
        toolchain=host_toolchain(os.environ), tag=setup.spec.tag, commit=commit_a,
    )  # fmt: skip
    result = compare(bundle_a, other)
    assert [d[0] for d in result.differing] == ["libmixcore.so"]
    assert result.summary == "1 of 2 files identical"


# ---------------------------------------------------------------- the commands


def test_compare_command(setup: Setup, two_builds: tuple, tmp_path: Path) -> None:
    (_, bundle_a, _), (_, bundle_b, _) = two_builds
    same = run_pipeline(["compare", str(bundle_a), str(bundle_b)])
    assert same.returncode == 0, same.stderr
    assert "2 of 2 files identical" in same.stdout

    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    with tarfile.open(bundle_b) as tar:
        tar.extractall(unpacked, filter="tar")
    # Upstream's layout: one llama-<tag>/ folder with the programs and libraries in it.
    (top,) = unpacked.iterdir()
    assert top.name == bundle_b.name.removesuffix("-bin-ubuntu-x64.tar.gz")
    (top / "mixdemo").write_bytes(b"patched")
    differ = run_pipeline(["compare", str(bundle_a), str(unpacked), "--json"])
    assert differ.returncode == 1
    data = json.loads(differ.stdout)
    assert data["identical"] is False
    assert [d["path"] for d in data["differing"]] == ["mixdemo"]
    assert data["differing"][0]["size_b"] == len(b"patched")
    assert data["summary"] == "1 of 2 files identical"

    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(bundle_a.read_bytes()[:300])
    bad = run_pipeline(["compare", str(broken), str(bundle_b)])
    assert bad.returncode == 9
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {broken}: corrupt bundle: "), bad.stderr


def test_reproduce_command_rebuilds_an_identical_bundle(
    setup: Setup, two_builds: tuple, tmp_path: Path
) -> None:
    (_, bundle_a, _), _ = two_builds
    proc = run_pipeline(
        ["--matrix", str(setup.matrix), "reproduce", str(bundle_a), "--out", str(tmp_path / "out"),
         "--ccache-dir", str(setup.cache)],
        env={"PIPELINE_GIT_URL_TEMPLATE": setup.template},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 of 2 files identical (identical)" in proc.stdout
    rebuilt = tmp_path / "out" / "dist" / bundle_a.name
    assert rebuilt.read_bytes() == bundle_a.read_bytes()


def test_reproduce_without_source_never_checks_out_into_a_tree_linked_by_an_earlier_run(
    setup: Setup, two_builds: tuple, tmp_path: Path
) -> None:
    """--source is linked at <out>/cpu/src/llama.cpp; a later reproduce into the same --out checks out
    there itself: into a folder of its own, not through the link into the user's tree (a checkout cleans)."""
    (_, bundle_a, _), _ = two_builds
    user = tmp_path / "my-llama.cpp"
    shutil.copytree(setup.root / "first" / "out" / "src" / "llama.cpp", user, symlinks=True)
    (user / "my-notes.txt").write_text("not tracked, mine\n")
    common = [
        "--matrix",
        str(setup.matrix),
        "reproduce",
        str(bundle_a),
        "--out",
        str(tmp_path / "out"),
        "--ccache-dir",
        str(setup.cache),
    ]
    env = {"PIPELINE_GIT_URL_TEMPLATE": setup.template}
    for extra in (["--source", str(user)], []):
        proc = run_pipeline([*common, *extra], env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "2 of 2 files identical (identical)" in proc.stdout
    assert (user / "my-notes.txt").read_text() == "not tracked, mine\n"
    place = tmp_path / "out" / "cpu" / "src" / "llama.cpp"
    assert place.is_dir() and not place.is_symlink()


def test_reproduce_refuses_a_source_at_another_commit(
    setup: Setup, two_builds: tuple, tmp_path: Path
) -> None:
    (_, bundle_a, _), _ = two_builds
    other = clone(setup.root / "upstream", tmp_path / "other")
    proc = run_pipeline(
        [
            "--matrix",
            str(setup.matrix),
            "reproduce",
            str(bundle_a),
            "--source",
            str(other),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert proc.returncode == 3
    assert "the bundle was built from" in proc.stderr and "Traceback" not in proc.stderr


def test_reproduce_refuses_a_foreign_bundle(setup: Setup, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.zip"
    with zipfile.ZipFile(foreign, "w") as zf:
        zf.writestr("bin/tool.exe", b"MZ")
    proc = run_pipeline(["--matrix", str(setup.matrix), "reproduce", str(foreign)])
    assert proc.returncode == 9
    assert proc.stderr.strip() == f"error: {foreign}: foreign bundle: no manifest.json inside"
