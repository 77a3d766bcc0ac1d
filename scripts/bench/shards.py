"""A cold build in shards against the same build unsharded, on the real llama.cpp tree.

Usage: ``python -m scripts.bench.shards [--shards 2] [--workdir DIR] [--keep] [--json-out PATH]``

The tree is llama.cpp 0c1e570 from llama-cpp-python 0.3.36's sdist (scripts/workload/llama_sdist.py);
the leg is the shipped cpu leg with the one CI reduction (scripts/workload/reduction.py) and ``shards =
--shards``. One after another, each with the whole machine (as each job has its own runner):

- cold: ``python -m pipeline build cpu --no-bundle`` into an empty cache, no shard caches: the unsharded
  cold build;
- each shard: ``python -m pipeline shard cpu --index I`` into another empty cache's shard folders;
- warm: ``python -m pipeline build cpu --no-bundle`` into that cache: it merges the shard folders and
  builds.

The numbers come from Ninja's own logs (``.ninja_log``: a build's wall clock is its last step's end, its
first started at 0) and, beside them, the wall time of each whole command (configure and the rest
included). The critical path of the sharded night is the slowest shard plus the warm build; the
unsharded night's is the cold build. Also checked and printed: the shards' compile steps are disjoint
and together the leg's (Ninja's plan: the targets whose rule is a compiler's, ``ninja -t targets all``),
and the warm build's hits; and each shard's share of the cold build's compile seconds (its steps' times
in the cold build's log) beside the share the split estimated.

The real-tree shard test (tests/integration/test_real_tree_shards.py, ``nox -s e2e``) runs
:func:`measure` and asserts what it finds; docs/caches.md keeps a measured run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.results.ninjalog import Step, read_log
from scripts.workload.llama_sdist import e2e_cache_root, fetch_sdist, standalone_tree
from scripts.workload.reduction import SHIPPED_MATRIX, reduced_matrix

ROOT = Path(__file__).resolve().parents[2]
LEG = "cpu"
# Ninja's names for the compile rules CMake writes: C_COMPILER__<target>_<config> and the like.
COMPILE_RULE = re.compile(r"^(?:C|CXX|CUDA|HIP)_COMPILER__")
TIMEOUT = 3 * 3600


@dataclass(frozen=True, kw_only=True)
class Run:
    """One command of the measurement and what its build's Ninja log says."""

    name: str
    command_seconds: float
    # The build's wall clock by its Ninja log: the end of its last step (its first starts at 0).
    ninja_seconds: float
    # Every step of that log.
    steps: tuple[Step, ...]
    record: dict[str, Any]

    @property
    def compiled(self) -> set[str]:
        """The objects the build compiled (its log's ``.o`` and ``.obj`` outputs)."""
        return {o for s in self.steps for o in s.outputs if o.endswith((".o", ".obj"))}


@dataclass(kw_only=True)
class ShardBench:
    shards: int
    # The leg's compile steps by Ninja's plan of its configured build folder.
    leg_steps: set[str]
    cold: Run
    parts: list[Run] = field(default_factory=list)
    warm: Run | None = None
    load: tuple[float, float] = (0.0, 0.0)

    @property
    def critical_path_seconds(self) -> float:
        """The sharded night's critical path by Ninja's logs: the slowest shard, then the warm build."""
        assert self.warm is not None
        return max(p.ninja_seconds for p in self.parts) + self.warm.ninja_seconds

    @property
    def command_critical_path_seconds(self) -> float:
        assert self.warm is not None
        return max(p.command_seconds for p in self.parts) + self.warm.command_seconds

    def cold_work_share(self) -> list[float]:
        """Each shard's share of the cold build's compile seconds (its steps' durations in the cold log)."""
        seconds = {o: s.seconds for s in self.cold.steps for o in s.outputs}
        total = sum(seconds.get(o, 0.0) for o in self.leg_steps) or 1.0
        return [sum(seconds.get(o, 0.0) for o in p.compiled) / total for p in self.parts]

    def to_json(self) -> dict[str, Any]:
        assert self.warm is not None
        runs = [self.cold, *self.parts, self.warm]
        return {
            "leg": LEG,
            "shards": self.shards,
            "leg_compile_steps": len(self.leg_steps),
            "runs": {
                r.name: {
                    "command_seconds": round(r.command_seconds, 1),
                    "ninja_seconds": round(r.ninja_seconds, 1),
                    "compiled": len(r.compiled),
                }
                for r in runs
            },
            "critical_path_ninja_seconds": round(self.critical_path_seconds, 1),
            "critical_path_command_seconds": round(self.command_critical_path_seconds, 1),
            "cold_ninja_seconds": round(self.cold.ninja_seconds, 1),
            "cold_command_seconds": round(self.cold.command_seconds, 1),
            "estimated_share": [p.record["ccache"]["shard"]["estimated_share"] for p in self.parts],
            "cold_work_share": [round(x, 4) for x in self.cold_work_share()],
            "warm_hits": self.warm.record["ccache"].get("hits"),
            "warm_misses": self.warm.record["ccache"].get("misses"),
            "merged": self.warm.record["ccache"].get("shards_merged"),
            "load_before_after": list(self.load),
        }

    def lines(self) -> list[str]:
        data = self.to_json()
        out = [f"{LEG} leg (reduced real tree), {self.shards} shards, {len(self.leg_steps)} compile steps:"]
        for name, run in data["runs"].items():
            out.append(
                f"  {name:<8} Ninja {run['ninja_seconds']:7.1f} s   command {run['command_seconds']:7.1f} s   "
                f"{run['compiled']} compiles"
            )
        speed = self.cold.ninja_seconds / max(self.critical_path_seconds, 0.001)
        out.append(
            f"  critical path: slowest shard + warm build = {data['critical_path_ninja_seconds']} s by Ninja's logs "
            f"({data['critical_path_command_seconds']} s by the commands), against {data['cold_ninja_seconds']} s "
            f"unsharded ({data['cold_command_seconds']} s): {speed:.2f}x"
        )
        out.append(
            f"  shares: estimated {data['estimated_share']}, of the cold build's compile seconds "
            f"{data['cold_work_share']}; warm build {data['warm_hits']} hits, {data['warm_misses']} misses"
        )
        return out


