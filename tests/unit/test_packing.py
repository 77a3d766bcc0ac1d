"""Packaging: per-file gzip/zip members, reused by content, byte-identical with or without the cache."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import random
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.archives.deterministic import (
    Entry,
    _tar_info,
    write_tar_gz,
    write_zip,
)
from pipeline.archives.packing import MEMBER_MIN, PackCache
from pipeline.archives.zipwriter import ZipWriter
from pipeline.errors import BundleError
from tests.support.archives import folder_entries, package_folder


def _payload(root: Path, seed: int = 1) -> Path:
    """A bundle-shaped folder: big libraries (half random, half repetitive), small files, a symlink."""
    rng = random.Random(seed)
    folder = root / "payload"
    (folder / "bin").mkdir(parents=True)
    (folder / "lib").mkdir()
    (folder / "bin" / "llama-cli").write_bytes(rng.randbytes(40_000) + b"\x90" * 200_000)
    (folder / "bin" / "llama-cli").chmod(0o755)
    (folder / "lib" / "libggml.so.0").write_bytes(b"ggml" * 90_000 + rng.randbytes(5_000))
    (folder / "lib" / "libtiny.so").write_bytes(b"tiny")
    (folder / "lib" / "empty.txt").write_bytes(b"")
    (folder / "LICENSE").write_text("MIT\n" * 100)
    (folder / "lib" / "libggml.so").symlink_to("libggml.so.0")
    return folder


def _reference_tar(entries: list[Entry]) -> bytes:
    """What Python's own tarfile writes for the same entries (uncompressed)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(entries, key=lambda e: e.name):
            info = _tar_info(entry)
            if info.isfile():
                with entry.open() as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
    return buf.getvalue()


# The zip stores the symlink lib/libggml.so as the file it names: a third big member, whose
# content the cold run may already have compressed for libggml.so.0 (reused within the run,
# unless both were compressed at the same time on two threads).
@pytest.mark.parametrize(("suffix", "cold_reused", "warm_reused"), [(".tar.gz", 0, 2), (".zip", 1, 3)])
def test_cached_members_give_the_same_bytes(
    tmp_path: Path, suffix: str, cold_reused: int, warm_reused: int
) -> None:
    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    plain = package_folder(folder, tmp_path / f"plain{suffix}")
    cold = package_folder(folder, tmp_path / f"cold{suffix}", cache=cache)
    warm = package_folder(folder, tmp_path / f"warm{suffix}", cache=cache)
    one_core = package_folder(folder, tmp_path / f"one{suffix}", cache=None, workers=1)
    data = (tmp_path / f"plain{suffix}").read_bytes()
    assert (tmp_path / f"cold{suffix}").read_bytes() == data
    assert (tmp_path / f"warm{suffix}").read_bytes() == data
    assert (tmp_path / f"one{suffix}").read_bytes() == data
    # Two files are at least MEMBER_MIN: llama-cli (240 000 bytes) and libggml.so.0 (365 000).
    assert (plain.reused, warm.reused, one_core.reused) == (0, warm_reused, 0)
    assert 0 <= cold.reused <= cold_reused
    assert warm.reused_bytes == 240_000 + 365_000 * (warm_reused - 1)
    assert len(list(cache.rglob("*.deflate"))) == 2
    assert plain.bytes_out == len(data)


def test_tar_stream_is_what_tarfile_writes(tmp_path: Path) -> None:
    folder = _payload(tmp_path)
    entries = [
        *folder_entries(folder),
        Entry(name="lib/", is_dir=True, mode=0o755),
        Entry(name="manifest.json", data=b'{"a": 1}\n', mode=0o644),
    ]
    target = tmp_path / "b.tar.gz"
    stats = write_tar_gz(target, entries, cache=tmp_path / "pack")
    raw = target.read_bytes()
    assert gzip.decompress(raw) == _reference_tar(entries)
    # Glue, big file, glue, big file, glue: five gzip members, each starting with the gzip magic.
    assert stats.members == 5
    assert raw.count(b"\x1f\x8b\x08\x00\x00\x00\x00\x00") >= 5
    with tarfile.open(target, "r:gz") as tar:
        names = tar.getnames()
        link = tar.getmember("lib/libggml.so")
        cli = tar.extractfile("bin/llama-cli")
        assert cli is not None
        assert cli.read() == (folder / "bin" / "llama-cli").read_bytes()
        assert tar.getmember("bin/llama-cli").mode == 0o755
    assert names == sorted(names)
    assert link.issym() and link.linkname == "libggml.so.0"


