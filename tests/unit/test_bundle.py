"""Bundles: selection rule, portable manifest, deterministic archives, read and compare."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from pipeline.archives.deterministic import FIXED_MTIME
from pipeline.backends import bundle_file_name
from pipeline.bundle.compare import compare
from pipeline.bundle.make import (
    is_payload,
    portable_cmake_args,
    portable_text,
    read_manifest,
)
from pipeline.errors import BundleError
from pipeline.inputs.leg import Leg
from pipeline.results.record import LegRecord
from pipeline.toolchain.toolchain import Toolchain
from tests.support.bundles import make_bundle

CPU = Leg(name="cpu", backend="cpu", os="linux", runner="ubuntu-24.04")
ROCM_WIN = Leg(
    name="rocm-windows-gfx1151",
    backend="rocm",
    os="windows",
    runner="windows-2022",
    family="gfx1151",
    targets=("gfx1151",),
)
COMMIT = "c" * 40
TOOLCHAIN = Toolchain(
    kind="gcc",
    identity="gcc-12.2.0",
    compilers={"C": "gcc 12.2.0 (/usr/bin/cc)", "CXX": "gcc 12.2.0 (/usr/bin/c++)"},
    details={"version": "12.2.0", "install_path": "/somewhere/else"},
)


def fake_build(root: Path, *, variant: bytes = b"v1") -> Path:
    """A build dir as llama.cpp's CMake leaves it: programs and libraries in bin/, junk around."""
    build = root / "build"
    (build / "bin").mkdir(parents=True)
    (build / "lib").mkdir()
    (build / "CMakeFiles").mkdir()
    files = {
        "bin/llama-cli": (b"ELF cli " + variant, 0o755),
        "bin/llama-server": (b"ELF server", 0o755),
        "bin/libllama.so": (b"ELF libllama", 0o755),
        "bin/libggml-base.so": (b"ELF ggml", 0o644),
        "bin/libstatic.a": (b"!<arch>", 0o755),
        "bin/notes.txt": (b"not a program", 0o644),
        "lib/libextra.so.1.2": (b"ELF extra", 0o644),
        "lib/libextra.a": (b"!<arch>", 0o644),
        "lib/tool": (b"#!/bin/sh", 0o755),
        "CMakeFiles/x.o": (b"obj", 0o644),
        "build.ninja": (b"rules", 0o644),
    }
    for rel, (data, mode) in files.items():
        (build / rel).write_bytes(data)
        (build / rel).chmod(mode)
    (build / "bin" / "sub").mkdir()
    (build / "bin" / "sub" / "inner").write_bytes(b"ELF")
    return build


def record_for(build: Path, source_path: Path | None = None) -> LegRecord:
    source: dict[str, object] = {
        "repo": "https://example.invalid/llama.cpp",
        "base_tag": "b100",
        "base_commit": "b" * 40,
        "tag": "b100",
        "mix": [],
        "commit": COMMIT,
    }
    if source_path is not None:
        source["path"] = str(source_path)
    return LegRecord(
        leg="cpu",
        backend="cpu",
        os="linux",
        started="2026-03-14T12:00:00+00:00",
        wall_seconds=12.5,
        source=source,
        cmake_args=[
            *("-G", "Ninja", "-S", str(source_path or build.parent / "src"), "-B", str(build)),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_C_COMPILER_LAUNCHER={build.parent}/venv/bin/ccache",
            "-DCMAKE_C_COMPILER=/usr/bin/cc",
            f"-DCMAKE_INSTALL_PREFIX={build.parent}/install",
        ],
        ccache={"hits": 3, "misses": 1},
        toolchain=TOOLCHAIN.to_record(),
    )


def bundle(root: Path, *, leg: Leg = CPU, variant: bytes = b"v1", tag: str = "b100") -> Path:
    build = fake_build(root, variant=variant)
    return make_bundle(
        leg=leg,
        record=record_for(build),
        build_dir=build,
        out_dir=root,
        toolchain=TOOLCHAIN,
        tag=tag,
        commit=COMMIT,
    )


# ---------------------------------------------------------------- rules


def test_bundle_names() -> None:
    assert bundle_file_name(CPU, "b100") == "llama-b100-bin-ubuntu-x64.tar.gz"
    assert (
        bundle_file_name(ROCM_WIN, "b100-mix-abc1234") == "llama-b100-mix-abc1234-bin-win-hip-gfx1151-x64.zip"
    )


