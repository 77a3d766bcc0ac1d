"""The benchmark that keeps the pipeline honest (``nox -s bench``, or ``python -m scripts.bench`` from the checkout).

In one run, on one machine:

1. Generates a C++ project (``--units`` translation units with template work,
   a static library and a program: scripts/bench/project.py).
2. Builds it cold through the pipeline: ``python -m pipeline build`` in a
   subprocess, with an empty ccache directory. A subprocess, not ``run_leg``
   in-process, because that is the user's path (``nox -s cpu`` runs exactly
   this command): interpreter start, imports, toolchain detection, ccache
   setup, record and summary all count.
3. Builds it warm through the pipeline (a fresh build directory, the cache
   of step 2), ``--repeat`` times.
4. Builds it warm with raw ``cmake -G Ninja`` + ``ninja`` + ccache, no
   pipeline: the same cmake and ninja, the same configure arguments (from the
   pipeline's record), the same ccache environment and cache, a build
   directory beside the pipeline's (so ``base_dir`` yields the same relative
   paths), ``--repeat`` times, interleaved with step 3.
5. Times the ROCm resolver (parse the HTML ``const files = [...]`` page,
   pick the weekly build) over a generated index of ``--index-entries``
   entries, and the prune plan over ``--caches`` generated caches, with the
   number of REST requests the prune would make. Caches the code keeps
   (``functools.lru_cache``) are cleared before every timed run: a real
   ``resolve`` runs once per process.

6. Unless ``--quick``: the real llama.cpp tree (scripts/bench/real_tree.py):
   cold, warm and raw, the pipeline with and without its bundle, the Nox
   session, packaging throughput and the compiler check per mode.

For the generated project, bundling is left out (``--no-bundle``): raw cmake + ninja has no bundle to
compare with. Timings are medians (of 5 runs by default); the figures are printed against the
targets and written to ``--json-out`` (default
``bench-results/bench-<date>.json``). Targets are printed, never asserted.

Every timed command also has its CPU seconds: user and system time of its
whole process tree (``getrusage(RUSAGE_CHILDREN)`` around it; the commands run
one at a time). The pipeline's overhead in CPU seconds (pipeline minus raw)
is what its own Python and its own subprocesses cost, a fair figure on a
loaded machine where wall times are not; each pipeline run's record gives
the per-phase breakdown (``phases``: every step's wall time). The run warns
when the machine was not idle (a load above 0.5 at the start, or other
processes' CPU during the run: scripts/bench/idle.py), and says so in the
results.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from scripts.bench.idle import idle_verdict, idle_warning, snapshot
from scripts.bench.phases import phase_breakdown, print_phases
from scripts.bench.project import MATRIX, write_project
from scripts.bench.real_tree import bench_real_tree, print_real_tree

# The checkout: run from it (python -m scripts.bench), the benchmark times its pipeline.
ROOT = Path(__file__).resolve().parents[2]

try:
    from pipeline.ccache.session import CcacheSetup, ccache_version, find_ccache
    from pipeline.leg.steps import find_tool
    from pipeline.util.fsutil import atomic_write_json
except ModuleNotFoundError as _missing:
    if not _missing.name or _missing.name.partition(".")[0] == "pipeline":
        raise  # a module of the pipeline itself: a bug, with its traceback
    # Run with a Python that lacks the pipeline's dependencies: one line that says how, not a traceback.
    sys.exit(
        f"error: python -m scripts.bench needs the pipeline's dependencies (no module named {_missing.name!r}): "
        f'run `nox -s bench`, or `pip install -e "{ROOT}[test]"` first'
    )

# Targets: printed, never asserted.
TARGET_WARM_OVER_COLD = 0.10
# The goal: a warm build through the pipeline within half a second of raw cmake + ninja + ccache.
TARGET_OVERHEAD_S = 0.5
TARGET_RESOLVER_S = 0.100
TARGET_PRUNE_S = 1.0

LEG = "cpu"
FORMAT = 1


# --------------------------------------------------------------------------
# Builds


@dataclass(frozen=True, kw_only=True)
class BuildRun:
    kind: str  # "cold", "warm-pipeline", "warm-raw"
    wall_s: float
    hits: int
    misses: int
    hit_rate: float
    # Pipeline runs: the record's own phases and wall time (in-process).
    configure_s: float | None = None
    build_s: float | None = None
    record_wall_s: float | None = None
    # User + system CPU seconds of the command's whole process tree.
    cpu_s: float | None = None
    # Pipeline runs: the record's phases (every step's wall time).
    phases: dict[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class Bench:
    """The workspace of one benchmark run and the commands it times."""

    def __init__(self, work: Path, units: int) -> None:
        self.work = work
        self.ws = work / "ws"
        # A reused --workdir must not make the cold build warm.
        shutil.rmtree(work / "caches", ignore_errors=True)
        self.project = write_project(self.ws / "project", units)
        self.matrix = self.ws / "matrix.toml"
        self.matrix.write_text(MATRIX)
        self.out = self.ws / "out"
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "PIPELINE_CACHE_HOME": str(work / "cache-home"), "COLUMNS": "120"}
        if (ROOT / "pipeline" / "__init__.py").is_file():
            self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        # A user's pipeline runs from cached bytecode: PYTHONDONTWRITEBYTECODE from the caller's shell
        # would make every timed run compile its modules again (a second of CPU on a 2-core VM).
        for var in (
            "CCACHE_DIR",
            "PIPELINE_MATRIX",
            "PIPELINE_RESOLVED",
            "CCACHE_REMOTE_STORAGE",
            "PYTHONDONTWRITEBYTECODE",
        ):
            self.env.pop(var, None)
        self.cmake = find_tool("cmake")
        self.ninja = find_tool("ninja")
        self._log_count = 0
        # CPU seconds of the last command run by _run (its whole process tree).
        self.last_cpu_s = 0.0

    def _run(self, cmd: Sequence[str], what: str, env: dict[str, str] | None = None) -> float:
        """Run ``cmd`` with output to a log file; its wall time in seconds (its CPU seconds in
        ``last_cpu_s``); exit on failure."""
        self._log_count += 1
        log = self.logs / f"{self._log_count:03d}-{what}.log"
        with log.open("w", encoding="utf-8") as fh:
            before = children_cpu()
            started = time.perf_counter()
            proc = subprocess.run(
                list(cmd),
                env=env or self.env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
            wall = time.perf_counter() - started
            self.last_cpu_s = children_cpu() - before
        if proc.returncode != 0:
            tail = log.read_text(errors="replace").splitlines()[-30:]
            sys.exit(f"bench: {what} failed ({proc.returncode}); log {log}:\n" + "\n".join(tail))
        return wall

    def pipeline_build(self, cache: Path, kind: str) -> tuple[BuildRun, dict[str, Any]]:
        """``python -m pipeline build cpu`` as a user runs it; the run and its record."""
        wall = self._run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "--matrix",
                str(self.matrix),
                "build",
                LEG,
                "--source",
                str(self.project),
                "--out",
                str(self.out),
                "--ccache-dir",
                str(cache),
                "--no-bundle",
            ],
            kind,
        )
        cpu = self.last_cpu_s
        record: dict[str, Any] = json.loads((self.out / LEG / "record.json").read_text(encoding="utf-8"))
        cc = record["ccache"]
        run = BuildRun(
            kind=kind,
            wall_s=round(wall, 3),
            hits=cc["hits"],
            misses=cc["misses"],
            hit_rate=cc["hit_rate"],
            configure_s=record["phases"].get("configure"),
            build_s=record["phases"].get("build"),
            record_wall_s=record["wall_seconds"],
            cpu_s=round(cpu, 3),
            phases=dict(record["phases"]),
        )
        return run, record

    def raw_build(self, record: dict[str, Any]) -> BuildRun:
        """The same configure and build with cmake + ninja + ccache only."""
        cc = record["ccache"]
        # Beside the pipeline's build folder (under its base_dir, at its depth): the same relative paths.
        build = self.out / LEG / "raw-build"
        if build.exists():
            shutil.rmtree(build)
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
            stats_log=build.parent / "raw-ccache-stats.log",
        )
        setup.stats_log.unlink(missing_ok=True)
        env = {**self.env, **setup.env(with_stats_log=True)}
        started = time.perf_counter()
        self._run([str(self.cmake), *args, f"-DCMAKE_MAKE_PROGRAM={self.ninja}"], "raw-configure", env)
        cpu = self.last_cpu_s
        self._run([str(self.ninja), "-C", str(build)], "raw-build", env)
        wall = time.perf_counter() - started
        cpu += self.last_cpu_s
        stats = setup.read_stats()
        return BuildRun(
            kind="warm-raw",
            wall_s=round(wall, 3),
            hits=stats.hits,
            misses=stats.misses,
            hit_rate=stats.hit_rate,
            cpu_s=round(cpu, 3),
        )

    def cli_startup(self) -> float:
        """``python -m pipeline --version``: interpreter start and every command module's import."""
        return self._run([sys.executable, "-m", "pipeline", "--version"], "cli-startup")

    def bare_python(self) -> float:
        return self._run([sys.executable, "-c", "pass"], "bare-python")


