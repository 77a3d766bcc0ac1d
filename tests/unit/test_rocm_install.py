"""Safe, atomic extraction and the install/download caches, with archives built here.

No network: downloads use file:// URLs (the HTTP path is in
tests/integration/test_rocm_install_http.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from pathlib import Path

import pytest

from pipeline.archives.extract import MARKER, content_root, extract_archive, link_problem, name_problem
from pipeline.errors import ToolchainError
from pipeline.toolchain.installer import download as install
from pipeline.toolchain.installer.download import cached_download
from pipeline.toolchain.installer.install import install_archive
from tests.support.archives import (
    FAKE_CLANG,
    make_tar,
    make_zip,
    tar_device,
    tar_file,
    tar_hardlink,
    tar_symlink,
    therock_members,
)
from tests.support.inputs import make_inputs


def leftovers(folder: Path) -> list[str]:
    """What is in ``folder`` besides the installs' lock files (kept on purpose: deleting one races)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.exists() else []


# --------------------------------------------------------------------------
# Pure checks


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("lib/llvm/bin/clang", None),
        ("./lib/x", None),
        ("./", None),
        ("/etc/passwd", "absolute path"),
        ("\\Windows\\x", "absolute path"),
        ("C:/Windows/x", "absolute path"),
        ("c:evil", "absolute path"),
        ("../x", "'..' in path"),
        ("lib/../../x", "'..' in path"),
        ("lib\\..\\..\\x", "'..' in path"),
        ("", "empty or NUL in name"),
    ],
)
def test_name_problem(name: str, problem: str | None) -> None:
    assert name_problem(name) == problem


@pytest.mark.parametrize(
    ("name", "target", "hard", "ok"),
    [
        ("lib/llvm/bin/clang++", "clang", False, True),
        ("bin/amdclang", "../lib/llvm/bin/clang", False, True),
        ("./bin/x", "../lib/y", False, True),
        ("bin/x", "../../etc/passwd", False, False),
        ("x", "..", False, False),
        ("bin/x", "/etc/passwd", False, False),
        ("bin/x", "C:\\Windows", False, False),
        ("bin/x", "lib/llvm/bin/clang", True, True),
        ("bin/x", "../outside", True, False),
        ("bin/x", "", False, False),
    ],
)
def test_link_problem(name: str, target: str, hard: bool, ok: bool) -> None:
    assert (link_problem(name, target, hard=hard) is None) == ok


# --------------------------------------------------------------------------
# Extraction


def test_flat_archive_installs_with_links_and_marker(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "t.tar.gz", therock_members("./"))
    target = tmp_path / "tc" / "rocm-1"
    extract_archive(archive, target, marker={"archive": "t.tar.gz"})
    clang = target / "lib/llvm/bin/clang"
    assert clang.read_bytes() == FAKE_CLANG
    assert os.access(clang, os.X_OK)
    assert (target / "lib/llvm/bin/clang++").is_symlink()
    assert (target / "bin/amdclang").resolve() == clang.resolve()
    # tar keeps the archive's mtimes: a re-extract alone does not change them.
    assert int(clang.stat().st_mtime) == 1_600_000_000
    assert json.loads((target / MARKER).read_text()) == {"archive": "t.tar.gz"}
    # Only the install remains beside it: no staging folder.
    assert leftovers(tmp_path / "tc") == ["rocm-1"]


def test_single_top_level_folder_is_stripped(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "t.tar.gz", therock_members("therock-dist-linux/"))
    target = tmp_path / "tc" / "rocm"
    extract_archive(archive, target)
    assert (target / "lib/llvm/bin/clang").is_file()
    assert leftovers(tmp_path / "tc") == ["rocm"]


def test_archive_with_only_a_layout_folder_is_flat(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "t.tar.gz", [tar_file("lib/llvm/bin/clang", b"c", 0o755)])
    target = tmp_path / "tc" / "rocm"
    extract_archive(archive, target)
    assert (target / "lib/llvm/bin/clang").is_file()