def test_zip_reads_back_with_zipfile(tmp_path: Path) -> None:
    folder = _payload(tmp_path)
    entries = [*folder_entries(folder, symlinks=False), Entry(name="bin/", is_dir=True, mode=0o755)]
    target = tmp_path / "b.zip"
    write_zip(target, entries, cache=tmp_path / "pack")
    with zipfile.ZipFile(target) as zf:
        assert zf.testzip() is None
        infos = {i.filename: i for i in zf.infolist()}
        assert sorted(infos) == sorted(e.name for e in entries)
        # The symlink is stored as the file it names.
        assert zf.read("lib/libggml.so") == (folder / "lib" / "libggml.so.0").read_bytes()
        assert zf.read("lib/empty.txt") == b""
        assert infos["bin/llama-cli"].external_attr >> 16 == 0o100755
        assert infos["bin/"].is_dir()
        assert {i.date_time for i in infos.values()} == {(1980, 1, 1, 0, 0, 0)}
        assert infos["bin/llama-cli"].compress_type == zipfile.ZIP_DEFLATED


def test_a_changed_file_misses_and_the_rest_is_reused(tmp_path: Path) -> None:
    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    package_folder(folder, tmp_path / "a.tar.gz", cache=cache)
    (folder / "bin" / "llama-cli").write_bytes(b"new" * 50_000)
    again = package_folder(folder, tmp_path / "b.tar.gz", cache=cache)
    fresh = package_folder(folder, tmp_path / "c.tar.gz")
    assert (again.reused, fresh.reused) == (1, 0)
    assert (tmp_path / "b.tar.gz").read_bytes() == (tmp_path / "c.tar.gz").read_bytes()
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        cli = tar.extractfile("bin/llama-cli")
        assert cli is not None and cli.read() == b"new" * 50_000


def test_the_level_is_part_of_the_cache_key(tmp_path: Path) -> None:
    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    package_folder(folder, tmp_path / "six.tar.gz", cache=cache)
    nine = package_folder(folder, tmp_path / "nine.tar.gz", cache=cache, level=9)
    assert nine.reused == 0
    sha = hashlib.sha256((folder / "lib" / "libggml.so.0").read_bytes()).hexdigest()
    stored = PackCache(cache)
    assert stored.path(sha, 6).is_file() and stored.path(sha, 9).is_file()
    # The cached stream is plain raw deflate of the content at that level, then its size and crc32.
    content = (folder / "lib" / "libggml.so.0").read_bytes()
    inflate = zlib.decompressobj(-15)
    assert inflate.decompress(stored.path(sha, 9).read_bytes()) == content
    assert inflate.unused_data == struct.pack("<QI", len(content), zlib.crc32(content))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(
        st.sampled_from([0, 1, 511, 512, 513, MEMBER_MIN - 1, MEMBER_MIN, MEMBER_MIN + 7]),
        min_size=1,
        max_size=6,
    )
)
def test_any_mix_of_sizes_is_a_valid_tar(tmp_path_factory: pytest.TempPathFactory, sizes: list[int]) -> None:
    root = tmp_path_factory.mktemp("sizes")
    entries = []
    for i, size in enumerate(sizes):
        path = root / f"f{i}"
        path.write_bytes(os.urandom(size))
        entries.append(Entry(name=f"d/f{i}", path=path))
    target = root / "x.tar.gz"
    write_tar_gz(target, entries, cache=root / "pack")
    assert gzip.decompress(target.read_bytes()) == _reference_tar(entries)
    assert len(gzip.decompress(target.read_bytes())) % tarfile.RECORDSIZE == 0


