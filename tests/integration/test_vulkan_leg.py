"""A Vulkan project through the ``vulkan`` leg: a compute shader compiled by glslc,
embedded in C++ that includes the Vulkan headers."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.pipeline_cli import build_leg
from tests.support.projects import write_matrix
from tests.support.vulkan_project import COMPILATIONS, write_vulkan_project


def test_vulkan_shader_and_headers_through_the_leg(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_vulkan_project(ws / "project")
    write_matrix(
        ws / "matrix.toml",
        extra="""
[legs.vulkan]
backend = "vulkan"
os = "linux"
cmake_args = ["-DGGML_VULKAN=ON"]
""",
    )
    cache = tmp_path / "ccache"

    def build() -> dict:
        return build_leg(ws, "vulkan", cache)

    first = build()
    tc = first["toolchain"]
    headers, shaderc = tc["details"]["vulkan_headers"], tc["details"]["glslc"]
    assert re.fullmatch(r"1\.\d+\.\d+", headers)
    # Both versions are part of the identity, and so of the cache key.
    assert tc["identity"].startswith(f"vulkan-{headers}-glslc-{shaderc}-")
    assert any(a.startswith("-DVulkan_GLSLC_EXECUTABLE=") for a in first["cmake_args"])
    assert (first["ccache"]["hits"], first["ccache"]["misses"]) == (0, COMPILATIONS)

    program = ws / "out" / "vulkan" / "build" / "vkdemo"
    out = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    # The program was built against the headers the identity names, with real SPIR-V inside.
    assert f"header {headers.rsplit('.', 1)[1]} " in out
    assert "magic 07230203" in out

    second = build()
    assert second["toolchain"]["identity"] == tc["identity"]
    assert (second["ccache"]["hits"], second["ccache"]["misses"]) == (COMPILATIONS, 0)
