"""The leg's last two steps: its bundle (staged, signed when the run signs the leg, packed) and its check.

``pack`` (:mod:`pipeline.leg.pack_staged`) runs the same two on a bundle a
build left staged for the workflow's signing step.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.leg import console_lines as render
from pipeline.leg.context import LegContext
from pipeline.leg.step_results import BuildPlan, Packaged

if TYPE_CHECKING:
    from pipeline.bundle.make import StagedBundle
    from pipeline.bundle.signing import SigningPlan


def bundle_step(ctx: LegContext, previous: BuildPlan) -> Packaged:
    """Stage the bundle's files, sign them when the run signs this leg, and pack the bundle (none with
    ``--no-bundle``); compressed members unchanged since the last run come from the packaging cache. A leg the
    workflow's signing step signs stops here, staged (:mod:`pipeline.bundle.signing`); ``pack`` goes on."""
    if ctx.options.no_bundle:
        return Packaged(plan=previous, bundle=None)
    # Here, not above: --no-bundle does not pay for importing the bundle's code (elftools, the SBOM).
    from pipeline.bundle.make import save_staged, stage_bundle
    from pipeline.bundle.signing import signing_plan

    leg, record, out = ctx.leg, ctx.record, ctx.out
    plan, unsigned = signing_plan(ctx.inputs, leg)
    if unsigned is not None:
        render.note(ctx.console, leg.name, unsigned)
    with ctx.console.status(f"{leg.name}: staging the bundle"):
        base = previous.base.build if previous.base is not None else None
        staged = stage_bundle(
            leg=leg,
            record=record,
            # A leg with a base: that build's programs and libraries, and what this leg's targets made on top.
            build_dir=base or previous.build,
            out_dir=out,
            toolchain=previous.toolchain,
            tag=previous.source.tag,
            commit=record.source.get("commit"),
            added=(previous.build, previous.made) if base is not None else None,
        )
    if plan is not None and plan.signer is None:
        from pipeline.github import runner

        state = save_staged(staged, out)
        # The workflow's signing step runs when the build says where the files to sign are.
        runner.set_output("staged", str(staged.stage(out)), env=ctx.inputs.environ)
        render.note(
            ctx.console,
            leg.name,
            f"staged for the workflow's signing step: {staged.stage(out)} "
            f"(then `pack {leg.name}`; {state.name} beside it)",
        )
        return Packaged(plan=previous, bundle=None, staged=True)
    bundle = pack_bundle(ctx, staged, plan)
    return Packaged(plan=previous, bundle=bundle)


def pack_bundle(ctx: LegContext, staged: StagedBundle, plan: SigningPlan | None) -> Path:
    """Sign the staged files with the local signer (when there is one), check every signature, pack the bundle
    into the record; the size check of GitHub's limit per asset comes with it."""
    from pipeline.bundle.asset_size import check_asset_size
    from pipeline.bundle.make import pack_staged
    from pipeline.bundle.signing import sign_and_check

    leg, record, out = ctx.leg, ctx.record, ctx.out
    signers = None
    if plan is not None:
        with ctx.console.status(f"{leg.name}: checking the signatures"):
            signers = sign_and_check(staged.stage(out), plan, environ=ctx.inputs.environ)
        render.note(
            ctx.console, leg.name, f"{len(signers)} programs and libraries signed by {plan.publisher}"
        )
    with ctx.console.status(f"{leg.name}: packing the bundle"):
        bundle, stats = pack_staged(
            staged,
            out_dir=out,
            pack_cache=ctx.inputs.cache_home / "pack",
            signing=plan.to_manifest() if plan else None,
            signers=signers,
        )
    record.bundle = bundle.relative_to(out).as_posix()
    record.phases["package"] = round(stats.seconds, 3)
    render.bundle_line(ctx.console, leg.name, bundle, stats)
    # Here, hours before publish: GitHub takes no asset of 2 GiB or more, and says so only at the upload.
    if warning := check_asset_size(leg.name, bundle):
        ctx.warn(warning)
    return bundle


def check_step(ctx: LegContext, previous: Packaged) -> Packaged:
    """``check-bundle`` on the leg's own bundle: its result goes into the record; a failure fails the leg
    (:func:`run_leg` writes the failed record). Nothing to check without a bundle or with ``check_bundle`` off."""
    if previous.bundle is not None and ctx.options.check_bundle:
        check_packed(ctx, previous.bundle)
    return previous


def check_packed(ctx: LegContext, bundle: Path) -> None:
    """Check the leg's bundle (the build's check step, and ``pack``'s); BundleCheckError when it fails."""
    from pipeline.bundle.check import check_built_bundle
    from pipeline.errors import BundleCheckError
    from pipeline.util.tree_removal import remove_tree

    leg, record = ctx.leg, ctx.record
    # The tree the bundle was built from: its models/ vocab is what the tokenizer check runs.
    tree = record.source.get("path")
    scratch = ctx.work / "check"
    check = check_built_bundle(
        bundle,
        leg,
        scratch=scratch,
        source_tree=Path(tree) if isinstance(tree, str) and tree else None,
        environ=ctx.inputs.environ,
        signing_ca=ctx.inputs.signing_ca,
    )
    record.bundle_check = check.to_json()
    for smoke in check.checks:
        render.note(ctx.console, leg.name, smoke.line)
    render.note(ctx.console, leg.name, check.summary)
    if not check.ok:
        more = f" (and {len(check.problems) - 1} more)" if len(check.problems) > 1 else ""
        # Its own code: the build passed and the check did not (the record's bundle_check says how).
        raise BundleCheckError(
            f"{leg.name}: {bundle.name} fails check-bundle: {check.problems[0].line}{more}"
        )
    # A passed check's scratch is a second unpacked copy of the bundle (1.6 GB for a ROCm leg): gone.
    # A failed one's stays, for looking into.
    remove_tree(scratch)