def test_content_root_ignores_marker(tmp_path: Path) -> None:
    (tmp_path / "wrap").mkdir()
    (tmp_path / MARKER).write_text("{}")
    assert content_root(tmp_path) == tmp_path / "wrap"


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (tar_file("../evil", b"x"), "'..' in path"),
        (tar_file("lib/../../evil", b"x"), "'..' in path"),
        (tar_file("/tmp/evil-absolute", b"x"), "absolute path"),
        (tar_symlink("lib/escape", "../../../etc"), "points outside the install"),
        (tar_symlink("lib/abs", "/etc/passwd"), "link to absolute path"),
        (tar_hardlink("lib/hard", "../../etc/passwd"), "points outside the install"),
        (tar_device("lib/null"), "device file"),
    ],
)
def test_unsafe_member_refuses_whole_archive(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes | None], message: str
) -> None:
    members = [*therock_members("./"), member, tar_file("./lib/after", b"late")]
    archive = make_tar(tmp_path / "bad.tar.gz", members)
    target = tmp_path / "tc" / "rocm"
    with pytest.raises(ToolchainError, match=message) as err:
        extract_archive(archive, target)
    assert "bad.tar.gz" in str(err.value) and "nothing was installed" in str(err.value)
    assert not target.exists()
    assert leftovers(tmp_path / "tc") == []
    assert not (tmp_path / "evil").exists()


def test_link_through_an_earlier_link_is_refused(tmp_path: Path) -> None:
    # Lexically "a/.." is the root, but "a" is a link to ".": the data filter,
    # which resolves against the files already written, catches it.
    archive = make_tar(
        tmp_path / "sneaky.tar.gz", [tar_symlink("a", "."), tar_symlink("b", "a/.."), tar_file("b/x")]
    )
    target = tmp_path / "tc" / "rocm"
    with pytest.raises(ToolchainError, match="refused member 'b'"):
        extract_archive(archive, target)
    assert leftovers(tmp_path / "tc") == []


def test_truncated_archive_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    big = os.urandom(200_000)
    good = make_tar(tmp_path / "good.tar.gz", [tar_file("lib/a", big), tar_file("lib/b", big)])
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ToolchainError, match=r"cut\.tar\.gz: corrupt or unreadable archive"):
        extract_archive(cut, tmp_path / "tc" / "rocm")
    assert leftovers(tmp_path / "tc") == []


def test_existing_target_is_not_overwritten(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "t.tar.gz", therock_members())
    target = tmp_path / "rocm"
    target.mkdir()
    (target / "keep").write_text("mine")
    with pytest.raises(ToolchainError, match="already exists"):
        extract_archive(archive, target)
    assert (target / "keep").read_text() == "mine"


def test_zip_archive_installs(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "w.zip", {"rocm/lib/llvm/bin/clang.exe": b"MZ", "rocm/bin/hipcc.bat": b"@echo"}
    )
    target = tmp_path / "tc" / "rocm-win"
    extract_archive(archive, target)
    assert (target / "lib/llvm/bin/clang.exe").read_bytes() == b"MZ"
    assert (target / "bin/hipcc.bat").is_file()


@pytest.mark.parametrize(
    ("members", "link", "message"),
    [
        ({"../evil.exe": b"x"}, None, "'..' in path"),
        ({"C:/Windows/evil.exe": b"x"}, None, "absolute path"),
        ({"lib/ok": b"x"}, ("lib/link", "../../etc"), "symbolic link in a zip"),
    ],
)
def test_unsafe_zip_is_refused(
    tmp_path: Path, members: dict[str, bytes], link: tuple[str, str] | None, message: str
) -> None:
    archive = make_zip(tmp_path / "bad.zip", members, symlink=link)
    with pytest.raises(ToolchainError, match=message):
        extract_archive(archive, tmp_path / "tc" / "rocm")
    assert leftovers(tmp_path / "tc") == []


# --------------------------------------------------------------------------
# Download cache and install reuse (file:// URLs: no network)


def test_install_is_reused_until_forced(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "therock-dist-linux-gfx110X-all-7.0.0a20250101.tar.gz", therock_members())
    url = archive.as_uri()
    roots, downloads = tmp_path / "toolchains", tmp_path / "downloads"
    first = install_archive(url, "rocm-7", root_dir=roots, download_cache=downloads)
    assert not first.reused and not first.download_reused
    assert first.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    clang = first.root / "lib/llvm/bin/clang"
    os.utime(clang, (1, 1))  # a reused install is not touched

    again = install_archive(url, "rocm-7", root_dir=roots, download_cache=downloads)
    assert again.reused and again.root == first.root
    assert clang.stat().st_mtime == 1

    forced = install_archive(url, "rocm-7", root_dir=roots, download_cache=downloads, force=True)
    assert not forced.reused and forced.download_reused
    assert int(clang.stat().st_mtime) == 1_600_000_000
    assert leftovers(roots) == ["rocm-7"]


