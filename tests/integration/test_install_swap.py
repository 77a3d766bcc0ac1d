"""A new toolchain install is proven beside the working one and swapped in; a bad one never removes the old.

The check is the real one a ROCm leg uses (its clang must run ``--version``,
a real subprocess), on TheRock-shaped tarballs built here and "re-published"
under the same file:// URL.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pipeline.archives.extract import MARKER
from pipeline.errors import ToolchainError
from pipeline.toolchain.installer.install import install_archive
from pipeline.toolchain.therock import install_check
from tests.support.archives import FAKE_CLANG, make_tar, tar_dir, tar_file, therock_members

NAME = "rocm-7-linux-gfx110X-all"


def publish(folder: Path, members: list) -> tuple[str, str]:
    """(file:// URL, sha256) of a tarball at a fixed name in ``folder``, replacing what was there."""
    folder.mkdir(parents=True, exist_ok=True)
    path = make_tar(folder / "therock-dist-linux-gfx110X-all-7.0.0a20250104.tar.gz", members)
    return path.as_uri(), hashlib.sha256(path.read_bytes()).hexdigest()


def install(url: str, tmp_path: Path, *, sha256: str | None = None, force: bool = False):
    return install_archive(
        url,
        NAME,
        sha256=sha256,
        root_dir=tmp_path / "tc",
        download_cache=tmp_path / "dl",
        force=force,
        check=install_check("linux"),
    )


def visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


BAD_TARBALLS = {
    "no clang": [tar_dir("./"), tar_file("./lib/llvm/lib/libLLVM.so", b"lib")],
    "empty": [],
    "clang not executable": [tar_dir("./"), tar_file("./lib/llvm/bin/clang", FAKE_CLANG, mode=0o644)],
    "clang that fails": [tar_dir("./"), tar_file("./lib/llvm/bin/clang", b"#!/bin/sh\nexit 3\n", mode=0o755)],
}


@pytest.mark.parametrize("bad", sorted(BAD_TARBALLS))
def test_a_bad_republished_tarball_keeps_the_working_install(tmp_path: Path, bad: str) -> None:
    url, _ = publish(tmp_path / "served", therock_members())
    first = install(url, tmp_path)
    clang = first.root / "lib" / "llvm" / "bin" / "clang"
    marker_before = (first.root / MARKER).read_text()
    assert clang.read_bytes() == FAKE_CLANG

    # Re-published under the same name; the index's checksum names the new file.
    url, sha = publish(tmp_path / "served", BAD_TARBALLS[bad])
    with pytest.raises(ToolchainError) as err:
        install(url, tmp_path, sha256=sha)
    assert "is not a usable install" in str(err.value) and "the working install was kept" in str(err.value)
    # The old install is there, whole, with its own marker; nothing half-made beside it.
    assert clang.read_bytes() == FAKE_CLANG
    assert (first.root / MARKER).read_text() == marker_before
    assert visible(tmp_path / "tc") == [NAME]
    # The bad archive is not kept as a trusted download: a fixed re-publication is fetched again.
    assert visible(tmp_path / "dl") == []

    url, sha = publish(tmp_path / "served", [*therock_members(), tar_file("./share/fixed", b"1")])
    again = install(url, tmp_path, sha256=sha)
    assert json.loads((again.root / MARKER).read_text())["sha256"] == sha


def test_a_bad_first_install_leaves_nothing_and_is_retried(tmp_path: Path) -> None:
    url, _ = publish(tmp_path / "served", BAD_TARBALLS["no clang"])
    with pytest.raises(ToolchainError, match="nothing was installed"):
        install(url, tmp_path)
    assert visible(tmp_path / "tc") == []
    url, _ = publish(tmp_path / "served", therock_members())
    assert not install(url, tmp_path).reused


def test_a_new_digest_that_downloads_corrupt_keeps_the_working_install(tmp_path: Path) -> None:
    url, _ = publish(tmp_path / "served", therock_members())
    first = install(url, tmp_path)
    served = tmp_path / "served" / "therock-dist-linux-gfx110X-all-7.0.0a20250104.tar.gz"
    served.write_bytes(served.read_bytes()[:100])
    corrupt_sha = hashlib.sha256(served.read_bytes()).hexdigest()
    # The index's checksum names the new (corrupt) file: the install no longer matches it.
    with pytest.raises(ToolchainError, match="corrupt or unreadable archive"):
        install(url, tmp_path, sha256=corrupt_sha)
    assert (first.root / "lib" / "llvm" / "bin" / "clang").read_bytes() == FAKE_CLANG
    assert visible(tmp_path / "tc") == [NAME]
