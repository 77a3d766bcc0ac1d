"""``python -m pipeline prune``: delete the caches older generations left behind."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pipeline.actions_cache.client import CachesClient
from pipeline.actions_cache.prune import PrunePlan, PruneResult, apply_plan, plan_prune, summary_markdown
from pipeline.errors import UsageError
from pipeline.github import rest, runner
from pipeline.run import settings as S
from pipeline.run.inputs import RunInputs
from pipeline.util.fsutil import human_bytes
from pipeline.util.retry import say_on_stderr


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "prune",
        help="delete old GitHub Actions caches of this pipeline (dry run unless --apply)",
        description=(
            "List every Actions cache of the repository, group the keys this pipeline minted by "
            "(ref, leg) whatever their toolchain and tag, keep the newest --keep of each group and "
            "delete the rest. Keys it did not mint are never touched. Token: $GITHUB_TOKEN or $GH_TOKEN."
        ),
    )
    S.add_flag(p, S.GITHUB_REPOSITORY)
    S.add_flag(p, S.GITHUB_API_URL)
    p.add_argument("--keep", type=int, metavar="N", help="caches kept per (ref, leg) (default: matrix.toml [github] keep)")
    p.add_argument("--apply", action="store_true", help="delete; without it nothing is deleted")
    p.add_argument("--json", action="store_true", help="print the plan and the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, inputs: RunInputs) -> int:
    from rich.console import Console

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
    client = CachesClient(repo, token, api_url=api_url, backoff=inputs.http_backoff,
        budget=inputs.http_retry_budget, on_wait=say_on_stderr)
    console = Console(stderr=args.json)

    stream = sys.stderr if args.json else None  # with --json, stdout carries only the JSON
    with runner.group(f"list caches of {client.repo}", stream=stream, env=inputs.environ), console.status("listing caches...") as status:
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
        print(json.dumps({"apply": args.apply, "plan": plan.to_json(), "result": result.to_json() if result else None}, indent=2))
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
        Progress(TextColumn("deleting caches"), BarColumn(), MofNCompleteColumn(), console=console) as progress,
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
