"""`python -m pipeline cache-save`: real ccache eviction and the save decision from the record."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.ccache.session import find_ccache
from pipeline.results.record import LegRecord
from tests.support.actions_files import read_file_commands
from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

MATRIX = str(ROOT / "matrix.toml")  # evict_older_than_days = 7, save_min_new_entries = 1


def fill_cache(ccache_dir: Path, work: Path, sources: int) -> list[Path]:
    """Compile ``sources`` tiny C files through ccache; the cache's entry files."""
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CCACHE_DIR": str(ccache_dir)}
    for i in range(sources):
        src = work / f"u{i}.c"
        src.write_text(f"int f{i}(void) {{ return {i}; }}\n")
        subprocess.run(
            [str(find_ccache()), "cc", "-c", str(src), "-o", str(work / f"u{i}.o")], env=env, check=True
        )
    return entries(ccache_dir)


def entries(ccache_dir: Path) -> list[Path]:
    # Results and manifests live two levels down; counters ("stats") are not entries.
    return sorted(p for p in ccache_dir.glob("?/?/*") if p.is_file() and p.name != "stats")


def write_record(out: Path, ccache: dict[str, object]) -> None:
    LegRecord(leg="cpu", backend="cpu", os="linux", started="2026-08-04T09:17:00Z", ccache=ccache).write(
        out / "cpu" / "record.json"
    )


def test_stale_files_are_evicted_and_a_run_with_misses_is_saved(tmp_path: Path) -> None:
    ccache_dir = tmp_path / "ccache"
    files = fill_cache(ccache_dir, tmp_path / "src", 4)
    assert len(files) >= 4
    stale, fresh = files[: len(files) // 2], files[len(files) // 2 :]
    month_ago = time.time() - 30 * 86400
    for path in stale:
        os.utime(path, (month_ago, month_ago))
    out = tmp_path / "out"
    write_record(out, {"ccache_dir": str(ccache_dir), "hits": 0, "misses": 4, "remote_hits": 0})
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run_pipeline(["--matrix", MATRIX, "cache-save", "cpu", "--out", str(out)], env=env)
    assert proc.returncode == 0, proc.stderr
    left = entries(ccache_dir)
    assert not any(p in left for p in stale)
    assert all(p in left for p in fresh)
    assert read_file_commands(tmp_path / "output") == {"save": "true"}
    assert "4 new entries" in proc.stdout


def test_a_fully_warm_run_is_not_saved(tmp_path: Path) -> None:
    ccache_dir = tmp_path / "ccache"
    files = fill_cache(ccache_dir, tmp_path / "src", 2)
    out = tmp_path / "out"
    write_record(out, {"ccache_dir": str(ccache_dir), "hits": 2, "misses": 0, "remote_hits": 0})
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run_pipeline(["--matrix", MATRIX, "cache-save", "cpu", "--out", str(out), "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    decision = json.loads(proc.stdout)
    assert decision["save"] is False and decision["new_entries"] == 0
    assert decision["ccache_dir"] == str(ccache_dir)
    assert "only 0 new entries" in decision["reason"]
    assert read_file_commands(tmp_path / "output") == {"save": "false"}
    assert entries(ccache_dir) == files  # nothing was stale


def test_no_record_and_no_stats_log_means_do_not_save(tmp_path: Path) -> None:
    # The step runs with always(): a leg that never started must not fail it.
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run_pipeline(
        ["--matrix", MATRIX, "cache-save", "cpu", "--out", str(tmp_path / "nowhere")], env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert read_file_commands(tmp_path / "output") == {"save": "false"}
    assert "the record has no ccache statistics (from no statistics)" in proc.stdout


def test_a_build_killed_before_its_record_is_saved_from_its_stats_log(tmp_path: Path) -> None:
    # A timed-out build writes no record, but ccache logged each call of the run as it went.
    out = tmp_path / "out"
    (out / "cpu").mkdir(parents=True)
    ccache_dir = tmp_path / "ccache"
    work = tmp_path / "src"
    work.mkdir()
    env = {
        **os.environ,
        "CCACHE_DIR": str(ccache_dir),
        "CCACHE_STATSLOG": str(out / "cpu" / "ccache-stats.log"),
    }
    for i in range(3):
        (work / f"k{i}.c").write_text(f"int k{i}(void) {{ return {i}; }}\n")
        subprocess.run([str(find_ccache()), "cc", "-c", str(work / f"k{i}.c"), "-o", str(work / f"k{i}.o")],
                       env=env, check=True)  # fmt: skip
    outputs = tmp_path / "output"
    proc = run_pipeline(
        ["--matrix", MATRIX, "cache-save", "cpu", "--out", str(out)],
        env={
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(outputs),
            "PIPELINE_CACHE_HOME": str(tmp_path / "home"),
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert read_file_commands(outputs) == {"save": "true"}
    assert "3 new entries" in proc.stdout and "from the stats log (no finished record)" in proc.stdout


def test_a_failed_build_record_is_saved(tmp_path: Path) -> None:
    out = tmp_path / "out"
    LegRecord(leg="cpu", backend="cpu", os="linux", started="2026-08-04T09:17:00Z", status="failed",
              ccache={"ccache_dir": str(tmp_path / "c"), "hits": 1, "misses": 40, "remote_hits": 0}).write(
        out / "cpu" / "record.json"
    )  # fmt: skip
    proc = run_pipeline(["--matrix", MATRIX, "cache-save", "cpu", "--out", str(out), "--json"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["save"] is True


def test_a_record_from_before_the_rename_still_names_its_ccache_folder(tmp_path: Path) -> None:
    # Older records call the leg's ccache folder "cache_dir": it is still the one evicted.
    ccache_dir = tmp_path / "ccache"
    files = fill_cache(ccache_dir, tmp_path / "src", 2)
    month_ago = time.time() - 30 * 86400
    for path in files:
        os.utime(path, (month_ago, month_ago))
    out = tmp_path / "out"
    write_record(out, {"cache_dir": str(ccache_dir), "hits": 0, "misses": 2, "remote_hits": 0})
    env = {"PIPELINE_CACHE_HOME": str(tmp_path / "home")}
    proc = run_pipeline(["--matrix", MATRIX, "cache-save", "cpu", "--out", str(out), "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    decision = json.loads(proc.stdout)
    assert decision["ccache_dir"] == str(ccache_dir) and decision["save"] is True
    assert entries(ccache_dir) == []
