"""What one glslc cache hit costs: the Python launcher per call (old) against the compiled client and the
cache server (new), on a generated shader set, with the real glslc.

Usage: ``python -m scripts.bench.glslc_hit_cost [--calls 200] [--repeat 3] [--jobs 1] [--workdir DIR]``

It writes ``--calls`` shader variants (four ``.comp`` files, each including a header that includes
another, one ``-DVARIANT=`` per call, called as llama.cpp's vulkan-shaders-gen calls glslc), compiles
them once into an empty cache (the cold pass, misses: what a call of glslc itself costs here), then,
``--repeat`` times, in a new build folder each time:

- old: every call through the Python launcher (``build/pipeline-glslc/glslc-py``, what CMake ran
  before the server);
- new: every call through the compiled client while :func:`serving_glslc` runs the server, as the leg's
  build step does.

Every warm pass must be all hits. Per hit: wall time (the calls run one after another with ``--jobs 1``)
and CPU time (user + system of every process the pass started, ``getrusage(RUSAGE_CHILDREN)``: the
launchers, and for new the server too, which is waited for when the block ends). The server's start and
stop are measured alone (an empty block) and shown apart: the new per-hit CPU is given with them spread
over the calls and without them. Medians over the repeats. Prints the load average: figures taken on a
busy machine say so (user and system time suffer less from it than wall time).
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pipeline.ccache.glslc_serving import serving_glslc
from pipeline.ccache.glslc_session import GlslcCache, setup_glslc_cache

SHADERS = ("scale", "add", "mul", "norm")
SOURCES = {
    "lib/inner.glsl": "float inner_factor() { return 2.0; }\n",
    "lib/common.glsl": '#include "inner.glsl"\nfloat scaled(float x) { return x * inner_factor(); }\n',
}
BODY = """\
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data {{ float values[]; }};
void main() {{
    uint i = gl_GlobalInvocationID.x;
    values[i] = scaled(values[i]) {op} float(VARIANT);
}}
"""
OPS = {"scale": "*", "add": "+", "mul": "* 2.0 *", "norm": "/"}


def write_shaders(project: Path) -> None:
    for name, text in SOURCES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    for shader in SHADERS:
        (project / f"{shader}.comp").write_text(BODY.format(op=OPS[shader]), encoding="utf-8")


def calls(ws: Path, count: int) -> list[list[str]]:
    project, build = ws / "project", ws / "build"
    out = []
    for i in range(count):
        shader, variant = SHADERS[i % len(SHADERS)], i // len(SHADERS) + 1
        spv = build / f"{shader}-{variant}.spv"
        out.append(
            [
                "-fshader-stage=compute",
                "--target-env=vulkan1.2",
                str(project / f"{shader}.comp"),
                "-o",
                str(spv),
                "-O",
                "-MD",
                "-MF",
                f"{spv}.d",
                "-I",
                str(project / "lib"),
                f"-DVARIANT={variant}",
            ]
        )
    return out


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_calls(launcher: Path, argvs: list[list[str]], cwd: Path, jobs: int) -> None:
    def one(argv: list[str]) -> None:
        proc = subprocess.run([str(launcher), *argv], cwd=cwd, capture_output=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"glslc through {launcher} failed: {proc.stderr.decode(errors='replace')}")

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, argvs))


def new_folder(work: Path, name: str, cache: Path, glslc: str, cc: str) -> tuple[Path, GlslcCache]:
    ws = work / name
    write_shaders(ws / "project")
    (ws / "build").mkdir(parents=True)
    args = [f"-DCMAKE_C_COMPILER={cc}", f"-DVulkan_GLSLC_EXECUTABLE={glslc}"]
    setup = setup_glslc_cache(
        args, ccache_dir=cache, base_dir=ws, build=ws / "build", stats_log=ws / "ccache.log"
    )
    if setup is None:
        raise SystemExit(f"no glslc cache for {glslc}")
    return ws, setup


def served(setup: GlslcCache, argvs: list[list[str]], cwd: Path, jobs: int) -> None:
    """The calls through the compiled client while the server runs, as the leg's build step runs them."""
    with serving_glslc(setup) as problem:
        if problem is not None:
            raise SystemExit(problem)
        run_calls(setup.launcher, argvs, cwd, jobs)