def test_install_without_marker_is_redone(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "a.tar.gz", therock_members())
    roots = tmp_path / "toolchains"
    half = roots / "rocm-7" / "lib"
    half.mkdir(parents=True)  # as an old tool's interrupted copy would leave it
    got = install_archive(archive.as_uri(), "rocm-7", root_dir=roots, download_cache=tmp_path / "dl")
    assert not got.reused
    assert (got.root / "lib/llvm/bin/clang").is_file()


def test_install_checks_sha256(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "a.tar.gz", therock_members())
    roots, downloads = tmp_path / "toolchains", tmp_path / "downloads"
    with pytest.raises(ToolchainError, match=r"sha256 mismatch .* expected 0000"):
        install_archive(archive.as_uri(), "rocm-7", sha256="0" * 64, root_dir=roots, download_cache=downloads)
    assert leftovers(roots) == []
    assert leftovers(downloads) == []
    good = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert (
        install_archive(
            archive.as_uri(), "rocm-7", sha256=good, root_dir=roots, download_cache=downloads
        ).sha256
        == good
    )


def test_download_cache_needs_its_sidecar(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "a.tar.gz", therock_members())
    downloads = tmp_path / "downloads"
    got = install.download(archive.as_uri(), download_cache=downloads)
    assert cached_download(archive.as_uri(), downloads) == install.Downloaded(
        path=got.path, url=got.url, size=got.size, sha256=got.sha256, reused=True
    )
    assert cached_download("https://elsewhere.invalid/x/a.tar.gz", downloads) is None
    assert cached_download(archive.as_uri(), downloads, sha256="f" * 64) is None
    (downloads / "a.tar.gz.json").unlink()
    assert cached_download(archive.as_uri(), downloads) is None


def test_cache_locations_follow_the_environment(tmp_path: Path) -> None:
    home = {"PIPELINE_CACHE_HOME": str(tmp_path / "home")}
    assert make_inputs(environ=home).download_cache == tmp_path / "home" / "downloads"
    assert make_inputs(environ=home).toolchain_dir == tmp_path / "home" / "toolchains"
    moved = {
        **home,
        "PIPELINE_DOWNLOAD_CACHE": str(tmp_path / "dl"),
        "PIPELINE_TOOLCHAIN_DIR": str(tmp_path / "tc"),
    }
    assert make_inputs(environ=moved).download_cache == tmp_path / "dl"
    assert make_inputs(environ=moved).toolchain_dir == tmp_path / "tc"


def test_unsafe_install_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError, match="unsafe install folder name"):
        install_archive("file:///x/a.tar.gz", "../up", root_dir=tmp_path, download_cache=tmp_path / "dl")


def test_an_edited_install_is_installed_again_from_the_download_cache(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "a.tar.gz", therock_members())
    roots, downloads = tmp_path / "toolchains", tmp_path / "downloads"
    first = install_archive(archive.as_uri(), "rocm-7", root_dir=roots, download_cache=downloads)
    clang = first.root / "lib/llvm/bin/clang"
    header = first.root / "lib/llvm/lib/clang/20/include/stddef.h"
    stamp = header.stat().st_mtime_ns
    # Same size, same time: only the content differs (the quick check must still hash a touched file).
    header.write_bytes(b"/* evil!! */")
    os.utime(header, ns=(stamp, stamp + 1))
    again = install_archive(archive.as_uri(), "rocm-7", root_dir=roots, download_cache=downloads)
    assert not again.reused and again.download_reused
    assert header.read_bytes() == b"/* stddef */"
    clang.unlink()
    third = install_archive(archive.as_uri(), "rocm-7", root_dir=roots, download_cache=downloads)
    assert not third.reused and clang.read_bytes() == FAKE_CLANG
    # Untouched, it is reused as is; a file a tool adds beside it does not count.
    (first.root / "lib/llvm/cache.txt").write_text("written by a tool\n")
    assert install_archive(archive.as_uri(), "rocm-7", root_dir=roots, download_cache=downloads).reused
