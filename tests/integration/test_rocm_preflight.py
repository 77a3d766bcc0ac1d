"""A given ROCm install (``--rocm-path`` / ``PIPELINE_ROCM_PATH``): no index, and checked before configure.

Debian's HIP under ``/usr`` (5.2.3; its hip-config-version.cmake says
5.2.0, which is what ``find_package(hip)`` hands the tree) against the real
llama.cpp tree's own floor (``ggml/src/ggml-hip/CMakeLists.txt``: HIP 6.1).
Only the tree's CMake files are needed: the check stops the leg before
CMake runs, so they are read from the sdist, not built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.errors import ToolchainError
from scripts.workload.llama_sdist import cached_sdist, missing_reason
from tests.support.hip_probe import cmake_says_hip_version, hip_find_project
from tests.support.httpserver import LocalServer
from tests.support.pipeline_cli import ROOT, run_pipeline
from tests.support.projects import write_cpp_project, write_matrix
from tests.support.toolchains import make_rocm_tree
from tests.support.tree_files import is_cmake_file, tree_texts

pytestmark = pytest.mark.integration

SHIPPED = ROOT / "matrix.toml"
LEG = "rocm-linux-gfx110X"
# What the real tree (0c1e570) states, where it states it.
TREE_HIP_FLOOR = "6.1"
TREE_FLOOR_AT = "ggml/src/ggml-hip/CMakeLists.txt:54"
DEBIAN_HIP = Path("/usr/lib/x86_64-linux-gnu/cmake/hip")

needs_debian_hip = pytest.mark.skipif(
    not (DEBIAN_HIP / "hip-config.cmake").is_file(),
    reason="Debian's HIP (hipcc, libamdhip64-dev) is not installed",
)


def _real_tree_cmake_files(dest: Path) -> Path:
    sdist = cached_sdist()
    if sdist is None:
        pytest.skip(missing_reason())
    for name, text in tree_texts(sdist, is_cmake_file).items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return dest


@needs_debian_hip
@pytest.mark.parametrize("given_by", ["flag", "environment"])
def test_a_hip_older_than_the_tree_requires_is_one_line_before_configure(
    tmp_path: Path, given_by: str
) -> None:
    found = cmake_says_hip_version(tmp_path)
    tree = _real_tree_cmake_files(tmp_path / "llama.cpp")
    out = tmp_path / "out"
    args = [
        "--matrix",
        str(SHIPPED),
        "build",
        LEG,
        "--source",
        str(tree),
        "--out",
        str(out),
        "--ccache-dir",
        str(tmp_path / "ccache"),
        "--no-bundle",
    ]
    env = {"HIP_PLATFORM": "amd"}
    if given_by == "flag":
        args += ["--rocm-path", "/usr"]
    else:
        env["PIPELINE_ROCM_PATH"] = "/usr"
    proc = run_pipeline(args, env=env)
    assert proc.returncode == ToolchainError.exit_code, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: {LEG}: HIP {found} at /usr (from {DEBIAN_HIP}/hip-config-version.cmake) is older than "
        f"HIP {TREE_HIP_FLOOR}, which this llama.cpp requires ({TREE_FLOOR_AT})"
    ], proc.stderr
    assert "Traceback" not in proc.stderr
    # Before configure: CMake never ran, no build folder was made.
    record = json.loads((out / LEG / "record.json").read_text())
    assert record["status"] == "failed" and "configure" not in record["phases"]
    assert not (out / LEG / "build").exists() and not (out / LEG / "build.log").exists()


@needs_debian_hip
def test_a_hip_config_the_pinned_cmake_refuses_is_configured_with_the_policy_floor(tmp_path: Path) -> None:
    """Debian's hip-config.cmake asks for CMake 3.3; CMake 4 refuses it unless told the policy floor."""
    ws = tmp_path / "ws"
    hip_find_project(ws / "project")
    write_matrix(
        ws / "matrix.toml",
        extra=textwrap.dedent("""
        [legs.rocm-linux-gfx1030]
        backend = "rocm"
        os = "linux"
        family = "gfx103X-all"
        targets = ["gfx1030"]
        cmake_args = ["-DGGML_HIP=ON"]
        """),
    )
    proc = run_pipeline(
        [
            "--matrix",
            str(ws / "matrix.toml"),
            "build",
            "rocm-linux-gfx1030",
            "--source",
            str(ws / "project"),
            "--out",
            str(ws / "out"),
            "--ccache-dir",
            str(tmp_path / "ccache"),
            "--no-bundle",
            "--rocm-path",
            "/usr",
        ],
        env={"HIP_PLATFORM": "amd"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        f"rocm-linux-gfx1030: {DEBIAN_HIP}/hip-config.cmake asks for CMake < 3.5: configuring with "
        "-DCMAKE_POLICY_VERSION_MINIMUM=3.5"
    ) in proc.stdout
    record = json.loads((ws / "out" / "rocm-linux-gfx1030" / "record.json").read_text())
    assert "-DCMAKE_POLICY_VERSION_MINIMUM=3.5" in record["cmake_args"]
    assert record["toolchain"]["details"]["cmake_policy_version_minimum"] == "3.5"
    log = (ws / "out" / "rocm-linux-gfx1030" / "build.log").read_text()
    # The package loaded, with the version the version check reads.
    assert f"hip_VERSION={cmake_says_hip_version(tmp_path)}" in log
    assert "Compatibility with CMake < 3.5 has been removed" not in log


def _rocm_matrix(path: Path, index_url: str) -> Path:
    return write_matrix(
        path,
        extra=textwrap.dedent(f"""
        [rocm]
        index_url = "{index_url}"

        [legs.rocm-linux-gfx1030]
        backend = "rocm"
        os = "linux"
        family = "gfx103X-all"
        targets = ["gfx1030"]
        """),
    )


@pytest.mark.parametrize("given_by", ["flag", "environment"])
def test_resolve_for_a_build_with_a_rocm_path_fetches_no_index(
    http_server: LocalServer, tmp_path: Path, given_by: str
) -> None:
    matrix = _rocm_matrix(tmp_path / "m.toml", http_server.url("/index/"))
    target = tmp_path / "resolved.json"
    build_args = [
        "--source",
        str(tmp_path),
        *(["--rocm-path", "/opt/rocm-given"] if given_by == "flag" else []),
    ]
    env = {"PIPELINE_ROCM_PATH": "/opt/rocm-given"} if given_by == "environment" else {}
    proc = run_pipeline(
        ["--matrix", str(matrix), "resolve", "--write", str(target), "--for-build", *build_args], env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert http_server.hits("/index/") == 0
    assert json.loads(target.read_text())["legs"] == {}
    assert "the rocm legs build with /opt/rocm-given" in proc.stderr


@needs_debian_hip
def test_a_nox_rocm_leg_with_rocm_path_builds_with_the_index_down(
    http_server: LocalServer, tmp_path: Path
) -> None:
    """``nox -s <rocm leg> -- --rocm-path DIR``: its resolve session fetches nothing, the leg builds."""
    matrix = _rocm_matrix(tmp_path / "m.toml", http_server.url("/index/"))
    write_cpp_project(tmp_path / "proj", units=2)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "--force-venv-backend", "none",
         "-s", "rocm-linux-gfx1030", "--", "--rocm-path", "/usr", "--source", str(tmp_path / "proj"),
         "--out", str(out), "--ccache-dir", str(tmp_path / "cache"), "--no-bundle"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PIPELINE_MATRIX": str(matrix), "PYTHONPATH": str(ROOT), "PIPELINE_OUT": str(out),
             "HIP_PLATFORM": "amd"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert http_server.hits("/index/") == 0
    record = json.loads((out / "rocm-linux-gfx1030" / "record.json").read_text())
    assert record["status"] == "success" and record["toolchain"]["details"]["origin"] == "rocm-path"


def test_resolve_for_one_leg_refuses_a_rocm_path(http_server: LocalServer, tmp_path: Path) -> None:
    """One leg's resolution is an index question: a given install has no place there."""
    matrix = _rocm_matrix(tmp_path / "m.toml", http_server.url("/index/"))
    proc = run_pipeline(
        ["--matrix", str(matrix), "resolve", "--leg", "rocm-linux-gfx1030", "--rocm-path", "/usr"]
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: resolve: --write, --tag, --no-source and --rocm-path are for the whole run (without --leg/--os/--family)"
    ]
    assert http_server.hits("/index/") == 0


def test_an_installed_rocm_without_device_libraries_is_one_error_line(tmp_path: Path) -> None:
    """A TheRock-shaped install that lacks a piece stops the leg before CMake, naming the piece."""
    rocm = make_rocm_tree(tmp_path / "rocm", "therock", skip=("device_libs",))
    write_cpp_project(tmp_path / "proj", units=1)
    matrix = _rocm_matrix(tmp_path / "m.toml", "http://127.0.0.1:9/unused/")
    out = tmp_path / "out"
    proc = run_pipeline(
        [
            "--matrix",
            str(matrix),
            "build",
            "rocm-linux-gfx1030",
            "--source",
            str(tmp_path / "proj"),
            "--out",
            str(out),
            "--ccache-dir",
            str(tmp_path / "cache"),
            "--no-bundle",
            "--rocm-path",
            str(rocm),
        ]
    )
    assert proc.returncode == ToolchainError.exit_code, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(
        f"error: --rocm-path {rocm.resolve()}: no AMDGPU device libraries (amdgcn/bitcode) for "
        f"{rocm.resolve()}/lib/llvm/bin/clang; looked in lib/llvm/amdgcn/bitcode, "
    ), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (out / "rocm-linux-gfx1030" / "build").exists()
