"""What a rebuild of a published bundle takes from its manifest: the leg, the source, what must match.

``reproduce`` (the command) reads a bundle's manifest; these decide which leg
of today's matrix rebuilds it, where its source goes and which manifest
differences are material (how the source was obtained is not: the commit
names the tree, and it is compared).
"""

from __future__ import annotations

import itertools
from typing import Any

from pipeline.bundle.compare import Comparison
from pipeline.errors import BundleError
from pipeline.inputs.leg import Leg
from pipeline.inputs.matrix import Matrix
from pipeline.inputs.resolution_file import SourceSpec

# How the source was obtained (a clone with a mix, or a folder) need not match:
# the commit names the tree, and it is compared.
_SOURCE_PROVENANCE = ("source.repo", "source.base_tag", "source.base_commit", "source.mix", "source.mix_hash")


def manifest_leg(manifest: dict[str, Any], matrix: Matrix, where: str) -> Leg:
    """The matrix's leg of the manifest, checked to still build the same kind of bundle."""
    info = manifest.get("leg")
    if not isinstance(info, dict) or not isinstance(info.get("name"), str):
        raise BundleError(f"{where}: corrupt manifest: no leg name")
    leg = matrix.leg(info["name"])
    # A manifest from before legs had an arch was an x64 bundle.
    recorded = {**info, "arch": info.get("arch", "x64")}
    for key in ("backend", "os", "arch", "family"):
        if recorded.get(key) != getattr(leg, key):
            raise BundleError(
                f"{where}: leg {leg.name!r} was a {key} {recorded.get(key)!r} leg, {matrix.path} now says {getattr(leg, key)!r}"
            )
    return leg


def recorded_source_dir(manifest: dict[str, Any]) -> str | None:
    """The ``-S`` folder of the original build relative to its output folder, when it was inside it."""
    args = manifest.get("cmake_args") or []
    for flag, value in itertools.pairwise(args):
        if flag == "-S" and isinstance(value, str) and value.startswith("<out>/"):
            rel = value[len("<out>/") :]
            # From a file someone else wrote: never a folder outside the output folder.
            if rel and ".." not in rel.replace("\\", "/").split("/") and not rel.startswith(("/", "\\")):
                return rel
    return None


def spec_from_manifest(manifest: dict[str, Any], matrix: Matrix, where: str) -> SourceSpec:
    """The SourceSpec that checks out the manifest's commit."""
    src = manifest.get("source")
    if not isinstance(src, dict) or not src.get("commit"):
        raise BundleError(f"{where}: the manifest records no source commit; pass --source DIR")
    if not src.get("base_tag"):
        raise BundleError(f"{where}: the manifest records no base tag; pass --source DIR")
    data = {
        "repo": src.get("repo") or matrix.source.repo,
        "base_tag": src["base_tag"],
        "base_commit": src.get("base_commit"),
        "mix": src.get("mix") or [],
        "commit": src["commit"],
    }
    return SourceSpec.from_json(data, where=f"{where}: source")


def material_differences(result: Comparison) -> list[str]:
    """The manifest differences that say the rebuild is not the same build (provenance aside)."""
    return [d for d in result.manifest_differences if d not in _SOURCE_PROVENANCE]
