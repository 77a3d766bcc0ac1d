"""``python -m pipeline reproduce BUNDLE_OR_MANIFEST``: rebuild a bundle from its manifest and compare.

The manifest gives the leg, the tag, the source commit (base tag + mix set),
the toolchain version and the CMake arguments. The source is checked out at
that commit (or taken from ``--source``, which must be at it), the leg is
built with the same toolchain version through the normal build entry point,
and the new bundle is compared with the original file by file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path, PurePosixPath
from typing import Any

from pipeline.errors import BundleError, SourceError
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.names import is_safe_tag
from pipeline.util.fsutil import confined

REPRODUCE_OUT = Path("out") / "reproduce"
_EPILOG = """\
The rebuild uses this checkout's pipeline and matrix.toml for the leg (--matrix):
flags that changed since the bundle was built show up as manifest differences.
Without --source, the source is checked out at the manifest's commit (base tag
plus mix set) under --out, at the same place relative to --out as the original
build had it. Exit code: 0 when the rebuilt bundle is identical, 1 when not.
"""


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "reproduce",
        help="rebuild a bundle from its manifest's inputs and compare the result with it",
        description="Rebuild a bundle (or a manifest.json) with its recorded inputs and compare file by file.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bundle", metavar="BUNDLE_OR_MANIFEST", type=Path, help="a bundle or its manifest.json")
    p.add_argument("--source", type=Path, metavar="DIR", help="an existing checkout at the manifest's commit")
    p.add_argument(
        "--out",
        type=Path,
        default=REPRODUCE_OUT,
        metavar="DIR",
        help=f"output folder (default: {REPRODUCE_OUT})",
    )
    S.add_flag(p, S.CCACHE_DIR)
    S.add_flag(p, S.WAIT_LOCK)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    # Here, not at the top: bundles are read with the ELF, PE and SBOM libraries, which `--help` must not load.
    from dataclasses import replace

    from pipeline.bundle.compare import compare_sides, load_side
    from pipeline.bundle.make import read_manifest
    from pipeline.commands.shared.comparison_table import print_comparison
    from pipeline.leg.layout import clear_place
    from pipeline.leg.options import LegOptions
    from pipeline.leg.reproduce import (
        manifest_leg,
        material_differences,
        recorded_source_dir,
        spec_from_manifest,
    )
    from pipeline.leg.steps import run_leg
    from pipeline.run_resolution import resolve_leg
    from pipeline.source.checkout import checkout_source, describe_checkout
    from pipeline.util.console import make_console

    console = make_console(inputs.environ, stderr=args.json)
    original = args.bundle
    manifest = read_manifest(original)
    where = str(original)
    matrix = inputs.require_matrix()
    leg = manifest_leg(manifest, matrix, where)
    recorded = manifest.get("source") or {}
    commit = recorded.get("commit")
    tag = str(manifest.get("tag"))
    if not is_safe_tag(tag):
        # The tag names the rebuilt bundle's file.
        raise BundleError(
            f"{where}: manifest tag {tag!r} is not a safe tag (letters, digits, '.', '_', '+', '-')"
        )
    out: Path = args.out.resolve()

    if args.source is not None:
        source_tree = args.source.resolve()
        head = describe_checkout(source_tree, environ=inputs.environ).commit
        if commit and head != commit:
            raise SourceError(
                f"--source {args.source} is at {head or 'no git commit'}, the bundle was built from {commit}"
            )
        # The folder is at the recorded commit: the recorded provenance holds.
        provenance = {k: recorded.get(k) for k in ("repo", "base_tag", "base_commit", "mix", "mix_hash")}
    else:
        spec = spec_from_manifest(manifest, matrix, where)
        rel = PurePosixPath(recorded_source_dir(manifest) or "src/llama.cpp")
        what = f"{where}: source folder"
        # An earlier --source run's link there (its folder confined first) goes: a checkout never runs through it.
        clear_place(confined(out, str(rel.parent), what, BundleError) / rel.name)
        source_tree = confined(out, str(rel), what, BundleError)
        with console.status(f"checking out {spec.tag} at {str(commit)[:12]}"):
            head = checkout_source(
                spec, source_tree, git_url_template=inputs.git_url_template, environ=inputs.environ
            )
        provenance = spec.to_json()

    toolchain_info = manifest.get("toolchain") or {}
    # The bundle's own inputs replace the run's: its tag, its output folder, its ROCm version.
    rebuild_inputs = replace(inputs, out=out, tag=tag, resolution=None, resolution_where=None)
    if leg.needs_resolution and toolchain_info.get("version"):
        rebuild_inputs = replace(
            rebuild_inputs,
            rocm_policy=str(toolchain_info["version"]),
            origins={**rebuild_inputs.origins, S.ROCM_VERSION.name: f"{where}: toolchain.version"},
        )
    run = run_leg(
        rebuild_inputs,
        leg,
        LegOptions(source_tree=source_tree, check_bundle=False),
        console,
        # The bundle's own TheRock build (by its version); the tree is the one checked out above.
        resolve=lambda: resolve_leg(rebuild_inputs, leg, rocm_path=None, tree_given=True),
        provenance={**provenance, "commit": head},
    )
    assert run.bundle is not None
    console.print(f"rebuilt {run.bundle}", highlight=False)

    result = compare_sides(load_side(original), load_side(run.bundle))
    result.manifest_differences = material_differences(result)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print_comparison(console, result)
    return 0 if result.same else 1
