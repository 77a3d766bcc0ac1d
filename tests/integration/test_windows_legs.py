"""Windows legs here: PE closure rules with real DLLs named as the real runtimes, and the PE's arch.

The DLLs are made with mingw (``x86_64-w64-mingw32-gcc``) and, for arm64,
clang with LLVM's ``lld-link``; they carry the names NVIDIA's runtimes have
(``cudart64_12.dll`` from a CUDA 12 toolkit's ``bin/``, ``cublas64_13.dll``
from a 13.x one's ``bin/x64``) and the drivers' (``nvcuda.dll``,
``vulkan-1.dll``: the system's, never shipped, even when a toolchain holds a
copy). What a program imports is read back with mingw's ``objdump``. These
legs have not run on Windows here: the bundle rules are what is tested.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.bundle.check import check_tree
from pipeline.bundle.closure import complete_runtime
from tests.support.llvm_tools import llvm_tool

pytestmark = pytest.mark.integration

MINGW = "x86_64-w64-mingw32-gcc"
needs_mingw = pytest.mark.skipif(
    shutil.which(MINGW) is None, reason=f"{MINGW} not installed (Debian: gcc-mingw-w64-x86-64)"
)
CLANG, LLD_LINK = llvm_tool("clang"), llvm_tool("lld-link")
needs_lld = pytest.mark.skipif(
    shutil.which(LLD_LINK) is None or shutil.which(CLANG) is None,
    reason=f"arm64 PE files need {CLANG} and {LLD_LINK} (Debian: clang, lld)",
)


def dll(folder: Path, name: str, symbol: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / f"{symbol}.c"
    src.write_text(f"__declspec(dllexport) int {symbol}(void) {{ return 1; }}\n")
    out = folder / name
    subprocess.run([MINGW, "-shared", "-o", str(out), str(src)], check=True)
    src.unlink()
    return out


@needs_mingw
def test_a_cuda_bundle_carries_cudart_and_cublas_but_never_the_drivers(tmp_path: Path) -> None:
    toolkit = tmp_path / "cuda"
    runtimes = [
        dll(toolkit / "bin", "cudart64_12.dll", "cudart"),
        dll(toolkit / "bin" / "x64", "cublas64_13.dll", "cublas"),
    ]
    # The drivers' DLLs, also present in the toolchain: the allowlist wins, they are not copied.
    drivers = [
        dll(toolkit / "bin", "nvcuda.dll", "cuInit"),
        dll(tmp_path / "driver", "vulkan-1.dll", "vkCreateInstance"),
    ]
    (tmp_path / "main.c").write_text(
        "int cudart(void); int cublas(void); int cuInit(void); int vkCreateInstance(void);\n"
        "int main(void) { return cudart() + cublas() + cuInit() + vkCreateInstance(); }\n"
    )
    root = tmp_path / "bundle"
    root.mkdir()
    exe = root / "llama-cli.exe"
    subprocess.run(
        [MINGW, "-o", str(exe), str(tmp_path / "main.c"), *map(str, runtimes + drivers)], check=True
    )
    (root / "LICENSE").write_text("MIT\n")
    dump = subprocess.run(
        ["x86_64-w64-mingw32-objdump", "-p", str(exe)], capture_output=True, text=True, check=True
    )
    imported = set(re.findall(r"DLL Name: (\S+)", dump.stdout))
    assert {"cudart64_12.dll", "cublas64_13.dll", "nvcuda.dll", "vulkan-1.dll"} <= imported

    before = sorted(p.line for p in check_tree(root, os_name="windows", glibc_max=None).problems)
    assert before == [
        "llama-cli.exe: needs cublas64_13.dll: neither in the bundle nor on the windows base-system allowlist",
        "llama-cli.exe: needs cudart64_12.dll: neither in the bundle nor on the windows base-system allowlist",
    ]
    closure = complete_runtime(
        root,
        os_name="windows",
        backend="cuda",
        targets=(),
        toolchain_root=toolkit,
        patchelf=tmp_path / "no-patchelf-on-windows",
    )
    assert sorted((c.path, c.origin) for c in closure.copied) == [
        ("cublas64_13.dll", "bin/x64/cublas64_13.dll"),
        ("cudart64_12.dll", "bin/cudart64_12.dll"),
    ]
    assert not (root / "nvcuda.dll").exists() and not (root / "vulkan-1.dll").exists()
    assert check_tree(root, os_name="windows", glibc_max=None).problems == ()


@needs_mingw
@needs_lld
def test_a_windows_bundle_holds_only_its_own_architecture(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    x64 = dll(root, "ggml-base.dll", "ggml_base")
    (tmp_path / "cpu.c").write_text("int ggml_cpu(void) { return 1; }\n")
    subprocess.run(
        [
            CLANG,
            "--target=aarch64-pc-windows-msvc",
            "-c",
            str(tmp_path / "cpu.c"),
            "-o",
            str(tmp_path / "cpu.obj"),
        ],
        check=True,
    )
    subprocess.run(
        [
            LLD_LINK,
            "/dll",
            "/noentry",
            "/machine:arm64",
            "/export:ggml_cpu",
            str(tmp_path / "cpu.obj"),
            f"/out:{root / 'ggml-cpu.dll'}",
        ],
        check=True,
    )
    (root / "LICENSE").write_text("MIT\n")
    # LLVM's objdump says what each file is (mingw's x86-64 one cannot read arm64).
    for name, word in (("ggml-cpu.dll", "coff-arm64"), ("ggml-base.dll", "x86-64")):
        header = subprocess.run(
            ["llvm-objdump-15", "-f", str(root / name)], capture_output=True, text=True, check=True
        ).stdout
        assert word in header, header
    arm = [p.line for p in check_tree(root, os_name="windows", glibc_max=None, arch="arm64").problems]
    assert arm == [f"{x64.name}: built for x64, the bundle is for arm64"]
    x = [p.line for p in check_tree(root, os_name="windows", glibc_max=None, arch="x64").problems]
    assert x == ["ggml-cpu.dll: built for arm64, the bundle is for x64"]
