"""Removing a tree (prune's, an install swap's, a clean-up's) changes nothing outside it.

Each removal runs in a child process the way the pipeline runs it
(``archives.extract.remove_install``, what ``prune --local --apply`` and the
installer call). What is checked comes from the file system itself: an
outside file's mode (``os.stat``), a file on a filesystem mounted inside the
tree. The read-only case needs a user other than root (root ignores
permission bits, so no error handler ever runs): the child drops to
``nobody`` after its imports. The mount needs root and a mount namespace of
its own (``unshare -m``), so nothing is mounted on the machine itself.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration

NOBODY = 65534

REMOVE = """
import os, sys
from pathlib import Path
from pipeline.archives.extract import remove_install
from pipeline.errors import PipelineError
if sys.argv[2] != "-":
    os.setgid(int(sys.argv[2]))
    os.setuid(int(sys.argv[2]))
try:
    remove_install(Path(sys.argv[1]))
except PipelineError as err:
    print(err.message)
    sys.exit(err.exit_code)
"""


def remove_in_child(
    tree: Path, *, as_uid: int | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, sys.executable, "-c", REMOVE, str(tree), "-" if as_uid is None else str(as_uid)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder another user can reach (pytest's tmp_path is root's only)."""
    folder = Path(tempfile.mkdtemp(prefix="tree-removal-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        subprocess.run(["chmod", "-R", "u+rwX", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def own(path: Path, uid: int) -> None:
    os.chown(path, uid, uid, follow_symlinks=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the tree to another user (nobody)")
def test_a_link_in_a_read_only_folder_never_has_its_target_changed(shared_folder: Path) -> None:
    outside = shared_folder / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("not the cache's\n")
    outside.chmod(0o600)
    tree = shared_folder / "cache" / "install"
    frozen = tree / "lib" / "frozen"
    frozen.mkdir(parents=True)
    (tree / "lib" / "libdemo.so").write_bytes(b"\x7fELF...")
    # Alone in its folder: the first entry whose removal is refused is the link itself.
    (frozen / "secret-link").symlink_to(outside)
    for path in (
        outside.parent,
        outside,
        shared_folder / "cache",
        tree,
        tree / "lib",
        frozen,
        tree / "lib" / "libdemo.so",
        frozen / "secret-link",
    ):
        own(path, NOBODY)
    frozen.chmod(0o555)  # read-only, as a folder unpacked from an archive can be

    proc = remove_in_child(tree, as_uid=NOBODY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not tree.exists()
    assert stat.S_IMODE(outside.stat().st_mode) == 0o600
    assert outside.read_text() == "not the cache's\n"
    # Nor was the folder holding the tree touched.
    assert stat.S_IMODE((shared_folder / "cache").stat().st_mode) == 0o755


def test_a_link_to_an_outside_folder_is_removed_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    tree = tmp_path / "install"
    (tree / "bin").mkdir(parents=True)
    (tree / "bin" / "linked-folder").symlink_to(outside, target_is_directory=True)
    proc = remove_in_child(tree)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not tree.exists() and (outside / "keep.txt").read_text() == "keep\n"


def _unshare_works() -> str | None:
    if os.geteuid() != 0:
        return "needs root to mount a filesystem inside the tree"
    if shutil.which("unshare") is None:
        return "no unshare (util-linux) to mount in a namespace of the test's own"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True
    )
    return None if probe.returncode == 0 else f"unshare -m fails here: {probe.stderr.strip()}"


@pytest.mark.skipif(_unshare_works() is not None, reason=str(_unshare_works()))
def test_a_filesystem_mounted_inside_the_tree_is_left_alone(tmp_path: Path) -> None:
    tree = tmp_path / "install"
    mount = tree / "share" / "mounted"
    mount.mkdir(parents=True)
    (tree / "share" / "own.txt").write_text("the tree's\n")
    moved = f"{tmp_path}/.install.*.trash/old/share/mounted"  # remove_install renames the install aside first
    script = (
        f"set -e; mount -t tmpfs tmpfs '{mount}'; echo 'on the mount' > '{mount}/data.txt'; "
        f"PYTHONPATH='{ROOT}' '{sys.executable}' -c '{REMOVE}' '{tree}' - && echo removed || echo refused $?; "
        f"cat {moved}/data.txt; umount {moved}"
    )
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    error, code, data = proc.stdout.splitlines()
    # One error line naming the mount, the toolchain error's exit code, and the mount's file still there.
    assert re.fullmatch(
        rf"cannot remove {re.escape(str(tmp_path))}/\.install\.\w+\.trash/old/share/mounted: "
        r"another filesystem is mounted there: left in place \(unmount it first\)",
        error,
    ), error
    assert (code, data) == ("refused 7", "on the mount")
    assert not tree.exists()  # the install itself is gone from its place
