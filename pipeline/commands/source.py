"""``python -m pipeline source``: the run's merged source tree, once, as an archive every leg extracts.

The parent job runs it after ``resolve`` (with the run's resolution, so it
builds the same tag and mix as the legs would); the workflow hands the archive
and its manifest to every leg as an artifact, and the legs build with
``--source-archive`` (or ``PIPELINE_SOURCE_ARCHIVE``) instead of cloning.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "source",
        help="check the run's source out once and write it as an archive for every leg",
        description="Resolve the run's source (the resolution's, else matrix.toml's tag and mix), check it "
        "out under <out>/src/llama.cpp and write <out>/source/llama.cpp-<tag>.tar.gz with its manifest "
        "(<archive>.json: tag, commit, mix, sha256, fetched bytes). Before the mix is merged each pin is "
        "checked: its commit must exist and merge onto the tag (a conflict is one error naming the pull "
        "request and the paths); one already merged upstream is dropped with a warning (step summary too).",
    )
    S.add_flag(p, S.OUT)
    S.add_flag(p, S.TAG)
    S.add_flag(p, S.NOW)
    S.add_flag(p, S.RESOLVED)
    p.add_argument("--write", metavar="DIR", type=Path, help="where the archive goes (default: <out>/source)")
    p.set_defaults(func=run, reads_resolution=True)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.github.runner import annotate, append_summary, set_output
    from pipeline.run_resolution import source_for_run
    from pipeline.source.archive import git_objects_bytes, write_source_archive
    from pipeline.source.checkout import checkout_source
    from pipeline.source.mix_merge import preflight_mix
    from pipeline.util.console import make_console

    console = make_console(inputs.environ, stderr=True)
    out = inputs.out.resolve()
    checkout = out / "src" / "llama.cpp"
    clock = time.monotonic()
    with console.status("resolving the source"):
        spec = source_for_run(inputs)
    before = git_objects_bytes(checkout)
    if spec.mix:
        with console.status(f"checking the {len(spec.mix)} mix pins against {spec.base_tag}"):
            preflight = preflight_mix(
                spec, checkout, git_url_template=inputs.git_url_template, environ=inputs.environ
            )
        # A pull request merged upstream since it was pinned is no reason to fail the night.
        for pin, why in preflight.dropped:
            line = f"mix pin {pin.repo}#{pin.number} dropped: {why}"
            annotate("warning", line, env=inputs.environ, stream=sys.stderr)
            append_summary(f"- :warning: {line}", env=inputs.environ)
        spec = preflight.spec
    with console.status(f"checking out {spec.tag} into {checkout}"):
        commit = checkout_source(
            spec, checkout, git_url_template=inputs.git_url_template, environ=inputs.environ
        )
    # What this run fetched (a re-used clone fetches only what it lacks): shown in the manifest and each record.
    fetched = max(0, git_objects_bytes(checkout) - before)
    fetch_seconds = round(time.monotonic() - clock, 3)
    source = {**spec.to_json(), "commit": commit, "fetched_bytes": fetched, "fetch_seconds": fetch_seconds}
    archive, manifest = write_source_archive(
        checkout,
        (args.write or out / "source").resolve(),
        tag=spec.tag,
        source=source,
        environ=inputs.environ,
    )
    console.print(
        f"{spec.tag} ({commit[:12]}): fetched {fetched / 1e6:.1f} MB in {fetch_seconds:.1f} s; "
        f"{archive} ({manifest.size / 1e6:.1f} MB, sha256 {manifest.sha256[:16]}...)",
        highlight=False,
    )
    # In Actions: the archive's file name for the legs (the `source` artifact keeps the folder's files).
    set_output("archive", archive.name, env=inputs.environ)
    # The file list stays in the manifest beside the archive (thousands of lines).
    print(json.dumps({**manifest.to_json(files=False), "path": str(archive)}, indent=2))
    return 0
