"""Shards of a cold build with real CMake, Ninja and ccache, on a generated C/C++ project.

Each shard run (``python -m pipeline shard cpu --index I``) configures the
leg as its build does and compiles its part of Ninja's plan into the shard's
ccache folder; the leg's build merges those folders into its own cache and
hits every compile. What Ninja itself says decides: the compile steps are
the targets whose rule is a compiler's (``ninja -t targets all``), and what
each shard compiled is its ``.ninja_log``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pipeline.ccache.shard_caches import ShardMerge, cache_entries, merge_cache
from tests.support.actions_files import read_file_commands
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.projects import write_cpp_project, write_matrix

pytestmark = pytest.mark.integration

UNITS = 20
# The units, main.cpp, and the unit that includes a header generated at build time.
COMPILES = UNITS + 2


def _ccache() -> str:
    import shutil
    import sys

    beside = Path(sys.executable).parent / "ccache"
    return str(beside) if beside.is_file() else str(shutil.which("ccache"))


def _workspace(root: Path, shards: int = 2) -> Path:
    project = write_cpp_project(root / "project", units=UNITS)
    # A compile that needs a header a build step makes: a shard builds what its objects need, no more.
    (project / "stamp.h.in").write_text("#define STAMP 7\n")
    (project / "src" / "stamped.cpp").write_text('#include "stamp.h"\nint stamped() { return STAMP; }\n')
    with (project / "CMakeLists.txt").open("a") as cmake:
        cmake.write(
            "add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/gen/stamp.h COMMAND ${CMAKE_COMMAND} -E copy "
            "${CMAKE_SOURCE_DIR}/stamp.h.in ${CMAKE_BINARY_DIR}/gen/stamp.h DEPENDS stamp.h.in)\n"
            "add_library(stamped STATIC src/stamped.cpp ${CMAKE_BINARY_DIR}/gen/stamp.h)\n"
            "target_include_directories(stamped PRIVATE ${CMAKE_BINARY_DIR}/gen)\n"
        )
    write_matrix(root / "matrix.toml")
    text = (root / "matrix.toml").read_text()
    (root / "matrix.toml").write_text(text.replace("[legs.cpu]\n", f"[legs.cpu]\nshards = {shards}\n"))
    return root


def _pipeline(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_pipeline(["--matrix", str(ws / "matrix.toml"), *args], env=env)


def _shard(ws: Path, cache: Path, index: int) -> dict:
    proc = _pipeline(ws, "shard", "cpu", "--index", str(index), "--of", "2", "--source", str(ws / "project"),
                     "--out", str(ws / "out"), "--cache-dir", str(cache))  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"cpu: shard {index} of 2: " in proc.stdout
    return json.loads((ws / "out" / f"cpu--shard-{index}of2" / "cpu" / "record.json").read_text())


def _ninja_targets(build: Path) -> dict[str, str]:
    """Ninja's own answer: every target of the plan and its rule."""
    lines = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"], capture_output=True, text=True,
                           check=True, env={**os.environ, "PATH": f"{Path(_ccache()).parent}:{os.environ['PATH']}"}).stdout  # fmt: skip
    return dict(line.rsplit(": ", 1) for line in lines.splitlines() if ": " in line)


def _logged(build: Path) -> set[str]:
    """Every output a build's .ninja_log says it made."""
    return {line.split("\t")[3] for line in (build / ".ninja_log").read_text().splitlines()[1:]}


