#!/usr/bin/env python3
"""How much of a vulkan build of the real tree is its shader pipeline, cold and warm.

Builds the shipped vulkan leg (plus the suite's one reduction: scripts/workload/vulkan_leg.py, the leg
tests/integration/test_vulkan_real_tree.py builds) on llama-cpp-python's vendored llama.cpp twice
with an empty ccache and glslc cache, the second in another folder, and reads Ninja's own log
(``build/.ninja_log``: each step's start and end) of each. The shader pipeline is every step of
``ggml/src/ggml-vulkan`` but the backend's own compiles: the vulkan-shaders-gen ExternalProject (its
configure, build and install), the glslc runs, the generated header and sources and their compiles. Prints
each build's wall time, the pipeline's summed step time and its share of the cold build; ``--json`` writes them.

    python -m scripts.bench.shader_pipeline_share [--json-out FILE]

Needs what ``nox -s e2e -- --leg vulkan tests/integration`` needs (the sdist in the test cache, trixie's
Vulkan SDK, glslc). Numbers vary with the machine: they are measured, never asserted by a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipeline.results.ninjalog import parse_log
from scripts.workload.llama_sdist import cached_sdist, missing_reason, standalone_tree
from scripts.workload.trixie_vulkan import SdkUnavailable
from scripts.workload.vulkan_leg import build_args, vulkan_sdk, write_matrix

ROOT = Path(__file__).resolve().parents[2]
VULKAN_DIR = "ggml/src/ggml-vulkan/"
# The backend's own sources (compiled whatever the shaders): not the shader pipeline.
OWN = ("ggml-vulkan.cpp.o",)


def ninja_steps(build: Path) -> list[tuple[str, float]]:
    """(output, seconds) of every step of the last build in ``build/.ninja_log`` (the pipeline's own reader)."""
    log = parse_log((build / ".ninja_log").read_text(), source=str(build / ".ninja_log"))
    return [(step.name, step.seconds) for step in log.steps]


def is_shader_step(target: str) -> bool:
    return VULKAN_DIR in target and not target.endswith(OWN)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    sdist = cached_sdist()
    if sdist is None:
        print(f"error: {missing_reason()}", file=sys.stderr)
        return 2
    try:
        sdk = vulkan_sdk(os.environ)
    except SdkUnavailable as exc:
        print(f"error: the vulkan leg needs Vulkan headers 1.3.272 or newer: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="shader-share-") as tmp:
        work = Path(tmp)
        tree = standalone_tree(sdist, work / "sdist")
        matrix = write_matrix(work / "matrix.toml")
        rows = []
        for name in ("cold", "warm"):
            out = work / name / "out"
            started = time.monotonic()
            line = build_args(matrix, tree, out, work / "ccache", "--vulkan-sdk", str(sdk), "--no-bundle")
            # The pipeline of this checkout, as a user runs it (tests/support/pipeline_cli.py does the same).
            proc = subprocess.run(
                [sys.executable, "-m", "pipeline", *line],
                env={**os.environ, "PYTHONPATH": str(ROOT), "PIPELINE_CACHE_HOME": str(work / "home")},
                capture_output=True,
                text=True,
                timeout=3600,
                check=False,
            )
            wall = time.monotonic() - started
            if proc.returncode != 0:
                print(proc.stdout[-4000:] + proc.stderr, file=sys.stderr)
                return 1
            record = json.loads((out / "vulkan" / "record.json").read_text())
            steps = ninja_steps(out / "vulkan" / "build")
            shader = sum(s for t, s in steps if is_shader_step(t))
            rows.append(
                {
                    "build": name,
                    "wall_s": round(wall, 1),
                    "build_phase_s": record["phases"]["build"],
                    "shader_steps_s": round(shader, 1),
                    "all_steps_s": round(sum(s for _t, s in steps), 1),
                    "ccache": {k: record["ccache"][k] for k in ("hits", "misses")},
                    "glslc": {k: record["ccache"]["glslc"][k] for k in ("hits", "misses")},
                }
            )
    cold = rows[0]["shader_steps_s"]
    for row in rows:
        share = row["shader_steps_s"] / cold if cold else 0.0
        print(
            f"{row['build']}: build {row['build_phase_s']:.1f} s (wall {row['wall_s']:.1f} s); shader pipeline "
            f"{row['shader_steps_s']:.1f} s of steps ({share:.0%} of the cold one's); ccache {row['ccache']}, "
            f"glslc {row['glslc']}"
        )
    warm_share = rows[1]["shader_steps_s"] / rows[0]["build_phase_s"]
    print(f"warm shader pipeline / cold build: {warm_share:.1%}")
    if args.json_out:
        args.json_out.write_text(
            json.dumps({"rows": rows, "warm_shader_over_cold_build": warm_share}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
