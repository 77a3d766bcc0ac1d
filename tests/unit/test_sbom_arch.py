"""The SBOM's bundle component carries the bundle's architecture, beside its leg, backend and OS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.bundle.sbom import sbom_json
from pipeline.names import SBOM_SUFFIX
from tests.support.small_bundle import small_bundle


def bundle_properties(sbom: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in sbom["metadata"]["component"].get("properties", [])}


def test_the_bundle_component_names_its_arch(tmp_path: Path) -> None:
    bundle = small_bundle(tmp_path)
    sbom = json.loads(bundle.with_name(bundle.name + SBOM_SUFFIX).read_bytes())
    assert bundle_properties(sbom) == {
        "llama-pipeline:name": "cpu",
        "llama-pipeline:backend": "cpu",
        "llama-pipeline:os": "linux",
        "llama-pipeline:arch": "x64",
    }
    manifest = {
        "name": "llama-b1-bin-macos-arm64.tar.gz",
        "tag": "b1",
        "files": [],
        "leg": {"name": "metal-macos-arm64", "backend": "metal", "os": "macos", "arch": "arm64"},
    }
    assert (
        bundle_properties(json.loads(sbom_json(manifest, manifest_sha256="1" * 64)))["llama-pipeline:arch"]
        == "arm64"
    )
