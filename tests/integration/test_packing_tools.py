"""The system's own tools read what the packager writes: `gzip -t`, `tar -xzf`, `unzip`."""

from __future__ import annotations

import filecmp
import os
import random
import subprocess
from pathlib import Path

import pytest

from tests.support.archives import package_folder

pytestmark = pytest.mark.integration


def _payload(root: Path) -> Path:
    rng = random.Random(7)
    folder = root / "payload"
    (folder / "bin").mkdir(parents=True)
    (folder / "lib" / "rocblas" / "library").mkdir(parents=True)
    (folder / "bin" / "llama-server").write_bytes(rng.randbytes(100_000) + b"\0" * 400_000)
    (folder / "bin" / "llama-server").chmod(0o755)
    (folder / "lib" / "libllama.so").write_bytes(b"llama" * 100_000)
    for i in range(30):  # many small kernel files, as rocblas/library has
        (folder / "lib" / "rocblas" / "library" / f"Kernels{i}.dat").write_bytes(rng.randbytes(i * 97))
    (folder / "lib" / "libllama.so.0").symlink_to("libllama.so")
    return folder


def _same_tree(a: Path, b: Path) -> None:
    names_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*"))
    names_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*"))
    assert names_a == names_b
    for name in names_a:
        pa, pb = a / name, b / name
        if pa.is_file():
            assert filecmp.cmp(pa, pb, shallow=False), name
            assert os.access(pb, os.X_OK) == os.access(pa, os.X_OK), name


@pytest.mark.parametrize("cached", [False, True])
def test_tar_and_gzip_read_the_tar_gz(tmp_path: Path, cached: bool) -> None:
    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    target = tmp_path / "b.tar.gz"
    package_folder(folder, target, cache=cache)
    if cached:
        stats = package_folder(folder, target, cache=cache)
        assert stats.reused == 2
    subprocess.run(["gzip", "-t", str(target)], check=True)
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xzf", str(target), "-C", str(out)], check=True)
    _same_tree(folder, out)
    assert (out / "lib" / "libllama.so.0").readlink() == Path("libllama.so")


@pytest.mark.parametrize("cached", [False, True])
def test_unzip_reads_the_zip(tmp_path: Path, cached: bool) -> None:
    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    target = tmp_path / "b.zip"
    package_folder(folder, target, cache=cache)
    if cached:
        assert package_folder(folder, target, cache=cache).reused == 3
    tested = subprocess.run(["unzip", "-t", str(target)], check=True, capture_output=True, text=True)
    assert "No errors detected" in tested.stdout
    out = tmp_path / "out"
    subprocess.run(["unzip", "-q", str(target), "-d", str(out)], check=True)
    # The symlink is stored as the file it names.
    (folder / "lib" / "libllama.so.0").unlink()
    (folder / "lib" / "libllama.so.0").write_bytes((folder / "lib" / "libllama.so").read_bytes())
    _same_tree(folder, out)


def test_same_bytes_as_a_fresh_run_after_the_cache_filled(tmp_path: Path) -> None:
    """Night 1 fills the cache, night 2 reuses it: the bundle is the one a cacheless run makes."""
    folder = _payload(tmp_path)
    package_folder(folder, tmp_path / "night1.tar.gz", cache=tmp_path / "pack")
    package_folder(folder, tmp_path / "night2.tar.gz", cache=tmp_path / "pack")
    package_folder(folder, tmp_path / "fresh.tar.gz", cache=None, workers=1)
    night2 = (tmp_path / "night2.tar.gz").read_bytes()
    assert night2 == (tmp_path / "fresh.tar.gz").read_bytes() == (tmp_path / "night1.tar.gz").read_bytes()