# --------------------------------------------------------------------------
# The resolver and the prune plan at scale


FAMILIES = (
    "gfx110X-all",
    "gfx120X-all",
    "gfx1151",
    "gfx94X-dcgpu",
    "gfx950-dcgpu",
    "gfx90X-dcgpu",
    "gfx101X-dgpu",
    "gfx103X-dgpu",
    "gfx1150",
    "gfx1152",
    "gfx1153",
    "gfx908",
)


def index_page(entries: int, today: date) -> str:
    """A TheRock-style HTML index of ``entries`` files: tarballs and their checksums, two OSes."""
    files: list[dict[str, Any]] = []
    rng = random.Random(8)
    day = 0
    while len(files) < entries:
        built = today - timedelta(days=day)
        stamp = built.strftime("%Y%m%d")
        published = datetime(built.year, built.month, built.day, 6, tzinfo=UTC) + timedelta(
            hours=rng.randint(0, 20)
        )
        for os_name in ("linux", "windows"):
            for family in FAMILIES:
                version = f"{'10.1.0' if day % 3 else '7.15.0'}{'rc' if day % 17 == 0 else 'a'}{stamp}"
                name = f"therock-dist-{os_name}-{family}-{version}.tar.gz"
                # The real page mixes ISO strings and epoch numbers; so does this one.
                mtime: Any = published.isoformat() if len(files) % 2 else int(published.timestamp())
                files.append({"name": name, "mtime": mtime, "size": 2_000_000_000})
                files.append({"name": name + ".sha256sum", "mtime": mtime, "size": 97})
        day += 1
    del files[entries:]
    rng.shuffle(files)
    return (
        "<!DOCTYPE html><html><head><title>TheRock nightly tarballs</title></head><body>\n"
        f"<script>\nconst files = {json.dumps(files)};\nrender(files);\n</script></body></html>\n"
    )


