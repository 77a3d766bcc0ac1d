"""The benchmark on the real llama.cpp tree, called by ``python -m scripts.bench`` (scripts/bench/__main__.py).

The tree is llama.cpp 0c1e570 from llama-cpp-python 0.3.36's sdist, fetched
as the end-to-end test fetches it (scripts/workload/llama_sdist.py, kept in the
test cache); the leg is the shipped cpu leg with the real-tree tests' one
reduction (scripts/workload/reduction.py), its source a placeholder: the tree is passed
with ``--source``. Measured, warm runs interleaved so the machine's load hits each
kind alike:

- cold: ``python -m pipeline build cpu`` with an empty ccache (bundle included);
- raw: ``cmake -G Ninja`` + ``ninja`` + ccache with the pipeline's arguments and cache;
- pipeline without bundle (``--no-bundle``), pipeline (with bundle);
- the Nox session ``nox -s cpu`` in a real virtualenv (installed once before timing);
- packaging throughput of the staged payload: ``tar | gzip -6`` against the
  pipeline's writer, cold and with an unchanged payload;
- the compiler check per mode on a TheRock-sized (200 MB) compiler.

Packaging uses the packaging cache (``write_tar_gz(cache=...)``);
the compiler check times with ``pipeline.ccache.compiler_check.time_compiler_check``
when present (reported as absent otherwise).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from scripts.bench.phases import phase_breakdown, print_phases
from scripts.workload.llama_sdist import e2e_cache_root, fetch_sdist, standalone_tree
from scripts.workload.reduction import SHIPPED_MATRIX, reduced_matrix

LEG = "cpu"
# Targets: printed as ratios, never asserted.
# The goal: within half a second of raw cmake + ninja + ccache, bundle and check included; nox likewise.
TARGET_BUNDLE_OVER_RAW_S = 0.5
TARGET_NOX_OVER_PIPELINE_S = 0.5
TARGET_UNCHANGED_SPEEDUP = 5.0
# A statically linked LLVM clang of TheRock is 100-200 MB.
BIG_COMPILER_BYTES = 200 * 1024 * 1024


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)


class RealTreeBench:
    """One workspace: the tree, the matrix, the caches and the timed commands."""

    def __init__(
        self,
        work: Path,
        env: dict[str, str],
        run: Callable[..., float],
        cpu: Callable[[], float],
        seed_cache: Path | None = None,
    ) -> None:
        self.work = work / "real"
        shutil.rmtree(self.work, ignore_errors=True)
        # A repository of its own, outside any superproject: as a user's checkout is.
        self.tree = standalone_tree(fetch_sdist(e2e_cache_root()), self.work / "sdist")
        self.matrix = self.work / "matrix.toml"
        # The source's repository is never fetched: the tree is passed with --source.
        shipped = SHIPPED_MATRIX.read_text(encoding="utf-8")
        self.matrix.write_text(
            reduced_matrix(shipped, legs=[LEG], source_repo="https://example.invalid/llama.cpp.git")
        )
        self.cache = self.work / "ccache"
        if seed_cache is not None:
            # A copy: the seed (the test cache) is only read.
            shutil.copytree(seed_cache, self.cache, symlinks=True)
        self.out = self.work / "out"
        self.env = {**env, "PIPELINE_MATRIX": str(self.matrix)}
        self._run = run
        self._cpu = cpu

    def _build_args(self, *extra: str) -> list[str]:
        return ["--source", str(self.tree), "--out", str(self.out), "--ccache-dir", str(self.cache), *extra]

    def pipeline(self, kind: str, *, bundle: bool) -> tuple[float, dict[str, Any]]:
        """Wall seconds and the record; the record gets ``bench_cpu_s``, the run's CPU seconds."""
        wall = self._run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "build",
                LEG,
                *self._build_args(*(() if bundle else ("--no-bundle",))),
            ],
            f"real-{kind}",
            self.env,
        )
        record: dict[str, Any] = json.loads((self.out / LEG / "record.json").read_text(encoding="utf-8"))
        record["bench_cpu_s"] = self._cpu()
        return wall, record

    def nox_session(self, kind: str) -> float:
        """``nox -s cpu`` as a user runs it: a real venv under the workspace (uv where installed)."""
        env = {k: v for k, v in self.env.items() if k != "PYTHONPATH"}
        return self._run(
            [
                sys.executable,
                "-m",
                "nox",
                "-f",
                str(Path(__file__).resolve().parents[2] / "noxfile.py"),
                "--envdir",
                str(self.work / "nox-envs"),
                "-s",
                LEG,
                "--",
                *self._build_args(),
            ],
            f"real-{kind}",
            env,
        )

    def raw(self, record: dict[str, Any]) -> tuple[float, float]:
        """The same configure and build with cmake + ninja + ccache only (same cache, same depth):
        wall and CPU seconds."""
        from pipeline.ccache.session import CcacheSetup, find_ccache
        from pipeline.leg.steps import find_tool

        cc = record["ccache"]
        # Beside the pipeline's build folder (under its base_dir, at its depth): the same relative paths.
        build = self.out / LEG / "raw-build"
        shutil.rmtree(build, ignore_errors=True)
        build.parent.mkdir(parents=True, exist_ok=True)
        args = list(record["cmake_args"])
        args[args.index("-B") + 1] = str(build)
        setup = CcacheSetup(
            executable=find_ccache(),
            version=cc["version"],
            ccache_dir=Path(cc["ccache_dir"]),
            base_dir=Path(cc["base_dir"]),
            compiler_check=cc["compiler_check"],
            max_size="5G",
            stats_log=self.work / "raw-stats.log",
        )
        env = {**self.env, **setup.env(with_stats_log=False)}
        cmake, ninja = find_tool("cmake"), find_tool("ninja")
        started = time.perf_counter()
        self._run([str(cmake), *args, f"-DCMAKE_MAKE_PROGRAM={ninja}"], "real-raw-configure", env)
        cpu = self._cpu()
        self._run([str(ninja), "-C", str(build)], "real-raw-build", env)
        return time.perf_counter() - started, cpu + self._cpu()