@pytest.mark.parametrize(
    ("rel", "executable", "expected"),
    [
        ("bin/llama-cli", True, True),
        ("bin/llama-cli", False, False),
        ("bin/llama-cli.exe", False, True),
        ("bin/ggml.dll", False, True),
        ("bin/libllama.so", False, True),
        ("bin/libllama.so.0.0.1", False, True),
        ("bin/libggml.dylib", False, True),
        ("bin/libggml.a", True, False),
        ("bin/llama.pdb", True, False),
        ("bin/ggml.lib", False, False),
        ("bin/sub/tool", True, False),
        ("lib/libx.so.1", False, True),
        ("lib/tool", True, False),
        ("lib/libx.a", False, False),
        ("CMakeFiles/x.so", True, False),
        ("libtop.so", True, False),
    ],
)
def test_selection_rule(rel: str, executable: bool, expected: bool) -> None:
    assert is_payload(rel, executable=executable) is expected


def test_portable_text_replaces_whole_components_longest_first() -> None:
    roots = {"out": "/ws/out", "build": "/ws/out/cpu/build", "home": "/home/me"}
    assert portable_text("-B /ws/out/cpu/build", roots) == "-B <build>"
    assert portable_text("/ws/out/src/x;/ws/output/y", roots) == "<out>/src/x;/ws/output/y"
    assert portable_text("gcc 12 (/usr/bin/cc)", roots) == "gcc 12 (/usr/bin/cc)"
    assert portable_text("C:\\ws\\out\\bin", {"out": "C:\\ws\\out"}) == "<out>\\bin"


def test_portable_cmake_args_drop_launchers_keep_compilers() -> None:
    args = [
        "-DCMAKE_C_COMPILER_LAUNCHER=/home/me/venv/bin/ccache",
        "-DCMAKE_HIP_COMPILER_LAUNCHER:FILEPATH=/x/ccache",
        "-DCMAKE_MAKE_PROGRAM=/home/me/venv/bin/ninja",
        "-DCMAKE_C_COMPILER=/usr/bin/gcc",
        "-DCMAKE_HIP_COMPILER=/ws/rocm/lib/llvm/bin/clang",
    ]
    assert portable_cmake_args(args, {"toolchain": "/ws/rocm", "home": "/home/me"}) == [
        "-DCMAKE_C_COMPILER=/usr/bin/gcc",
        "-DCMAKE_HIP_COMPILER=<toolchain>/lib/llvm/bin/clang",
    ]


# ---------------------------------------------------------------- making


def test_bundle_holds_the_selected_files_and_a_manifest(tmp_path: Path) -> None:
    path = bundle(tmp_path)
    assert path == tmp_path / "dist" / "llama-b100-bin-ubuntu-x64.tar.gz"
    with tarfile.open(path) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    # Upstream's Linux layout (release.yml: `tar --transform "s,^\.,llama-<tag>," -C build/bin .`):
    # build/bin's programs and libraries flat under one llama-<tag>/ folder.
    assert names == [
        "llama-b100",
        "llama-b100/libextra.so.1.2",
        "llama-b100/libggml-base.so",
        "llama-b100/libllama.so",
        "llama-b100/llama-cli",
        "llama-b100/llama-server",
        "llama-b100/manifest.json",
        "llama-b100/sbom.cdx.json",
    ]
    for m in members:
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (FIXED_MTIME, 0, 0, "root", "root")
        assert m.mode == (0o644 if m.name.endswith(("manifest.json", "sbom.cdx.json")) else 0o755)
    assert read_manifest(path)["root"] == "llama-b100"


def test_a_name_made_in_both_bin_and_lib_is_refused(tmp_path: Path) -> None:
    build = fake_build(tmp_path)
    (build / "lib" / "libllama.so").write_bytes(b"ELF another libllama")
    with pytest.raises(BundleError, match=r"libllama\.so is in both bin/ and lib/"):
        make_bundle(leg=CPU, record=record_for(build), build_dir=build, out_dir=tmp_path, toolchain=TOOLCHAIN,
                    tag="b1", commit=None)  # fmt: skip


def test_gzip_header_has_no_time_and_no_name(tmp_path: Path) -> None:
    raw = bundle(tmp_path).read_bytes()
    flags, mtime = raw[3], int.from_bytes(raw[4:8], "little")
    assert mtime == 0
    assert flags & 0x08 == 0  # FNAME