def cache_items(count: int, now: datetime) -> list[dict[str, Any]]:
    """``count`` Actions caches as the REST API lists them: ours (many toolchains, refs), foreign, odd."""
    from pipeline.actions_cache.cache_keys import cache_key, toolchain_cache_key

    rng = random.Random(20000)
    legs = ("cpu", "cuda", "vulkan", "rocm-linux-gfx110X", "rocm-windows-gfx1151")
    refs = ["refs/heads/main", *(f"refs/pull/{n}/merge" for n in range(1, 60))]
    items: list[dict[str, Any]] = []
    for i in range(count):
        leg = rng.choice(legs)
        week = rng.randint(0, 40)
        toolchain = (
            f"rocm-10.1.0a{(date(2026, 1, 3) + timedelta(weeks=week)):%Y%m%d}"
            if "rocm" in leg
            else f"gcc-{rng.choice(('12.2.0', '13.3.0', '14.2.0'))}"
        )
        roll = rng.random()
        if roll < 0.04:
            key = f"setup-python-{i}"  # someone else's
        elif roll < 0.05:
            key = f"llama-ccache--{leg}--{toolchain}"  # ours in shape, no tag: malformed
        elif roll < 0.10:
            key = toolchain_cache_key(leg, toolchain)
        else:
            key = cache_key(leg, toolchain, f"b{8000 + i}")
        created = now - timedelta(minutes=rng.randint(0, 60 * 24 * 300))
        items.append(
            {
                "id": i + 1,
                "ref": rng.choice(refs),
                "key": key,
                "version": f"{i:064x}",
                "created_at": created.isoformat().replace("+00:00", "Z"),
                "last_accessed_at": created.isoformat().replace("+00:00", "Z"),
                "size_in_bytes": rng.randint(10_000_000, 400_000_000),
            }
        )
    return items


