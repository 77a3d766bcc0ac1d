"""The benchmark's results as Markdown: docs/benchmarks.md is generated from ``python -m scripts.bench``'s JSON.

``python -m scripts.bench.markdown docs/bench/*.json --page docs/benchmarks.md``
rewrites the block between the page's ``<!-- bench-results -->`` markers with
one section per results file, newest first; without ``--page`` it prints the
block. Every figure comes from the JSON, with the machine it was measured on
(its CPU, cores, memory, OS and tool versions); nothing is typed by hand, and
``tests/unit/test_bench_markdown.py`` keeps the page equal to what its files
render.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.util.fsutil import atomic_write_text
from scripts.bench.phases import OUTSIDE, STEP_PHASES

BEGIN = "<!-- bench-results -->"
END = "<!-- /bench-results -->"
# The benchmark's options (scripts/bench/__main__.py) with their defaults: a run's command line is rebuilt
# from its params.
_DEFAULTS = {
    "units": 300,
    "repeat": 5,
    "cold_repeat": 1,
    "index_entries": 20_000,
    "caches": 20_000,
    "micro_repeat": 5,
}


def command_line(result: dict[str, Any]) -> str:
    """The ``python -m scripts.bench`` command that made ``result`` (options left at their default are left out)."""
    params = result["params"]
    args = [
        f"--{name.replace('_', '-')} {params[name]}"
        for name, default in _DEFAULTS.items()
        if params.get(name, default) != default
    ]
    if "real_tree" not in result:
        args.append("--quick")
    return " ".join(["python -m scripts.bench", *args])


def machine_line(machine: dict[str, Any]) -> str:
    """The machine, named: CPU model and cores, memory, OS, and the tools that built."""

    def named(label: str, key: str) -> str | None:
        value = machine.get(key)
        return None if value is None else label.format(value)

    parts = [
        f"{machine.get('cpus')} cores ({machine.get('cpu_model') or 'unknown CPU'})",
        named("{} GiB", "memory_gib"),
        named("{}", "platform"),
        named("Python {}", "python"),
    ]
    tools = [
        named("{}", "compiler"),
        named("ccache {}", "ccache"),
        named("CMake {}", "cmake"),
        named("Ninja {}", "ninja"),
    ]
    return "; ".join(p for p in parts if p) + ". Tools: " + ", ".join(t for t in tools if t) + "."


# The leg's steps in their order (the results file keeps its keys sorted).
_PHASES = (*STEP_PHASES, OUTSIDE)


def in_step_order(phases: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(phases.items(), key=lambda kv: _PHASES.index(kv[0]) if kv[0] in _PHASES else len(_PHASES))


def load_line(machine: dict[str, Any]) -> str:
    """The machine's load at the start and the end, and whether the run counts as idle (newer results only)."""
    if "idle" not in machine:
        return ""
    start, end = machine.get("load_average_start"), machine.get("load_average_end")
    verdict = (
        "idle"
        if machine["idle"]
        else "**not idle**: the wall times are not idle figures, the CPU seconds are fair"
    )
    other = ""
    if "other_cpu_s" in machine:
        # Newer results: what the other processes did meanwhile decides, not the load at the end (the bench's own).
        other = (
            f"; other processes used {machine['other_cpu_s']} CPU seconds meanwhile "
            f"({machine['other_share']:.1%} of the machine), the host stole {machine['steal_s']} s"
        )
    return (
        f" Load (runnable processes over 1, 5 and 15 minutes) {start} at the start, {end} at the end{other}: "
        f"{verdict}."
    )


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _met(check: dict[str, Any]) -> str:
    return "met" if check["met"] else "missed"


def _builds(result: dict[str, Any]) -> list[str]:
    lines = [_row("build", "median (s)", "runs (s)", "hits", "misses", "hit rate"), _row(*["---"] * 6)]
    for kind, label in (
        ("cold", "cold, pipeline"),
        ("warm-pipeline", "warm, pipeline"),
        ("warm-raw", "warm, raw cmake + ninja"),
    ):
        runs = [r for r in result["runs"] if r["kind"] == kind]
        if not runs:
            continue
        lines.append(
            _row(
                label,
                f"{statistics.median(r['wall_s'] for r in runs):.2f}",
                " ".join(f"{r['wall_s']:.2f}" for r in runs),
                runs[0]["hits"],
                runs[0]["misses"],
                f"{runs[0]['hit_rate']:.1%}",
            )
        )
    return lines


