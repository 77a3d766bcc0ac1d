"""What CMake itself says of an installed HIP: the expected values of the ROCm tests, from outside the pipeline."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path

from pipeline.leg.steps import find_tool
from tests.support.projects import PROJECT_LICENSE


def hip_find_project(root: Path) -> Path:
    """What ggml-hip's configure does first: find_package(hip), then say the version it found."""
    root.mkdir(parents=True)
    (root / "LICENSE").write_text(PROJECT_LICENSE)
    (root / "CMakeLists.txt").write_text(
        textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.21)
        project(hipfind C CXX)
        find_package(hip CONFIG REQUIRED)
        message(STATUS "hip_VERSION=${hip_VERSION}")
        """)
    )
    return root


def cmake_says_hip_version(tmp_path: Path, prefix: str = "/usr") -> str:
    """The HIP version CMake finds at ``prefix`` (what the tree's check compares), independently of the pipeline."""
    project = hip_find_project(tmp_path / "probe")
    proc = subprocess.run(
        [str(find_tool("cmake")), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}", "-S", str(project),
         "-B", str(tmp_path / "probe-build"), f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_POLICY_VERSION_MINIMUM=3.5"],
        capture_output=True, text=True, env={**os.environ, "HIP_PLATFORM": "amd"}, check=False,
    )  # fmt: skip
    match = re.search(r"hip_VERSION=(\S+)", proc.stdout)
    assert match, proc.stdout + proc.stderr
    return match.group(1)
