"""The CUDA toolkit from matrix.toml's pinned wheels, installed once into the shared test cache.

The tests that read that install (tests/integration/test_runtime_licenses.py) make it themselves
with the pipeline's own installer, as a cuda leg would, instead of relying on another test file to
have run first: under ``pytest -n`` the files run in any order. The installer locks the install
folder, so a test file installing at the same time waits for it and then reuses it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.inputs.matrix import load_matrix
from pipeline.toolchain.cuda_wheels import install_cuda_wheels
from pipeline.toolchain.toolchain import ToolchainRequest
from scripts.workload.llama_sdist import e2e_cache_root

ROOT = Path(__file__).resolve().parents[2]
# Minutes of download on a cold machine: another worker's install is waited for that long.
WAIT_FOR_ANOTHER_INSTALL_S = 3600.0


def pinned_cuda_install() -> Path:
    """The toolkit tree (``.../nvidia/cu13``) of the shipped cuda leg's pinned wheels, in the test cache."""
    matrix = load_matrix(ROOT / "matrix.toml")
    pins = matrix.toolchains.cuda
    assert pins is not None, "matrix.toml pins no [toolchains.cuda]"
    cache = e2e_cache_root()
    request = ToolchainRequest(leg=matrix.leg("cuda"), environ=dict(os.environ), pins=matrix.toolchains,
                               download_cache=cache / "downloads", toolchain_dir=cache / "toolchains",
                               wait_lock=WAIT_FOR_ANOTHER_INSTALL_S)  # fmt: skip
    return install_cuda_wheels(pins, request, python=sys.executable)
