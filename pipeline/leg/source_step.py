"""The leg's first step: the tree to build, from ``--source``, the run's source archive or a checkout of the
source resolved before the steps (``ctx.resolution.source``).

Whatever its origin, the tree is compiled from ``<work>/src/llama.cpp`` (:mod:`pipeline.leg.layout`), so
the compile commands, and with them ccache's hashes, are the same night to night.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import SourceError, UsageError
from pipeline.leg.context import LegContext
from pipeline.leg.layout import place_tree, tree_place
from pipeline.leg.step_results import SourceTree
from pipeline.util.fsutil import folder_problem


def check_cmake_project(source_tree: Path) -> None:
    if (problem := folder_problem(source_tree)) is not None:
        raise UsageError(f"--source {source_tree}: {problem}")
    if not (source_tree / "CMakeLists.txt").is_file():
        raise UsageError(f"--source {source_tree}: not a CMake project (no CMakeLists.txt at its top)")


def source_step(ctx: LegContext, previous: None) -> SourceTree:
    """The tree to build: ``--source``, else the run's source archive, else the source checked out under
    ``<out>/src``; compiled from ``<work>/src/llama.cpp`` in every case (:mod:`pipeline.leg.layout`).
    The record's source is the tree's, with what a reproduction says beyond it (``ctx.provenance``)."""
    tree = _source_tree(ctx)
    ctx.record.source = {**tree.info, **ctx.provenance}
    return tree


def _source_tree(ctx: LegContext) -> SourceTree:
    from pipeline.source.checkout import checkout_source, describe_checkout, folder_tag
    from pipeline.source.git_commands import origin_url

    inputs, options, out, console = ctx.inputs, ctx.options, ctx.out, ctx.console
    if options.source_tree is not None:
        # Checked by run_leg, before the lock and the record.
        path = options.source_tree.resolve()
        info = describe_checkout(path, environ=inputs.environ)
        tag = folder_tag(info, inputs.tag)
        if info.commit is None:
            ctx.warn(not_a_repository(options.source_tree, tag))
        # Where the tree came from, when git knows it: the manifest and the SBOM name the repository.
        repo = origin_url(path, environ=inputs.environ) if info.commit is not None else None
        return SourceTree(
            path=place_tree(ctx.work, path),
            info={
                "path": str(path),
                "tag": tag,
                "commit": info.commit,
                "dirty": info.dirty,
                **({"repo": repo} if repo else {}),
            },
            tag=tag,
            # No repository of its own: git must not answer for one above it (see _base_env).
            outside_git=info.commit is None,
        )
    if inputs.source_archive is not None:
        from pipeline.source.archive import unpack_source_archive

        with console.status(f"extracting {inputs.source_archive.name}"):
            # One fixed folder per leg, whatever the tag: the compile commands stay the same night to night.
            path, manifest = unpack_source_archive(inputs.source_archive, tree_place(ctx.work))
        check_cmake_project(path)
        record_info = {
            **manifest.source,
            "tag": manifest.tag,
            "commit": manifest.commit,
            "path": str(path),
            "archive": manifest.archive,
            "archive_sha256": manifest.sha256,
        }
        return SourceTree(path=path, info=record_info, tag=manifest.tag, outside_git=True)
    from pipeline.source.archive import git_objects_bytes

    spec = ctx.resolution.source
    if spec is None:
        raise AssertionError("a leg run without --source or a source archive resolves its source first")
    # A fixed place under <out>: the clone is re-used and the configure line stays the same.
    path = out / "src" / "llama.cpp"
    try:
        before = git_objects_bytes(path)
        with console.status(f"checking out {spec.tag} into {path}"):
            commit = checkout_source(
                spec, path, git_url_template=inputs.git_url_template, environ=inputs.environ
            )
    except SourceError as err:
        raise SourceError(
            err.message, hint="offline? pass --source DIR to build an existing checkout"
        ) from None
    check_cmake_project(path)
    # What this leg's clone fetched (a re-used clone fetches only what it lacks).
    fetched = max(0, git_objects_bytes(path) - before)
    return SourceTree(
        path=place_tree(ctx.work, path),
        info={**spec.to_json(), "commit": commit, "path": str(path), "fetched_bytes": fetched},
        tag=spec.tag,
    )


def not_a_repository(source_tree: Path, tag: str) -> str:
    """What a ``--source`` folder that is no git repository gets, said once before the build."""
    from pipeline.source.build_info import build_number

    return (
        f"--source {source_tree} is not a git repository: the bundle is tagged {tag!r} and its programs report "
        f"build {build_number(tag) or 0}, commit unknown (pass --tag b<N> for a build number, or build a "
        "git checkout)"
    )
