"""A leg's build arguments: the `build` parser's flags, and the run settings other commands read from them."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.inputs import settings as S


def add_build_arguments(p: argparse.ArgumentParser) -> None:
    """The build's arguments: also what `resolve --for-build` reads a leg's run settings from."""
    p.add_argument("leg", metavar="LEG", help="a leg name from matrix.toml")
    add_leg_run_arguments(p)
    p.add_argument("--no-bundle", action="store_true", help="build only, do not package a bundle")
    p.add_argument(
        "--configure-only",
        action="store_true",
        help="install the toolchain and run CMake's configure, then stop: nothing compiled, no bundle "
        "(the record's status says 'configured')",
    )
    S.add_flag(p, S.WAIT_LOCK)
    S.add_flag(p, S.SIGNING_PFX)
    S.add_flag(p, S.SIGNING_CA)


def add_leg_run_arguments(p: argparse.ArgumentParser, *, ccache_help: str | None = None) -> None:
    """What any run of a leg's steps takes (``build``, ``shard``): its tree, output, tag, ccache, toolchains and the
    run's resolution."""
    p.add_argument(
        "--source", type=Path, metavar="DIR", help="build this CMake source tree instead of cloning"
    )
    S.add_flag(p, S.OUT)
    S.add_flag(
        p,
        S.TAG,
        help="llama.cpp tag, b<digits> or latest: what to check out without --source (the run's resolution "
        "wins); with --source, the bundle's tag (default there: git describe)",
    )
    S.add_flag(p, S.CCACHE_DIR, help=ccache_help)
    S.add_flag(p, S.ROCM_VERSION)
    S.add_flag(p, S.NOW)
    S.add_flag(p, S.INDEX_URL)
    S.add_flag(p, S.ROCM_PATH)
    p.add_argument(
        "--cuda-path", type=Path, metavar="DIR", help="use this CUDA install instead of the pinned wheels"
    )
    p.add_argument(
        "--vulkan-sdk", type=Path, metavar="DIR", help="use this Vulkan SDK instead of the pinned archive"
    )
    S.add_flag(p, S.RESOLVED)
    S.add_flag(p, S.SOURCE_ARCHIVE)
    S.add_flag(p, S.REMOTE_CACHE)


def add_for_build(p: argparse.ArgumentParser, extra: str = "") -> None:
    """``--for-build BUILD_ARGS...``: take the run settings from a leg's build arguments (Nox sessions)."""
    p.add_argument(
        "--for-build",
        nargs=argparse.REMAINDER,
        metavar="BUILD_ARGS",
        help="last: the arguments of a `build` run; the run settings among them (--now, --rocm-version, "
        f"--index-url, --tag, --out, --rocm-path, --matrix) apply{'; ' + extra if extra else ''} (what a Nox session passes on)",
    )


def _parse_build_args(build_args: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """A leg's build arguments as `build` reads them (its global flags after the leg included)."""
    parser = argparse.ArgumentParser(prog="resolve --for-build", add_help=False)
    add_build_arguments(parser)
    S.add_flag(parser, S.MATRIX)
    # The leg name is the build's positional argument; a placeholder when the session gives none.
    return parser.parse_known_args(["-", *[a for a in build_args if a != "--"]])


def out_of_build_args(build_args: Sequence[str], environ: Mapping[str, str]) -> Path:
    """The output folder a leg's build arguments name (``--out``, else its variable, else the default).

    The noxfile's resolve session writes the run's resolution there, where the legs' ``--out`` is.
    """
    build, _ = _parse_build_args(build_args)
    return Path(S.pick(S.OUT, flag=build.out, environ=environ).value)


def settings_from_build_args(args: argparse.Namespace, build_args: list[str]) -> argparse.Namespace:
    """``args`` with the run settings a leg's build arguments carry (``--for-build``)."""
    build, unknown = _parse_build_args(build_args)
    merged = argparse.Namespace(**vars(args))
    for name in (
        S.NOW.name,
        S.ROCM_VERSION.name,
        S.INDEX_URL.name,
        S.TAG.name,
        S.OUT.name,
        S.ROCM_PATH.name,
        S.MATRIX.name,
    ):
        if getattr(build, name, None) is not None:
            setattr(merged, name, getattr(build, name))
    if build.source is not None and hasattr(merged, "no_source"):
        merged.no_source = True
    # The receiving command's own switches may ride along (`nox -s resolve -- --no-source --json`).
    for switch in ("--no-source", "--json"):
        dest = switch[2:].replace("-", "_")
        if switch in unknown and hasattr(merged, dest):
            setattr(merged, dest, True)
    return merged


def is_forced(flag: bool | None, environ: Mapping[str, str]) -> bool:
    """A forced rebuild of a released tag: the flag, else the environment's ``true``/``1``/``yes``."""
    if flag is not None:
        return flag
    return bool(S.pick(S.FORCE, environ=environ).value)
