"""The one installer for a set of toolchain archives: merge, seal, reuse, refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import ToolchainError
from pipeline.toolchain.installer.install import ArchiveRef, install_archive_set, installed_set
from tests.support.archives import make_tar, make_zip, tar_file


def wheels(tmp_path: Path) -> dict[str, Path]:
    """Two wheel-shaped zips sharing nvidia/cu13/ and one identical __init__.py."""
    return {
        "a==1": make_zip(tmp_path / "a.whl", {"nvidia/__init__.py": b"", "nvidia/cu13/bin/nvcc": b"nvcc",
                                              "a-1.dist-info/RECORD": b"a"}),
        "b==1": make_zip(tmp_path / "b.whl", {"nvidia/__init__.py": b"", "nvidia/cu13/lib/libcudart.so.13": b"rt",
                                              "b-1.dist-info/RECORD": b"b"}),
    }  # fmt: skip


def refs(files: dict[str, Path]) -> list[ArchiveRef]:
    return [ArchiveRef(label=label, sha256=f"{i:064x}") for i, label in enumerate(files)]


def test_archives_merge_into_one_tree_and_finish_runs_before_sealing(tmp_path: Path) -> None:
    files = wheels(tmp_path)
    target = tmp_path / "tc" / "cuda-1-linux"
    seen: list[bool] = []

    def finish(tree: Path) -> None:
        seen.append(target.exists())
        (tree / "nvidia/cu13/lib/libcudart.so").symlink_to("libcudart.so.13")

    got = install_archive_set(refs(files), target, fetch=lambda r: files[r.label], finish=finish)
    assert not got.reused and seen == [False]
    assert (target / "nvidia/cu13/bin/nvcc").read_bytes() == b"nvcc"
    assert (target / "nvidia/cu13/lib/libcudart.so").read_bytes() == b"rt"
    assert sorted(p.name for p in target.iterdir()) == [
        ".pipeline-install.json",
        "a-1.dist-info",
        "b-1.dist-info",
        "nvidia",
    ]
    # Nothing left beside the install (no staging folders).
    # The install's lock file stays (an empty file: deleting it would race another run).
    assert sorted(p.name for p in target.parent.iterdir()) == [".cuda-1-linux.lock", "cuda-1-linux"]


def test_a_complete_install_of_the_same_set_is_reused_without_fetching(tmp_path: Path) -> None:
    files = wheels(tmp_path)
    target = tmp_path / "tc" / "t"
    install_archive_set(refs(files), target, fetch=lambda r: files[r.label])
    stamp = (target / "nvidia/cu13/bin/nvcc").stat().st_mtime_ns

    def no_fetch(ref: ArchiveRef) -> Path:
        raise AssertionError("fetched again")

    again = install_archive_set(refs(files), target, fetch=no_fetch)
    assert again.reused
    assert (target / "nvidia/cu13/bin/nvcc").stat().st_mtime_ns == stamp
    # A different set (another sha256) is not the same install.
    other = [ArchiveRef(label="a==1", sha256="f" * 64)]
    assert installed_set(target, other) is None


def test_two_archives_disagreeing_on_a_file_install_nothing(tmp_path: Path) -> None:
    files = {
        "a==1": make_zip(tmp_path / "a.whl", {"nvidia/cu13/include/x.h": b"one", "a.txt": b""}),
        "b==1": make_zip(tmp_path / "b.whl", {"nvidia/cu13/include/x.h": b"two", "b.txt": b""}),
    }
    target = tmp_path / "tc" / "t"
    with pytest.raises(ToolchainError, match=r"b==1: x.h clashes with a different file"):
        install_archive_set(refs(files), target, fetch=lambda r: files[r.label])
    assert not target.exists()
    assert [p.name for p in (tmp_path / "tc").iterdir()] == [".t.lock"]


def test_an_unsafe_member_in_any_archive_installs_nothing(tmp_path: Path) -> None:
    good = make_zip(tmp_path / "a.whl", {"nvidia/cu13/bin/nvcc": b"x", "a.txt": b""})
    bad = make_tar(tmp_path / "b.tar.gz", [tar_file("../escape", b"x")])
    files = {"a==1": good, "b==1": bad}
    target = tmp_path / "tc" / "t"
    with pytest.raises(ToolchainError, match=r"refused member '../escape'"):
        install_archive_set(refs(files), target, fetch=lambda r: files[r.label])
    assert not target.exists() and not (tmp_path / "escape").exists()


def test_a_failing_fetch_leaves_the_previous_install_alone(tmp_path: Path) -> None:
    files = wheels(tmp_path)
    target = tmp_path / "tc" / "t"
    install_archive_set(refs(files), target, fetch=lambda r: files[r.label])

    def broken(ref: ArchiveRef) -> Path:
        raise ToolchainError(f"sha256 mismatch for {ref.label}")

    newer = [ArchiveRef(label="a==2", sha256="e" * 64)]
    with pytest.raises(ToolchainError, match="sha256 mismatch for a==2"):
        install_archive_set(newer, target, fetch=broken)
    assert installed_set(target, refs(files)) is not None


def test_an_edited_install_of_the_set_is_installed_again(tmp_path: Path) -> None:
    files = wheels(tmp_path)
    target = tmp_path / "tc" / "t"
    install_archive_set(refs(files), target, fetch=lambda r: files[r.label])
    nvcc = target / "nvidia/cu13/bin/nvcc"
    nvcc.write_bytes(b"evil")
    assert installed_set(target, refs(files)) is None
    fetched: list[str] = []

    def fetch(ref: ArchiveRef) -> Path:
        fetched.append(ref.label)
        return files[ref.label]

    again = install_archive_set(refs(files), target, fetch=fetch)
    assert not again.reused and fetched == ["a==1", "b==1"] and nvcc.read_bytes() == b"nvcc"
    assert installed_set(target, refs(files)) is not None
