"""An aarch64 bundle is checked against aarch64 rules, with real ELF files from Debian's cross GCC.

Fast evidence beside tests/integration/test_real_tree_arm64.py (the real
tree, 20+ minutes): what binutils' readelf says the files are, and what
check-bundle says of them in an arm64 and in an x64 bundle.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.bundle.check import check_tree

CROSS = "aarch64-linux-gnu-gcc"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which(CROSS) is None, reason=f"{CROSS} not installed (Debian: gcc-aarch64-linux-gnu)"
    ),
]


def build(compiler: str, root: Path, name: str) -> Path:
    src = root.parent / f"{name}.c"
    src.write_text(
        '#include <stdio.h>\n#include <math.h>\nint main(int c, char **v) { printf("%g\\n", sqrt(c)); return 0; }\n'
    )
    out = root / name
    subprocess.run([compiler, "-O2", "-o", str(out), str(src), "-lm"], check=True)
    return out


def test_an_arm64_bundle_needs_the_aarch64_loader_and_holds_only_aarch64_files(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "LICENSE").write_text("MIT\n")
    program = build(CROSS, root, "llama-demo")
    interp = subprocess.run(
        ["readelf", "-l", str(program)], capture_output=True, text=True, check=True
    ).stdout
    assert "/lib/ld-linux-aarch64.so.1" in interp
    arm = check_tree(root, os_name="linux", glibc_max="2.35", arch="arm64")
    assert arm.problems == () and arm.files_checked == 1
    # The same file in an x64 bundle is another architecture's.
    x64 = [p.line for p in check_tree(root, os_name="linux", glibc_max="2.35", arch="x64").problems]
    assert x64 == ["llama-demo: built for arm64, the bundle is for x64"]
    # And a host-built file in the arm64 bundle.
    build("gcc", root, "llama-host")
    lines = [p.line for p in check_tree(root, os_name="linux", glibc_max="2.35", arch="arm64").problems]
    assert lines == ["llama-host: built for x64, the bundle is for arm64"]


def test_an_arm64_library_needing_the_x86_64_loader_is_refused(tmp_path: Path) -> None:
    # A library that names x86-64's loader (as a DT_NEEDED) is fine in an x64 bundle, not in an arm64 one.
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "LICENSE").write_text("MIT\n")
    (tmp_path / "lib.c").write_text("int f(void) { return 1; }\n")
    lib = root / "libggml-demo.so"
    subprocess.run([CROSS, "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "lib.c")], check=True)
    subprocess.run(["patchelf", "--add-needed", "ld-linux-x86-64.so.2", str(lib)], check=True)
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "ld-linux-x86-64.so.2" in needed
    lines = [p.line for p in check_tree(root, os_name="linux", glibc_max="2.35", arch="arm64").problems]
    assert lines == [
        "libggml-demo.so: needs ld-linux-x86-64.so.2: neither in the bundle nor on the linux arm64 "
        "base-system allowlist"
    ]


def test_the_cross_compiler_is_the_arm64_legs_cache_identity(tmp_path: Path) -> None:
    import platform

    from tests.support.pipeline_cli import ROOT, run_pipeline

    if platform.machine() != "x86_64":
        pytest.skip(f"the cross build is an x86-64 machine's (this one is {platform.machine()})")
    version = subprocess.run(
        [CROSS, "-dumpfullversion"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {"PIPELINE_CACHE_HOME": str(tmp_path / "home")}
    arm = run_pipeline(
        ["--matrix", str(ROOT / "matrix.toml"), "cache-key", "cpu-arm64", "--tag", "b1234"], env=env
    )
    assert arm.returncode == 0, arm.stderr
    assert f"key:          llama-ccache--cpu-arm64--gcc-{version}-aarch64-linux-gnu--b1234" in arm.stdout
    # A leg of another arch that cannot cross-build here is refused by the build, naming it.
    (tmp_path / "CMakeLists.txt").write_text("project(x)\n")
    refused = run_pipeline(
        [
            "--matrix",
            str(ROOT / "matrix.toml"),
            "build",
            "vulkan-arm64",
            "--source",
            str(tmp_path),
            "--out",
            str(tmp_path / "out"),
        ],
        env=env,
    )
    assert refused.returncode == 7 and refused.stderr.count("error:") == 1, refused.stderr
    assert (
        "leg vulkan-arm64 (vulkan) builds for arm64 on an arm64 runner: this machine is x64" in refused.stderr
    )
