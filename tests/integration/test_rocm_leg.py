"""The ROCm leg end to end with a TheRock-shaped toolchain made from Debian's clang.

The tarball holds a real compiler (clang 14 with its resource headers, under
``lib/llvm/bin`` as in TheRock) and is served with an index page by a local
HTTP server. The leg resolves it, installs it and builds a generated C/C++
project. Then the toolchain is re-installed with the same content but new
mtimes: with ``compiler_check = "content"`` the second build hits every
object, with ``"mtime"`` (ccache's default) none. That pair is the proof that
the content check is what makes a re-installed toolchain's cache useful.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from pipeline.archives.extract import remove_install
from pipeline.inputs.matrix import load_matrix
from pipeline.toolchain.installer.install import install_archive
from tests.support.httpserver import LocalServer
from tests.support.inputs import download_cache_dir, prepare_leg_toolchain, toolchains_dir
from tests.support.pipeline_cli import build_leg, run_pipeline
from tests.support.projects import write_cpp_project
from tests.support.rocm_leg import (
    COMPILATIONS,
    FAMILY,
    INDEX,
    LEG,
    NEWER,
    NOW,
    UNITS,
    VERSION,
    debian_llvm,
    make_therock_from_debian_clang,
    rocm_matrix,
    serve_index,
    tarball_name,
)


def build(ws: Path, cache: Path, *extra: str) -> dict:
    return build_leg(ws, LEG, cache, "--now", NOW, *extra)


@pytest.fixture
def therock(tmp_path: Path) -> bytes:
    return make_therock_from_debian_clang(tmp_path / "therock.tar.gz").read_bytes()


@pytest.mark.parametrize(("compiler_check", "second_hits"), [("content", COMPILATIONS), ("mtime", 0)])
def test_reinstalled_toolchain_hits_only_with_content_check(
    http_server: LocalServer, therock: bytes, tmp_path: Path, compiler_check: str, second_hits: int
) -> None:
    name = tarball_name("linux", FAMILY, VERSION)
    index_url = serve_index(http_server, {name: therock}, extra=[tarball_name("linux", FAMILY, NEWER)])
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=UNITS)
    rocm_matrix(ws / "matrix.toml", index_url, compiler_check)
    cache = tmp_path / "ccache"

    first = build(ws, cache)
    tc = first["toolchain"]
    assert tc["kind"] == "rocm" and tc["identity"] == f"rocm-{VERSION}"
    assert tc["details"]["url"] == http_server.url(INDEX + name)
    # Checked against the index's .sha256sum beside the tarball.
    assert tc["details"]["sha256"] == hashlib.sha256(therock).hexdigest()
    assert tc["details"]["sha256_url"] == http_server.url(INDEX + name + ".sha256sum")
    root = Path(tc["details"]["root"])
    assert root.parent == toolchains_dir()
    clang = root / "lib" / "llvm" / "bin" / "clang"
    assert f"-DCMAKE_C_COMPILER={clang}" in first["cmake_args"]
    assert f"-DCMAKE_CXX_COMPILER={clang}++" in first["cmake_args"]
    assert "-DGPU_TARGETS=gfx1100;gfx1101;gfx1102;gfx1103" in first["cmake_args"]
    assert any(a.startswith("-DCMAKE_HIP_COMPILER_LAUNCHER=") for a in first["cmake_args"])
    assert tc["compilers"]["CXX"].startswith(f"clang++ {debian_llvm().name.removeprefix('llvm-')}.")
    assert first["ccache"]["compiler_check"] == compiler_check
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)
    program = ws / "out" / LEG / "build" / "bin" / "demo"
    assert subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout.strip()
    assert http_server.hits(INDEX + name) == 1

    # Re-install: same content, extracted again (from the download cache), then
    # new mtimes, as a reinstall from wheels gives them (tar restores its own).
    archive_mtime = clang.stat().st_mtime
    remove_install(root)
    again = install_archive(
        tc["details"]["url"], root.name, root_dir=root.parent, download_cache=download_cache_dir()
    )
    assert not again.reused and again.download_reused
    assert clang.stat().st_mtime == archive_mtime
    stamp = time.time() - 3600
    for path in [root, *root.rglob("*")]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)

    second = build(ws, cache)
    assert second["toolchain"]["identity"] == tc["identity"]
    assert clang.stat().st_mtime == stamp, "the complete install must be reused, not re-extracted"
    assert http_server.hits(INDEX + name) == 1, "the second run must download nothing"
    assert http_server.hits(INDEX + name + ".sha256sum") == 1, "nor fetch the checksum again"
    assert second["ccache"]["hits"] == second_hits
    assert second["ccache"]["misses"] == COMPILATIONS - second_hits
    assert second["ccache"]["hit_rate"] == second_hits / COMPILATIONS


def test_windows_leg_resolves_installs_and_configures_on_linux(
    http_server: LocalServer, tmp_path: Path
) -> None:
    # The Windows leg's environment and configure come from the same code with
    # the OS as a parameter: prepared here from a Windows-shaped tarball.
    buf = tmp_path / "win.tar.gz"
    with tarfile.open(buf, "w:gz") as tar:
        for member in ("lib/llvm/bin/clang.exe", "lib/llvm/bin/clang++.exe", "bin/hipconfig.bat"):
            info = tarfile.TarInfo(f"therock/{member}")
            data = b"MZ" + member.encode()
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    name = tarball_name("windows", "gfx1151", VERSION)
    index_url = serve_index(http_server, {name: buf.read_bytes()})
    matrix = load_matrix(rocm_matrix(tmp_path / "matrix.toml", index_url, "content"))
    leg = matrix.leg("rocm-windows-gfx1151")
    toolchain = prepare_leg_toolchain(
        matrix, leg.name, Console(file=io.StringIO()), now=datetime(2025, 1, 8, 12, tzinfo=UTC)
    )

    root = toolchains_dir() / f"rocm-{VERSION}-windows-gfx1151"
    assert (root / "lib/llvm/bin/clang.exe").is_file()  # the wrapper folder was stripped
    assert toolchain.identity == f"rocm-{VERSION}"
    assert toolchain.launcher_languages == ()
    win_root = str(root).replace("/", "\\")
    assert toolchain.env["HIP_PATH"] == win_root
    assert toolchain.env["PATH"].startswith(f"{win_root}\\bin;{win_root}\\lib\\llvm\\bin;")
    assert "ROCM_PATH" not in toolchain.env and "LD_LIBRARY_PATH" not in toolchain.env
    assert f"-DCMAKE_C_COMPILER={root.as_posix()}/lib/llvm/bin/clang.exe" in toolchain.cmake_args
    assert f"-DCMAKE_CXX_COMPILER={root.as_posix()}/lib/llvm/bin/clang++.exe" in toolchain.cmake_args
    assert "-DGPU_TARGETS=gfx1151" in toolchain.cmake_args
    assert not any("HIP_COMPILER" in a for a in toolchain.cmake_args)


def test_explicit_version_missing_from_index_lists_nearby(
    http_server: LocalServer, therock: bytes, tmp_path: Path
) -> None:
    index_url = serve_index(
        http_server,
        {tarball_name("linux", FAMILY, VERSION): therock},
        extra=[tarball_name("linux", FAMILY, NEWER)],
    )
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=1)
    rocm_matrix(ws / "matrix.toml", index_url, "content")
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            LEG,
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--rocm-version",
            "7.0.0a20250105",
            "--no-bundle",
        ],
    )
    assert proc.returncode == 6, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "7.0.0a20250105" in proc.stderr
    assert VERSION in proc.stderr and NEWER in proc.stderr
    assert not toolchains_dir().exists() or not any(toolchains_dir().iterdir())


def test_a_stale_toolchain_is_a_warning_on_record_and_in_the_report_or_fails_before_the_download(
    http_server: LocalServer, therock: bytes, tmp_path: Path
) -> None:
    """Built seven weeks after its build date (over rocm.max_age_days' 14): said, not silent; with
    PIPELINE_ROCM_STALE=fail the leg fails with exit 14 and nothing is downloaded."""
    name = tarball_name("linux", FAMILY, VERSION)
    index_url = serve_index(http_server, {name: therock})
    ws = tmp_path / "ws"
    write_cpp_project(ws / "project", units=1)
    rocm_matrix(ws / "matrix.toml", index_url, "content")
    late = ["--rocm-version", VERSION, "--now", "2025-02-22T12:00:00Z"]
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            LEG,
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--no-bundle",
            *late,
        ],
        env={"PIPELINE_ROCM_STALE": "fail"},
    )
    assert proc.returncode == 14, proc.stdout + proc.stderr
    assert "is 49 days old (over rocm.max_age_days = 14)" in proc.stderr and "Traceback" not in proc.stderr
    failed = json.loads((ws / "out" / LEG / "record.json").read_text())
    assert (failed["status"], failed["exit_code"]) == ("failed", 14)
    assert http_server.hits(INDEX + name) == 0

    record = build_leg(ws, LEG, tmp_path / "ccache", *late)
    line = (
        f"ROCm linux {FAMILY}: the build {VERSION} takes ({VERSION}, from {index_url}) is 49 days old (over "
        'rocm.max_age_days = 14): has TheRock renamed the family or moved its host? (docs/rocm.md, "Stale builds")'
    )
    assert (
        record["status"] == "success" and line in record["warnings"] and record["toolchain"]["stale"] == line
    )
    # What `rocm-alert` names the family by (tests/integration/test_rocm_alert_api.py).
    assert (record["os"], record["toolchain"]["details"]["family"]) == ("linux", FAMILY)
    report = run_pipeline(
        ["--matrix", str(ws / "matrix.toml"), "report", "--out", str(ws / "out")], check=True
    )
    markdown = (ws / "out" / "report.md").read_text()
    assert "49 days old" in markdown and "49 days old" in report.stdout + report.stderr