def test_two_shards_compile_disjoint_halves_and_the_leg_then_hits_every_compile(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    cache = tmp_path / "ccache" / "cpu"
    records = [_shard(ws, cache, i) for i in (1, 2)]
    builds = [ws / "out" / f"cpu--shard-{i}of2" / "cpu" / "build" for i in (1, 2)]
    compile_rule = ("C_COMPILER__", "CXX_COMPILER__")
    leg_steps = {t for t, rule in _ninja_targets(builds[0]).items() if rule.startswith(compile_rule)}
    assert len(leg_steps) == COMPILES
    logged = [_logged(b) for b in builds]
    done = [{name for name in names if name.endswith(".o")} for names in logged]
    assert not done[0] & done[1] and done[0] | done[1] == leg_steps
    assert all(abs(len(d) - COMPILES / 2) <= 2 for d in done), [len(d) for d in done]
    for record, part, names in zip(records, done, logged, strict=True):
        assert record["status"] == "sharded" and record["bundle"] is None
        assert (
            record["ccache"]["shard"]["steps"] == len(part)
            and record["ccache"]["shard"]["leg_steps"] == COMPILES
        )
        assert (record["ccache"]["misses"], record["ccache"]["hits"]) == (len(part), 0)
        # Nothing linked: the shard's objects and the header one of them needs, no library, no program.
        assert {Path(name).name for name in names - part} <= {"stamp.h"}
    shard_dirs = [cache.with_name(f"cpu--shard-{i}of2") for i in (1, 2)]
    assert [Path(r["ccache"]["ccache_dir"]) for r in records] == shard_dirs
    assert (builds[0] / "gen" / "stamp.h").is_file() != (builds[1] / "gen" / "stamp.h").is_file()
    assert not cache.exists()  # the leg's own cache is never a shard's
    # A configure-only run compiles nothing of the leg's: it leaves the shards for the build.
    proc = _pipeline(ws, "build", "cpu", "--source", str(ws / "project"), "--out", str(ws / "out"),
                     "--cache-dir", str(cache), "--configure-only")  # fmt: skip
    assert proc.returncode == 0 and "merged shards" not in proc.stdout, proc.stdout + proc.stderr
    assert all(d.is_dir() for d in shard_dirs)

    proc = _pipeline(ws, "build", "cpu", "--source", str(ws / "project"), "--out", str(ws / "out"),
                     "--cache-dir", str(cache), "--no-bundle")  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "cpu: merged shards 1of2, 2of2 into" in proc.stdout
    record = json.loads((ws / "out" / "cpu" / "record.json").read_text())
    assert (record["ccache"]["hits"], record["ccache"]["misses"]) == (COMPILES, 0)
    merged = record["ccache"]["shards_merged"]
    entries = sorted(cache_entries(cache))
    assert (
        merged["shards"] == ["1of2", "2of2"]
        and merged["added"] == len(entries)
        and merged["already_there"] == 0
    )
    assert not any(d.exists() for d in shard_dirs)  # merged once: the shard folders are spent
    # ccache's own counters, recounted: every entry counted once, none of the shards' counters copied.
    stats = _print_stats(cache)
    assert stats["files_in_cache"] == len(entries)
    # The leg saves what the shards made: no Actions cache holds it yet.
    proc = _pipeline(ws, "cache-save", "cpu", "--out", str(ws / "out"), "--json")
    assert proc.returncode == 0, proc.stderr
    decision = json.loads(proc.stdout)
    assert decision["save"] and decision["new_entries"] == len(entries)


def _print_stats(cache: Path) -> dict[str, int]:
    out = subprocess.run([_ccache(), "--print-stats"], env={**os.environ, "CCACHE_DIR": str(cache)},
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


def test_a_merge_keeps_the_legs_own_entry_of_a_key_and_never_copies_counters(tmp_path: Path) -> None:
    """ccache's layout with real entries: two caches that share a key (the same compile in both) and differ."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.c").write_text("int a(void) { return 1; }\n")
    (src / "b.c").write_text("int b(void) { return 2; }\n")

    def compile_into(cache: Path, *names: str) -> None:
        for name in names:
            env = {**os.environ, "CCACHE_DIR": str(cache), "CCACHE_BASEDIR": str(tmp_path)}
            subprocess.run([_ccache(), "cc", "-c", name, "-o", f"{name}.o"], cwd=src, env=env, check=True)

    leg, shard = tmp_path / "leg", tmp_path / "shard"
    compile_into(leg, "a.c")
    compile_into(shard, "a.c", "b.c")
    shared = set(cache_entries(leg)) & set(cache_entries(shard))
    assert shared  # the same compile gives the same keys: the shard's copies of them are not taken
    before = {p: (leg / p).read_bytes() for p in cache_entries(leg)}
    leg_stats = {p: p.read_bytes() for p in leg.rglob("stats")}
    merge = ShardMerge()
    merge_cache(shard, leg, merge)
    assert merge.already_there == len(shared) and merge.added == len(set(cache_entries(leg))) - len(before)
    assert all((leg / p).read_bytes() == data for p, data in before.items())
    # The shard's counters never reach the leg's folders (only ccache's recount changes them).
    assert {p: p.read_bytes() for p in leg.rglob("stats")} == leg_stats
    assert not shard.exists()
    subprocess.run([_ccache(), "--cleanup"], env={**os.environ, "CCACHE_DIR": str(leg)}, check=True,
                   capture_output=True)  # fmt: skip
    assert _print_stats(leg)["files_in_cache"] == len(list(cache_entries(leg)))
    # Both objects now hit from the leg's cache.
    for name in ("a.c", "b.c"):
        env = {
            **os.environ,
            "CCACHE_DIR": str(leg),
            "CCACHE_BASEDIR": str(tmp_path),
            "CCACHE_STATSLOG": str(tmp_path / "log"),
        }
        subprocess.run([_ccache(), "cc", "-c", name, "-o", f"{name}.o"], cwd=src, env=env, check=True)
    log = (tmp_path / "log").read_text()
    assert log.count("direct_cache_hit") == 2 and "cache_miss" not in log


@pytest.mark.parametrize(
    ("args", "shards", "message"),
    [
        (["--index", "3"], 2, "error: shard 3 of leg cpu: expected 1 to 2"),
        (["--index", "1", "--of", "3"], 2, "error: leg cpu has 2 shards, not 3"),
        (["--index", "1"], 1, "error: leg cpu has no shards: set shards = N"),
        (["--index", "0"], 2, "expected 1 or more"),
    ],
)
def test_bad_shard_input_is_one_line_and_no_traceback(
    tmp_path: Path, args: list[str], shards: int, message: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    write_matrix(ws / "matrix.toml")
    if shards > 1:
        text = (ws / "matrix.toml").read_text()
        (ws / "matrix.toml").write_text(text.replace("[legs.cpu]\n", f"[legs.cpu]\nshards = {shards}\n"))
    proc = _pipeline(ws, "shard", "cpu", *args, "--source", str(tmp_path), "--out", str(ws / "out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and not (ws / "out").exists()


def test_cache_key_and_matrix_name_each_shard_for_the_workflow(tmp_path: Path) -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run_pipeline(["--matrix", str(ROOT / "matrix.toml"), "cache-key", "cuda", "--tag", "b10327", "--shard", "2"],
                        env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    outputs = read_file_commands(tmp_path / "output")
    toolchain = outputs["toolchain"]
    ccache_dir = Path(outputs["ccache-dir"])
    for index in (1, 2, 3):
        assert outputs[f"shard-key-{index}"] == f"llama-shard--cuda--{toolchain}--b10327--{index}of3"
        assert outputs[f"shard-dir-{index}"] == str(ccache_dir.with_name(f"cuda--shard-{index}of3"))
    assert (outputs["shard-key"], outputs["shard-dir"]) == (outputs["shard-key-2"], outputs["shard-dir-2"])
    assert "shard-key-4" not in outputs
    bad = run_pipeline(
        ["--matrix", str(ROOT / "matrix.toml"), "cache-key", "cpu", "--tag", "b1", "--shard", "1"]
    )
    assert bad.returncode == 2 and "leg cpu has no shards" in bad.stderr

    (tmp_path / "output").unlink()
    proc = run_pipeline(
        ["--matrix", str(ROOT / "matrix.toml"), "matrix", "--github", "--legs", "cpu,cuda"], env=env
    )
    assert proc.returncode == 0, proc.stderr
    shards = json.loads(read_file_commands(tmp_path / "output")["shards"])
    assert [(e["leg"], e["shard"], e["of"], e["runner"]) for e in shards["include"]] == [
        ("cuda", 1, 3, "ubuntu-22.04"),
        ("cuda", 2, 3, "ubuntu-22.04"),
        ("cuda", 3, 3, "ubuntu-22.04"),
    ]
    (tmp_path / "output").unlink()
    proc = run_pipeline(
        ["--matrix", str(ROOT / "matrix.toml"), "matrix", "--github", "--legs", "cpu"], env=env
    )
    assert json.loads(read_file_commands(tmp_path / "output")["shards"]) == {"include": []}
