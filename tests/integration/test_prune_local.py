"""``prune --local``: the download cache, installed toolchains and the packaging cache kept bounded.

Real folders laid out as the pipeline leaves them, ages set with os.utime,
a real lock held by another live process; the command runs as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT, run_pipeline

pytestmark = pytest.mark.integration

DAY = 86400.0


def _age(paths: list[Path], days: float) -> None:
    stamp = time.time() - days * DAY
    for path in paths:
        os.utime(path, (stamp, stamp), follow_symlinks=False)


def _download(folder: Path, name: str, size: int, days: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"x" * size)
    (folder / f"{name}.json").write_text(json.dumps({"url": f"http://127.0.0.1/{name}", "size": size}))
    lock = folder / f".{name}.lock"
    lock.write_text("")
    _age([folder / name, folder / f"{name}.json", lock], days)


def _install(folder: Path, name: str, size: int, days: float) -> None:
    root = folder / name
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "clang").write_bytes(b"y" * size)
    (root / ".pipeline-install.json").write_text("{}")
    lock = folder / f".{name}.lock"
    lock.write_text("")
    _age([root / "bin" / "clang", root / "bin", root / ".pipeline-install.json", root, lock], days)


def _member(pack: Path, sha: str, size: int, days: float) -> Path:
    path = pack / sha[:2] / f"{sha}-6.deflate"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"z" * size)
    _age([path], days)
    return path


@pytest.fixture
def caches(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "cache"
    downloads, toolchains, pack = home / "downloads", home / "toolchains", home / "pack"
    _download(downloads, "therock-old.tar.gz", 1000, days=60)
    _download(downloads, "therock-mid.tar.gz", 3000, days=10)
    _download(downloads, "therock-new.tar.gz", 3000, days=2)
    _install(toolchains, "rocm-old", 500, days=45)
    _install(toolchains, "rocm-busy", 500, days=90)
    _install(toolchains, "rocm-today", 500, days=0.1)
    _member(pack, "aa" + "0" * 62, 100, days=40)
    _member(pack, "bb" + "1" * 62, 100, days=1.5)
    return {"home": home, "downloads": downloads, "toolchains": toolchains, "pack": pack}


def _env(caches: dict[str, Path]) -> dict[str, str]:
    return {"PIPELINE_CACHE_HOME": str(caches["home"])}


def _hold(lock: Path) -> subprocess.Popen[str]:
    """Another live process holding ``lock`` (as a running install does)."""
    code = (
        "import sys, time; from filelock import FileLock; l = FileLock(sys.argv[1]); l.acquire();"
        " print('held', flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(lock)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_dry_run_lists_what_would_go_and_removes_nothing(caches: dict[str, Path]) -> None:
    before = sorted(str(p) for p in caches["home"].rglob("*"))
    proc = run_pipeline(
        ["prune", "--local", "--max-age", "30", "--max-size", "0.000005", "--json"],
        env=_env(caches),
        check=True,
    )
    plan = json.loads(proc.stdout)["plan"]
    gone = sorted(f"{e['cache']}/{e['name']}" for e in plan["remove"])
    # 60 days > 30: too old. The 10-day one: 3000 + 3000 bytes exceed the 5000-byte limit, least recent goes.
    # rocm-busy is 90 days old but nobody holds its lock here: it goes too.
    assert gone == [
        "downloads/therock-mid.tar.gz",
        "downloads/therock-old.tar.gz",
        "pack/aa/" + "aa" + "0" * 62 + "-6.deflate",
        "toolchains/rocm-busy",
        "toolchains/rocm-old",
    ]
    assert "dry run: would remove 5 entries" in proc.stderr
    assert sorted(str(p) for p in caches["home"].rglob("*")) == before


def test_apply_removes_old_and_over_limit_entries_but_never_one_in_use(caches: dict[str, Path]) -> None:
    d, t = caches["downloads"], caches["toolchains"]
    going = [
        d / "therock-old.tar.gz",
        d / "therock-old.tar.gz.json",
        d / "therock-mid.tar.gz",
        d / "therock-mid.tar.gz.json",
        *(t / "rocm-old").rglob("*"),
        *caches["pack"].rglob("aa*.deflate"),
    ]
    expected_freed = sum(p.lstat().st_size for p in going)
    holder = _hold(caches["toolchains"] / ".rocm-busy.lock")
    try:
        proc = run_pipeline(
            ["prune", "--local", "--apply", "--json"],
            env={**_env(caches), "PIPELINE_CACHE_MAX_AGE_DAYS": "30", "PIPELINE_CACHE_MAX_GB": "0.000005"},
            check=True,
        )
    finally:
        holder.kill()
        holder.wait()
    out = json.loads(proc.stdout)
    assert [f"{e['cache']}/{e['name']}" for e in out["plan"]["in_use"]] == ["toolchains/rocm-busy"]
    assert sorted(p.name for p in caches["downloads"].iterdir() if not p.name.startswith(".")) == [
        "therock-new.tar.gz",
        "therock-new.tar.gz.json",
    ]
    assert sorted(p.name for p in caches["toolchains"].iterdir() if not p.name.startswith(".")) == [
        "rocm-busy",
        "rocm-today",
    ]
    assert [p.name for p in caches["pack"].rglob("*.deflate")] == ["bb" + "1" * 62 + "-6.deflate"]
    assert out["result"]["freed"] == expected_freed
    # No partial or trash folder left behind.
    assert [p.name for p in caches["toolchains"].iterdir() if p.name.endswith((".trash", ".partial"))] == []


def test_an_entry_used_within_the_last_day_is_kept_over_the_size_limit(caches: dict[str, Path]) -> None:
    proc = run_pipeline(
        ["prune", "--local", "--apply", "--max-size", "0.0000001", "--json"], env=_env(caches), check=True
    )
    out = json.loads(proc.stdout)
    kept = {f"{e['cache']}/{e['name']}" for e in out["plan"]["in_use"]}
    assert "toolchains/rocm-today" in kept
    assert (caches["toolchains"] / "rocm-today" / "bin" / "clang").is_file()


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--max-age", "-1"), ("--max-age", "nan"), ("--max-size", "0"), ("--max-size", "lots")],
)
def test_bad_limits_are_one_line_usage_errors(caches: dict[str, Path], flag: str, value: str) -> None:
    proc = run_pipeline(["prune", "--local", flag, value], env=_env(caches))
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and flag in lines[0], proc.stderr


def test_xdg_cache_home_moves_the_cache_home_as_the_help_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without PIPELINE_CACHE_HOME, the caches are $XDG_CACHE_HOME/llama-pipeline: what --help and the docs say."""
    from pipeline.inputs.settings import CACHE_HOME, default_text

    monkeypatch.delenv("PIPELINE_CACHE_HOME")
    xdg = tmp_path / "xdg"
    _download(xdg / "llama-pipeline" / "downloads", "therock-old.tar.gz", 1000, days=60)
    proc = run_pipeline(["prune", "--local", "--json"], env={"XDG_CACHE_HOME": str(xdg)}, check=True)
    plan = json.loads(proc.stdout)["plan"]
    assert [f"{e['cache']}/{e['name']}" for e in plan["remove"]] == ["downloads/therock-old.tar.gz"]
    assert f"downloads: {xdg}/llama-pipeline/downloads (" in proc.stderr
    assert (
        default_text(CACHE_HOME)
        == "$PIPELINE_CACHE_HOME, else $XDG_CACHE_HOME/llama-pipeline, else ~/.cache/llama-pipeline"
    )
    assert "`$XDG_CACHE_HOME`" in (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
