"""Locks, record states, archive proofs, leftovers and file modes, with real files and real OS locks.

A "live run" here is a lock held by this test through another lock object:
``flock`` locks belong to an open file, so a second one conflicts exactly as
another process's would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.archives.extract import check_archive, extract_archive, remove_stale
from pipeline.errors import BusyError, ToolchainError
from pipeline.processes.locks import describe_holder, hold, is_held
from pipeline.results.record import LegRecord, leg_lock
from pipeline.toolchain.installer.download import download
from pipeline.util.fsutil import atomic_write_json, atomic_write_text
from tests.support.archives import make_tar, make_zip, tar_file, therock_members

SINCE = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def served_dir(tmp_path: Path) -> Path:
    """Where the "server" side of a file:// download lives."""
    folder = tmp_path / "served"
    folder.mkdir(exist_ok=True)
    return folder


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


# --------------------------------------------------------------------------
# Locks


def test_a_held_lock_refuses_a_second_holder_naming_the_first(tmp_path: Path) -> None:
    lock = tmp_path / "out" / "cpu" / ".lock"
    with hold(lock, what="the output folder out/cpu", since=SINCE):
        assert is_held(lock)
        holder = json.loads((tmp_path / "out" / "cpu" / ".lock.holder.json").read_text())
        assert holder["pid"] == os.getpid() and holder["since"] == "2026-01-02T03:04:05+00:00"
        with pytest.raises(BusyError) as err, hold(lock, what="the output folder out/cpu", since=SINCE):
            pass
        message = str(err.value)
        assert message.startswith(
            f"the output folder out/cpu is in use by pid {os.getpid()} (python -m pipeline"
        )
        assert "since 2026-01-02T03:04:05+00:00" in message and "--wait-lock SECONDS" in message
        assert err.value.exit_code == 12
    # Released: free again, the holder note gone.
    assert not is_held(lock)
    assert not (tmp_path / "out" / "cpu" / ".lock.holder.json").exists()
    with hold(lock, what="x", since=None):
        assert is_held(lock)


def test_waiting_for_a_held_lock_gives_up_after_the_wait(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    with (
        hold(lock, what="the install x", since=SINCE),
        pytest.raises(BusyError, match=r"after waiting 0\.2s"),
        hold(lock, what="the install x", since=SINCE, wait_seconds=0.2),
    ):
        pass


def test_holder_without_a_note_is_described_as_such(tmp_path: Path) -> None:
    assert describe_holder(tmp_path / ".lock") == "another process (it wrote no holder file)"


# --------------------------------------------------------------------------
# Record states


def _record(folder: Path, status: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "record.json"
    LegRecord(leg="cpu", backend="cpu", os="linux", started="2026-01-02T03:04:05+00:00", status=status).write(
        path
    )
    return path


def test_running_record_of_a_live_run_reads_as_running(tmp_path: Path) -> None:
    path = _record(tmp_path, "running")
    with hold(leg_lock(tmp_path), what="x", since=SINCE):
        assert LegRecord.read(path).status == "running"


def test_running_record_without_a_live_run_reads_as_interrupted(tmp_path: Path) -> None:
    path = _record(tmp_path, "running")
    record = LegRecord.read(path)
    assert record.status == "interrupted"
    assert any("stale 'running' record" in w for w in record.warnings)
    # The file itself is not rewritten by a reader.
    assert json.loads(path.read_text())["status"] == "running"


@pytest.mark.parametrize("status", ["success", "failed", "interrupted"])
def test_finished_records_read_as_written(tmp_path: Path, status: str) -> None:
    assert LegRecord.read(_record(tmp_path, status)).status == status


# --------------------------------------------------------------------------
# Archives are read whole before they are trusted


def test_whole_archives_pass(tmp_path: Path) -> None:
    check_archive(make_tar(tmp_path / "a.tar.gz", therock_members()))
    check_archive(make_zip(tmp_path / "a.zip", {"bin/x": b"x" * 5000}))


def test_truncated_tarball_fails(tmp_path: Path) -> None:
    whole = make_tar(tmp_path / "whole.tar.gz", [tar_file("big", os.urandom(200_000))]).read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ToolchainError, match=r"^cut\.tar\.gz: corrupt or unreadable archive"):
        check_archive(cut)


@pytest.mark.parametrize(
    ("body", "what"), [(b"<html>oops</html>", "starts with '<html>oops</html>'"), (b"", "empty")]
)
def test_non_archives_fail_saying_what_they_start_with(tmp_path: Path, body: bytes, what: str) -> None:
    page = tmp_path / "x.tar.gz"
    page.write_bytes(body)
    with pytest.raises(ToolchainError) as err:
        check_archive(page, name="therock.tar.gz")
    assert (
        str(err.value) == f"therock.tar.gz: corrupt or unreadable archive: not a tar or zip archive ({what})"
    )


def test_a_download_that_fails_its_proof_is_not_kept(tmp_path: Path) -> None:
    page = tmp_path / "served" / "therock.tar.gz"
    page.parent.mkdir()
    page.write_bytes(b"<html>not found</html>")
    cache = tmp_path / "cache"
    with pytest.raises(ToolchainError) as err:
        download(page.as_uri(), download_cache=cache, verify=check_archive)
    assert str(err.value).startswith("therock.tar.gz: corrupt or unreadable archive")
    assert "not kept: the next run downloads it again" in str(err.value)
    assert sorted(p.name for p in cache.iterdir()) == [".therock.tar.gz.lock"]


# --------------------------------------------------------------------------
# Leftovers of dead runs


def test_leftover_part_files_are_removed_by_the_next_download(tmp_path: Path) -> None:
    served = make_tar(served_dir(tmp_path) / "t.tar.gz", therock_members())
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / ".t.tar.gz.dead1234.part").write_bytes(b"x" * 1000)
    (cache / ".other.tar.gz.dead.part").write_bytes(b"y")
    got = download(served.as_uri(), download_cache=cache, verify=check_archive)
    assert got.path.read_bytes() == served.read_bytes()
    # This file's leftover is gone; another file's (maybe a live download) is not touched.
    assert sorted(p.name for p in cache.iterdir()) == [
        ".other.tar.gz.dead.part",
        ".t.tar.gz.lock",
        "t.tar.gz",
        "t.tar.gz.json",
    ]