def test_zip64_end_records_when_the_count_overflows(tmp_path: Path) -> None:
    target = tmp_path / "many.zip"
    count = 0x10000 + 3
    with target.open("wb") as out:
        writer = ZipWriter(out)
        central = [
            writer.member(f"d{i:05}/", b"", stored=True, crc=0, size=0, attr=0o40755 << 16)
            for i in range(count)
        ]
        writer.finish(central)
    with zipfile.ZipFile(target) as zf:
        assert len(zf.infolist()) == count
        assert zf.infolist()[-1].filename == f"d{count - 1:05}/"


def test_cache_entries_are_checked_against_size_and_crc(tmp_path: Path) -> None:
    cache = PackCache(tmp_path / "pack")
    sha = "ab" + "0" * 62
    cache.put(sha, 6, b"stream", size=100, crc32=7)
    assert cache.get(sha, 6, size=100, crc32=7) == b"stream"
    assert cache.get(sha, 6, size=100, crc32=8) is None
    assert cache.get("cd" + "0" * 62, 6, size=100, crc32=7) is None
    assert [p.name for p in (tmp_path / "pack" / "ab").iterdir()] == [f"{sha}-6.deflate"]


def test_a_torn_cache_entry_is_compressed_again(tmp_path: Path) -> None:
    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    package_folder(folder, tmp_path / "a.tar.gz", cache=cache)
    for entry in cache.rglob("*.deflate"):  # as after a crash between write and rename
        entry.write_bytes(entry.read_bytes()[: len(entry.read_bytes()) // 2])
    again = package_folder(folder, tmp_path / "b.tar.gz", cache=cache)
    assert again.reused == 0
    assert (tmp_path / "b.tar.gz").read_bytes() == (tmp_path / "a.tar.gz").read_bytes()
    assert package_folder(folder, tmp_path / "c.tar.gz", cache=cache).reused == 2


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files opened for reading from now on."""
    opened: list[str] = []
    real = Path.open

    def counting(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        if "r" in mode:
            opened.append(self.name)
        return real(self, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", counting)
    return opened


def test_a_file_hashed_by_the_caller_is_not_read_again_when_the_cache_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundle's files are hashed once (the manifest's sha256): the writer takes the cached stream of that
    digest without reading the file; without a digest it reads each file to find its stream."""
    from pipeline.archives.packing import content_digest

    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    big = ("llama-cli", "libggml.so.0")
    package_folder(folder, tmp_path / "cold.tar.gz", cache=cache)
    hashed = [
        e if e.path is None else dataclasses.replace(e, digest=content_digest(e.path))
        for e in folder_entries(folder)
    ]
    opened = _counting_reads(monkeypatch)
    stats = write_tar_gz(tmp_path / "known.tar.gz", hashed, cache=cache)
    assert stats.reused == 2 and not set(big) & set(opened), opened
    unknown = write_tar_gz(tmp_path / "unknown.tar.gz", folder_entries(folder), cache=cache)
    assert unknown.reused == 2 and sorted(n for n in opened if n in big) == sorted(big)
    assert (tmp_path / "known.tar.gz").read_bytes() == (tmp_path / "cold.tar.gz").read_bytes()


def test_a_file_changed_after_it_was_hashed_is_refused_and_never_cached_under_the_old_digest(
    tmp_path: Path,
) -> None:
    from pipeline.archives.packing import content_digest

    folder = _payload(tmp_path)
    cache = tmp_path / "pack"
    cli = folder / "bin" / "llama-cli"
    old = content_digest(cli)
    cli.write_bytes(bytes(reversed(cli.read_bytes())))  # the same size, other content
    entries = [dataclasses.replace(e, digest=old) if e.path == cli else e for e in folder_entries(folder)]
    with pytest.raises(BundleError, match="changed while being packaged"):
        write_tar_gz(tmp_path / "a.tar.gz", entries, cache=cache)
    assert not PackCache(cache).path(old.sha256, 6).exists()