def _ninja_seconds(build: Path) -> tuple[float, tuple[Step, ...]]:
    steps = read_log(build / ".ninja_log").steps
    return (max((s.end_ms for s in steps), default=0) / 1000.0, steps)


def leg_compile_steps(build: Path) -> set[str]:
    """The compile steps of Ninja's plan in ``build``: the targets whose rule is a compiler's."""
    ninja = shutil.which(
        "ninja", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    text = subprocess.run([ninja or "ninja", "-C", str(build), "-t", "targets", "all"], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    pairs = (line.rsplit(": ", 1) for line in text.splitlines() if ": " in line)
    return {target for target, rule in pairs if COMPILE_RULE.match(rule)}


def _pipeline(args: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pipeline", *args], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(
            f"pipeline {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
        )
    return time.monotonic() - started


def _run(name: str, args: list[str], env: dict[str, str], work: Path) -> Run:
    print(f"{name}: python -m pipeline {' '.join(args[2:5])} ...", flush=True)
    seconds = _pipeline(args, env)
    record = json.loads((work / LEG / "record.json").read_text(encoding="utf-8"))
    ninja_seconds, steps = _ninja_seconds(work / LEG / "build")
    print(f"{name}: {seconds:.0f} s ({ninja_seconds:.0f} s by Ninja's log)", flush=True)
    return Run(name=name, command_seconds=seconds, ninja_seconds=ninja_seconds, steps=steps, record=record)


def measure(work: Path, *, shards: int = 2, env: dict[str, str] | None = None) -> ShardBench:
    """Build the reduced cpu leg cold, then in ``shards`` shards and warm from them, in ``work``."""
    tree = standalone_tree(fetch_sdist(e2e_cache_root()), work / "sdist")
    matrix = work / "matrix.toml"
    matrix.write_text(
        reduced_matrix(SHIPPED_MATRIX.read_text(encoding="utf-8"), legs=[LEG],
                       source_repo="https://example.invalid/llama.cpp.git", shards={LEG: shards}),
        encoding="utf-8",
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "PIPELINE_CACHE_HOME": str(work / "home"),
           **(env or {})}  # fmt: skip
    base = ["--matrix", str(matrix)]
    load_before = os.getloadavg()[0]
    cold_out, sharded_out = work / "cold", work / "sharded"
    cold = _run("cold", [*base, "build", LEG, "--source", str(tree), "--out", str(cold_out), "--cache-dir",
                         str(work / "cold-cache" / LEG), "--no-bundle"], env, cold_out)  # fmt: skip
    bench = ShardBench(shards=shards, leg_steps=leg_compile_steps(cold_out / LEG / "build"), cold=cold)
    cache = work / "sharded-cache" / LEG
    for index in range(1, shards + 1):
        args = [*base, "shard", LEG, "--index", str(index), "--of", str(shards), "--source", str(tree), "--out",
                str(sharded_out), "--cache-dir", str(cache)]  # fmt: skip
        bench.parts.append(_run(f"shard {index}", args, env, sharded_out / f"{LEG}--shard-{index}of{shards}"))
    bench.warm = _run("warm", [*base, "build", LEG, "--source", str(tree), "--out", str(sharded_out),
                               "--cache-dir", str(cache), "--no-bundle"], env, sharded_out)  # fmt: skip
    bench.load = (load_before, os.getloadavg()[0])
    return bench


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--workdir", type=Path, help="where to build (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the workdir")
    parser.add_argument("--json-out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-shards-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        bench = measure(work, shards=args.shards)
        print("\n".join(bench.lines()))
        if args.json_out:
            args.json_out.parent.mkdir(parents=True, exist_ok=True)
            args.json_out.write_text(json.dumps(bench.to_json(), indent=2) + "\n", encoding="utf-8")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