def timed(action: Callable[[], None]) -> tuple[float, float]:
    """(wall, CPU of the children) seconds of ``action``."""
    cpu0, t0 = cpu_of_children(), time.perf_counter()
    action()
    return time.perf_counter() - t0, cpu_of_children() - cpu0


def expect(setup: GlslcCache, hits: int, misses: int) -> None:
    counts = setup.read_stats()
    if (counts["hit"], counts["miss"]) != (hits, misses):
        raise SystemExit(f"expected {hits} hits and {misses} misses, got {counts}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="calls at once (vulkan-shaders-gen runs several)")
    parser.add_argument("--workdir", type=Path, default=None, help="kept afterwards (default: a temp folder)")
    args = parser.parse_args(argv)
    glslc, cc = shutil.which("glslc"), shutil.which(os.environ.get("CC", "cc"))
    if glslc is None or cc is None:
        print("error: needs glslc and a C compiler on PATH", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="glslc-hit-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "ccache"
    ws, cold = new_folder(work, "cold", cache, glslc, cc)
    if cold.socket is None:
        print(f"error: the compiled launcher could not be built: {cold.client_problem}", file=sys.stderr)
        return 2
    n = args.calls
    cold_wall, cold_cpu = timed(lambda: run_calls(cold.fallback, calls(ws, n), ws / "build", args.jobs))
    expect(cold, 0, n)

    old: list[tuple[float, float]] = []
    new: list[tuple[float, float]] = []
    idle: list[tuple[float, float]] = []
    for r in range(args.repeat):
        ws, setup = new_folder(work, f"old-{r}", cache, glslc, cc)
        old.append(timed(functools.partial(run_calls, setup.fallback, calls(ws, n), ws / "build", args.jobs)))
        expect(setup, n, 0)
        ws, setup = new_folder(work, f"new-{r}", cache, glslc, cc)
        new.append(timed(functools.partial(served, setup, calls(ws, n), ws / "build", args.jobs)))
        expect(setup, n, 0)
        idle.append(timed(functools.partial(served, setup, [], ws / "build", args.jobs)))

    def med(runs: list[tuple[float, float]], i: int) -> float:
        return statistics.median(run[i] for run in runs)

    ms = 1000.0 / n
    server_wall, server_cpu = med(idle, 0), med(idle, 1)
    load = os.getloadavg()
    print(
        f"glslc cache, per call: {n} calls, --jobs {args.jobs}, median of {args.repeat}; "
        f"{os.cpu_count()} CPUs, load average {load_before:.2f} before, {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f} after (1, 5, 15 min)"
    )
    print(f"glslc: {glslc}; client built with {cc}; workdir {work}")
    print()
    print("| per call | wall (ms) | CPU (ms) |")
    print("| --- | ---: | ---: |")
    print(
        f"| cold: glslc itself, through the Python launcher (miss) | {cold_wall * ms:.2f} | {cold_cpu * ms:.2f} |"
    )
    print(f"| old hit: the Python launcher | {med(old, 0) * ms:.2f} | {med(old, 1) * ms:.2f} |")
    print(
        f"| new hit: client and server, its start and stop spread over the calls | {med(new, 0) * ms:.2f} | "
        f"{med(new, 1) * ms:.2f} |"
    )
    print(
        f"| new hit: client and server, without its start and stop | {(med(new, 0) - server_wall) * ms:.2f} | "
        f"{(med(new, 1) - server_cpu) * ms:.2f} |"
    )
    print()
    print(
        f"The server's start and stop alone: {server_wall * 1000:.1f} ms wall, {server_cpu * 1000:.1f} ms CPU."
    )
    print(f"Old hit / cold call: {med(old, 1) / cold_cpu:.3f} of CPU; new: {med(new, 1) / cold_cpu:.3f}.")
    if args.workdir is None:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
