"""The vulkan leg's figures for docs/benchmarks.md, from two builds' output folders (cold, then warm).

Usage: ``python -m scripts.bench.shader_cache_figures COLD_LEG_DIR WARM_LEG_DIR`` where each is a
``<out>/vulkan`` folder of ``python -m pipeline build vulkan`` (the real-tree test's
``runner/out/vulkan`` and ``elsewhere/out/vulkan`` under its ``--basetemp``). Prints one
markdown table: the build phase's wall time, ccache's and the glslc cache's counts, Ninja's
summed device and host step times, and the shader-generation steps (ggml-vulkan's ``*.comp.cpp``
outputs and ``ggml-vulkan-shaders.hpp``, each one ``vulkan-shaders-gen`` run): their count,
summed time, and the wall span from the first one's start to the last one's end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pipeline.results.ninjalog import parse_log


def is_shader_step(output: str) -> bool:
    return output.endswith(".comp.cpp") or output.endswith("ggml-vulkan-shaders.hpp")


def figures(leg_dir: Path) -> dict[str, Any]:
    record = json.loads((leg_dir / "record.json").read_text(encoding="utf-8"))
    log = parse_log((leg_dir / "build" / ".ninja_log").read_text(encoding="utf-8"))
    shaders = [s for s in log.steps if any(is_shader_step(o) for o in s.outputs)]
    classes = (record.get("timings") or {}).get("classes", {})
    glslc = record["ccache"].get("glslc", {})
    return {
        "build": record["phases"]["build"],
        "ccache": (record["ccache"]["hits"], record["ccache"]["misses"]),
        "glslc": (glslc.get("hits"), glslc.get("misses"), glslc.get("uncacheable")),
        "device": classes.get("device", {}).get("seconds", 0.0),
        "host": classes.get("host", {}).get("seconds", 0.0),
        "shader_steps": len(shaders),
        "shader_summed": sum(s.seconds for s in shaders),
        "shader_span": (max(s.end_ms for s in shaders) - min(s.start_ms for s in shaders)) / 1000
        if shaders
        else 0.0,
    }


def table(cold: dict[str, Any], warm: dict[str, Any]) -> str:
    def ratio(key: str) -> str:
        return f"{warm[key] / cold[key]:.3f}" if cold[key] else "—"

    rows = [
        ("build phase (wall, s)", f"{cold['build']:.1f}", f"{warm['build']:.1f}", ratio("build")),
        ("shader-generation steps (count)", str(cold["shader_steps"]), str(warm["shader_steps"]), ""),
        (
            "shader-generation steps (summed, s)",
            f"{cold['shader_summed']:.1f}",
            f"{warm['shader_summed']:.1f}",
            ratio("shader_summed"),
        ),
        (
            "shader-generation steps (wall span, s)",
            f"{cold['shader_span']:.1f}",
            f"{warm['shader_span']:.1f}",
            ratio("shader_span"),
        ),
        ("ccache hits / misses", "{} / {}".format(*cold["ccache"]), "{} / {}".format(*warm["ccache"]), ""),
        (
            "glslc cache hits / misses / uncacheable",
            "{} / {} / {}".format(*cold["glslc"]),
            "{} / {} / {}".format(*warm["glslc"]),
            "",
        ),
        ("Ninja device steps (summed, s)", f"{cold['device']:.1f}", f"{warm['device']:.1f}", ratio("device")),
        ("Ninja host steps (summed, s)", f"{cold['host']:.1f}", f"{warm['host']:.1f}", ratio("host")),
    ]
    lines = ["| figure | cold | warm, another folder | warm / cold |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "error: usage: python -m scripts.bench.shader_cache_figures COLD_LEG_DIR WARM_LEG_DIR",
            file=sys.stderr,
        )
        return 2
    print(table(figures(Path(argv[0])), figures(Path(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
