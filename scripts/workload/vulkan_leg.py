"""The real tree's vulkan leg as a test and a benchmark build it: its matrix, its Vulkan SDK, its build line.

The shipped vulkan leg plus the one reduction (``reduction``), built with ``--source`` from the sdist's
tree (``llama_sdist``) and ``--vulkan-sdk``: the SDK ``$PIPELINE_TEST_VULKAN_SDK`` names, else Debian 13's
headers and loader (``trixie_vulkan``). tests/integration/test_vulkan_real_tree.py and
scripts/bench/shader_pipeline_share.py both build it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from scripts.workload.leg_matrix import SOURCE_TEMPLATE, leg_table
from scripts.workload.reduction import reduce_leg_flags, shipped_flags
from scripts.workload.trixie_vulkan import trixie_vulkan_sdk

LEG = "vulkan"
# An SDK of one's own instead of trixie's (its include/ must hold Vulkan-Headers 1.3.272 or newer).
SDK_ENV = "PIPELINE_TEST_VULKAN_SDK"
# The leg as configured: the shipped leg's flags plus the reduction (tests/unit/test_tested_flags.py).
TESTED_SHARED, _SHIPPED_VULKAN = shipped_flags(LEG)
TESTED_LEGS: dict[str, list[str]] = {LEG: reduce_leg_flags(_SHIPPED_VULKAN)}
MATRIX = SOURCE_TEMPLATE + leg_table(LEG, TESTED_LEGS[LEG], backend="vulkan", os="linux")
# Never fetched: the tree is passed with --source.
UPSTREAM = "https://example.invalid/llama.cpp.git"


def write_matrix(path: Path) -> Path:
    """The leg's matrix.toml at ``path``."""
    path.write_text(MATRIX.format(upstream=UPSTREAM), encoding="utf-8")
    return path


def vulkan_sdk(environ: Mapping[str, str]) -> Path:
    """``$PIPELINE_TEST_VULKAN_SDK``, else trixie's headers and loader (made once, in the test cache).

    Raises ``trixie_vulkan.SdkUnavailable`` where neither can be had, saying why.
    """
    if environ.get(SDK_ENV):
        return Path(environ[SDK_ENV])
    return trixie_vulkan_sdk()


def build_args(matrix: Path, tree: Path, out: Path, ccache_dir: Path, *extra: str) -> list[str]:
    """``python -m pipeline``'s arguments that build the leg of ``matrix`` from ``tree`` into ``out``."""
    return [
        "--matrix",
        str(matrix),
        "build",
        LEG,
        "--source",
        str(tree),
        "--out",
        str(out),
        "--ccache-dir",
        str(ccache_dir),
        *extra,
    ]
