"""docs/benchmarks.md is what scripts/bench/markdown.py renders from the saved results, with the machine named."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from scripts.bench import markdown as bm

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = sorted((ROOT / "docs" / "bench").glob("*.json"))


def _result(**over: Any) -> dict[str, Any]:
    """A small result in the benchmark's format (FORMAT 1), the generated project only."""
    result: dict[str, Any] = {
        "format": 1,
        "date": "2026-12-01T09:00:00+00:00",
        "duration_s": 42.5,
        "machine": {
            "cpus": 16,
            "cpu_model": "Example CPU 9000",
            "memory_gib": 128.0,
            "platform": "Linux-x86_64",
            "python": "3.12.1",
            "compiler": "c++ 12.2.0",
            "ccache": "4.14.2",
            "cmake": "4.4.5",
            "ninja": "1.13.2",
            "load_average_start": [9.0, 9.0, 9.0],
        },
        "params": {
            "units": 30,
            "repeat": 3,
            "cold_repeat": 1,
            "index_entries": 20000,
            "caches": 500,
            "micro_repeat": 5,
        },
        "runs": [
            {"kind": "cold", "wall_s": 20.0, "hits": 0, "misses": 31, "hit_rate": 0.0},
            *(
                {"kind": "warm-pipeline", "wall_s": w, "hits": 31, "misses": 0, "hit_rate": 1.0}
                for w in (1.0, 3.0, 2.0)
            ),
            *(
                {"kind": "warm-raw", "wall_s": w, "hits": 31, "misses": 0, "hit_rate": 1.0}
                for w in (1.5, 1.25, 1.75)
            ),
        ],
        "builds": {
            "pipeline_overhead_s": 0.5,
            "pipeline_over_raw": 1.33,
            "fixed_cost": {
                "bare_python_s": 0.02,
                "cli_startup_s": 0.3,
                "in_process_outside_cmake_ninja_s": 0.1,
            },
        },
        "resolver": {
            "entries": 20000,
            "page_bytes": 2_200_000,
            "parse_s": 0.02,
            "select_s": 0.01,
            "chosen": "10.1.0a20260808",
        },
        "prune": {
            "caches": 500,
            "listing_parse_s": 0.004,
            "groups": 10,
            "delete_count": 400,
            "foreign": 5,
            "malformed": 2,
            "api_requests": 410,
        },
        "targets": {
            "warm_over_cold": {"value": 0.1, "target": 0.1, "met": True},
            "overhead": {"value": 0.5, "target": 1.5, "met": True},
            "resolver": {"value": 0.03, "target": 0.1, "met": True},
            "prune": {"value": 2.0, "target": 1.0, "met": False},
        },
    }
    result.update(over)
    return result


def test_the_page_is_what_the_saved_results_render() -> None:
    assert RESULTS, "docs/bench/ holds no results file"
    page = PAGE.read_text(encoding="utf-8")
    expected = bm.replace_block(page, bm.render(bm.load(RESULTS)))
    assert page == expected, (
        "regenerate: python -m scripts.bench.markdown docs/bench/*.json --page docs/benchmarks.md"
    )


def test_every_saved_run_names_its_machine_on_the_page() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for path in RESULTS:
        machine = json.loads(path.read_text(encoding="utf-8"))["machine"]
        assert f"{machine['cpus']} cores ({machine['cpu_model']})" in page, path.name
        assert f"{machine['memory_gib']} GiB" in page and f"ccache {machine['ccache']}" in page, path.name


def test_a_run_renders_its_medians_machine_command_and_targets() -> None:
    text = bm.render([_result()])
    assert "Machine: 16 cores (Example CPU 9000); 128.0 GiB; Linux-x86_64; Python 3.12.1." in text
    # Options left at the benchmark's defaults are left out of the command; no real tree means --quick.
    assert "`python -m scripts.bench --units 30 --repeat 3 --caches 500 --quick`" in text
    assert "| warm, pipeline | 2.00 | 1.00 3.00 2.00 | 31 | 0 | 100.0% |" in text
    assert "| warm, raw cmake + ninja | 1.50 | 1.50 1.25 1.75 | 31 | 0 | 100.0% |" in text
    assert "| prune plan, 500 caches | 2000.0 ms | < 1000 ms | missed |" in text
    # The machine's load is measured but is no benchmark figure.
    assert "load" not in text.lower()


