"""python -m scripts.bench end to end at a tiny size: it runs, and its JSON carries every figure.

Timings are only checked for shape (numbers, positive), never against targets.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.pipeline_cli import ROOT

UNITS = 4
COMPILATIONS = UNITS + 1  # the units and main.cpp


def _checkout_env(**extra: str) -> dict[str, str]:
    """The environment with the checkout first on the path: ``python -m scripts.bench`` from another folder."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def test_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "results" / "bench.json"
    work = tmp_path / "work"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.bench",
            "--units",
            str(UNITS),
            "--repeat",
            "1",
            "--index-entries",
            "500",
            "--caches",
            "300",
            "--micro-repeat",
            "1",
            "--json-out",
            str(out),
            "--workdir",
            str(work),
            "--quick",
        ],
        cwd=tmp_path,
        env=_checkout_env(COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())

    assert result["params"]["units"] == UNITS
    assert result["machine"]["cpus"] == os.cpu_count()
    assert {r["kind"] for r in result["runs"]} == {"cold", "warm-pipeline", "warm-raw"}
    builds = result["builds"]
    assert builds["hit_rate"] == {"cold": 0.0, "warm_pipeline": 1.0, "warm_raw": 1.0}
    runs = {r["kind"]: r for r in result["runs"]}
    assert runs["cold"]["misses"] == COMPILATIONS
    # Raw cmake+ninja hits the pipeline's cache: same arguments, same relative paths.
    assert runs["warm-raw"]["hits"] == COMPILATIONS
    for key in ("cold_s", "warm_pipeline_s", "warm_raw_s", "warm_over_cold", "pipeline_over_raw"):
        assert builds[key] > 0, key
    assert isinstance(builds["pipeline_overhead_s"], float)
    # CPU seconds of each command's process tree: cmake and the compilers ran, so the raw build's is positive.
    assert builds["warm_raw_cpu_s"] > 0 and builds["warm_pipeline_cpu_s"] > 0
    assert builds["pipeline_overhead_cpu_s"] == round(
        builds["warm_pipeline_cpu_s"] - builds["warm_raw_cpu_s"], 3
    )
    # The per-phase breakdown: every step of the leg, and what lies outside them.
    assert sorted(builds["phases"]) == sorted(
        [
            "source",
            "toolchain",
            "preflight",
            "ccache",
            "configure",
            "build",
            "bundle",
            "check",
            "outside the steps",
        ]
    )
    assert isinstance(result["machine"]["idle"], bool)
    assert "overhead" in proc.stdout and "per phase" in proc.stdout
    for key in ("bare_python_s", "cli_startup_s", "in_process_outside_cmake_ninja_s", "configure_pipeline_s"):
        assert key in builds["fixed_cost"]

    resolver = result["resolver"]
    assert resolver["entries"] == 500
    assert re.fullmatch(r"\d+\.\d+\.\d+(a|rc)\d{8}", resolver["chosen"])
    assert resolver["median_s"] > 0

    prune = result["prune"]
    assert prune["caches"] == 300
    assert prune["api_requests"] == math.ceil(300 / 100) + prune["delete_count"]
    assert 0 < prune["delete_count"] < 300

    assert set(result["targets"]) == {"warm_over_cold", "overhead", "resolver", "prune"}
    for check in result["targets"].values():
        assert set(check) == {"value", "target", "met"}
    assert "targets" in proc.stdout and "warm / cold" in proc.stdout
    # An explicit --workdir is the caller's: kept, with the logs of every step.
    assert any((work / "logs").iterdir())
    # --quick leaves the real llama.cpp tree out.
    assert "real_tree" not in result


def test_without_the_pipelines_dependencies_it_says_how_to_run_it_in_one_line(tmp_path: Path) -> None:
    # -S: no site-packages, so none of the pipeline's dependencies (rich first) can be imported.
    proc = subprocess.run([sys.executable, "-S", "-m", "scripts.bench", "--help"],
                          cwd=tmp_path, env=_checkout_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: python -m scripts.bench needs the pipeline's dependencies"
    ), lines
    assert "nox -s bench" in lines[0]