def _clear_caches(modules: Iterable[ModuleType]) -> None:
    for module in modules:
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if isinstance(value, functools._lru_cache_wrapper) and callable(clear):
                clear()


def _time(fn: Callable[[], Any], repeat: int, modules: Sequence[ModuleType]) -> tuple[list[float], Any]:
    """Wall times of ``repeat`` calls, each with cold lru caches; and the last result."""
    times: list[float] = []
    result: Any = None
    for _ in range(repeat):
        _clear_caches(modules)
        gc.collect()
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return times, result


def bench_resolver(entries: int, repeat: int) -> dict[str, Any]:
    import pipeline.rocm.index
    import pipeline.rocm.policy
    import pipeline.rocm.tarball_resolve
    import pipeline.rocm.versions
    from pipeline.rocm.index import parse_html_index
    from pipeline.rocm.tarball_resolve import resolve_from_entries

    modules = (
        pipeline.rocm.versions,
        pipeline.rocm.index,
        pipeline.rocm.policy,
        pipeline.rocm.tarball_resolve,
    )
    now = datetime(2026, 8, 12, 18, 0, tzinfo=UTC)
    page = index_page(entries, now.date())
    url = "https://index.invalid/tarball-multi-arch/"
    parsed = parse_html_index(page, where="bench index")

    def resolve() -> Any:
        listed = parse_html_index(page, where="bench index")
        return resolve_from_entries(listed, "linux", "gfx110X-all", policy="weekly", now=now, index_url=url)

    parse_times, _ = _time(lambda: parse_html_index(page, where="bench index"), repeat, modules)
    select_times, _ = _time(
        lambda: resolve_from_entries(parsed, "linux", "gfx110X-all", policy="weekly", now=now, index_url=url),
        repeat,
        modules,
    )
    total_times, chosen = _time(resolve, repeat, modules)
    return {
        "entries": len(parsed),
        "page_bytes": len(page.encode()),
        "parse_s": _median(parse_times),
        "select_s": _median(select_times),
        "median_s": _median(total_times),
        "runs_s": [round(t, 5) for t in total_times],
        "chosen": chosen.version,
        "target_s": TARGET_RESOLVER_S,
    }


def bench_prune(count: int, repeat: int) -> dict[str, Any]:
    import pipeline.actions_cache.cache_keys
    import pipeline.actions_cache.prune
    from pipeline.actions_cache.prune import CacheEntry, plan_with_cost

    now = datetime(2026, 8, 12, 18, 0, tzinfo=UTC)
    items = cache_items(count, now)
    modules = (pipeline.actions_cache.cache_keys, pipeline.actions_cache.prune)

    def parse() -> list[CacheEntry]:
        return [CacheEntry.from_api(item, where="bench") for item in items]

    parse_times, entries = _time(parse, repeat, modules)
    plan_times, (plan, requests) = _time(lambda: plan_with_cost(entries, keep=2), repeat, modules)
    return {
        "caches": len(entries),
        "listing_parse_s": _median(parse_times),
        "median_s": _median(plan_times),
        "runs_s": [round(t, 5) for t in plan_times],
        "groups": len(plan.groups),
        "delete_count": len(plan.to_delete),
        "foreign": plan.foreign_count,
        "malformed": len(plan.malformed),
        "api_requests": requests,
        "target_s": TARGET_PRUNE_S,
    }


# --------------------------------------------------------------------------
# Machine facts


