"""Real shared libraries shaped like ROCm's runtime, built with gcc for the bundle tests.

``libhsa-runtime64.so.1`` <- ``libamdhip64.so.7`` <- ``librocblas.so.4``, each
with a SONAME and a symlink chain (``libX.so -> libX.so.N -> libX.so.N.M.P``)
and a RUNPATH of ``$ORIGIN`` as TheRock ships them, plus rocBLAS kernel files
for two GPU targets. A program that links them (``llama-hipdemo``) answers
``--version`` with a string made by all three libraries.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from tests.support.projects import write_units

# (base name, SONAME version, full version, libraries it links, C source)
LIBRARIES = (
    ("libhsa-runtime64", "1", "1.15.0", (), "int hsa_version(void) { return 15; }\n"),
    (
        "libamdhip64",
        "7",
        "7.1.0",
        ("hsa-runtime64",),
        "int hsa_version(void);\nint hip_version(void) { return 700 + hsa_version(); }\n",
    ),
    (
        "librocblas",
        "4",
        "4.5.0",
        ("amdhip64",),
        "int hip_version(void);\nint rocblas_version(void) { return 40000 + hip_version(); }\n",
    ),
)
KERNELS = {
    "Kernels.so-000-gfx1100.hsaco": b"gfx1100 kernels",
    "Kernels.so-000-gfx1030.hsaco": b"gfx1030 kernels",
    "TensileLibrary_lazy_gfx1100.dat": b"gfx1100 lazy",
    "TensileLibrary_lazy_gfx1030.dat": b"gfx1030 lazy",
    "TensileLibrary_fallback.dat": b"any target",
}
# TheRock's per-component license files, named as its build installs them (share/doc/<CMake project>/,
# see docs/supply-chain.md), which its bundles must carry.
LICENSES = {
    "share/doc/rocblas/LICENSE.md": "rocBLAS: MIT License (test copy)\n",
    "share/doc/hip/LICENSE.md": "HIP: MIT License (test copy)\n",
    "share/doc/hsa-runtime64/LICENSE.md": "ROCR runtime: NCSA license (test copy)\n",
}
# What llama-hipdemo --version prints: 40000 + 700 + 15.
EXPECTED_VERSION = "hipdemo version 40715"


def build_runtime(root: Path) -> list[str]:
    """Build the libraries into ``root/lib`` and kernels into ``root/lib/rocblas/library``; the file names made."""
    lib = root / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    made = []
    for base, major, full, links, source in LIBRARIES:
        src = lib / f"{base}.c"
        src.write_text(source)
        real = f"{base}.so.{full}"
        subprocess.run(
            [
                "gcc",
                "-shared",
                "-fPIC",
                "-O1",
                f"-Wl,-soname,{base}.so.{major}",
                "-Wl,--enable-new-dtags",
                "-Wl,-rpath,$ORIGIN",
                "-o",
                str(lib / real),
                str(src),
                f"-L{lib}",
                *(f"-l{n}" for n in links),
            ],
            check=True,
        )
        src.unlink()
        (lib / f"{base}.so.{major}").symlink_to(real)
        (lib / f"{base}.so").symlink_to(f"{base}.so.{major}")
        made += [real, f"{base}.so.{major}", f"{base}.so"]
    kernels = lib / "rocblas" / "library"
    kernels.mkdir(parents=True)
    for name, body in KERNELS.items():
        (kernels / name).write_bytes(body)
    for rel, text in LICENSES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return made


def write_hip_project(root: Path, *, units: int = 0) -> Path:
    """A CMake project whose program links the toolchain's libraries found through ``$ROCM_PATH``.

    With ``units``, the program also calls a static library of that many C/C++ translation units
    (tests/support/projects.py's): something for a cache to hold.
    """
    sources = write_units(root, units=units) if units else []
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "LICENSE").write_text("MIT License\n\nCopyright (c) the hipdemo test project\n")
    (root / "licenses").mkdir(exist_ok=True)
    (root / "licenses" / "LICENSE-thirdparty").write_text("a third-party license the tree carries\n")
    decls = "".join(f"int unit{i}(int);\n" for i in range(units))
    total = "".join(f" + unit{i}(2)" for i in range(units))
    (root / "src" / "main.c").write_text(
        textwrap.dedent("""\
        #include <stdio.h>
        #include <string.h>
        int rocblas_version(void);
        int hip_version(void);
        """)
        + decls
        + textwrap.dedent(f"""\
        int main(int argc, char **argv) {{
            if (argc > 1 && strcmp(argv[1], "--version") == 0) {{
                printf("hipdemo version %d\\n", rocblas_version());
                return 0;
            }}
            printf("%d\\n", hip_version(){total});
            return 0;
        }}
        """)
    )
    library = (
        f"add_library(hipdemo_units STATIC {' '.join(sources)})\n"
        "target_include_directories(hipdemo_units PUBLIC include)\n"
        "target_link_libraries(llama-hipdemo PRIVATE hipdemo_units)\n"
        if units
        else ""
    )
    (root / "CMakeLists.txt").write_text(
        textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.16)
        project(hipdemo LANGUAGES C CXX)
        find_library(ROCBLAS rocblas PATHS $ENV{ROCM_PATH}/lib NO_DEFAULT_PATH REQUIRED)
        find_library(AMDHIP amdhip64 PATHS $ENV{ROCM_PATH}/lib NO_DEFAULT_PATH REQUIRED)
        add_executable(llama-hipdemo src/main.c)
        target_link_libraries(llama-hipdemo PRIVATE ${ROCBLAS} ${AMDHIP})
        set_target_properties(llama-hipdemo PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
        """)
        + library
    )
    return root
