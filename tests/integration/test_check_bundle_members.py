"""`check-bundle` on archives someone else wrote: zipfile.writestr's modes, and members it cannot place."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from pipeline.bundle.make import FORMAT, FORMAT_VERSION
from pipeline.errors import BundleError
from tests.support.archives import make_tar, tar_file, tar_hardlink
from tests.support.pipeline_cli import run_pipeline

pytestmark = pytest.mark.integration


def manifest(os_name: str) -> bytes:
    return json.dumps(
        {"format": FORMAT, "format_version": FORMAT_VERSION, "files": [], "leg": {"name": "w", "os": os_name}}
    ).encode()


def check(bundle: Path) -> subprocess.CompletedProcess[str]:
    return run_pipeline(["check-bundle", str(bundle), "--no-smoke"], env={})


def test_a_zip_written_by_zipfile_writestr_is_accepted(tmp_path: Path) -> None:
    bundle = tmp_path / "llama-b1-bin-win-cpu-x64.zip"
    with zipfile.ZipFile(bundle, "w") as zf:
        # writestr with a bare name stores 0o600 << 16: permission bits, no file-type bits.
        zf.writestr("manifest.json", manifest("windows"))
        zf.writestr("LICENSE", b"MIT\n")
        zf.writestr("bin/readme.txt", b"hello\n")
    with zipfile.ZipFile(bundle) as zf:
        assert {i.external_attr >> 16 for i in zf.infolist()} == {0o600}
    proc = check(bundle)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # Unpacked and read: its one problem is that it holds no program or library to examine.
    assert [line for line in out.splitlines() if line.startswith("error:")] == [
        "error: .: no .exe/.dll program or library at the bundle's root: nothing was checked"
    ]
    assert proc.returncode == 1, out
    assert "check-bundle failed (1 problem): 0 binaries" in out


def test_a_bundle_with_a_hard_link_to_a_missing_member_is_one_error_line(tmp_path: Path) -> None:
    bundle = make_tar(
        tmp_path / "llama-b1-bin-ubuntu-x64.tar.gz",
        [
            tar_file("manifest.json", manifest("linux")),
            tar_file("LICENSE", b"MIT\n"),
            tar_hardlink("bin/llama-cli", "bin/missing"),
        ],
    )
    proc = check(bundle)
    assert proc.returncode == BundleError.exit_code, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {bundle}: cannot unpack: {bundle.name}: refused member 'bin/llama-cli': "
        "hard link to 'bin/missing', which is no earlier member; nothing was installed"
    ]


def _in_folder(os_name: str, root: str) -> bytes:
    return json.dumps(
        {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "files": [],
            "root": root,
            "leg": {"name": "w", "os": os_name},
        }
    ).encode()


def test_the_manifest_is_read_where_it_was_unpacked_and_must_sit_in_the_folder_it_names(
    tmp_path: Path,
) -> None:
    from pipeline.bundle.check import check_bundle

    good = make_tar(
        tmp_path / "llama-b1-bin-ubuntu-x64.tar.gz",
        [
            tar_file("llama-b1/manifest.json", _in_folder("linux", "llama-b1")),
            tar_file("llama-b1/LICENSE", b"MIT\n"),
        ],
    )
    result = check_bundle(good, scratch=tmp_path / "scratch", host_os="linux", smoke=False)
    # Read and unpacked: its root is the folder the manifest names (LICENSE found there, no program in it).
    assert [p.kind for p in result.problems] == ["empty"]
    moved = make_tar(
        tmp_path / "moved.tar.gz",
        [
            tar_file("llama-b2/manifest.json", _in_folder("linux", "llama-b1")),
            tar_file("llama-b2/LICENSE", b"MIT\n"),
        ],
    )
    with pytest.raises(
        BundleError,
        match=r"^\S+moved\.tar\.gz: corrupt bundle: llama-b2/manifest\.json is not in "
        r"the folder its manifest names$",
    ):
        check_bundle(moved, scratch=tmp_path / "scratch", host_os="linux", smoke=False)
    deep = make_tar(tmp_path / "deep.tar.gz", [tar_file("a/b/manifest.json", _in_folder("linux", "a"))])
    with pytest.raises(BundleError, match=r"deep\.tar\.gz: foreign bundle: no manifest\.json inside$"):
        check_bundle(deep, scratch=tmp_path / "scratch", host_os="linux", smoke=False)


def test_the_check_inflates_the_archive_only_for_its_extraction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive is inflated once: reading the manifest from it inflated it whole, and the safe
    extraction inflated it twice more (every header first, then the data after a seek back)."""
    import gzip
    import zlib

    from pipeline.archives.deterministic import Entry, write_tar_gz
    from pipeline.bundle.check import check_bundle

    # The pipeline's own writer with its packaging cache: one gzip member per file, concatenated (what a
    # stream reader must follow to the end).
    bundle = tmp_path / "llama-b1-bin-ubuntu-x64.tar.gz"
    payload = bytes(range(256)) * 4096
    files = []
    for n in range(2):  # files big enough to be members of their own
        files.append(tmp_path / f"payload{n}.bin")
        files[-1].write_bytes(payload[n:] + payload[:n])
    write_tar_gz(
        bundle,
        [
            Entry(name="llama-b1/manifest.json", data=_in_folder("linux", "llama-b1")),
            Entry(name="llama-b1/LICENSE", data=b"MIT\n"),
            *(Entry(name=f"llama-b1/{f.name}", path=f) for f in files),
        ],
        cache=tmp_path / "pack",
    )
    assert bundle.read_bytes().count(b"\x1f\x8b\x08") >= 3  # several gzip members
    size = len(gzip.decompress(bundle.read_bytes()))
    inflated = [0]
    real = zlib.decompressobj

    class Counting:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self._inner = real(*args, **kwargs)  # type: ignore[arg-type]

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            out = self._inner.decompress(data, max_length)
            inflated[0] += len(out)
            return out

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

    monkeypatch.setattr(zlib, "decompressobj", Counting)
    result = check_bundle(bundle, scratch=tmp_path / "scratch", host_os="linux", smoke=False)
    # Every member came out, the last gzip member's too.
    for f in files:
        assert (tmp_path / "scratch" / "bundle" / "llama-b1" / f.name).read_bytes() == f.read_bytes()
    assert [p.kind for p in result.problems] == ["empty"]
    # One pass: each member placed (checked against those before it) as the archive streams, then written.
    assert 0 < inflated[0] <= size, (inflated[0], size)