def test_runs_are_newest_first_and_a_real_tree_gets_its_tables() -> None:
    older = _result(date="2026-11-01T00:00:00+00:00")
    real = {
        "tree": "llama.cpp 0c1e570",
        "builds": {
            "cold_s": 200.0,
            "raw_s": 2.0,
            "pipeline_no_bundle_s": 2.5,
            "pipeline_s": 3.0,
            "nox_s": 4.0,
            "compilations": 129,
            "warm_hits": 129,
        },
        "packaging": {
            "payload_mb": 13.0,
            "tar_gzip6_s": 0.6,
            "tar_gzip6_mb_s": 22.0,
            "pipeline_cold_s": 0.3,
            "pipeline_cold_mb_s": 40.0,
            "pipeline_unchanged_s": 0.02,
            "pipeline_unchanged_mb_s": 650.0,
        },
        "compiler_check": {
            "compiler_mb": 200,
            "calls": 100,
            "content_s": 17.4,
            "toolchain_s": 0.28,
            "content_over_toolchain": 62.1,
        },
        "targets": {
            "bundle_over_raw_s": {"value": 1.0, "target": 1.0, "met": True},
            "nox_over_pipeline_s": {"value": 1.0, "target": 1.0, "met": True},
            "unchanged_packaging_speedup": {"value": 15.0, "target": 5.0, "met": True},
        },
    }
    newer = _result(date="2026-12-01T00:00:00+00:00", real_tree=real)
    text = bm.render([older, newer])
    assert text.index("### 2026-12-01") < text.index("### 2026-11-01")
    newest = text[: text.index("### 2026-11-01")]
    assert "--quick" not in newest
    assert "| `nox -s cpu` | 4.00 | 2.00 |" in newest
    assert "| `nox -s cpu` over the pipeline | +1.00 s | <= 1.0 s | met |" in newest


def test_a_transcribed_run_says_so() -> None:
    text = bm.render([_result(transcribed="from a printed report")])
    assert "Transcribed from a printed report." in text
    assert "Transcribed" not in bm.render([_result()])


def test_a_page_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="bench-results"):
        bm.replace_block("# Benchmarks\n", "anything\n")


def test_the_block_is_replaced_and_the_rest_of_the_page_kept() -> None:
    page = f"intro\n{bm.BEGIN}\nold\n{bm.END}\noutro\n"
    assert bm.replace_block(page, "new\n") == f"intro\n{bm.BEGIN}\nnew\n{bm.END}\noutro\n"


def test_rendering_leaves_the_results_untouched() -> None:
    result = _result()
    before = copy.deepcopy(result)
    bm.render([result])
    assert result == before


def test_a_run_with_cpu_seconds_shows_the_overhead_in_cpu_the_phases_and_whether_the_machine_was_idle() -> (
    None
):
    result = _result()
    result["machine"].update(load_average_end=[5.0, 4.0, 3.0], idle=False)
    result["builds"].update(
        warm_pipeline_cpu_s=2.25,
        warm_raw_cpu_s=2.0,
        pipeline_overhead_cpu_s=0.25,
        phases={"configure": 0.5, "build": 1.0, "outside the steps": 0.125},
    )
    text = bm.render([result])
    assert (
        "Load (runnable processes over 1, 5 and 15 minutes) [9.0, 9.0, 9.0] at the start, [5.0, 4.0, 3.0] at the end: "
        "**not idle**"
    ) in text
    assert (
        "| pipeline over raw, warm, CPU seconds of the process trees | +0.25 s (2.25 against 2.00) |" in text
    )
    assert "| warm pipeline phase: outside the steps | 0.125 s |" in text
    # An older result, without these figures, renders as before.
    assert "Load (" not in bm.render([_result()]) and "CPU seconds" not in bm.render([_result()])


def test_a_run_that_measured_the_other_processes_names_their_cpu_and_the_steal() -> None:
    result = _result()
    result["machine"].update(
        load_average_start=[0.2, 0.5, 0.9],
        load_average_end=[1.8, 1.2, 1.0],
        idle=True,
        other_cpu_s=3.5,
        steal_s=0.4,
        other_share=0.0092,
    )
    text = bm.render([result])
    assert (
        "[0.2, 0.5, 0.9] at the start, [1.8, 1.2, 1.0] at the end; other processes used 3.5 CPU seconds "
        "meanwhile (0.9% of the machine), the host stole 0.4 s: idle."
    ) in text