def test_manifest_holds_inputs_and_outputs_but_nothing_of_the_machine(tmp_path: Path) -> None:
    path = bundle(tmp_path)
    manifest = read_manifest(path)
    text = json.dumps(manifest)
    assert str(tmp_path) not in text
    assert (
        "12.5" not in text and "hits" not in text and "started" not in text and "/somewhere/else" not in text
    )
    assert manifest["leg"]["name"] == "cpu" and manifest["tag"] == "b100"
    assert manifest["source"] == {
        "repo": "https://example.invalid/llama.cpp",
        "base_tag": "b100",
        "base_commit": "b" * 40,
        "commit": COMMIT,
        "mix": [],
        "mix_hash": None,
    }
    assert manifest["toolchain"] == {"kind": "gcc", "identity": "gcc-12.2.0", "version": "12.2.0"}
    assert manifest["compilers"]["C"] == "gcc 12.2.0 (/usr/bin/cc)"
    assert manifest["cmake_args"] == [
        "-G", "Ninja", "-S", "<out>/src", "-B", "<build>", "-DCMAKE_BUILD_TYPE=Release",
        "-DCMAKE_C_COMPILER=/usr/bin/cc", "-DCMAKE_INSTALL_PREFIX=<out>/install",
    ]  # fmt: skip
    cli = next(f for f in manifest["files"] if f["path"] == "llama-cli")
    assert cli["size"] == len(b"ELF cli v1")
    assert cli["sha256"] == hashlib.sha256(b"ELF cli v1").hexdigest()


def test_same_inputs_give_the_same_bytes_in_other_folders_and_times(tmp_path: Path) -> None:
    first = bundle(tmp_path / "one")
    os.utime(tmp_path / "one" / "build" / "bin" / "llama-cli", (1, 1))
    second = bundle(tmp_path / "elsewhere" / "two")
    assert first.read_bytes() == second.read_bytes()


def test_zip_for_windows_legs_is_deterministic(tmp_path: Path) -> None:
    first = bundle(tmp_path / "one", leg=ROCM_WIN)
    second = bundle(tmp_path / "two", leg=ROCM_WIN)
    assert first.name.endswith(".zip") and first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        infos = zf.infolist()
        # Upstream's Windows zips (release.yml: `7z a ... .\build\bin\Release\*`): no top folder.
        assert [i.filename for i in infos][:2] == ["libextra.so.1.2", "libggml-base.so"]
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in infos)
        assert json.loads(zf.read("manifest.json"))["leg"]["family"] == "gfx1151"
        assert json.loads(zf.read("manifest.json"))["root"] == ""
    assert compare(first, second).same
    changed = compare(first, bundle(tmp_path / "three", leg=ROCM_WIN, variant=b"v3"))
    assert [d[0] for d in changed.differing] == ["llama-cli"]
    assert read_manifest(first)["name"] == first.name


def test_symlinked_libraries_stay_symlinks(tmp_path: Path) -> None:
    build = fake_build(tmp_path)
    (build / "bin" / "libllama.so").rename(build / "bin" / "libllama.so.0.1")
    (build / "bin" / "libllama.so").symlink_to("libllama.so.0.1")
    path = make_bundle(
        leg=CPU,
        record=record_for(build),
        build_dir=build,
        out_dir=tmp_path,
        toolchain=TOOLCHAIN,
        tag="b1",
        commit=None,
    )
    with tarfile.open(path) as tar:
        link = tar.getmember("llama-b1/libllama.so")
        assert link.issym() and link.linkname == "libllama.so.0.1"
    assert {"path": "libllama.so", "symlink": "libllama.so.0.1"} in read_manifest(path)["files"]


def test_empty_build_is_refused(tmp_path: Path) -> None:
    (tmp_path / "build" / "bin").mkdir(parents=True)
    with pytest.raises(BundleError, match="nothing to bundle"):
        make_bundle(
            leg=CPU, record=record_for(tmp_path / "build"), build_dir=tmp_path / "build", out_dir=tmp_path,
            toolchain=TOOLCHAIN, tag="b1", commit=None,
        )  # fmt: skip


# ---------------------------------------------------------------- reading


def test_read_manifest_from_bundle_folder_and_file(tmp_path: Path) -> None:
    path = bundle(tmp_path)
    manifest = read_manifest(path)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(path) as tar:
        tar.extractall(unpacked, filter="tar")
    assert read_manifest(unpacked) == manifest
    assert read_manifest(unpacked / "llama-b100") == manifest
    assert read_manifest(unpacked / "llama-b100" / "manifest.json") == manifest


