"""Extraction refuses every member it cannot place: one error naming the member, for every kind of archive."""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
import zipfile
from pathlib import Path

import pytest

from pipeline.archives.extract import check_archive, extract_archive
from pipeline.errors import SourceError, ToolchainError
from pipeline.source.archive import MANIFEST_FORMAT, manifest_path, unpack_source_archive
from pipeline.toolchain.installer.install import install_archive
from tests.support.archives import make_tar, tar_dir, tar_file, tar_hardlink, tar_symlink, therock_members

# (members after a valid install, the refused member, what the message says)
UNPLACEABLE = [
    pytest.param(
        [tar_hardlink("lib/hard", "lib/missing")], "lib/hard", "no earlier member", id="hardlink-missing"
    ),
    pytest.param(
        [tar_hardlink("lib/hard", "lib/later"), tar_file("lib/later", b"x")],
        "lib/hard",
        "no earlier member",
        id="hardlink-later",
    ),
    pytest.param([tar_hardlink("lib/hard", "lib")], "lib/hard", "hard link to folder", id="hardlink-folder"),
    pytest.param(
        [tar_file("lib/twice", b"1"), tar_file("./lib/twice", b"2")],
        "./lib/twice",
        "duplicate name",
        id="duplicate-file",
    ),
    pytest.param(
        [tar_symlink("lib/s", "x"), tar_file("lib/s", b"through the link")],
        "lib/s",
        "duplicate name",
        id="file-over-link",
    ),
    pytest.param([tar_file("/abs/name", b"x")], "/abs/name", "absolute path", id="absolute"),
]


@pytest.mark.parametrize(("extra", "member", "why"), UNPLACEABLE)
def test_a_member_that_cannot_be_placed_is_refused_by_name(
    tmp_path: Path, extra: list[tuple[tarfile.TarInfo, bytes | None]], member: str, why: str
) -> None:
    archive = make_tar(tmp_path / "bad.tar.gz", [*therock_members(""), tar_dir("lib"), *extra])
    with pytest.raises(ToolchainError) as err:
        extract_archive(archive, tmp_path / "tc" / "rocm")
    assert f"refused member {member!r}" in err.value.message and why in err.value.message
    assert "\n" not in err.value.message
    assert not (tmp_path / "tc" / "rocm").exists()
    assert [p.name for p in (tmp_path / "tc").iterdir()] == []
    with pytest.raises(ToolchainError, match=re.escape(f"refused member {member!r}")):
        check_archive(archive)


def test_a_hard_link_to_an_earlier_file_still_extracts(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "ok.tar.gz", [tar_file("lib/a", b"same"), tar_hardlink("lib/b", "lib/a")])
    check_archive(archive)
    root = extract_archive(archive, tmp_path / "tc")
    assert (root / "lib/b").read_bytes() == b"same"
    assert (root / "lib/a").stat().st_ino == (root / "lib/b").stat().st_ino


def test_a_zip_with_a_name_twice_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "twice.zip"
    with zipfile.ZipFile(archive, "w") as zf, pytest.warns(UserWarning, match="Duplicate name"):
        zf.writestr("bin/llama-cli", b"first")
        zf.writestr("bin/llama-cli", b"second")
    with pytest.raises(ToolchainError, match="refused member 'bin/llama-cli': duplicate name"):
        extract_archive(archive, tmp_path / "tc")
    with pytest.raises(ToolchainError, match="duplicate name"):
        check_archive(archive)


def test_a_refused_toolchain_download_is_not_trusted_in_the_download_cache(tmp_path: Path) -> None:
    archive = make_tar(
        tmp_path / "therock.tar.gz", [*therock_members(), tar_hardlink("./lib/h", "./lib/gone")]
    )
    downloads = tmp_path / "downloads"
    with pytest.raises(ToolchainError, match=r"refused member '\./lib/h'"):
        install_archive(
            archive.as_uri(), "rocm-7", root_dir=tmp_path / "toolchains", download_cache=downloads
        )
    assert sorted(p.name for p in downloads.iterdir() if not p.name.endswith(".lock")) == []


def test_a_source_archive_with_an_unplaceable_member_is_one_source_error(tmp_path: Path) -> None:
    archive = make_tar(
        tmp_path / "llama.cpp-b1.tar.gz",
        [tar_file("llama.cpp/CMakeLists.txt", b"x"), tar_hardlink("llama.cpp/h", "llama.cpp/later")],
    )
    data = archive.read_bytes()
    manifest_path(archive).write_text(
        json.dumps(
            {
                "format": MANIFEST_FORMAT,
                "archive": archive.name,
                "tag": "b1",
                "commit": "0" * 40,
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
        )
    )
    with pytest.raises(SourceError, match=r"refused member 'llama.cpp/h': hard link to 'llama.cpp/later'"):
        unpack_source_archive(archive, tmp_path / "src")