def _targets(result: dict[str, Any]) -> list[str]:
    t, r, p = result["targets"], result["resolver"], result["prune"]
    lines = [_row("figure", "value", "target", ""), _row("---", "---:", "---:", "---")]
    lines.append(
        _row(
            "warm / cold (pipeline)",
            f"{t['warm_over_cold']['value']:.1%}",
            f"<= {t['warm_over_cold']['target']:.0%}",
            _met(t["warm_over_cold"]),
        )
    )
    lines.append(
        _row(
            "pipeline overhead on warm",
            f"{t['overhead']['value']:.2f} s",
            f"<= {t['overhead']['target']} s",
            _met(t["overhead"]),
        )
    )
    lines.append(
        _row(
            f"resolver, {r['entries']} index entries",
            f"{t['resolver']['value'] * 1e3:.1f} ms",
            f"< {t['resolver']['target'] * 1e3:.0f} ms",
            _met(t["resolver"]),
        )
    )
    lines.append(
        _row(
            f"prune plan, {p['caches']} caches",
            f"{t['prune']['value'] * 1e3:.1f} ms",
            f"< {t['prune']['target'] * 1e3:.0f} ms",
            _met(t["prune"]),
        )
    )
    return lines


def _details(result: dict[str, Any]) -> list[str]:
    b, r, p = result["builds"], result["resolver"], result["prune"]
    fc = b["fixed_cost"]
    return [
        _row("detail", "value"),
        _row("---", "---"),
        _row("pipeline over raw, warm", f"{b['pipeline_overhead_s']:+.2f} s ({b['pipeline_over_raw']:.2f}x)"),
        *(
            [
                _row(
                    "pipeline over raw, warm, CPU seconds of the process trees",
                    f"{b['pipeline_overhead_cpu_s']:+.2f} s ({b['warm_pipeline_cpu_s']:.2f} against {b['warm_raw_cpu_s']:.2f})",
                )
            ]
            if "pipeline_overhead_cpu_s" in b
            else []
        ),
        *(
            _row(f"warm pipeline phase: {name}", f"{seconds:.3f} s")
            for name, seconds in in_step_order(b.get("phases", {}))
        ),
        _row("python start", f"{fc['bare_python_s']:.2f} s"),
        _row("`python -m pipeline --version`", f"{fc['cli_startup_s']:.2f} s"),
        _row("in the pipeline, outside CMake and Ninja", f"{fc['in_process_outside_cmake_ninja_s']:.2f} s"),
        _row(
            f"resolver: parse the {r['page_bytes'] / 1e6:.1f} MB index page", f"{r['parse_s'] * 1e3:.1f} ms"
        ),
        _row("resolver: select the weekly build", f"{r['select_s'] * 1e3:.1f} ms (picks {r['chosen']})"),
        _row(
            "prune plan: groups, to delete, foreign, malformed",
            f"{p['groups']}, {p['delete_count']}, {p['foreign']}, {p['malformed']}",
        ),
        _row("prune plan: REST requests (listing pages and deletes)", p["api_requests"]),
        _row("prune plan: listing parse", f"{p['listing_parse_s'] * 1e3:.0f} ms"),
    ]


_REAL_TREE_TARGETS = {
    "bundle_over_raw_s": ("the pipeline (with bundle) over raw, warm", "s", "<="),
    "bundle_over_raw_cpu_s": ("the pipeline (with bundle) over raw, warm, CPU seconds", "s", "<="),
    "nox_over_raw_s": ("`nox -s cpu` over raw, warm", "s", "<="),
    "nox_over_pipeline_s": ("`nox -s cpu` over the pipeline", "s", "<="),
    "unchanged_packaging_speedup": ("packaging: cold over unchanged payload", "x", ">="),
}


