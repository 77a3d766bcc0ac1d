"""The real llama.cpp tree through the vulkan leg: refused in seconds with headers too old, built with new ones.

The tree (llama.cpp 0c1e570, from the llama-cpp-python sdist) compiles
``ggml-vulkan.cpp`` against ``vk::LayerSettingEXT`` (``VK_EXT_layer_settings``,
in Vulkan-Headers since 1.3.272). Debian 12's headers are 1.3.239: with them
the leg must stop before configure with one line naming them, not fail 10
minutes into the build.

With new enough headers the shipped vulkan leg plus the one reduction
(scripts/workload/reduction.py: the programs as for the cpu leg) builds. The
headers and loader are Debian 13's 1.4.309 (scripts/workload/trixie_vulkan.py:
two ``.deb`` files unpacked into an SDK-shaped folder kept in the test cache,
passed as ``--vulkan-sdk``), or the SDK ``PIPELINE_TEST_VULKAN_SDK`` names. The
leg's matrix, SDK and build line are scripts/workload/vulkan_leg.py's, which the
shader benchmark (scripts/bench/shader_pipeline_share.py) builds with too.
Where the trixie packages cannot be had, the test fails and says why.
check-bundle's smoke run does its GPU forward pass on lavapipe
(``mesa-vulkan-drivers``, installed by .ci/run), so ggml-vulkan really runs.
A rebuild in another folder hits every object and every shader compile (the
glslc cache, pipeline/ccache/glslc_cache.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pipeline.errors import ToolchainError
from pipeline.leg.preflight import check_vulkan
from scripts.workload.llama_sdist import cached_sdist, e2e_cache_root, missing_reason, standalone_tree
from scripts.workload.trixie_vulkan import VERSION, SdkUnavailable
from scripts.workload.vulkan_leg import MATRIX as MATRIX
from scripts.workload.vulkan_leg import SDK_ENV, build_args, vulkan_sdk, write_matrix
from scripts.workload.vulkan_leg import TESTED_LEGS as TESTED_LEGS
from scripts.workload.vulkan_leg import TESTED_SHARED as TESTED_SHARED
from tests.support import shared_jobs
from tests.support.pipeline_cli import run_pipeline
from tests.support.tree_files import is_cmake_file, tree_texts

pytestmark = [pytest.mark.integration, pytest.mark.leg("vulkan")]
# MATRIX, TESTED_LEGS and TESTED_SHARED above: the leg this module builds, the shader benchmark's too, declared
# here for tests/unit/test_tested_flags.py.

VULKAN_SOURCE = "ggml/src/ggml-vulkan/ggml-vulkan.cpp"
LAVAPIPE = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
SYSTEM_INCLUDE = Path("/usr/include")
# One build: ~15 min cold on 2 idle cores (docs/benchmarks.md); CI shares the machine.
BUILD_TIMEOUT = 3600


def _sdk() -> Path:
    """The leg's SDK (scripts/workload/vulkan_leg.py); where it cannot be had, the test fails and says why."""
    try:
        return vulkan_sdk(os.environ)
    except SdkUnavailable as exc:
        pytest.fail(
            f"the real-tree vulkan build needs Vulkan headers 1.3.272 or newer, from trixie here: {exc}"
        )


def _partial_tree(dest: Path) -> Path:
    """The tree's CMake files and ggml-vulkan.cpp: all a check before configure reads."""
    sdist = cached_sdist()
    if sdist is None:
        pytest.skip(missing_reason())
    for name, text in tree_texts(
        sdist, lambda p: is_cmake_file(p) or str(p) in (VULKAN_SOURCE, "LICENSE")
    ).items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return dest


def _headers_problem(include_dir: Path, tree: Path) -> str | None:
    """The pipeline's own verdict on the headers under ``include_dir`` for the tree (None: new enough)."""
    try:
        check_vulkan("vulkan", include_dir, tree)
    except ToolchainError as err:
        return err.message
    return None


