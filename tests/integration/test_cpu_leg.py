"""The CPU leg end to end with real CMake, Ninja, ccache and the machine's compiler."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.pipeline_cli import ROOT, build_leg, run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

UNITS = 20
COMPILATIONS = UNITS + 1  # the units and main.cpp; linking is not a ccache call


def _build(workspace: Path, cache: Path, *extra: str) -> dict:
    return build_leg(workspace, "cpu", cache, *extra)


def _workspace(root: Path, seed: int = 0) -> Path:
    write_cpp_project(root / "project", units=UNITS, seed=seed)
    write_matrix(root / "matrix.toml")
    return root


def test_second_build_in_fresh_build_dir_hits_everything(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    cache = tmp_path / "ccache"
    cold = _build(ws, cache)
    assert cold["ccache"]["misses"] == COMPILATIONS
    assert cold["ccache"]["hits"] == 0
    assert cold["ccache"]["compiler_check"] == "content"

    warm = _build(ws, cache)
    assert warm["ccache"]["hits"] == COMPILATIONS
    assert warm["ccache"]["misses"] == 0
    assert warm["ccache"]["hit_rate"] == 1.0
    # The record is the one place for the run's facts.
    assert warm["leg"] == "cpu" and warm["status"] == "success"
    assert warm["toolchain"]["identity"].startswith(("gcc-", "clang-"))
    assert any("COMPILER_LAUNCHER" in a for a in warm["cmake_args"])
    assert (ws / "out" / "cpu" / "build.log").read_text().count("$ ") == 2
    built = ws / "out" / "cpu" / "build" / "bin" / "demo"
    assert subprocess.run([str(built)], capture_output=True, text=True).stdout.strip()


def test_moved_workspace_still_hits(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "first")
    cache = tmp_path / "ccache"
    _build(ws, cache)
    moved = tmp_path / "elsewhere" / "deeper" / "second"
    shutil.copytree(ws, moved)
    shutil.rmtree(moved / "out" / "cpu" / "build")
    record = _build(moved, cache)
    # The tree is compiled from the leg's own folder (<out>/cpu/src/llama.cpp, a link to the project).
    assert record["ccache"]["base_dir"] == str(moved.resolve() / "out" / "cpu")
    assert record["ccache"]["hits"] == COMPILATIONS
    assert record["ccache"]["hit_rate"] == 1.0


def test_concurrent_builds_on_one_cache_count_only_their_own(tmp_path: Path) -> None:
    cache = tmp_path / "ccache"
    a = _workspace(tmp_path / "a", seed=1)
    b = _workspace(tmp_path / "b", seed=2)
    # b warms up first so that the two concurrent runs differ: a is cold, b is warm.
    _build(b, cache)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipeline",
                "--matrix",
                str(ws / "matrix.toml"),
                "build",
                "cpu",
                "--source",
                str(ws / "project"),
                "--out",
                str(ws / "out"),
                "--ccache-dir",
                str(cache),
                "--no-bundle",
            ],
            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for ws in (a, b)
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, out
    rec_a = json.loads((a / "out" / "cpu" / "record.json").read_text())
    rec_b = json.loads((b / "out" / "cpu" / "record.json").read_text())
    assert (rec_a["ccache"]["misses"], rec_a["ccache"]["hits"]) == (COMPILATIONS, 0)
    assert (rec_b["ccache"]["misses"], rec_b["ccache"]["hits"]) == (0, COMPILATIONS)


def test_build_packages_a_bundle_with_a_manifest(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--tag",
            "b4242",
        ],
        check=True,
    )
    record = json.loads((ws / "out" / "cpu" / "record.json").read_text())
    assert record["bundle"] == "dist/llama-b4242-bin-ubuntu-x64.tar.gz", proc.stdout
    bundle = ws / "out" / record["bundle"]
    import tarfile

    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile(next(n for n in names if n.endswith("manifest.json"))))
    # Upstream's layout: build/bin's programs flat under llama-<tag>/.
    assert "llama-b4242/demo" in names and "llama-b4242/manifest.json" in names
    assert manifest["leg"]["name"] == "cpu" and manifest["tag"] == "b4242"
    assert str(ws) not in json.dumps(manifest), "the manifest must not hold the workspace's path"


def test_record_names_the_toolchain_that_filled_the_cache_before(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    cache = tmp_path / "ccache"
    first = _build(ws, cache)
    assert first["ccache"]["previous_toolchain"] is None
    second = _build(ws, cache)
    assert second["ccache"]["previous_toolchain"] == first["toolchain"]["identity"]


def test_compile_error_shows_the_failing_step_and_the_log_tail(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    (ws / "project" / "src" / "unit003.cpp").write_text("int broken( { return 0; }\n")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "cpu",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--no-bundle",
        ]
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Ninja build failed at CMakeFiles/demo_units.dir/src/unit003.cpp.o" in lines[0]
    assert "build.log" in lines[0]
    assert "unit003.cpp" in proc.stdout and "error" in proc.stdout  # the log's tail
    record = json.loads((ws / "out" / "cpu" / "record.json").read_text())
    assert record["status"] == "failed"