def _real_tree(real: dict[str, Any]) -> list[str]:
    b, pk, cc = real["builds"], real["packaging"], real["compiler_check"]
    raw = b["raw_s"]
    cpu = b.get("cpu_s") or {}
    seeded = (
        f" The ccache started as a copy of `{b['seeded_from']}` (no cold figure)."
        if b.get("seeded_from")
        else ""
    )
    lines = [
        "",
        f"Real tree: {real['tree']}, {b['compilations']} compilations, warm {b['warm_hits']}/"
        f"{b['compilations']} hits (medians).{seeded}",
        "",
    ]
    if cpu:
        lines += [
            _row("command", "wall (s)", "vs raw", "CPU (s)", "CPU over raw (s)"),
            _row("---", "---:", "---:", "---:", "---:"),
        ]
    else:
        lines += [_row("command", "wall (s)", "vs raw"), _row("---", "---:", "---:")]
    for label, key, run in (
        ("raw cmake -G Ninja + ninja + ccache", "raw_s", "raw"),
        ("`python -m pipeline build cpu --no-bundle`", "pipeline_no_bundle_s", "no_bundle"),
        ("`python -m pipeline build cpu`", "pipeline_s", "pipeline"),
        ("`nox -s cpu`", "nox_s", "nox"),
        ("cold: `python -m pipeline build cpu` (empty ccache)", "cold_s", ""),
    ):
        if b.get(key) is None:
            continue
        cells = (
            (f"{cpu[run]:.2f}", f"{cpu[run] - cpu['raw']:+.2f}") if run in cpu else ("", "") if cpu else ()
        )
        lines.append(_row(label, f"{b[key]:.2f}", f"{b[key] / raw:.2f}", *cells))
    if "phases" in b:
        lines += [
            "",
            _row("`python -m pipeline build cpu`, per phase", "median wall (s)"),
            _row("---", "---:"),
            *(_row(name, f"{seconds:.3f}") for name, seconds in in_step_order(b["phases"])),
        ]
    lines += [
        "",
        _row("figure", "value"),
        _row("---", "---"),
        _row(
            f"packaging {pk['payload_mb']} MB: `tar` piped to `gzip -6`",
            f"{pk['tar_gzip6_s']:.2f} s ({pk['tar_gzip6_mb_s']} MB/s)",
        ),
        _row(
            "packaging: the pipeline, cold",
            f"{pk['pipeline_cold_s']:.2f} s ({pk['pipeline_cold_mb_s']} MB/s)",
        ),
        _row(
            "packaging: the pipeline, unchanged payload",
            f"{pk['pipeline_unchanged_s']:.2f} s ({pk['pipeline_unchanged_mb_s']} MB/s)",
        ),
        _row(
            f"compiler check, {cc['calls']} warm calls through a {cc['compiler_mb']} MB compiler: content",
            f"{cc['content_s']:.2f} s",
        ),
        _row("compiler check: toolchain", f"{cc['toolchain_s']:.2f} s ({cc['content_over_toolchain']}x)"),
    ]
    lines += ["", _row("real-tree target", "value", "target", ""), _row("---", "---:", "---:", "---")]
    for name, t in real["targets"].items():
        label, unit, op = _REAL_TREE_TARGETS[name]
        value = f"{t['value']:+.2f} s" if unit == "s" else f"{t['value']:.2f}x"
        lines.append(_row(label, value, f"{op} {t['target']}{' s' if unit == 's' else 'x'}", _met(t)))
    return lines


def render_one(result: dict[str, Any]) -> str:
    """One run: when, the command, the machine, then its tables."""
    params = result["params"]
    lines = [
        f"### {result['date']}",
        "",
        f"`{command_line(result)}`: {params['units']} translation units, {params['repeat']} warm runs of each "
        f"kind, {result['duration_s']} s in all.",
        "",
        f"Machine: {machine_line(result['machine'])}{load_line(result['machine'])}",
        "",
        *([f"Transcribed {result['transcribed']}.", ""] if result.get("transcribed") else []),
        *_builds(result),
        "",
        *_targets(result),
        "",
        *_details(result),
    ]
    if "real_tree" in result:
        lines += _real_tree(result["real_tree"])
    return "\n".join(lines) + "\n"


def render(results: Sequence[dict[str, Any]]) -> str:
    """The page's block: every run, newest first."""
    ordered = sorted(results, key=lambda r: str(r["date"]), reverse=True)
    return "\n".join(render_one(r) for r in ordered)


def load(paths: Sequence[Path]) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths]


def replace_block(page: str, block: str) -> str:
    """``page`` with the text between its markers replaced by ``block``."""
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
    if not pattern.search(page):
        raise ValueError(f"no {BEGIN} ... {END} block in the page")
    return pattern.sub(lambda _: f"{BEGIN}\n{block}{END}", page)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.bench.markdown", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "results", nargs="+", type=Path, help="results files written by python -m scripts.bench (--json-out)"
    )
    p.add_argument("--page", type=Path, help="rewrite this page's results block (default: print the block)")
    args = p.parse_args(argv)
    block = render(load(args.results))
    if args.page is None:
        print(block, end="")
        return 0
    try:
        atomic_write_text(args.page, replace_block(args.page.read_text(encoding="utf-8"), block))
    except (OSError, ValueError) as err:
        print(f"error: {args.page}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
