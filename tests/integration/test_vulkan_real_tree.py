"""The real llama.cpp tree through the vulkan leg: refused in seconds with headers too old, built where new enough.

The tree (llama.cpp 0c1e570, from the llama-cpp-python sdist) compiles
``ggml-vulkan.cpp`` against ``vk::LayerSettingEXT`` (``VK_EXT_layer_settings``,
in Vulkan-Headers since 1.3.272). Debian 12's headers are 1.3.239: the leg
must stop before configure with one line naming them, not fail 10 minutes
into the build. Where the headers are new enough (Debian 13's 1.4.309, or an
SDK named by ``PIPELINE_TEST_VULKAN_SDK``: a folder with ``bin/glslc`` and
``include/vulkan``) the shipped vulkan leg plus the one reduction builds,
check-bundle's smoke run passes (on lavapipe, its GPU forward pass runs on
the Vulkan backend), and a rebuild in another folder hits every object.
Which of the two applies is decided by the pipeline's own header check, and
the skipped one says why.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pipeline.errors import ToolchainError
from pipeline.leg.preflight import check_vulkan
from tests.support.cache_root import e2e_cache_root
from tests.support.llama_tree import extract_tree
from tests.support.pipeline_cli import run_pipeline
from tests.support.reduction import reduce_leg_flags, shipped_flags, toml_list
from tests.support.tree_files import cached_sdist, is_cmake_file, missing_reason, tree_texts

pytestmark = pytest.mark.integration

# The legs this module builds, as configured: the shipped leg's flags plus the reduction (test_tested_flags.py).
TESTED_SHARED, _SHIPPED_VULKAN = shipped_flags("vulkan")
TESTED_LEGS: dict[str, list[str]] = {"vulkan": reduce_leg_flags(_SHIPPED_VULKAN)}
MATRIX = """\
[source]
repo = "{upstream}"
tag = "latest"

[ccache]
compiler_check = "content"

[cmake]
args = """ + toml_list(TESTED_SHARED).replace("{", "{{").replace("}", "}}") + """

[legs.vulkan]
backend = "vulkan"
os = "linux"
cmake_args = """ + toml_list(TESTED_LEGS["vulkan"]).replace("{", "{{").replace("}", "}}") + "\n"

VULKAN_SOURCE = "ggml/src/ggml-vulkan/ggml-vulkan.cpp"
SDK_ENV = "PIPELINE_TEST_VULKAN_SDK"
LAVAPIPE = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
BUILD_TIMEOUT = 3600


def _sdk() -> Path | None:
    return Path(os.environ[SDK_ENV]) if os.environ.get(SDK_ENV) else None


def _include_dir() -> Path:
    sdk = _sdk()
    return sdk / "include" if sdk is not None else Path("/usr/include")


def _partial_tree(dest: Path) -> Path:
    """The tree's CMake files and ggml-vulkan.cpp: all a check before configure reads."""
    sdist = cached_sdist()
    if sdist is None:
        pytest.skip(missing_reason())
    for name, text in tree_texts(sdist, lambda p: is_cmake_file(p) or str(p) in (VULKAN_SOURCE, "LICENSE")).items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return dest


def _headers_problem(tree: Path) -> str | None:
    """The pipeline's own verdict on this machine's headers for the tree (None: new enough)."""
    try:
        check_vulkan("vulkan", _include_dir(), tree)
    except ToolchainError as err:
        return err.message
    return None


def _matrix(path: Path) -> Path:
    path.write_text(MATRIX.format(upstream="https://example.invalid/llama.cpp.git"), encoding="utf-8")
    return path


def _build_args(matrix: Path, tree: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    sdk = _sdk()
    return ["--matrix", str(matrix), "build", "vulkan", "--source", str(tree), "--out", str(out),
            "--cache-dir", str(cache), *(["--vulkan-sdk", str(sdk)] if sdk else []), *extra]


def test_headers_too_old_stop_the_vulkan_leg_before_configure(tmp_path: Path) -> None:
    tree = _partial_tree(tmp_path / "llama.cpp")
    if _headers_problem(tree) is None:
        pytest.skip(f"the Vulkan headers under {_include_dir()} are new enough for the tree: nothing to refuse")
    header = _include_dir() / "vulkan" / "vulkan_core.h"
    # The headers' version, read here from the header itself.
    text = header.read_text(encoding="utf-8", errors="replace")
    patch = re.search(r"^#define VK_HEADER_VERSION (\d+)$", text, re.M)
    major_minor = re.search(r"^#define VK_HEADER_VERSION_COMPLETE VK_MAKE_API_VERSION\(0, (\d+), (\d+),", text, re.M)
    assert patch and major_minor
    version = f"{major_minor.group(1)}.{major_minor.group(2)}.{patch.group(1)}"
    out = tmp_path / "out"
    proc = run_pipeline(_build_args(_matrix(tmp_path / "matrix.toml"), tree, out, tmp_path / "ccache", "--no-bundle"))
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


@pytest.mark.e2e
def test_the_real_tree_vulkan_leg_builds_and_its_bundle_runs(tmp_path: Path) -> None:
    if (problem := _headers_problem(_partial_tree(tmp_path / "partial"))) is not None:
        pytest.skip(f"the real-tree vulkan build needs newer headers: {problem}")
    sdist = cached_sdist()
    assert sdist is not None
    tree = extract_tree(sdist, tmp_path / "sdist")
    matrix = _matrix(tmp_path / "matrix.toml")
    cache = e2e_cache_root() / "ccache-vulkan"
    records = []
    for name in ("runner", "elsewhere"):
        out = tmp_path / name / "out"
        proc = run_pipeline(_build_args(matrix, tree, out, cache), env={"PIPELINE_CACHE_HOME": str(tmp_path / "home")})
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
        records.append(json.loads((out / "vulkan" / "record.json").read_text()))
    first, second = records
    assert first["status"] == second["status"] == "success"
    # The rebuild in another folder hits every object the first built.
    assert second["ccache"]["misses"] == 0 and second["ccache"]["hits"] > 0
    checks = {c["name"]: c for c in first["bundle_check"]["checks"]}
    gpu = checks["gpu-forward-pass"]
    if LAVAPIPE.is_file():
        # ggml-vulkan takes lavapipe only when named; the check names it when there is no GPU.
        assert gpu["status"] == "passed" and " on Vulkan0 (" in gpu["line"], gpu["line"]
    else:
        assert gpu["status"] == "skipped" and "no Vulkan device" in gpu["line"], gpu["line"]
    assert checks["forward-pass"]["status"] == "passed"