def _first_line(cmd: Sequence[str]) -> str | None:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def children_cpu() -> float:
    """User + system CPU seconds of every child process waited for so far (their trees included)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_facts(cmake: Path, ninja: Path) -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": _memory_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "compiler": _first_line([os.environ.get("CXX") or "c++", "--version"]),
        "ccache": ccache_version(find_ccache()),
        "cmake": (_first_line([str(cmake), "--version"]) or "").removeprefix("cmake version ") or None,
        "ninja": _first_line([str(ninja), "--version"]),
        "load_average_start": _load(),
    }


# --------------------------------------------------------------------------
# Report


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 5)


def _check(value: float, target: float) -> dict[str, Any]:
    return {"value": value, "target": target, "met": value <= target}


def summarize(
    cold: list[BuildRun], warm: list[BuildRun], raw: list[BuildRun], startup: dict[str, float]
) -> dict[str, Any]:
    cold_s = _median([r.wall_s for r in cold])
    warm_s = _median([r.wall_s for r in warm])
    raw_s = _median([r.wall_s for r in raw])
    # What the pipeline spends outside CMake and Ninja, as its own record measures it.
    inside = _median([(r.record_wall_s or 0) - (r.configure_s or 0) - (r.build_s or 0) for r in warm])
    warm_cpu = _median([r.cpu_s or 0.0 for r in warm])
    raw_cpu = _median([r.cpu_s or 0.0 for r in raw])
    return {
        "cold_s": cold_s,
        "warm_pipeline_s": warm_s,
        "warm_raw_s": raw_s,
        "hit_rate": {
            "cold": cold[0].hit_rate,
            "warm_pipeline": warm[0].hit_rate,
            "warm_raw": raw[0].hit_rate,
        },
        "warm_over_cold": round(warm_s / cold_s, 4) if cold_s else None,
        "pipeline_over_raw": round(warm_s / raw_s, 4) if raw_s else None,
        "pipeline_overhead_s": round(warm_s - raw_s, 3),
        # CPU seconds of each command's process tree: what the pipeline adds, whatever else the machine runs.
        "warm_pipeline_cpu_s": warm_cpu,
        "warm_raw_cpu_s": raw_cpu,
        "pipeline_overhead_cpu_s": round(warm_cpu - raw_cpu, 3),
        "phases": phase_breakdown([r.wall_s for r in warm], [r.phases or {} for r in warm]),
        "fixed_cost": {
            "bare_python_s": startup["bare_python_s"],
            "cli_startup_s": startup["cli_startup_s"],
            "in_process_outside_cmake_ninja_s": inside,
            "configure_pipeline_s": _median([r.configure_s or 0 for r in warm]),
            "build_pipeline_s": _median([r.build_s or 0 for r in warm]),
        },
    }


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    m = result["machine"]
    b = result["builds"]
    fc = b["fixed_cost"]
    console.print(
        f"[bold]pipeline benchmark[/] {result['date']} on {m['cpus']} cores ({m['cpu_model']}), "
        f"{m['memory_gib']} GiB, {m['platform']}; load {m['load_average_start']} -> {m['load_average_end']}",
        highlight=False,
    )
    console.print(
        f"{result['params']['units']} translation units, {result['params']['repeat']} warm runs each; "
        f"{m['compiler']}, ccache {m['ccache']}, cmake {m['cmake']}, ninja {m['ninja']}",
        highlight=False,
    )
    runs = Table(title="builds (wall seconds)", title_justify="left")
    for col in ("build", "median", "runs", "hits", "misses", "hit rate"):
        runs.add_column(col, justify="left" if col == "build" else "right")
    for kind, label in (
        ("cold", "cold, pipeline"),
        ("warm-pipeline", "warm, pipeline"),
        ("warm-raw", "warm, raw cmake+ninja"),
    ):
        rows = [r for r in result["runs"] if r["kind"] == kind]
        runs.add_row(
            label,
            f"{statistics.median(r['wall_s'] for r in rows):.2f}",
            " ".join(f"{r['wall_s']:.2f}" for r in rows),
            str(rows[0]["hits"]),
            str(rows[0]["misses"]),
            f"{rows[0]['hit_rate']:.1%}",
        )
    console.print(runs)
    if "pipeline_overhead_cpu_s" in b:
        console.print(
            f"medians of {result['params']['repeat']}: raw {b['warm_raw_s']:.2f} s, pipeline {b['warm_pipeline_s']:.2f} s: "
            f"overhead {b['pipeline_overhead_s']:+.2f} s wall, {b['pipeline_overhead_cpu_s']:+.2f} s CPU "
            f"(process trees: pipeline {b['warm_pipeline_cpu_s']:.2f} s, raw {b['warm_raw_cpu_s']:.2f} s)",
            highlight=False,
        )
        print_phases(console, "warm pipeline, per phase (median wall seconds)", b["phases"])
    console.print(
        f"pipeline fixed cost: {b['pipeline_overhead_s']:+.2f} s over raw (pipeline/raw {b['pipeline_over_raw']:.2f}x); "
        f"python start {fc['bare_python_s']:.2f} s, `python -m pipeline --version` {fc['cli_startup_s']:.2f} s, "
        f"in-process outside cmake+ninja {fc['in_process_outside_cmake_ninja_s']:.2f} s",
        highlight=False,
    )
    r, p = result["resolver"], result["prune"]
    console.print(
        f"resolver: {r['entries']} index entries ({r['page_bytes'] / 1e6:.1f} MB page): parse {r['parse_s'] * 1e3:.1f} ms "
        f"+ select {r['select_s'] * 1e3:.1f} ms; weekly picks {r['chosen']}",
        highlight=False,
    )
    console.print(
        f"prune plan: {p['caches']} caches -> {p['groups']} groups, {p['delete_count']} to delete, "
        f"{p['foreign']} foreign, {p['malformed']} malformed; {p['api_requests']} REST requests "
        f"(listing pages + deletes); listing parse {p['listing_parse_s'] * 1e3:.0f} ms",
        highlight=False,
    )
    targets = Table(title="targets", title_justify="left")
    for col in ("figure", "value", "target", ""):
        targets.add_column(col, justify="left" if col == "figure" else "right")
    t = result["targets"]
    rows = [
        (
            "warm / cold (pipeline)",
            f"{t['warm_over_cold']['value']:.1%}",
            f"<= {TARGET_WARM_OVER_COLD:.0%}",
            t["warm_over_cold"],
        ),
        (
            "pipeline overhead on warm",
            f"{t['overhead']['value']:.2f} s",
            f"<= {TARGET_OVERHEAD_S} s",
            t["overhead"],
        ),
        (
            f"resolver, {r['entries']} entries",
            f"{t['resolver']['value'] * 1e3:.1f} ms",
            f"< {TARGET_RESOLVER_S * 1e3:.0f} ms",
            t["resolver"],
        ),
        (
            f"prune plan, {p['caches']} caches",
            f"{t['prune']['value'] * 1e3:.1f} ms",
            f"< {TARGET_PRUNE_S * 1e3:.0f} ms",
            t["prune"],
        ),
    ]
    for name, value, target, check in rows:
        targets.add_row(name, value, target, "[green]met[/]" if check["met"] else "[red]MISSED[/]")
    console.print(targets)
    console.print(f"results: {result['json_out']}", highlight=False)


# --------------------------------------------------------------------------
# Main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m scripts.bench", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--units", type=int, default=300, help="translation units of the generated project (default 300)"
    )
    p.add_argument(
        "--repeat", type=int, default=5, help="warm builds of each kind; medians are reported (default 5)"
    )
    p.add_argument(
        "--cold-repeat",
        type=int,
        default=1,
        help="cold builds, each with an empty cache (default 1: a cold build is the long part)",
    )
    p.add_argument(
        "--index-entries",
        type=int,
        default=20_000,
        help="entries of the generated ROCm index (default 20000)",
    )
    p.add_argument("--caches", type=int, default=20_000, help="caches for the prune plan (default 20000)")
    p.add_argument(
        "--micro-repeat", type=int, default=5, help="runs of the resolver and prune timings (default 5)"
    )
    p.add_argument("--json-out", type=Path, help="results file (default bench-results/bench-<date>.json)")
    p.add_argument(
        "--workdir", type=Path, help="where to build (default: a temporary folder, removed afterwards)"
    )
    p.add_argument("--keep", action="store_true", help="keep the work folder (logs, builds, caches)")
    p.add_argument(
        "--real-tree-ccache",
        type=Path,
        metavar="DIR",
        help="start the real tree's ccache as a copy of DIR (read only; e.g. the test cache's "
        "~/.cache/llama-pipeline-tests/ccache): the first build is then a warm-up, not a cold figure",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the generated project only, without the real llama.cpp tree (minutes cold; smoke tests)",
    )
    args = p.parse_args(argv)
    for name in ("units", "repeat", "cold_repeat", "index_entries", "caches", "micro_repeat"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now(UTC)
    json_out: Path = args.json_out or Path("bench-results") / f"bench-{started:%Y%m%d-%H%M%S}.json"
    work = args.workdir.resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        bench = Bench(work, args.units)
        machine = machine_facts(bench.cmake, bench.ninja)
        say = functools.partial(print, flush=True)
        say(f"bench: {args.units} units in {work}")
        if warning := idle_warning(machine["load_average_start"], machine["cpus"], "at the start"):
            say(warning)
        cpu_start = snapshot()

        cold: list[BuildRun] = []
        record: dict[str, Any] = {}
        for i in range(args.cold_repeat):
            run, rec = bench.pipeline_build(work / "caches" / f"cold-{i}", "cold")
            say(f"bench: cold build {i + 1}/{args.cold_repeat}: {run.wall_s:.1f} s, {run.misses} misses")
            cold.append(run)
            record = record or rec
        warm_cache = work / "caches" / "cold-0"
        warm: list[BuildRun] = []
        raw: list[BuildRun] = []
        for i in range(args.repeat):
            run, _ = bench.pipeline_build(warm_cache, "warm-pipeline")
            warm.append(run)
            raw.append(bench.raw_build(record))
            say(
                f"bench: warm {i + 1}/{args.repeat}: pipeline {warm[-1].wall_s:.2f} s, raw {raw[-1].wall_s:.2f} s"
            )
        startup = {
            "bare_python_s": _median([bench.bare_python() for _ in range(args.repeat)]),
            "cli_startup_s": _median([bench.cli_startup() for _ in range(args.repeat)]),
        }
        builds = summarize(cold, warm, raw, startup)
        say("bench: resolver and prune plan")
        resolver = bench_resolver(args.index_entries, args.micro_repeat)
        prune = bench_prune(args.caches, args.micro_repeat)
        real: dict[str, Any] | None = None
        if not args.quick:
            real = bench_real_tree(
                work,
                bench.env,
                bench._run,
                args.repeat,
                say,
                cpu=lambda: bench.last_cpu_s,
                seed_cache=args.real_tree_ccache,
            )
        machine["load_average_end"] = _load()
        machine["idle"], end_warning = idle_verdict(machine, cpu_start, snapshot())
        result: dict[str, Any] = {
            "format": FORMAT,
            "date": started.isoformat(timespec="seconds"),
            "duration_s": round((datetime.now(UTC) - started).total_seconds(), 1),
            "machine": machine,
            "params": {
                "units": args.units,
                "repeat": args.repeat,
                "cold_repeat": args.cold_repeat,
                "index_entries": args.index_entries,
                "caches": args.caches,
                "micro_repeat": args.micro_repeat,
                "path": "python -m pipeline build (subprocess)",
            },
            "runs": [r.to_json() for r in (*cold, *warm, *raw)],
            "builds": builds,
            "resolver": resolver,
            "prune": prune,
            "targets": {
                "warm_over_cold": _check(builds["warm_over_cold"], TARGET_WARM_OVER_COLD),
                "overhead": _check(builds["pipeline_overhead_s"], TARGET_OVERHEAD_S),
                "resolver": _check(resolver["median_s"], TARGET_RESOLVER_S),
                "prune": _check(prune["median_s"], TARGET_PRUNE_S),
            },
            "json_out": str(json_out),
            **({"real_tree": real} if real is not None else {}),
        }
        atomic_write_json(json_out, result)
        print_report(result)
        if real is not None:
            print_real_tree(real)
        if end_warning:
            print(end_warning, flush=True)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
