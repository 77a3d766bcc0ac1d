"""The CUDA runtime a cuda bundle redistributes, traced to NVIDIA's real wheels and their license.

Reads the CUDA install from matrix.toml's pinned wheels in the shared test
cache (``toolchains/cuda-<version>-linux``), made by the pipeline's installer
when no test has made it yet (tests/support/cuda_install.py). The expected archive sha256s are matrix.toml's pins; the
license text is the file the wheel's dist-info holds.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pipeline.bundle.closure import CopiedFile
from pipeline.bundle.third_party import describe_third_party
from scripts.workload.llama_sdist import e2e_cache_root
from tests.support.cuda_install import pinned_cuda_install
from tests.support.pipeline_cli import ROOT

pytestmark = pytest.mark.integration

PINS = tomllib.loads((ROOT / "matrix.toml").read_text())["toolchains"]["cuda"]
INSTALL = e2e_cache_root() / "toolchains" / f"cuda-{PINS['version']}-linux"
# What the cuda bundle ships of NVIDIA's runtime (its closure of libggml-cuda).
RUNTIME = {
    "libcudart.so.13": "nvidia-cuda-runtime",
    "libcublas.so.13": "nvidia-cublas",
    "libcublasLt.so.13": "nvidia-cublas",
}


def test_nvidias_runtime_names_its_wheel_and_carries_the_eula(tmp_path: Path) -> None:
    tree = pinned_cuda_install()
    assert tree == INSTALL / "nvidia" / "cu13"
    pinned = {w["name"]: (w["version"], w["sha256"]["linux"]) for w in PINS["wheels"]}
    stage = tmp_path / "stage"
    stage.mkdir()
    copied = [CopiedFile(path=name, origin=f"lib/{name}") for name in RUNTIME]
    listed = describe_third_party(
        stage, copied, toolchain_root=tree, details={"kind": "cuda", "version": PINS["version"]}
    )
    assert [e["path"] for e in listed] == sorted(RUNTIME)
    for entry in listed:
        wheel = RUNTIME[entry["path"]]
        version, sha = pinned[wheel]
        assert (entry["package"], entry["version"]) == (wheel, version)
        assert (entry["archive"], entry["archive_sha256"]) == (f"{wheel}=={version}", sha)
        info = f"{wheel.replace('-', '_')}-{version}.dist-info"
        assert entry["licenses"] == [f"licenses/toolchain/{info}/licenses/License.txt"]
        text = (stage / entry["licenses"][0]).read_text(encoding="utf-8", errors="replace")
        assert text == (INSTALL / info / "licenses" / "License.txt").read_text(
            encoding="utf-8", errors="replace"
        )
        # NVIDIA's EULA, with the attachment that lists what may be redistributed.
        assert "NVIDIA" in text and "redistribut" in text.lower()