def packaging(stage: Path, scratch: Path, repeat: int) -> dict[str, Any]:
    """MB/s of the staged payload: ``tar | gzip -6`` against the pipeline's writer, cold and unchanged."""
    from pipeline.archives import deterministic as archive
    from pipeline.bundle.make import archive_entries, staged_files

    payload = sum(p.stat().st_size for p in stage.rglob("*") if p.is_file() and not p.is_symlink())
    scratch.mkdir(parents=True, exist_ok=True)

    def timed(fn: Callable[[], object]) -> float:
        started = time.perf_counter()
        fn()
        return time.perf_counter() - started

    def tar_gzip() -> None:
        with (scratch / "ref.tar.gz").open("wb") as fh:
            tar = subprocess.Popen(["tar", "-C", str(stage), "-cf", "-", "."], stdout=subprocess.PIPE)
            subprocess.run(["gzip", "-6"], stdin=tar.stdout, stdout=fh, check=True)
            if tar.stdout:
                tar.stdout.close()
            tar.wait()

    reference = _median([timed(tar_gzip) for _ in range(repeat)])
    # Members compressed one by one, reused by content hash from a packaging cache. The entries are made
    # in each timed run: they hash the files (the manifest's sha256), which is the key the writer reuses.
    target = scratch / "pipeline.tar.gz"
    cache = scratch / "pack-cache"
    shutil.rmtree(cache, ignore_errors=True)

    def pack() -> None:
        archive.write_tar_gz(target, archive_entries(staged_files(stage, symlinks=True), {})[1], cache=cache)

    cold = timed(pack)
    unchanged = _median([timed(pack) for _ in range(repeat)])
    mb = payload / 1e6
    return {
        "payload_mb": round(mb, 1),
        "tar_gzip6_s": reference,
        "tar_gzip6_mb_s": round(mb / reference, 1),
        "pipeline_cold_s": round(cold, 3),
        "pipeline_cold_mb_s": round(mb / cold, 1),
        "pipeline_unchanged_s": round(unchanged, 3),
        "pipeline_unchanged_mb_s": round(mb / unchanged, 1),
        "unchanged_speedup": round(cold / unchanged, 2),
        "packaging_cache": "pipeline.archives.deterministic.write_tar_gz(cache=...)",
        "archive_mb": round(target.stat().st_size / 1e6, 2),
        "reference_archive_mb": round((scratch / "ref.tar.gz").stat().st_size / 1e6, 2),
    }


