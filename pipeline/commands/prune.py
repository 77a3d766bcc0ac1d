"""``python -m pipeline prune``: delete the caches older generations left behind."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pipeline.actions_cache.caches_client import CachesClient
from pipeline.actions_cache.prune import PrunePlan, PruneResult, apply_plan, plan_prune, summary_markdown
from pipeline.errors import UsageError
from pipeline.github import rest, runner
from pipeline.inputs import settings as S
from pipeline.inputs.run_inputs import RunInputs
from pipeline.util.fsutil import human_bytes
from pipeline.util.http_retry import say_on_stderr


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "prune",
        help="delete old GitHub Actions caches of this pipeline, or with --local old local caches "
        "(dry run unless --apply)",
        description=(
            "List every Actions cache of the repository, group the keys this pipeline minted by "
            "(ref, leg) whatever their toolchain and tag, keep the newest --keep of each group and "
            "delete the rest. Keys it did not mint are never touched. Token: $GITHUB_TOKEN or $GH_TOKEN. "
            "With --local: the machine's download cache, installed toolchains and packaging cache instead: "
            "entries unused for --max-age days go, then the least recently used until each cache fits "
            "--max-size GB; an entry a live run holds, or used within the last day, is kept."
        ),
    )
    S.add_flag(p, S.GITHUB_REPOSITORY)
    S.add_flag(p, S.GITHUB_API_URL)
    p.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="caches kept per (ref, leg) (default: matrix.toml [github] keep)",
    )
    p.add_argument("--apply", action="store_true", help="delete; without it nothing is deleted")
    p.add_argument("--json", action="store_true", help="print the plan and the result as JSON")
    p.add_argument(
        "--local",
        action="store_true",
        help="prune this machine's downloads, toolchains and packaging cache, not Actions caches",
    )
    S.add_flag(p, S.CACHE_MAX_AGE)
    S.add_flag(p, S.CACHE_MAX_SIZE)
    p.set_defaults(func=run, needs_matrix=False)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from pipeline.util.console import make_console

    if args.local:
        return _run_local(args, inputs, make_console(inputs.environ, stderr=args.json))
    matrix = inputs.require_matrix()
    repo = S.pick(S.GITHUB_REPOSITORY, flag=args.repo, environ=inputs.environ).value
    api_url = S.pick(S.GITHUB_API_URL, flag=args.api_url, environ=inputs.environ).value
    if not repo:
        raise UsageError(f"no repository: pass --repo OWNER/NAME or set {S.GITHUB_REPOSITORY.env_var}")
    keep = args.keep if args.keep is not None else matrix.github.keep
    if keep < 1:
        raise UsageError(f"--keep must be at least 1, got {keep}")
    # Every check that can fail without the network comes before the first request.
    token = rest.token_from_env(inputs.environ)
    client = CachesClient(repo, token, api_url=api_url, retry=inputs.retry, on_wait=say_on_stderr)
    console = make_console(inputs.environ, stderr=args.json)

    stream = sys.stderr if args.json else None  # with --json, stdout carries only the JSON
    with (
        runner.group(f"list caches of {client.repo}", stream=stream, env=inputs.environ),
        console.status("listing caches...") as status,
    ):
        entries = client.list_caches(
            on_page=lambda page, n: status.update(f"listing caches: page {page}, {n} so far")
        )
    plan = plan_prune(
        entries,
        keep=keep,
        limit_bytes=matrix.github.cache_limit_bytes,
        warn_fraction=matrix.github.cache_warn_fraction,
    )
    for warning in plan.warnings():
        runner.annotate("warning", warning, stream=stream, env=inputs.environ)

    result: PruneResult | None = None
    if args.apply and plan.to_delete:
        result = _apply(plan, client, console, stream, inputs)
    elif args.apply:
        result = PruneResult()

    _show(plan, result, console)
    runner.append_summary(summary_markdown(plan, result), env=inputs.environ)
    if args.json:
        print(
            json.dumps(
                {"apply": args.apply, "plan": plan.to_json(), "result": result.to_json() if result else None},
                indent=2,
            )
        )
    if result and result.error:
        raise result.error
    return 0


def _apply(
    plan: PrunePlan, client: CachesClient, console: Any, stream: Any, inputs: RunInputs
) -> PruneResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    todo = plan.to_delete
    with (
        runner.group(f"delete {len(todo)} caches", stream=stream, env=inputs.environ),
        Progress(
            TextColumn("deleting caches"), BarColumn(), MofNCompleteColumn(), console=console
        ) as progress,
    ):
        task = progress.add_task("delete", total=len(todo))
        return apply_plan(plan, client.delete_cache, on_deleted=lambda _e: progress.advance(task))


def _show(plan: PrunePlan, result: PruneResult | None, console: Any) -> None:
    from rich.table import Table

    applied = result is not None
    done = result.deleted_ids if result else set()
    table = Table(title="cache prune" + ("" if applied else " (dry run)"))
    for col in ("ref", "kind", "leg", "kept", "deleted" if applied else "would delete", "freed"):
        table.add_column(col, justify="right" if col == "freed" else "left")
    for g in plan.groups:
        gone = [e for e in g.delete if not applied or e.id in done]
        table.add_row(
            g.ref,
            g.kind,
            g.leg,
            "\n".join(e.key for e in g.keep),
            "\n".join(e.key for e in gone) or "-",
            human_bytes(sum(e.size_in_bytes for e in gone)),
        )
    console.print(table)
    if result is not None:
        console.print(
            f"deleted {len(result.deleted)} caches, freed {human_bytes(result.bytes_freed)}"
            + (f"; {len(result.already_gone)} were already gone" if result.already_gone else "")
        )
    else:
        console.print(
            f"dry run: would delete {len(plan.to_delete)} caches and free {human_bytes(plan.bytes_freed)} "
            "(pass --apply to delete)"
        )
    console.print(
        f"{plan.total_count} caches listed, {human_bytes(plan.total_bytes)}; "
        f"{plan.foreign_count} foreign, {len(plan.malformed)} unparsable (left alone)"
    )


def _run_local(args: argparse.Namespace, inputs: RunInputs, console: Any) -> int:
    """``prune --local``: plan (and with --apply, carry out) the local caches' limits."""
    from rich.table import Table

    from pipeline.toolchain.local_caches import apply_local, plan_local, scan

    max_age = S.pick(S.CACHE_MAX_AGE, flag=args.cache_max_age, environ=inputs.environ).value
    max_gb = S.pick(S.CACHE_MAX_SIZE, flag=args.cache_max_size, environ=inputs.environ).value
    folders = {
        "downloads": inputs.download_cache,
        "toolchains": inputs.toolchain_dir,
        "pack": inputs.cache_home / "pack",
    }
    entries = scan(**folders)
    plan = plan_local(
        entries, now=inputs.started.timestamp(), max_age_days=max_age, max_bytes=int(max_gb * 1e9)
    )
    result = apply_local(plan) if args.apply else None

    table = Table(title="local cache prune" + ("" if args.apply else " (dry run)"))
    for col in ("cache", "entry", "size", "why"):
        table.add_column(col, justify="right" if col == "size" else "left")
    skipped = {id(e) for e, _ in result.skipped} if result else set()
    for entry, why in plan.remove:
        table.add_row(
            entry.cache,
            entry.name,
            human_bytes(entry.size),
            why + (" (skipped: a run took its lock)" if id(entry) in skipped else ""),
        )
    for entry, why in plan.in_use:
        table.add_row(entry.cache, entry.name, human_bytes(entry.size), f"kept: {why}")
    console.print(table)
    for cache, folder in folders.items():
        mine = [e for e in entries if e.cache == cache]
        console.print(
            f"{cache}: {folder} ({len(mine)} entries, {human_bytes(sum(e.size for e in mine))})",
            highlight=False,
        )
    would = sum(e.size for e, _ in plan.remove)
    if result is None:
        console.print(
            f"dry run: would remove {len(plan.remove)} entries and free {human_bytes(would)} "
            f"(limits: {max_age:g} days, {max_gb:g} GB per cache; pass --apply to remove)",
            highlight=False,
        )
    else:
        console.print(
            f"removed {len(result.removed)} entries, freed {human_bytes(result.freed)}"
            + (f"; {len(result.skipped)} skipped (in use)" if result.skipped else ""),
            highlight=False,
        )
    if args.json:
        print(
            json.dumps(
                {
                    "apply": args.apply,
                    "plan": plan.to_json(),
                    "result": {
                        "removed": [f"{e.cache}/{e.name}" for e in result.removed],
                        "freed": result.freed,
                    }
                    if result
                    else None,
                },
                indent=2,
            )
        )
    return 0