def test_headers_too_old_stop_the_vulkan_leg_before_configure(tmp_path: Path) -> None:
    tree = _partial_tree(tmp_path / "llama.cpp")
    # The system's headers (no --vulkan-sdk): Debian 12's are too old for the tree.
    if _headers_problem(SYSTEM_INCLUDE, tree) is None:
        pytest.skip(
            f"the Vulkan headers under {SYSTEM_INCLUDE} are new enough for the tree: nothing to refuse"
        )
    header = SYSTEM_INCLUDE / "vulkan" / "vulkan_core.h"
    # The headers' version, read here from the header itself.
    text = header.read_text(encoding="utf-8", errors="replace")
    patch = re.search(r"^#define VK_HEADER_VERSION (\d+)$", text, re.M)
    major_minor = re.search(
        r"^#define VK_HEADER_VERSION_COMPLETE VK_MAKE_API_VERSION\(0, (\d+), (\d+),", text, re.M
    )
    assert patch and major_minor
    version = f"{major_minor.group(1)}.{major_minor.group(2)}.{patch.group(1)}"
    out = tmp_path / "out"
    proc = run_pipeline(
        build_args(write_matrix(tmp_path / "matrix.toml"), tree, out, tmp_path / "ccache", "--no-bundle"),
        env={"VULKAN_SDK": ""},
    )
    assert proc.returncode == ToolchainError.exit_code, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: vulkan: Vulkan headers {version} ({header}) lack VK_EXT_layer_settings, which this llama.cpp's "
        f"{VULKAN_SOURCE} uses (Vulkan-Headers 1.3.272 or newer declare it) (use the pinned SDK "
        "([toolchains.vulkan]) or --vulkan-sdk DIR with newer headers)"
    ], proc.stderr
    record = json.loads((out / "vulkan" / "record.json").read_text())
    assert record["status"] == "failed" and "configure" not in record["phases"]
    assert not (out / "vulkan" / "build").exists()


def _shader_outputs(out: Path) -> int:
    """The SPIR-V files a build holds: one per glslc call of vulkan-shaders-gen (vulkan-shaders-gen.cpp)."""
    return len(
        list((out / "vulkan" / "build" / "ggml" / "src" / "ggml-vulkan" / "vulkan-shaders.spv").glob("*.spv"))
    )


# In `nox -s e2e` (marker long): 8 to 10 minutes of both cores cold, past the suite's budget beside the rocm leg; the
# suite keeps the refusal above and the configure (tests/integration/test_real_tree_configure.py, docs/testing.md).
@pytest.mark.e2e
@pytest.mark.long
def test_the_real_tree_vulkan_leg_builds_and_its_bundle_runs(tmp_path: Path) -> None:
    assert LAVAPIPE.is_file(), (
        f"{LAVAPIPE} is missing: the smoke run's forward pass needs lavapipe (mesa-vulkan-drivers)"
    )
    sdk = _sdk()
    if (problem := _headers_problem(sdk / "include", _partial_tree(tmp_path / "partial"))) is not None:
        pytest.fail(f"--vulkan-sdk {sdk}: {problem}")
    sdist = cached_sdist()
    assert sdist is not None, missing_reason()
    tree = standalone_tree(sdist, tmp_path / "sdist")
    matrix = write_matrix(tmp_path / "matrix.toml")
    # The cpu and cuda legs' cache: their 133 host units (ggml-base, ggml-cpu, llama, common) are the same
    # compiles here, so on a cold machine the first build takes them as hits when the cpu leg ran first
    # (tests/conftest.py orders the files so); its own units and shaders stay its own.
    cache = e2e_cache_root() / "ccache"
    records = []
    for name in ("runner", "elsewhere"):
        out = tmp_path / name / "out"
        proc = run_pipeline(
            build_args(matrix, tree, out, cache, "--vulkan-sdk", str(sdk)),
            env={"PIPELINE_CACHE_HOME": str(tmp_path / "home"), **shared_jobs.build_env()},
            timeout=BUILD_TIMEOUT,
        )
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
        records.append(json.loads((out / "vulkan" / "record.json").read_text()))
    first, second = records
    assert first["status"] == second["status"] == "success"
    if not os.environ.get(SDK_ENV):
        assert first["toolchain"]["details"]["vulkan_headers"] == VERSION
    # The rebuild in another folder hits every object the first built, and every shader compile.
    assert second["ccache"]["misses"] == 0 and second["ccache"]["hits"] > 0
    shaders = _shader_outputs(tmp_path / "elsewhere" / "out")
    assert shaders > 100, shaders
    glslc = second["ccache"]["glslc"]
    assert (glslc["hits"], glslc["misses"]) == (shaders, 0), glslc
    assert first["ccache"]["glslc"]["hits"] + first["ccache"]["glslc"]["misses"] == shaders
    for record in records:
        checks = {c["name"]: c for c in record["bundle_check"]["checks"]}
        gpu = checks["gpu-forward-pass"]
        # ggml-vulkan takes lavapipe only when named; the check names it when there is no GPU.
        assert gpu["status"] == "passed" and " on Vulkan0 (" in gpu["line"], gpu["line"]
        assert checks["forward-pass"]["status"] == "passed"
