"""``compiler_check = "toolchain"``: as strict as the archive, as cheap as a string.

Like test_rocm_leg.py's content-versus-mtime pair: a TheRock-shaped archive
(Debian's clang) is served by a local index, installed and built with. A
re-extracted identical archive (new mtimes) hits every object; an archive
with a different sha256 misses every object, even though the clang inside is
byte for byte the same (the check follows the archive, which is exactly when
an installed compiler can change). The system's gcc falls back to content.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from pipeline.archives.extract import remove_install
from pipeline.ccache.compiler_check import time_compiler_check
from pipeline.ccache.session import find_ccache
from pipeline.toolchain.installer.install import install_archive
from tests.support.httpserver import LocalServer
from tests.support.inputs import download_cache_dir
from tests.support.pipeline_cli import build_leg
from tests.support.projects import write_cpp_project, write_matrix
from tests.support.rocm_leg import (
    COMPILATIONS,
    FAMILY,
    INDEX,
    LEG,
    NEWER,
    NOW,
    UNITS,
    debian_llvm,
    make_therock_from_debian_clang,
    rocm_matrix,
    serve_index,
    tarball_name,
)

pytestmark = pytest.mark.integration
VERSION = "7.0.0a20250104"
# Its weekly cutoff (Saturday 2025-01-11) takes NEWER (2025-01-06).
NEXT_WEEK = "2025-01-14T12:00:00Z"


def _version_digest(clang: Path) -> str:
    """sha256 over what each compiler of the configure line prints for --version (clang, clang++)."""
    digest = hashlib.sha256()
    for tool in (clang, clang.with_name("clang++")):
        digest.update(
            subprocess.run(
                [str(tool), "--version"], capture_output=True, text=True, check=True
            ).stdout.encode()
            + b"\0"
        )
    return digest.hexdigest()


def test_toolchain_check_hits_after_reextraction_and_misses_on_another_archive(
    http_server: LocalServer, tmp_path: Path
) -> None:
    therock = make_therock_from_debian_clang(tmp_path / "therock.tar.gz").read_bytes()
    name = tarball_name("linux", FAMILY, VERSION)
    serve_index(http_server, {name: therock}, extra=[tarball_name("linux", FAMILY, NEWER)])
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=UNITS)
    rocm_matrix(ws / "matrix.toml", http_server.url(INDEX), "toolchain")
    cache = tmp_path / "ccache"

    first = build_leg(ws, LEG, cache, "--now", NOW)
    root = Path(first["toolchain"]["details"]["root"])
    clang = root / "lib" / "llvm" / "bin" / "clang"
    expected = f"string:{hashlib.sha256(therock).hexdigest()}+{_version_digest(clang)}"
    assert first["ccache"]["compiler_check"] == "toolchain"
    assert first["ccache"]["compiler_check_value"] == expected
    assert first["ccache"]["compiler_check_note"] is None
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)

    # The same archive extracted again, then new mtimes: every object hits.
    remove_install(root)
    install_archive(
        first["toolchain"]["details"]["url"],
        root.name,
        root_dir=root.parent,
        download_cache=download_cache_dir(),
    )
    stamp = time.time() - 3600
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)
    second = build_leg(ws, LEG, cache, "--now", NOW)
    assert second["ccache"]["compiler_check_value"] == expected
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)

    # The next week's nightly: the same clang, one more file, so another archive sha256.
    other = tmp_path / "other.tar.gz"
    shutil.copy(tmp_path / "therock.tar.gz", other)
    with tarfile.open(tmp_path / "therock.tar.gz") as src, tarfile.open(other, "w:gz") as dst:
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        note = tmp_path / "REBUILT"
        note.write_text("rebuilt\n")
        dst.add(note, arcname="./share/REBUILT")
    rebuilt = other.read_bytes()
    assert hashlib.sha256(rebuilt).digest() != hashlib.sha256(therock).digest()
    serve_index(http_server, {name: therock, tarball_name("linux", FAMILY, NEWER): rebuilt})
    third = build_leg(ws, LEG, cache, "--now", NEXT_WEEK)
    assert third["toolchain"]["details"]["sha256"] == hashlib.sha256(rebuilt).hexdigest()
    new_clang = Path(third["toolchain"]["details"]["root"]) / "lib" / "llvm" / "bin" / "clang"
    assert new_clang.read_bytes() == (debian_llvm() / "bin" / "clang").read_bytes() == clang.read_bytes()
    assert third["ccache"]["compiler_check_value"] == (
        f"string:{hashlib.sha256(rebuilt).hexdigest()}+{_version_digest(new_clang)}"
    )
    assert (third["ccache"]["hits"], third["ccache"]["misses"]) == (0, COMPILATIONS)


def test_system_compiler_falls_back_to_content(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=2)
    write_matrix(ws / "matrix.toml", compiler_check="toolchain")
    record = build_leg(ws, "cpu", tmp_path / "ccache")
    cc = record["ccache"]
    assert cc["compiler_check"] == "toolchain"
    assert cc["compiler_check_value"] == "content"
    assert "not installed by the pipeline from a verified archive" in cc["compiler_check_note"]
    # And the build really ran with it: a second build in the same cache hits every object.
    again = build_leg(ws, "cpu", tmp_path / "ccache")
    assert again["ccache"]["misses"] == 0 and again["ccache"]["hits"] == cc["misses"]


def test_timing_probe_runs_both_modes(tmp_path: Path) -> None:
    gcc = Path(shutil.which("gcc") or "/usr/bin/gcc")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    for check in ("content", "string:abc+def"):
        work = tmp_path / check.replace(":", "_")
        seconds = time_compiler_check(find_ccache(), gcc, check, calls=3, work=work, env=env)
        assert seconds > 0
        assert (work / "probe.o").is_file()
        stats = subprocess.run(
            [str(find_ccache()), "--print-stats"],
            env={**env, "CCACHE_DIR": str(work / "ccache")},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        counts = dict(line.split("\t", 1) for line in stats.splitlines() if "\t" in line)
        # One cold call filled the cache, the three timed ones were served from it.
        assert (int(counts["direct_cache_hit"]), int(counts["cache_miss"])) == (3, 1)