def _tar_gz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_foreign_and_corrupt_inputs(tmp_path: Path) -> None:
    foreign = _tar_gz(tmp_path / "other.tar.gz", {"README": b"hello"})
    with pytest.raises(BundleError, match=r"other.tar.gz: foreign bundle: no manifest.json inside"):
        read_manifest(foreign)
    with pytest.raises(BundleError, match="foreign bundle"):
        compare(foreign, foreign)
    not_ours = _tar_gz(tmp_path / "not-ours.tar.gz", {"manifest.json": b'{"name": "x"}'})
    with pytest.raises(BundleError, match="foreign manifest"):
        read_manifest(not_ours)
    good = bundle(tmp_path / "good")
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(BundleError, match=r"truncated\.tar\.gz: corrupt bundle"):
        compare(truncated, good)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(BundleError, match=r"notes\.txt: not a bundle"):
        read_manifest(text)
    with pytest.raises(BundleError, match="no such bundle"):
        compare(tmp_path / "missing.tar.gz", good)


def test_bundle_whose_files_do_not_match_its_manifest_is_corrupt(tmp_path: Path) -> None:
    good = bundle(tmp_path / "good")
    members: dict[str, bytes] = {}
    with tarfile.open(good) as tar:
        for m in tar.getmembers():
            if m.isfile():
                fh = tar.extractfile(m)
                assert fh is not None
                members[m.name] = fh.read()
    members["llama-b100/llama-cli"] = b"tampered"
    bad = _tar_gz(tmp_path / "bad.tar.gz", members)
    with pytest.raises(
        BundleError, match=r"bad.tar.gz: corrupt bundle: llama-cli does not match the manifest"
    ):
        compare(bad, good)
    members["llama-cli"] = members.pop("llama-b100/llama-cli")
    outside = _tar_gz(tmp_path / "outside.tar.gz", members)
    with pytest.raises(
        BundleError, match=r"outside.tar.gz: corrupt bundle: llama-cli is outside its top folder llama-b100/"
    ):
        compare(outside, good)


# ---------------------------------------------------------------- comparing


def test_compare_identical_bundles(tmp_path: Path) -> None:
    result = compare(bundle(tmp_path / "one"), bundle(tmp_path / "two"))
    assert result.same
    assert result.summary == "5 of 5 files identical"


def test_compare_names_exactly_the_differing_file(tmp_path: Path) -> None:
    result = compare(bundle(tmp_path / "one"), bundle(tmp_path / "two", variant=b"v22"))
    assert not result.same
    assert result.differing == [("llama-cli", 10, 11)]
    assert (result.only_a, result.only_b, result.manifest_differences) == ([], [], [])
    assert result.summary == "4 of 5 files identical"
    assert result.to_json()["differing"] == [{"path": "llama-cli", "size_a": 10, "size_b": 11}]


def test_compare_reports_input_differences_and_one_sided_files(tmp_path: Path) -> None:
    a = bundle(tmp_path / "one", tag="b100")
    build = fake_build(tmp_path / "two")
    (build / "bin" / "llama-new").write_bytes(b"new")
    (build / "bin" / "llama-new").chmod(0o755)
    (build / "bin" / "llama-server").unlink()
    b = make_bundle(
        leg=CPU, record=record_for(build), build_dir=build, out_dir=tmp_path / "two", toolchain=TOOLCHAIN,
        tag="b101", commit="d" * 40,
    )  # fmt: skip
    result = compare(a, b)
    # Two tags, two top folders (llama-b100/, llama-b101/): still compared file by file.
    assert result.only_a == ["llama-server"] and result.only_b == ["llama-new"]
    assert result.manifest_differences == ["root", "source.commit", "tag"]


def test_compare_bundle_with_folder_and_manifest(tmp_path: Path) -> None:
    path = bundle(tmp_path / "one")
    unpacked = tmp_path / "unpacked"
    with tarfile.open(path) as tar:
        tar.extractall(unpacked, filter="tar")
    assert compare(path, unpacked).same
    assert compare(unpacked / "llama-b100" / "manifest.json", path).same
    (unpacked / "llama-b100" / "llama-server").write_bytes(b"changed!")
    result = compare(path, unpacked)
    assert [d[0] for d in result.differing] == ["llama-server"]


def test_compare_plain_folders(tmp_path: Path) -> None:
    for side, text in (("a", "same"), ("b", "same")):
        (tmp_path / side / "x").mkdir(parents=True)
        (tmp_path / side / "x" / "f.txt").write_text(text)
    (tmp_path / "a" / "only.txt").write_text("a")
    result = compare(tmp_path / "a", tmp_path / "b")
    assert result.identical == ["x/f.txt"] and result.only_a == ["only.txt"]
    assert result.summary == "1 of 2 files identical"


def test_gzip_reader_accepts_only_real_gzip(tmp_path: Path) -> None:
    fake = tmp_path / "fake.tar.gz"
    fake.write_bytes(gzip.compress(b"not a tar at all" * 100))
    with pytest.raises(BundleError, match=r"fake\.tar\.gz: corrupt bundle"):
        compare(fake, fake)