def test_a_live_download_blocks_the_next_one_instead_of_losing_its_part_file(tmp_path: Path) -> None:
    served = make_tar(served_dir(tmp_path) / "t.tar.gz", therock_members())
    cache = tmp_path / "cache"
    cache.mkdir()
    live = cache / ".t.tar.gz.live.part"
    live.write_bytes(b"half")
    with hold(cache / ".t.tar.gz.lock", what="x", since=SINCE):
        with pytest.raises(BusyError, match=r"the download of t\.tar\.gz"):
            download(served.as_uri(), download_cache=cache)
        assert live.read_bytes() == b"half"


def test_remove_stale_takes_only_its_prefix_and_suffixes(tmp_path: Path) -> None:
    (tmp_path / ".rocm-7[x].abc.partial").mkdir()
    (tmp_path / ".rocm-7[x].abc.partial" / "f").write_text("x")
    (tmp_path / ".rocm-7[x].def.trash").mkdir()
    (tmp_path / ".rocm-7[x].lock").write_text("")
    (tmp_path / ".rocm-8.abc.partial").mkdir()
    removed = remove_stale(tmp_path, ".rocm-7[x].", (".partial", ".trash"))
    assert sorted(p.name for p in removed) == [".rocm-7[x].abc.partial", ".rocm-7[x].def.trash"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rocm-7[x].lock", ".rocm-8.abc.partial"]


# --------------------------------------------------------------------------
# Files respect the umask


@pytest.mark.usefixtures("umask_022")
def test_atomic_writes_are_readable_by_others_under_umask_022(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "a.txt", "x")
    atomic_write_json(tmp_path / "record.json", {"a": 1})
    assert mode(tmp_path / "a.txt") == 0o644
    assert mode(tmp_path / "record.json") == 0o644


@pytest.mark.usefixtures("umask_027")
def test_atomic_writes_follow_a_stricter_umask(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "a.txt", "x")
    assert mode(tmp_path / "a.txt") == 0o640


@pytest.mark.usefixtures("umask_022")
def test_a_flat_archive_installs_as_an_ordinary_folder(tmp_path: Path) -> None:
    # No wrapper folder: the install root is the extractor's own staging folder (mkdtemp: 0700).
    archive = make_tar(tmp_path / "flat.tar", [tar_file("bin/tool", b"x", mode=0o755)])
    target = extract_archive(archive, tmp_path / "install")
    assert mode(target) == 0o755
    assert mode(target / "bin" / "tool") == 0o755


@pytest.mark.usefixtures("umask_022")
def test_downloads_are_readable_by_others(tmp_path: Path) -> None:
    served = make_tar(served_dir(tmp_path) / "t.tar.gz", therock_members())
    got = download(served.as_uri(), download_cache=tmp_path / "cache", verify=check_archive)
    assert mode(got.path) == 0o644
    assert mode(got.path.with_name("t.tar.gz.json")) == 0o644


# --------------------------------------------------------------------------
# publish reads records the same way


def test_publish_sees_a_dead_runs_record_as_interrupted_and_a_live_one_as_running(tmp_path: Path) -> None:
    from pipeline.release.collect import read_results
    from pipeline.release.plan import check_coverage

    _record(tmp_path / "cpu", "running")
    results = read_results(tmp_path)
    assert results["cpu"].status == "interrupted"
    assert check_coverage(["cpu"], results, set()).missing == (("cpu", "the leg interrupted"),)
    with hold(leg_lock(tmp_path / "cpu"), what="x", since=SINCE):
        assert read_results(tmp_path)["cpu"].status == "running"


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("suffix", ["tar.gz", "zip"])
def test_bundles_are_readable_by_others(tmp_path: Path, suffix: str) -> None:
    from pipeline.archives.deterministic import Entry, write_tar_gz, write_zip

    bundle = tmp_path / "dist" / f"llama-b1-bin-ubuntu-x64.{suffix}"
    (write_tar_gz if suffix == "tar.gz" else write_zip)(bundle, [Entry(name="llama/README", data=b"x")])
    assert mode(bundle) == 0o644


# --------------------------------------------------------------------------
# Every child in a process group of its own (processes/groups.py)


def test_no_module_starts_a_process_outside_the_group_machinery() -> None:
    """subprocess.run/Popen outside processes/groups.py would start a child an interrupt leaves running."""
    import ast

    root = Path(__file__).resolve().parents[2] / "pipeline"
    starters = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"}
    # The glslc launcher is not the pipeline: Ninja runs it for each shader, inside the build's own process
    # group (which the pipeline stops as a whole), and it execs or runs glslc in its place; the glslc cache
    # server runs the same code in a group of its own that the pipeline started with popen_child.
    outside = {root / "processes" / "groups.py", root / "ccache" / "glslc_cache.py"}
    found = []
    for path in sorted(root.rglob("*.py")):
        if path in outside:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in starters
                and isinstance(node.value, ast.Name)
                and node.value.id == "subprocess"
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and node.attr in {"system", "popen"} | {n for n in dir(os) if n.startswith(("spawn", "exec"))}
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
