"""A leg's unpacked source tree is re-used only when it is what the archive's manifest lists.

The archive is a real ``git archive`` of a repository made here; the file
list the manifest must carry is read back with ``tarfile`` (not with the code
under test); the tree is edited the way someone with write access to the leg's
folder would, the extractor's own marker file included.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.archives.extract import MARKER, tree_digests
from pipeline.errors import SourceError
from pipeline.source.archive import manifest_path, unpack_source_archive, write_source_archive
from tests.support.gitrepos import commit_files, init_repo

pytestmark = pytest.mark.integration

WHEN = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
FILES = {"CMakeLists.txt": "project(demo C)\n", "src/main.c": "int main(void) { return 0; }\n",
         "scripts/run.sh": "#!/bin/sh\necho run\n"}  # fmt: skip


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo")
    commit_files(repo, FILES, "demo", when=WHEN)
    made, _manifest = write_source_archive(repo, tmp_path / "source", tag="b1", source={"tag": "b1"},
                                           environ=dict(os.environ))  # fmt: skip
    return made


def test_the_manifest_lists_every_file_of_the_archive(archive: Path) -> None:
    listed = json.loads(manifest_path(archive).read_text())["files"]
    expected = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isreg():
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                rel = member.name.removeprefix("llama.cpp/")
                expected[rel] = f"{hashlib.sha256(data).hexdigest()} {len(data)}" + (
                    " x" if member.mode & 0o100 else ""
                )
    assert listed == expected and set(listed) == set(FILES)


def test_the_archive_is_gits_own_tar_stream_gzipped_whole(archive: Path, tmp_path: Path) -> None:
    """The file list is read from git's stream on its way to gzip: every byte of the stream still reaches the
    archive (git's own ``git archive`` output is the reference, gzip's command the reader)."""
    repo = tmp_path / "repo"
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    reference = subprocess.run(
        [
            "git",
            "-c",
            "core.autocrlf=false",
            "archive",
            "--format=tar",
            "--prefix=llama.cpp/",
            commit.strip(),
        ],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    unpacked = subprocess.run(["gzip", "-dc", str(archive)], capture_output=True, check=True).stdout
    assert unpacked == reference and len(reference) % tarfile.RECORDSIZE == 0


def test_a_file_edited_together_with_the_trees_own_digests_is_extracted_again(
    archive: Path, tmp_path: Path
) -> None:
    target = tmp_path / "leg" / "src" / "llama.cpp"
    unpack_source_archive(archive, target)
    main = target / "src" / "main.c"
    inode = main.stat().st_ino
    unpack_source_archive(archive, target)
    assert main.stat().st_ino == inode  # untouched: re-used

    main.write_text("#error an edit that must never be built\n")
    # The edit made to look extracted: the marker inside the tree lists the edited file's digest.
    marker = json.loads((target / MARKER).read_text())
    (target / MARKER).write_text(json.dumps({**marker, "files": tree_digests(target)}))
    unpack_source_archive(archive, target)
    assert main.read_text() == FILES["src/main.c"]


def test_a_manifest_whose_list_does_not_match_its_archive_is_refused(archive: Path, tmp_path: Path) -> None:
    path = manifest_path(archive)
    manifest = json.loads(path.read_text())
    manifest["files"]["src/main.c"] = "0" * 64 + " 1"
    path.write_text(json.dumps(manifest))
    target = tmp_path / "leg" / "src" / "llama.cpp"
    with pytest.raises(SourceError) as err:
        unpack_source_archive(archive, target)
    assert err.value.message == (f"source archive {archive}: its tree does not match its manifest's file list "
                                 "(src/main.c changed)")  # fmt: skip
    assert not target.exists()


def test_an_older_manifest_without_a_list_never_lets_a_tree_be_reused(archive: Path, tmp_path: Path) -> None:
    path = manifest_path(archive)
    manifest = json.loads(path.read_text())
    del manifest["files"]
    path.write_text(json.dumps(manifest))
    target = tmp_path / "leg" / "src" / "llama.cpp"
    unpack_source_archive(archive, target)
    inode = (target / "src" / "main.c").stat().st_ino
    unpack_source_archive(archive, target)
    assert (target / "src" / "main.c").stat().st_ino != inode
