"""``python -m pipeline build LEG``: what ``nox -s LEG`` runs."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from pipeline.config import load_matrix
from pipeline.errors import UsageError
from pipeline.options import LegOptions


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "build",
        help="build one leg (what `nox -s LEG` runs)",
        description="Configure and build one leg with CMake, Ninja and ccache, then write "
        "<out>/<leg>/record.json and the bundle.",
    )
    p.add_argument("leg", metavar="LEG", help="a leg name from matrix.toml")
    p.add_argument("--source", type=Path, metavar="DIR", help="build this CMake source tree instead of cloning")
    p.add_argument("--out", type=Path, default=Path("out"), metavar="DIR", help="output folder (default: out)")
    p.add_argument(
        "--tag",
        help="llama.cpp tag, b<digits> or latest: what to check out without --source (default: the run's "
        "resolution, else matrix.toml's); with --source, the bundle's tag (default: git describe)",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="ccache directory (default: $CCACHE_DIR, else ~/.cache/llama-pipeline/ccache/<leg>)",
    )
    p.add_argument(
        "--rocm-version",
        metavar="POLICY",
        help="weekly, latest or an explicit version (default: $PIPELINE_ROCM_VERSION, else matrix.toml's)",
    )
    p.add_argument("--now", metavar="ISO", help="the run's moment, ISO-8601 (default: $PIPELINE_NOW, else now)")
    p.add_argument("--index-url", metavar="URL", help="TheRock index URL (default: $PIPELINE_ROCM_INDEX_URL, else matrix.toml's)")
    p.add_argument("--rocm-path", type=Path, metavar="DIR", help="use this ROCm install instead of downloading one")
    p.add_argument("--cuda-path", type=Path, metavar="DIR", help="use this CUDA install instead of the pinned wheels")
    p.add_argument("--vulkan-sdk", type=Path, metavar="DIR", help="use this Vulkan SDK instead of the pinned archive")
    p.add_argument(
        "--resolved",
        metavar="PATH_OR_JSON",
        help="the run's resolution from `resolve` (default: $PIPELINE_RESOLVED; none: resolve now)",
    )
    p.add_argument("--remote-cache", metavar="URL", help="ccache remote storage (redis:// or http://)")
    p.add_argument("--no-bundle", action="store_true", help="build only, do not package a bundle")
    p.set_defaults(func=run)


_SAFE_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_UPSTREAM_TAG = re.compile(r"^(latest|b\d+)$")


def check_tag(tag: str | None, *, with_source: bool) -> None:
    """A tag names the bundle file: it must be safe there, and upstream-shaped when it is checked out."""
    if tag is None:
        return
    if not with_source and not _UPSTREAM_TAG.match(tag):
        raise UsageError(f"--tag {tag!r}: expected 'latest' or a llama.cpp tag like 'b10327'")
    if not _SAFE_TAG.match(tag) or len(tag) > 100:
        raise UsageError(f"--tag {tag!r}: expected letters, digits, '.', '_', '+' and '-' (it names the bundle)")


def options_from_args(args: argparse.Namespace) -> LegOptions:
    check_tag(args.tag, with_source=args.source is not None)
    now_text = args.now or os.environ.get("PIPELINE_NOW")
    if now_text:
        from pipeline.timeutil import parse_now
    return LegOptions(
        source=args.source,
        out=args.out,
        tag=args.tag,
        cache_dir=args.cache_dir,
        rocm_version=args.rocm_version or os.environ.get("PIPELINE_ROCM_VERSION") or None,
        now=parse_now(now_text) if now_text else None,
        index_url=args.index_url or os.environ.get("PIPELINE_ROCM_INDEX_URL") or None,
        rocm_path=args.rocm_path,
        cuda_path=args.cuda_path,
        vulkan_sdk=args.vulkan_sdk,
        # None: PIPELINE_RESOLVED is read where it is used, so messages can name it.
        resolved=args.resolved,
        remote_cache=args.remote_cache,
        no_bundle=args.no_bundle,
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from pipeline.build import run_leg

    matrix = load_matrix(args.matrix)
    leg = matrix.leg(args.leg)
    options = options_from_args(args)
    run_leg(matrix, leg, options, Console(stderr=False))
    return 0