def compiler_check(scratch: Path, calls: int, env: dict[str, str]) -> dict[str, Any]:
    """Warm ccache calls through a 200 MB compiler per ``compiler_check`` mode.

    The compiler is a shell script that execs the host g++, padded to
    TheRock's size after the exec line (never read, always hashed by ``content``).
    """
    from pipeline.ccache.session import find_ccache

    scratch.mkdir(parents=True, exist_ok=True)
    cxx = shutil.which("g++") or "g++"
    # Not named clang++: ccache would add clang's flags to what is g++ underneath.
    big = scratch / "therock-sized-c++"
    with big.open("wb") as fh:
        fh.write(f'#!/bin/sh\nexec {cxx} "$@"\n'.encode())
        chunk = b"#" * (1 << 20) + b"\n"
        for _ in range(BIG_COMPILER_BYTES // len(chunk)):
            fh.write(chunk)
    big.chmod(0o755)
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    version_text = subprocess.run([str(big), "--version"], capture_output=True, text=True, check=True).stdout
    (scratch / "unit.cpp").write_text("int f(int x) { return x * 2; }\n")
    # The `toolchain` mode's value is string:<archive sha256>+<sha256 of the
    # compilers' --version and NUL> (as pipeline.ccache.compiler_check.resolve_compiler_check makes it), and its
    # timing function is used when that module exists; imported by name so this file type-checks without it.
    versions = hashlib.sha256(version_text.encode() + bytes(1)).hexdigest()
    toolchain_mode = f"string:{digest}+{versions}"
    try:
        timer: Callable[..., float] | None = importlib.import_module(
            "pipeline.ccache.compiler_check"
        ).time_compiler_check
        timed_by = "pipeline.ccache.compiler_check.time_compiler_check"
    except (ImportError, AttributeError):
        timer, timed_by = None, "absent (no pipeline.ccache.compiler_check.time_compiler_check): timed here"
    results: dict[str, Any] = {
        "compiler_mb": BIG_COMPILER_BYTES // (1024 * 1024),
        "calls": calls,
        "toolchain_check_from": timed_by,
    }
    ccache = find_ccache()
    for mode, check in (("content", "content"), ("toolchain", toolchain_mode)):
        work = scratch / f"work-{mode}"
        run_env = {**env, "CCACHE_COMPILERTYPE": "gcc"}
        if timer is not None:
            results[f"{mode}_s"] = round(timer(ccache, big, check, calls=calls, work=work, env=run_env), 3)
            continue
        run_env.update({"CCACHE_DIR": str(work / "ccache"), "CCACHE_COMPILERCHECK": check})
        cmd = [str(ccache), str(big), "-c", str(scratch / "unit.cpp"), "-o", str(scratch / "unit.o")]
        subprocess.run(cmd, env=run_env, check=True)  # the miss that fills the cache
        started = time.perf_counter()
        for _ in range(calls):
            subprocess.run(cmd, env=run_env, check=True)
        results[f"{mode}_s"] = round(time.perf_counter() - started, 3)
    results["content_over_toolchain"] = round(results["content_s"] / results["toolchain_s"], 2)
    big.unlink()
    return results


def bench_real_tree(
    work: Path,
    env: dict[str, str],
    run: Callable[..., float],
    repeat: int,
    say: Callable[[str], None],
    *,
    cpu: Callable[[], float],
    seed_cache: Path | None = None,
) -> dict[str, Any]:
    """Every real-tree figure of the benchmark, with the targets as ratios. ``cpu``: the CPU seconds of
    the last command ``run`` ran; ``seed_cache``: a ccache to start from (copied), which makes the first
    build a warm-up instead of the cold figure."""
    rt = RealTreeBench(work, env, run, cpu, seed_cache)
    say(
        f"bench: real tree {rt.tree} ({'warm-up from ' + str(seed_cache) if seed_cache else 'cold build: minutes'})"
    )
    cold_s, record = rt.pipeline("cold", bundle=True)
    compilations = record["ccache"]["misses"] + record["ccache"]["hits"]
    say(f"bench: real tree first build {cold_s:.0f} s, {record['ccache']['misses']} misses")
    # The Nox session's venv is created and installed once, outside the timing (as on a second night).
    rt.nox_session("nox-install")
    runs: dict[str, list[float]] = {"raw": [], "no_bundle": [], "pipeline": [], "nox": []}
    cpus: dict[str, list[float]] = {"raw": [], "no_bundle": [], "pipeline": [], "nox": []}
    phases: list[dict[str, float]] = []
    hits: list[int] = []
    for i in range(repeat):
        wall, rec = rt.pipeline("warm-no-bundle", bundle=False)
        runs["no_bundle"].append(wall)
        cpus["no_bundle"].append(rec["bench_cpu_s"])
        hits.append(rec["ccache"]["hits"])
        raw_wall, raw_cpu = rt.raw(rec)
        runs["raw"].append(raw_wall)
        cpus["raw"].append(raw_cpu)
        wall, rec = rt.pipeline("warm-bundle", bundle=True)
        runs["pipeline"].append(wall)
        cpus["pipeline"].append(rec["bench_cpu_s"])
        phases.append(rec["phases"])
        hits.append(rec["ccache"]["hits"])
        runs["nox"].append(rt.nox_session("warm-nox"))
        cpus["nox"].append(cpu())
        say(
            f"bench: real tree warm {i + 1}/{repeat}: raw {runs['raw'][-1]:.2f} s, --no-bundle {runs['no_bundle'][-1]:.2f} s, "
            f"pipeline {runs['pipeline'][-1]:.2f} s ({cpus['pipeline'][-1]:.2f} s CPU vs raw {raw_cpu:.2f}), "
            f"nox {runs['nox'][-1]:.2f} s"
        )
    builds = {
        "cold_s": None if seed_cache else round(cold_s, 2),
        "first_build_s": round(cold_s, 2),
        "seeded_from": str(seed_cache) if seed_cache else None,
        "raw_s": _median(runs["raw"]),
        "pipeline_no_bundle_s": _median(runs["no_bundle"]),
        "pipeline_s": _median(runs["pipeline"]),
        "nox_s": _median(runs["nox"]),
        "compilations": compilations,
        "warm_hits": min(hits),
        "runs": {k: [round(v, 3) for v in vs] for k, vs in runs.items()},
        "cpu_s": {k: _median(vs) for k, vs in cpus.items()},
        "cpu_runs": {k: [round(v, 3) for v in vs] for k, vs in cpus.items()},
        "phases": phase_breakdown(runs["pipeline"], phases),
    }
    say("bench: packaging and the compiler check")
    pack = packaging(rt.out / LEG / "bundle", rt.work / "pack", repeat)
    check = compiler_check(rt.work / "compiler", 100, env)
    cpu_s: dict[str, float] = builds["cpu_s"]
    targets = {
        "bundle_over_raw_s": {
            "value": round(builds["pipeline_s"] - builds["raw_s"], 2),
            "target": TARGET_BUNDLE_OVER_RAW_S,
        },
        "bundle_over_raw_cpu_s": {
            "value": round(cpu_s["pipeline"] - cpu_s["raw"], 2),
            "target": TARGET_BUNDLE_OVER_RAW_S,
        },
        "nox_over_raw_s": {
            "value": round(builds["nox_s"] - builds["raw_s"], 2),
            "target": TARGET_BUNDLE_OVER_RAW_S,
        },
        "nox_over_pipeline_s": {
            "value": round(builds["nox_s"] - builds["pipeline_s"], 2),
            "target": TARGET_NOX_OVER_PIPELINE_S,
        },
        "unchanged_packaging_speedup": {
            "value": pack["unchanged_speedup"],
            "target": TARGET_UNCHANGED_SPEEDUP,
        },
    }
    for name, t in targets.items():
        t["met"] = (
            t["value"] >= t["target"] if name == "unchanged_packaging_speedup" else t["value"] <= t["target"]
        )
    return {
        "tree": "llama.cpp 0c1e570 (llama-cpp-python 0.3.36 sdist), reduced cpu leg",
        "builds": builds,
        "packaging": pack,
        "compiler_check": check,
        "targets": targets,
        "load_average": list(os.getloadavg()),
    }


def print_real_tree(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    b, p, c = result["builds"], result["packaging"], result["compiler_check"]
    raw = b["raw_s"]
    table = Table(
        title=f"real tree: {result['tree']}, {b['compilations']} compilations, warm "
        f"{b['warm_hits']}/{b['compilations']} hits (median wall seconds)",
        title_justify="left",
    )
    for col in ("command", "wall", "vs raw", "CPU (s)", "CPU over raw"):
        table.add_column(col, justify="left" if col == "command" else "right")
    cpu = b.get("cpu_s") or {}
    for label, key, run in (
        ("raw cmake -G Ninja + ninja + ccache", "raw_s", "raw"),
        ("python -m pipeline build cpu --no-bundle", "pipeline_no_bundle_s", "no_bundle"),
        ("python -m pipeline build cpu", "pipeline_s", "pipeline"),
        ("nox -s cpu", "nox_s", "nox"),
    ):
        cells = (f"{cpu[run]:.2f}", f"{cpu[run] - cpu['raw']:+.2f}") if run in cpu else ("", "")
        table.add_row(label, f"{b[key]:.2f}", f"{b[key] / raw:.2f}", *cells)
    if b.get("cold_s") is not None:
        table.add_row(
            "cold: python -m pipeline build cpu (empty ccache)",
            f"{b['cold_s']:.1f}",
            f"{b['cold_s'] / raw:.1f}",
        )
    console.print(table)
    if "phases" in b:
        print_phases(
            console, "real tree, python -m pipeline build cpu, per phase (median wall seconds)", b["phases"]
        )
    console.print(
        f"packaging {p['payload_mb']} MB payload: tar | gzip -6 {p['tar_gzip6_s']:.2f} s ({p['tar_gzip6_mb_s']} MB/s); "
        f"pipeline cold {p['pipeline_cold_s']:.2f} s ({p['pipeline_cold_mb_s']} MB/s), unchanged "
        f"{p['pipeline_unchanged_s']:.2f} s ({p['pipeline_unchanged_mb_s']} MB/s); packaging cache: {p['packaging_cache']}",
        highlight=False,
    )
    console.print(
        f"compiler check, {c['calls']} warm calls through a {c['compiler_mb']} MB compiler: content {c['content_s']:.2f} s, "
        f"toolchain {c['toolchain_s']:.2f} s ({c['content_over_toolchain']}x); toolchain check from {c['toolchain_check_from']}",
        highlight=False,
    )
    targets = Table(title="real-tree targets", title_justify="left")
    for col in ("figure", "value", "target", ""):
        targets.add_column(col, justify="left" if col == "figure" else "right")
    labels = {
        "bundle_over_raw_s": ("pipeline (with bundle) over raw, warm", "s", "<="),
        "bundle_over_raw_cpu_s": ("pipeline (with bundle) over raw, warm, CPU seconds", "s", "<="),
        "nox_over_raw_s": ("nox -s cpu over raw, warm", "s", "<="),
        "nox_over_pipeline_s": ("nox -s cpu over the pipeline", "s", "<="),
        "unchanged_packaging_speedup": ("packaging: cold / unchanged payload", "x", ">="),
    }
    for name, t in result["targets"].items():
        label, unit, op = labels[name]
        targets.add_row(
            label,
            f"{t['value']:+.2f} {unit}" if unit == "s" else f"{t['value']:.2f}{unit}",
            f"{op} {t['target']}{unit if unit == 'x' else ' s'}",
            "[green]met[/]" if t["met"] else "[red]MISSED[/]",
        )
    console.print(targets)
